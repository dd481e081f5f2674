"""Several code layouts of one experiment vote on its tp⁻¹: an oracle that measures an
experiment in ``layouts`` independent layouts (1×, 2×, … every count, per copy) and, when they
disagree, in one more, and takes the median per copy.

Why: the port-mapping model assumes the CPU schedules µops optimally. Real schedulers assign
µops to ports (or to per-port queues) greedily at dispatch, and for some small mixes the loop
settles into a slower, suboptimal schedule, depending on the code layout and the state it
starts in. On a Zen 4, ``{vbroadcastss ymm, xmm: 1, vpaddd xmm: 1}`` measured 0.546 or 0.664
cycles on two runs of the same code, ``{movzx r64, m16: 3, vmovdqa xmm, m128: 3}`` 0.585 or 0.745
per copy. Stages that decide the port structure from few small experiments (classes, blocking
structure) use it, so that one slow schedule does not drop a blocking instruction.

A layout can also come out too *fast*, below what any port mapping allows: a T(2n) − T(n)
sample whose T(n) run was disturbed (``{cmp r64, imm32: 2}`` once gave 0.224 cycles per copy on
the Zen 4, where four ALUs allow 0.25), and the first layout as well: ``{imul r64: 1, mov m64,
r64: 1}`` = 0.950 where imul alone takes 1.0 (doubled: 0.9997), a mix of GPR and vector loads
and stores 2.07 where the doubled mix and, measured again, the mix itself take 2.33. So
whenever a layout differs from the first by more than ``margin`` (5 %, the noise: a 2× layout
of ``vmulpd zmm`` once measured 0.973 cycles per copy where the CPU needs 1), a third layout
(``layouts`` + 1 copies) is measured and the median per copy over all of them counts: a slow
schedule in one layout and a glitch in another are both outvoted.
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


class LayoutVote(OracleWrapper):
    """Wraps an oracle; ``measure`` gives tp⁻¹(e), or, when some tp⁻¹(k·e) / k (k = 2 …
    ``layouts``) differs from it by more than ``margin`` (relative), the median per copy over
    k = 1 … ``layouts`` + 1."""

    def __init__(self, inner: Any, layouts: int, margin: float = 0.05):
        if layouts < 1:
            raise ValidationError(f"layouts must be ≥ 1, got {layouts}")
        if not 0 <= margin < 1:
            raise ValidationError(f"margin must be in [0, 1), got {margin}")
        super().__init__(inner)
        self.layouts, self.margin = layouts, margin

    def describe(self) -> str:
        return f"{self.inner.describe()}, {self.layouts} layouts voting"

    def fingerprint(self) -> dict[str, Any]:
        return {"kind": "layout-vote", "layouts": self.layouts, "margin": self.margin,
                "inner": oracle_fingerprint(self.inner)}

    def measure(self, experiments: Sequence[Experiment]) -> list[float]:
        es = list(experiments)
        values = self.inner.measure([scaled(e, k) for k in range(1, self.layouts + 1) for e in es])
        n = len(es)
        per_copy = [[values[(k - 1) * n + j] / k for k in range(1, self.layouts + 1)] for j in range(n)]
        differ = [j for j, (first, *rest) in enumerate(per_copy)
                  if any(v == v and not abs(v - first) <= self.margin * first for v in rest)]
        extra = self.layouts + 1
        for j, v in zip(differ, self.inner.measure([scaled(es[j], extra) for j in differ]) if differ else []):
            per_copy[j].append(v / extra)
        voted = set(differ)
        return [statistics.median(x for x in vs if x == x) if j in voted else vs[0]
                for j, vs in enumerate(per_copy)]

    def uop_counts(self, experiments: Sequence[Experiment]) -> list[float]:
        return self.inner.uop_counts(experiments)
