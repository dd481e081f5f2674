"""A simulated oracle: a known port mapping plays the machine (the ground truth of tests and
benchmarks). Noise is a pure function of (seed, experiment), so answers do not depend on the
order or batching of queries and runs are reproducible."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Mapping, Sequence

import numpy as np

from pmsolve.errors import ValidationError
from pmsolve.fileio import canonical, digest
from pmsolve.formats import load_mapping, mapping_to_json
from pmsolve.formula import batch_inverse_throughput
from pmsolve.model import Experiment, PortMapping


class SimulatedOracle:
    """Inverse throughputs implied by ``mapping`` (bottleneck formula), capped by ``r_max``.

    ``noise`` is the standard deviation of a multiplicative Gaussian error: the answer is
    ``tp⁻¹ · max(0.05, 1 + noise·z)`` with ``z`` drawn from a generator seeded by ``seed`` and
    the experiment. ``uop_counter`` enables :meth:`uop_counts` (exact, noise-free).
    """

    def __init__(self, mapping: PortMapping, *, r_max: float | None = None, noise: float = 0.0,
                 seed: int = 0, uop_counter: bool = False):
        if not 0 <= noise < 1:   # also refuses NaN: every comparison with it is false
            raise ValidationError(f"simulated oracle: noise must be a relative deviation in [0, 1), got {noise}")
        if r_max is not None and not 0 < r_max < math.inf:
            raise ValidationError(f"simulated oracle: r_max must be positive and finite, got {r_max}")
        self.mapping = mapping
        self.r_max = r_max
        self.noise = float(noise)
        self.seed = int(seed)
        self._uop_counter = bool(uop_counter)
        self.queries = 0

    @classmethod
    def from_spec(cls, path: str, options: Mapping[str, str]) -> "SimulatedOracle":
        known = {"r_max", "noise", "seed", "uops"}
        unknown = set(options) - known
        if unknown:
            raise ValidationError(f"simulated oracle: unknown option(s) {sorted(unknown)}; known: {sorted(known)}")
        try:
            r_max = float(options["r_max"]) if "r_max" in options else None
            noise = float(options.get("noise", 0.0))
            seed = int(options.get("seed", 0))
        except ValueError as exc:
            raise ValidationError(f"simulated oracle: bad option value: {exc}") from None
        uops = options.get("uops", "0").lower() in ("1", "true", "yes", "")
        return cls(load_mapping(path), r_max=r_max, noise=noise, seed=seed, uop_counter=uops)

    @property
    def instructions(self) -> tuple[str, ...]:
        return self.mapping.instructions

    @property
    def has_uop_counter(self) -> bool:
        return self._uop_counter

    def _factor(self, experiment: Experiment) -> float:
        digest = hashlib.blake2b(str(experiment).encode(), digest_size=8).digest()
        rng = np.random.default_rng([self.seed, int.from_bytes(digest, "little")])
        return max(0.05, 1.0 + self.noise * float(rng.standard_normal()))

    def measure(self, experiments: Sequence[Experiment]) -> list[float]:
        experiments = list(experiments)
        self.queries += len(experiments)
        values = batch_inverse_throughput([(self.mapping, e) for e in experiments], self.r_max)
        if self.noise:
            values = values * np.array([self._factor(e) for e in experiments])
        return [float(v) for v in values]

    def uop_counts(self, experiments: Sequence[Experiment]) -> list[float]:
        if not self._uop_counter:
            raise ValidationError("this simulated oracle has no µop counter (enable it with uops=1)")
        return [float(sum(self.mapping.uop_masses(e).values())) for e in experiments]

    def fingerprint(self) -> dict:
        """The mapping's digest, noise, seed, R_max and µop counter: everything the answers depend on."""
        return {"kind": "simulated", "mapping": digest(json.dumps(canonical(mapping_to_json(self.mapping)))),
                "noise": self.noise, "seed": self.seed, "r_max": self.r_max, "uop_counter": self._uop_counter}

    def describe(self) -> str:
        extra = [f"r_max={self.r_max}"] if self.r_max else []
        extra += [f"noise={self.noise}", f"seed={self.seed}"] if self.noise else []
        return (f"simulated oracle ({len(self.mapping.instructions)} instructions, "
                f"{len(self.mapping.ports)} ports{', ' + ', '.join(extra) if extra else ''})")
