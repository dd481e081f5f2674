"""A recorded oracle: replays measurements from a file, so inference can run offline on data
measured elsewhere. It refuses experiments that were not recorded instead of guessing."""

from __future__ import annotations

import json
import statistics
import warnings
from typing import Iterable, Sequence

from pmsolve.errors import UnknownNameError, ValidationError
from pmsolve.fileio import digest
from pmsolve.formats import load_measurements
from pmsolve.model import Experiment, Measurement


class RecordedOracle:
    """Answers from recorded measurements. An experiment recorded more than once (repeated runs)
    is answered with the **median** of its records (and of its µop counts); when the records
    differ, a warning names how many experiments that concerns, with an example."""

    def __init__(self, measurements: Iterable[Measurement], source: str = "recorded measurements"):
        samples: dict[Experiment, list[float]] = {}
        uops: dict[Experiment, list[float]] = {}
        for m in measurements:
            samples.setdefault(m.experiment, []).append(float(m.cycles))
            if "uops" in m.others:
                uops.setdefault(m.experiment, []).append(float(m.others["uops"]))
        if not samples:
            raise ValidationError(f"{source}: no measurements to replay")
        self.source = source
        self._values = {e: statistics.median(v) for e, v in samples.items()}
        self._uops = {e: statistics.median(v) for e, v in uops.items()} if len(uops) == len(samples) else {}
        self._insns = tuple(sorted({i for e in self._values for i in e}))
        differ = [(e, v) for e, v in samples.items() if len(set(v)) > 1]
        if differ:
            e, v = differ[0]
            warnings.warn(f"{source}: {len(differ)} experiment(s) recorded more than once with different values "
                          f"(e.g. {e} at {', '.join(f'{x:g}' for x in v[:4])}{' ...' if len(v) > 4 else ''}); "
                          f"each is answered with the median of its records ({e}: {self._values[e]:g})",
                          stacklevel=2)

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
