"""Evaluating many blocks with several predictors at once: chunked, in threads, never stopping.

The tools run in subprocesses (llvm-mca, OSACA's workers, commands), so threads overlap them
well. Each predictor's blocks are split into chunks; chunks of all predictors run on a pool
of ``workers`` threads, at most ``predictor.max_workers`` at a time for one predictor (1 for a
callable that is not thread-safe). Predictors marked ``exclusive`` (the hardware) run after the
others, alone, so nothing disturbs their measurements. Anything a predictor raises, and any
answer of the wrong shape, becomes an error on the blocks of that chunk: a campaign goes on.
Identical blocks (same :attr:`Block.key`) are predicted once.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

from pmsolve.anica.block import Block
from pmsolve.anica.predictors.base import Prediction, Predictor

#: progress(predictor name, blocks done for it, its total)
Progress = Callable[[str, int, int], None]


def _guarded(p: Predictor, chunk: Sequence[Block]) -> list[Prediction]:
    try:
        answers = list(p.predict(chunk))
    except Exception as exc:  # noqa: BLE001 - a crash of the tool is a result
        return [Prediction(None, f"crash: {p.name} raised {type(exc).__name__}: {exc}"[:300])] * len(chunk)
    if len(answers) != len(chunk) or not all(isinstance(a, Prediction) for a in answers):
        return [Prediction(None, f"garbage: {p.name} gave {len(answers)} answers for {len(chunk)} blocks")] * len(chunk)
    return answers


def predict_many(predictors: Sequence[Predictor], blocks: Sequence[Block], *, workers: int = 2,
                 chunk: int = 64, progress: Progress | None = None) -> dict[str, list[Prediction]]:
    """Every predictor's answer for every block: ``{predictor.name: [Prediction per block]}``."""
    unique: dict[str, Block] = {}
    for b in blocks:
        unique.setdefault(b.key, b)
    todo = list(unique.values())
    results: dict[str, dict[str, Prediction]] = {p.name: {} for p in predictors}
    done = {p.name: 0 for p in predictors}
    lock = threading.Lock()
    limits = {p.name: threading.Semaphore(max(1, getattr(p, "max_workers", None) or workers)) for p in predictors}

    def run(p: Predictor, part: list[Block]) -> None:
        with limits[p.name]:
            answers = _guarded(p, part)
        with lock:
            results[p.name].update((b.key, a) for b, a in zip(part, answers))
            done[p.name] += len(part)
            n = done[p.name]
        if progress:
            progress(p.name, n, len(todo))

    size = max(1, chunk)
    parts = [todo[i:i + size] for i in range(0, len(todo), size)]
    shared = [p for p in predictors if not getattr(p, "exclusive", False)]
    alone = [p for p in predictors if getattr(p, "exclusive", False)]
    if shared and parts:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            # interleave predictors so every tool makes progress from the start
            jobs = [pool.submit(run, p, part) for part in parts for p in shared]
            for j in jobs:
                j.result()
    for p in alone:
        for part in parts:
            run(p, part)
    return {p.name: [results[p.name][b.key] for b in blocks] for p in predictors}
