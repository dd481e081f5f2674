"""Peak IPC detection (dissertation sec. 4.3 / 6.2.3): the front-end limit R_max, measured.

Start from one fast instruction repeated until it needs about one cycle, then greedily add
copies of the remaining fast instructions while the observed instructions per cycle grow; do
this from several starting instructions and keep the highest IPC. Works with any oracle (the
simulated one in tests, the hardware oracle on a machine); every round is one batched call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from pmsolve.errors import ValidationError
from pmsolve.model import Experiment


@dataclass(frozen=True)
class PeakIPC:
    ipc: float
    experiment: Experiment
    measurements: int

    def __str__(self) -> str:
        return f"peak IPC {self.ipc:.2f} with {self.experiment}"


def detect_peak_ipc(oracle, singles: Mapping[str, float] | None = None, candidates: Sequence[str] | None = None, *,
                    starts: int = 3, max_size: int = 16, min_gain: float = 0.01) -> PeakIPC:
    """Greedy IPC maximisation over instructions whose single inverse throughput is below 1."""
    names = list(candidates if candidates is not None else (singles or {}).keys() or oracle.instructions)
    if singles is None:
        singles = dict(zip(names, oracle.measure([Experiment({n: 1}) for n in names])))
    fast = sorted((n for n in names if 0 < singles[n] < 1.0), key=lambda n: (singles[n], n))
    if not fast:
        raise ValidationError("peak IPC: no instruction with an inverse throughput below 1 cycle to start from")
    count = 0
    best: tuple[float, Experiment] | None = None
    for start in fast[:max(1, starts)]:
        current = {start: max(1, round(1 / singles[start]))}
        e = Experiment(current)
        ipc = e.size / oracle.measure([e])[0]
        count += 1
        while sum(current.values()) < max_size:
            trials = []
            for n in fast:
                trial = dict(current)
                trial[n] = trial.get(n, 0) + 1
                trials.append(Experiment(trial))
            vals = oracle.measure(trials)
            count += len(trials)
            gains = [(t.size / v, t) for t, v in zip(trials, vals) if v > 0]
            top_ipc, top = max(gains, key=lambda g: g[0])
            if top_ipc <= ipc * (1 + min_gain):
                break
            ipc, current = top_ipc, dict(top.items())
        if best is None or ipc > best[0]:
            best = (ipc, Experiment(current))
    assert best is not None
    return PeakIPC(best[0], best[1], count)
