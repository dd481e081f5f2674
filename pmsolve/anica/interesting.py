"""Interestingness (sec. 8.1.1) and the parallel, memoised predictor calls it needs.

A block is interesting when a predictor fails on it (crash, timeout, garbage: AnICA counts a
crash as interesting, score ∞) or when the predictions differ by more than the threshold,
relatively (|a − b| / mean(a, b)) or absolutely (|a − b| cycles).
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

from pmsolve.errors import ValidationError
from pmsolve.predictors import predict_many
from pmsolve.predictors.base import Prediction, Predictor
from pmsolve.predictors.block import Block


@dataclass(frozen=True)
class Criterion:
    mode: str = "relative"
    threshold: float = 0.5

    def __post_init__(self) -> None:
        if self.mode not in ("relative", "absolute"):
            raise ValidationError(f"interestingness mode must be 'relative' or 'absolute', got {self.mode!r}")
        if not (self.threshold >= 0):
            raise ValidationError(f"interestingness threshold must be ≥ 0, got {self.threshold}")

    def score(self, a: Prediction, b: Prediction) -> float:
        """The difference (∞ when either predictor failed)."""
        if not a.ok or not b.ok:
            return math.inf
        d = abs(a.cycles - b.cycles)
        if self.mode == "absolute":
            return d
        s = a.cycles + b.cycles
        return 0.0 if s == 0 else 2 * d / s

    def interesting(self, a: Prediction, b: Prediction) -> bool:
        return self.score(a, b) > self.threshold


class PredictorPair:
    """The two predictors AnICA compares (A and B), on batches of blocks split in ``workers``
    parts, in parallel (through :func:`pmsolve.predictors.predict_many`); answers memoised by
    block text. With an ``executor`` (:mod:`pmsolve.executor`) the predictor calls run on its
    workers."""

    def __init__(self, a: Predictor, b: Predictor, criterion: Criterion, workers: int = 2, executor=None):
        self.a, self.b, self.criterion = a, b, criterion
        self.executor = executor
        self.workers = max(1, int(workers), getattr(executor, "workers", 1))
        self._memo: dict[str, tuple[Prediction, Prediction]] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=2 * self.workers)
        self.predicted = 0

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def _submit(self, p: Predictor, blocks: list[Block]) -> list:
        size = max(1, math.ceil(len(blocks) / self.workers))
        return [self._pool.submit(_safe_predict, p, blocks[k:k + size]) for k in range(0, len(blocks), size)]

    def predict(self, blocks: Sequence[Block]) -> list[tuple[Prediction, Prediction]]:
        todo = list({b.key: b for b in blocks if b.key not in self._memo}.values())
        if todo and self.a.name != self.b.name:
            # the predictors package schedules both (exclusive ones, e.g. hardware, alone)

            got = predict_many([self.a, self.b], todo, workers=self.workers,
                               chunk=max(1, min(64, math.ceil(len(todo) / self.workers))), executor=self.executor)
            pa, pb = got[self.a.name], got[self.b.name]
        elif todo:
            fa, fb = self._submit(self.a, todo), self._submit(self.b, todo)
            pa = [x for f in fa for x in f.result()]
            pb = [x for f in fb for x in f.result()]
        if todo:
            with self._lock:
                for blk, x, y in zip(todo, pa, pb):
                    self._memo[blk.key] = (x, y)
                self.predicted += len(todo)
        return [self._memo[b.key] for b in blocks]

    def scores(self, blocks: Sequence[Block]) -> list[float]:
        return [self.criterion.score(x, y) for x, y in self.predict(blocks)]


def _safe_predict(p: Predictor, blocks: list[Block]) -> list[Prediction]:
    """Predictors should never raise for a bad block; if one does, every block of the batch
    gets the error (recorded, and interesting), and the campaign goes on."""
    try:
        out = list(p.predict(blocks))
    except Exception as exc:  # noqa: BLE001 - a predictor bug must not end the campaign
        return [Prediction(None, f"crash: {type(exc).__name__}: {exc}")] * len(blocks)
    if len(out) != len(blocks):
        return [Prediction(None, f"garbage: {len(out)} answers for {len(blocks)} blocks")] * len(blocks)
    return [x if isinstance(x, Prediction) else Prediction(None, f"garbage: {x!r}") for x in out]
