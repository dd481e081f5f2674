"""The explainable inference's state: every finished stage and every measurement, in one
fingerprinted JSON state file (:class:`~pmsolve.fileio.StateFile`; the measurements are kept by
the shared caching oracle, :meth:`~pmsolve.harness.cache.CachingOracle.in_state`), so a killed
run resumes where it stopped without measuring anything twice. A state belongs to one oracle and
configuration; resuming with another refuses in one line naming what differs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pmsolve.fileio import StateFile


class Checkpoint:
    """Stage results, optionally on disk; :attr:`state` is the file the measurements share."""

    def __init__(self, path: str | Path | None, config: dict[str, Any]):
        self.state = StateFile(path, "explain", config)
        self.path = self.state.path
        self.stages: dict[str, Any] = self.state.data.setdefault("stages", {})
        self.resumed = self.state.resumed

    def save(self) -> None:
        self.state.save()

    def done(self, stage: str) -> Any | None:
        return self.stages.get(stage)

    def finish(self, stage: str, data: Any) -> Any:
        self.stages[stage] = data
        self.save()
        return data
