"""The fastest of several code layouts: an oracle that estimates the port bound of an experiment
from ``layouts`` independent measurements of it (1×, 2×, … every count), per copy.

Why: the port-mapping model assumes the CPU schedules µops optimally. Real schedulers assign
µops to ports (or to per-port queues) greedily at dispatch, and for some small mixes the loop
settles into a slower, suboptimal schedule, depending on the code layout and the state it
starts in. On a Zen 4, ``{vbroadcastss ymm, xmm: 1, vpaddd xmm: 1}`` measured 0.546 or 0.664
cycles on two runs of the same code, ``{movzx r64, m16: 3, vmovdqa xmm, m128: 3}`` 0.585 or 0.745
per copy. The hardware never beats its own optimal schedule (up to noise), so the fastest of
independent layouts is the better estimate of the bound the model predicts, when it is faster
by more than measurement noise: a layout only ``margin`` (5 %) faster is noise (a 2× layout of
``vmulpd zmm`` once measured 0.973 cycles per copy where the CPU needs 1), and the experiment as
it is counts. Stages that decide the port structure from few small experiments (classes,
blocking structure) use it, so that one slow schedule does not drop a blocking instruction.

A layout can also come out too *fast*: a T(2n) − T(n) sample whose T(n) run was disturbed
(``{cmp r64, imm32: 2}`` once gave 0.224 cycles per copy on the Zen 4, where four ALUs allow
0.25, and the candidate was dropped for it). So a faster layout is confirmed by one more
(``layouts`` + 1 copies) and the estimate is the median per copy over all of them: a slow
schedule in the first layout and a glitch in another are both outvoted.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from pmsolve.errors import ValidationError
from pmsolve.harness.protocol import OracleWrapper, oracle_fingerprint
from pmsolve.model import Experiment


def scaled(e: Experiment, k: int) -> Experiment:
    """e with every count multiplied by k (the same mix, k copies per iteration)."""
    return Experiment({n: k * c for n, c in e.items()})


class FastestLayout(OracleWrapper):
    """Wraps an oracle; ``measure`` gives tp⁻¹(e), or, when some tp⁻¹(k·e) / k (k = 2 …
    ``layouts``) is more than ``margin`` (relative) below it, the median per copy over k = 1 …
    ``layouts`` + 1."""

    def __init__(self, inner: Any, layouts: int, margin: float = 0.05):
        if layouts < 1:
            raise ValidationError(f"layouts must be ≥ 1, got {layouts}")
        if not 0 <= margin < 1:
            raise ValidationError(f"margin must be in [0, 1), got {margin}")
        super().__init__(inner)
        self.layouts, self.margin = layouts, margin

    def describe(self) -> str:
        return f"{self.inner.describe()}, fastest of {self.layouts} layouts"

    def fingerprint(self) -> dict[str, Any]:
        return {"kind": "fastest-layout", "layouts": self.layouts, "margin": self.margin,
                "inner": oracle_fingerprint(self.inner)}

    def measure(self, experiments: Sequence[Experiment]) -> list[float]:
        es = list(experiments)
        values = self.inner.measure([scaled(e, k) for k in range(1, self.layouts + 1) for e in es])
        n = len(es)
        per_copy = [[values[(k - 1) * n + j] / k for k in range(1, self.layouts + 1)] for j in range(n)]
        faster = [j for j, (first, *rest) in enumerate(per_copy)
                  if any(v == v and not v >= first * (1 - self.margin) for v in rest)]
        extra = self.layouts + 1
        for j, v in zip(faster, self.inner.measure([scaled(es[j], extra) for j in faster]) if faster else []):
            per_copy[j].append(v / extra)
        faster_set = set(faster)
        return [statistics.median(x for x in vs if x == x) if j in faster_set else vs[0]
                for j, vs in enumerate(per_copy)]

    def uop_counts(self, experiments: Sequence[Experiment]) -> list[float]:
        return self.inner.uop_counts(experiments)
