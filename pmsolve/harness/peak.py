"""Peak IPC detection (dissertation sec. 4.3 / 6.2.3): the front-end limit R_max, measured.

Start from one fast instruction repeated until it needs about one cycle, then greedily add
copies of the remaining fast instructions while the observed instructions per cycle grow; do
this from several starting instructions. Works with any oracle (the simulated one in tests, the
hardware oracle on a machine); every round is one batched call.

The greedy climb keeps whatever measured fastest, so one measurement that came out too fast
wins it: a T(2n) − T(n) sample is too *fast* when the T(n) run was disturbed, and on a Zen 4 one
layout of a 6-wide mix measured 1.00 cycles (8 IPC) in three of five samples where every other
layout, and the same code later, measured 1.40. A single R_max too high by a third made every
integer/vector pair look like a port interaction and merged the two sides into one component.
So every probe the climbs accepted is measured again in ``confirm`` layouts (its counts 2×, 3×,
…, independent kernels, :func:`~pmsolve.harness.layouts.scaled`), and the peak is the highest
*median* IPC over the layouts: a limit the CPU keeps in most layouts, not in one.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Mapping, Sequence

from pmsolve.errors import ValidationError
from pmsolve.harness.layouts import scaled
from pmsolve.model import Experiment


@dataclass(frozen=True)
class PeakIPC:
    ipc: float
    experiment: Experiment
    measurements: int
    probes: tuple[tuple[Experiment, float], ...] = ()   # every probe a climb stood on, as measured

    def __str__(self) -> str:
        return f"peak IPC {self.ipc:.2f} with {self.experiment}"


def detect_peak_ipc(oracle, singles: Mapping[str, float] | None = None, candidates: Sequence[str] | None = None, *,
                    starts: int = 3, max_size: int = 16, min_gain: float = 0.01, confirm: int = 3) -> PeakIPC:
    """Greedy IPC maximisation over instructions whose single inverse throughput is below 1;
    the result is the best probe's median IPC over ``confirm`` layouts (1: as measured)."""
    names = list(candidates if candidates is not None else (singles or {}).keys() or oracle.instructions)
    if singles is None:
        singles = dict(zip(names, oracle.measure([Experiment({n: 1}) for n in names])))
    fast = sorted((n for n in names if 0 < singles[n] < 1.0), key=lambda n: (singles[n], n))
    # a climb starts from a fast instruction and adds any of at most one cycle: a one-port
    # instruction fills the ports the fast ones leave idle ({add on 3 ports: 3, load: 1} runs 4
    # per cycle where the adds alone reach 3)
    addable = sorted((n for n in names if 0 < singles[n] <= 1.05), key=lambda n: (singles[n], n))   # noise
    if not fast:
        raise ValidationError("peak IPC: no instruction with an inverse throughput below 1 cycle to start from")
    if confirm < 1:
        raise ValidationError(f"peak IPC: confirm must be at least 1 layout, got {confirm}")
    count = 0
    accepted: dict[Experiment, float] = {}   # every probe a climb stood on → its measured tp⁻¹
    for start in fast[:max(1, starts)]:
        current = {start: max(1, round(1 / singles[start]))}
        e = Experiment(current)
        tp = oracle.measure([e])[0]
        ipc = e.size / tp
        accepted[e] = tp
        count += 1
        while sum(current.values()) < max_size:
            trials = []
            for n in addable:
                trial = dict(current)
                trial[n] = trial.get(n, 0) + 1
                trials.append(Experiment(trial))
            vals = oracle.measure(trials)
            count += len(trials)
            gains = [(t.size / v, t, v) for t, v in zip(trials, vals) if v > 0]
            top_ipc, top, top_tp = max(gains, key=lambda g: g[0])
            if top_ipc <= ipc * (1 + min_gain):
                break
            ipc, current = top_ipc, dict(top.items())
            accepted[top] = top_tp
    probes = list(accepted)
    again = [scaled(e, k) for k in range(2, confirm + 1) for e in probes]
    values = oracle.measure(again) if again else []
    count += len(again)
    n = len(probes)

    def confirmed(j: int, e: Experiment) -> float:
        per_copy = [accepted[e]] + [values[(k - 2) * n + j] / k for k in range(2, confirm + 1)]
        per_copy = [v for v in per_copy if v == v and v > 0]
        return e.size / statistics.median(per_copy) if per_copy else 0.0

    ipc, best = max(((confirmed(j, e), e) for j, e in enumerate(probes)), key=lambda x: x[0])
    return PeakIPC(ipc, best, count, tuple(accepted.items()))
