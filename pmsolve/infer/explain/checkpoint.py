"""The explainable inference's state: every measurement and every finished stage, in one JSON
file rewritten atomically (:mod:`pmsolve.fileio`), so a killed run resumes where it stopped
without measuring anything twice. A state belongs to one oracle and configuration; resuming
with another refuses with a clear message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from pmsolve.errors import ValidationError
from pmsolve.fileio import atomic_write_text, read_state
from pmsolve.model import Experiment

FORMAT = "pmsolve.explain-state"


class Checkpoint:
    """Stage results and measurements (inverse throughputs, µop counts), optionally on disk."""

    def __init__(self, path: str | Path | None, config: dict[str, Any]):
        self.path = Path(path) if path is not None else None
        self.config = config
        self.stages: dict[str, Any] = {}
        self.tp: dict[Experiment, float] = {}
        self.uops: dict[Experiment, float] = {}
        self.resumed = False
        if self.path is not None and self.path.exists():
            self._load()

    def _load(self) -> None:
        assert self.path is not None
        data = read_state(self.path, FORMAT, "explain")
        if data.get("config") != self.config:
            diff = sorted(k for k in set(data.get("config", {})) | set(self.config)
                          if data.get("config", {}).get(k) != self.config.get(k))
            raise ValidationError(f"{self.path}: the state belongs to another run (differs in {', '.join(diff)}); "
                                  f"use another state path or delete it")
        self.stages = dict(data.get("stages", {}))
        self.tp = {Experiment(c): float(t) for c, t in data.get("measurements", [])}
        self.uops = {Experiment(c): float(n) for c, n in data.get("uop_counts", [])}
        self.resumed = bool(self.stages or self.tp)

    def save(self) -> None:
        if self.path is None:
            return
        data = {"format": FORMAT, "version": 1, "config": self.config, "stages": self.stages,
                "measurements": [[dict(e.items()), t] for e, t in self.tp.items()],
                "uop_counts": [[dict(e.items()), n] for e, n in self.uops.items()]}
        atomic_write_text(self.path, json.dumps(data, ensure_ascii=False) + "\n")

    def done(self, stage: str) -> Any | None:
        return self.stages.get(stage)

    def finish(self, stage: str, data: Any) -> Any:
        self.stages[stage] = data
        self.save()
        return data


class CachedOracle:
    """An oracle whose answers are remembered in the checkpoint (and counted)."""

    def __init__(self, oracle: Any, checkpoint: Checkpoint):
        self.oracle = oracle
        self.cp = checkpoint
        self.measured = 0

    @property
    def instructions(self) -> tuple[str, ...]:
        return tuple(self.oracle.instructions)

    @property
    def has_uop_counter(self) -> bool:
        return bool(self.oracle.has_uop_counter)

    def describe(self) -> str:
        return self.oracle.describe()

    def measure(self, experiments: Sequence[Experiment]) -> list[float]:
        todo = list(dict.fromkeys(e for e in experiments if e not in self.cp.tp))
        if todo:
            values = self.oracle.measure(todo)
            if len(values) != len(todo):
                raise ValidationError(f"the oracle answered {len(values)} of {len(todo)} experiments")
            self.cp.tp.update(zip(todo, map(float, values)))
            self.measured += len(todo)
        return [self.cp.tp[e] for e in experiments]

    def uop_counts(self, experiments: Sequence[Experiment]) -> list[float]:
        todo = list(dict.fromkeys(e for e in experiments if e not in self.cp.uops))
        if todo:
            self.cp.uops.update(zip(todo, map(float, self.oracle.uop_counts(todo))))
        return [self.cp.uops[e] for e in experiments]
