"""Picklable helpers for tests/test_executor.py (importable by pool and Dask worker processes)."""

from __future__ import annotations

import os
import threading
import time
from typing import Sequence

import anica_helpers as H
from pmsolve.predictors.block import Block
from pmsolve.predictors.base import Prediction


def slow_square(x: int) -> int:
    time.sleep(0.05)
    return x * x


class SlowPredictor:
    """A genuine mapping predictor that takes ``delay`` seconds per call, so a test can kill a
    worker while calls are in flight."""

    def __init__(self, inner: H.MappingPredictor, delay: float):
        self.inner, self.delay = inner, delay

    @property
    def name(self) -> str:
        return self.inner.name

    def predict(self, blocks: Sequence[Block]) -> list[Prediction]:
        time.sleep(self.delay)
        return self.inner.predict(blocks)


class PidPredictor:
    """Answers with the id of the process that predicted (to see where work ran); a lock in it
    (``local=True``) makes it unpicklable, like OSACA's predictor with its worker pool."""

    def __init__(self, name: str, local: bool = False):
        self._name = name
        self.lock = threading.Lock() if local else None

    @property
    def name(self) -> str:
        return self._name

    def predict(self, blocks: Sequence[Block]) -> list[Prediction]:
        return [Prediction(float(os.getpid())) for _ in blocks]
