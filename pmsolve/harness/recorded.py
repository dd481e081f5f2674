"""A recorded oracle: replays measurements from a file, so inference can run offline on data
measured elsewhere. It refuses experiments that were not recorded instead of guessing."""

from __future__ import annotations

import json
import statistics
from typing import Iterable, Sequence

from pmsolve.errors import UnknownNameError, ValidationError
from pmsolve.fileio import digest
from pmsolve.formats import load_measurements
from pmsolve.model import Experiment, Measurement


class RecordedOracle:
    """Answers from recorded measurements; repeated records of one experiment give their median."""

    def __init__(self, measurements: Iterable[Measurement], source: str = "recorded measurements"):
        samples: dict[Experiment, list[float]] = {}
        uops: dict[Experiment, float] = {}
        for m in measurements:
            samples.setdefault(m.experiment, []).append(float(m.cycles))
            if "uops" in m.others:
                uops[m.experiment] = float(m.others["uops"])
        if not samples:
            raise ValidationError(f"{source}: no measurements to replay")
        self.source = source
        self._values = {e: statistics.median(v) for e, v in samples.items()}
        self._uops = uops if len(uops) == len(samples) else {}
        self._insns = tuple(sorted({i for e in self._values for i in e}))

    @classmethod
    def from_file(cls, path: str) -> "RecordedOracle":
        return cls(load_measurements(path), source=path)

    @property
    def instructions(self) -> tuple[str, ...]:
        return self._insns

    @property
    def has_uop_counter(self) -> bool:
        return bool(self._uops)

    def _missing(self, experiments: Sequence[Experiment], table: dict) -> None:
        missing = [e for e in experiments if e not in table]
        if missing:
            shown = "; ".join(str(e) for e in missing[:3])
            raise UnknownNameError(f"{self.source}: {len(missing)} experiment(s) were never recorded "
                                   f"(e.g. {shown}); a recorded oracle cannot measure new experiments")

    def measure(self, experiments: Sequence[Experiment]) -> list[float]:
        experiments = list(experiments)
        self._missing(experiments, self._values)
        return [self._values[e] for e in experiments]

    def uop_counts(self, experiments: Sequence[Experiment]) -> list[float]:
        if not self._uops:
            raise ValidationError(f"{self.source}: the recording has no µop counts (an 'uops' entry per experiment)")
        experiments = list(experiments)
        self._missing(experiments, self._uops)
        return [self._uops[e] for e in experiments]

    def fingerprint(self) -> dict:
        """A digest of the recorded values (and µop counts): the same data gives the same fingerprint."""
        rows = sorted((";".join(f"{n}:{c}" for n, c in e.items()), v, self._uops.get(e)) for e, v in self._values.items())
        return {"kind": "recorded", "data": digest(json.dumps(rows))}

    def describe(self) -> str:
        return f"recorded oracle ({self.source}: {len(self._values)} experiments, {len(self._insns)} instructions)"
