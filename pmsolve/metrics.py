"""Accuracy metrics of predicted against measured throughputs (heat maps: pmsolve.leaderboard).

MAPE is the mean of |predicted − measured| / measured, kept as a **fraction** (0.137) in every
value and JSON field named ``mape``; displays show percent (``mape_percent``, "13.7 %").
Pearson's r measures linear agreement; Kendall's τ-b measures whether the predictor orders
experiments like the hardware does (the metric the PMEvo and AnICA papers lead with, robust to a
constant factor). :func:`report` adds the experiments behind the numbers: ``worst(k)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from pmsolve.errors import ValidationError

# What one measurement resolves, in cycles: the precision of published throughput tables
# (uops.info, Agner Fog: two decimals), and about the harness's noise at 1-2 cycles. Kendall's
# τ-b is also given on measurements rounded to it: raw measurements tie no pair, so a predictor
# that ties many pairs (a port mapping predicts a few fractions) cannot reach a high raw τ-b
# however right it is (see tau_b_ceiling). It is the dissertation's τ_K (sec. 3.2.2: τ-b on
# measurements rounded to the second decimal place). Measured model parameters are kept to it
# too (pmsolve.modelled.resolved).
RESOLUTION = 0.01


@dataclass(frozen=True)
class Accuracy:
    """n experiments; ``mape`` a fraction (see module doc); Pearson's r; Kendall's τ-b."""

    n: int
    mape: float
    pearson: float
    kendall_tau_b: float

    @property
    def mape_percent(self) -> float:
        return 100 * self.mape

    def to_json(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return (f"n={self.n}  MAPE={self.mape_percent:.1f} %  Pearson={self.pearson:.3f}  "
                f"Kendall τ-b={self.kendall_tau_b:.3f}")


def _arrays(predicted: Sequence[float], measured: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(predicted, dtype=np.float64)
    m = np.asarray(measured, dtype=np.float64)
    if p.shape != m.shape or p.ndim != 1 or len(p) == 0:
        raise ValidationError(f"need equally long non-empty series, got {p.shape} and {m.shape}")
    if not np.all(m > 0):
        raise ValidationError("measured throughputs must be positive")
    return p, m


def mape(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """Mean absolute percentage error as a fraction (0.05 is 5 %)."""
    p, m = _arrays(predicted, measured)
    return float(np.mean(np.abs(p - m) / m))


def pearson(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """Pearson's r; NaN when either series is constant (correlation undefined)."""
    p, m = _arrays(predicted, measured)
    if np.ptp(p) == 0 or np.ptp(m) == 0:
        return float("nan")
    return float(np.corrcoef(p, m)[0, 1])


def kendall_tau_b(predicted: Sequence[float], measured: Sequence[float], resolution: float | None = None) -> float:
    """Kendall's τ-b; with ``resolution`` (cycles), measurements are first rounded to multiples of
    it, so that two measurements closer than the measuring precision count as a tie, not as an
    order the predictor must reproduce."""
    from scipy.stats import kendalltau  # lazily: scipy.stats takes ~1 s to import

    p, m = _arrays(predicted, measured)
    if resolution is not None:
        if not resolution > 0:
            raise ValidationError(f"resolution must be positive, got {resolution}")
        m = np.round(m / resolution)
    return float(kendalltau(p, m, variant="b").statistic)


def tau_b_ceiling(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """The largest τ-b any measurements of these experiments could give with these predictions:
    with n0 pairs, a = n0 − (pairs the prediction ties) and b = n0 − (pairs the measurements
    tie), at most min(a, b) pairs are concordant, so τ-b ≤ min(a, b) / sqrt(a·b). A predictor
    with few distinct values (a port mapping's are multiples of small fractions) cannot order
    the pairs it ties, however right it is, while noisy measurements tie almost none."""
    p, m = _arrays(predicted, measured)
    n0 = len(p) * (len(p) - 1) / 2

    def tied(x: np.ndarray) -> float:
        _, c = np.unique(x, return_counts=True)
        return float((c * (c - 1) / 2).sum())

    a, b = n0 - tied(p), n0 - tied(m)
    return float(min(a, b) / np.sqrt(a * b)) if a > 0 and b > 0 else float("nan")


def accuracy(predicted: Sequence[float], measured: Sequence[float]) -> Accuracy:
    return Accuracy(len(predicted), mape(predicted, measured), pearson(predicted, measured),
                    kendall_tau_b(predicted, measured))


@dataclass(frozen=True)
class Deviation:
    """One experiment's prediction against its measurement; ``error`` is relative (a fraction)."""

    experiment: Any
    predicted: float
    measured: float

    @property
    def error(self) -> float:
        return abs(self.predicted - self.measured) / self.measured

    def __str__(self) -> str:
        off = 100 * (self.predicted - self.measured) / self.measured
        return f"{self.experiment}: predicted {self.predicted:.4g}, measured {self.measured:.4g} ({off:+.1f} %)"


@dataclass(frozen=True)
class Report:
    """The accuracy of predictions against measurements, with the experiments behind it."""

    accuracy: Accuracy
    deviations: tuple[Deviation, ...]

    def worst(self, k: int = 10) -> list[Deviation]:
        """The k experiments with the largest relative error, worst first."""
        if k < 0:
            raise ValidationError(f"k must be ≥ 0, got {k}")
        return sorted(self.deviations, key=lambda x: -x.error)[:k]

    def __str__(self) -> str:
        return "\n".join([str(self.accuracy), "worst:"] + [f"  {x}" for x in self.worst(5)])


def report(experiments: Sequence[Any], predicted: Sequence[float], measured: Sequence[float]) -> Report:
    """An evaluation report: `accuracy` of the predictions, and per experiment its deviation."""
    p, m = _arrays(predicted, measured)
    if len(experiments) != len(p):
        raise ValidationError(f"{len(experiments)} experiments for {len(p)} predictions")
    return Report(accuracy(p, m), tuple(Deviation(e, float(a), float(b)) for e, a, b in zip(experiments, p, m)))
