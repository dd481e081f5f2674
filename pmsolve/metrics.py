"""Accuracy metrics of predicted against measured throughputs, and the papers' heat maps.

MAPE is the mean of |predicted − measured| / measured; Pearson's r measures linear agreement;
Kendall's τ-b measures whether the predictor orders experiments like the hardware does (the
metric the PMEvo and AnICA papers lead with, robust to a constant factor).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
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


def heatmap(series: dict[str, Sequence[float]], measured: Sequence[float], path: str | Path,
            title: str = "", bins: int = 60) -> None:
    """Write a PNG with one 2-D histogram per predictor of predicted vs measured cycles, on a
    log colour scale with the diagonal drawn, like the figures of the PMEvo and AnICA papers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    m = np.asarray(measured, dtype=np.float64)
    preds = {k: np.asarray(v, dtype=np.float64) for k, v in series.items()}
    hi = float(np.quantile(np.concatenate([m, *preds.values()]), 0.995)) * 1.05
    fig, axes = plt.subplots(1, len(preds), figsize=(4.6 * len(preds), 4.2), squeeze=False)
    edges = np.linspace(0, hi, bins + 1)
    for ax, (name, p) in zip(axes[0], preds.items()):
        # outliers beyond the 99.5 % quantile are drawn in the outermost bins, not dropped
        counts, _, _ = np.histogram2d(np.clip(m, 0, hi), np.clip(p, 0, hi), bins=[edges, edges])
        img = ax.pcolormesh(edges, edges, counts.T, norm=LogNorm(vmin=1, vmax=max(counts.max(), 1)),
                            cmap="viridis")
        ax.plot([0, hi], [0, hi], color="grey", lw=0.8, ls="--")
        acc = accuracy(p, m)
        ax.set_title(f"{name}\nMAPE {100 * acc.mape:.1f} %, τ {acc.kendall_tau_b:.2f}", fontsize=10)
        ax.set_xlabel("measured cycles / iteration")
        ax.set_ylabel("predicted cycles / iteration")
        ax.set_aspect("equal")
        fig.colorbar(img, ax=ax, label="experiments", shrink=0.8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
