"""The explainable inference's state: every finished stage and every measurement, in one
fingerprinted JSON state file (:class:`~pmsolve.fileio.StateFile`; the measurements are kept by
the shared caching oracle, :meth:`~pmsolve.harness.cache.CachingOracle.in_state`), so a killed
run resumes where it stopped without measuring anything twice. A state belongs to one oracle and
configuration; resuming with another refuses in one line naming what differs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pmsolve.fileio import StateFile

#: seconds between the saves of :meth:`Checkpoint.save_soon`
SAVE_SOON = 60.0


class Checkpoint:
    """Stage results, optionally on disk; :attr:`state` is the file the measurements share."""

    def __init__(self, path: str | Path | None, config: dict[str, Any]):
        self.state = StateFile(path, "explain", config)
        self.path = self.state.path
        self.stages: dict[str, Any] = self.state.data.setdefault("stages", {})
        self.resumed = self.state.resumed
        self._saved = time.monotonic()

    def save(self) -> None:
        self.state.save()
        self._saved = time.monotonic()

    def save_soon(self) -> None:
        """Save when the last save is ``SAVE_SOON`` seconds old: between the chunks of a long
        stage, whose measurements are safe already (in SQLite, or saved by the measurement rows
        themselves); a save per chunk cost an ``--all`` run 87 s (29 chunks of the characterisation
        and 58 of the slots stage, each saving a 42 MB state)."""
        if time.monotonic() - self._saved >= SAVE_SOON:
            self.save()

    def done(self, stage: str) -> Any | None:
        return self.stages.get(stage)

    def finish(self, stage: str, data: Any) -> Any:
        self.stages[stage] = data
        self.save()
        return data
