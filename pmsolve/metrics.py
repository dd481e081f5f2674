"""Accuracy metrics of predicted against measured throughputs (heat maps: pmsolve.leaderboard).

MAPE is the mean of |predicted − measured| / measured; Pearson's r measures linear agreement;
Kendall's τ-b measures whether the predictor orders experiments like the hardware does (the
metric the PMEvo and AnICA papers lead with, robust to a constant factor).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from pmsolve.errors import ValidationError


@dataclass(frozen=True)
class Accuracy:
    n: int
    mape: float
    pearson: float
    kendall_tau_b: float

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return (f"n={self.n}  MAPE={100 * self.mape:.1f} %  Pearson={self.pearson:.3f}  "
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
    p, m = _arrays(predicted, measured)
    return float(np.mean(np.abs(p - m) / m))


def pearson(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """Pearson's r; NaN when either series is constant (correlation undefined)."""
    p, m = _arrays(predicted, measured)
    if np.ptp(p) == 0 or np.ptp(m) == 0:
        return float("nan")
    return float(np.corrcoef(p, m)[0, 1])


def kendall_tau_b(predicted: Sequence[float], measured: Sequence[float]) -> float:
    from scipy.stats import kendalltau

    p, m = _arrays(predicted, measured)
    return float(kendalltau(p, m, variant="b").statistic)


def accuracy(predicted: Sequence[float], measured: Sequence[float]) -> Accuracy:
    return Accuracy(len(predicted), mape(predicted, measured), pearson(predicted, measured),
                    kendall_tau_b(predicted, measured))
