"""Measurements of a CEGIS run, persisted so an interrupted run resumes without re-measuring.

The state file is JSON, rewritten atomically (temporary file in the same folder, then
``os.replace``) after every measurement batch. It records the instructions and port count of the
run and refuses to resume a run with different ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any

from pmsolve.errors import ValidationError
from pmsolve.fileio import atomic_write_text, read_state
from pmsolve.model import Experiment


def as_fraction(x: float | Fraction) -> Fraction:
    """A measured float as the nearest fraction with a small denominator (exact oracles give
    values like 5/3 that round-trip through floats)."""
    if isinstance(x, Fraction):
        return x
    return Fraction(x).limit_denominator(10**6)


def atomic_write_json(path: str | Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


class MeasurementLog:
    """Experiment → measured inverse throughput, in measurement order, optionally backed by a file."""

    def __init__(self, path: str | Path | None, instructions: Iterable[str], ports: int):
        self.path = Path(path) if path is not None else None
        self.instructions = tuple(instructions)
        self.ports = ports
        self.values: dict[Experiment, float] = {}
        self.notes: dict[Experiment, dict[str, Any]] = {}
        self.resumed = 0
        if self.path is not None and self.path.exists():
            self._load()

    def _load(self) -> None:
        assert self.path is not None
        data = read_state(self.path, "pmsolve.cegis-state", "CEGIS")
        if sorted(data.get("instructions", [])) != sorted(self.instructions) or data.get("ports") != self.ports:
            raise ValidationError(f"{self.path}: the state belongs to another run "
                                  f"({len(data.get('instructions', []))} instructions, {data.get('ports')} ports); "
                                  f"use another state file or delete it")
        for row in data.get("measurements", []):
            try:
                e = Experiment(row["experiment"])
                self.values[e] = float(row["cycles"])
            except (KeyError, TypeError, ValidationError) as exc:
                raise ValidationError(f"{self.path}: bad measurement entry {row!r} ({exc})") from None
            if isinstance(row.get("note"), dict):
                self.notes[e] = row["note"]
        self.resumed = len(self.values)

    def __contains__(self, e: Experiment) -> bool:
        return e in self.values

    def __len__(self) -> int:
        return len(self.values)

    def add(self, items: Iterable[tuple[Experiment, float]]) -> None:
        for e, v in items:
            self.values[e] = float(v)
        self.save()

    def note(self, e: Experiment, note: dict[str, Any]) -> None:
        self.notes[e] = note
        self.save()

    def save(self) -> None:
        if self.path is None:
            return
        rows = []
        for e, v in self.values.items():
            row: dict[str, Any] = {"experiment": dict(e.items()), "cycles": v}
            if e in self.notes:
                row["note"] = self.notes[e]
            rows.append(row)
        atomic_write_json(self.path, {"format": "pmsolve.cegis-state", "version": 1,
                                      "instructions": list(self.instructions), "ports": self.ports,
                                      "measurements": rows})
