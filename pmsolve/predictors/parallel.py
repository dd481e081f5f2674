"""Evaluating many blocks with several predictors at once: chunked, in threads, never stopping.

The tools run in subprocesses (llvm-mca, OSACA's workers, commands), so threads overlap them
well. Each predictor's blocks are split into chunks; chunks of all predictors run on a pool
of ``workers`` threads, at most ``predictor.max_workers`` at a time for one predictor (1 for a
callable that is not thread-safe). Predictors marked ``exclusive`` (the hardware) run after the
others, alone, so nothing disturbs their measurements. Anything a predictor raises, and any
answer of the wrong shape, becomes an error on the blocks of that chunk: a campaign goes on.
Identical blocks (same :attr:`Block.key`) are predicted once.

With an :class:`~pmsolve.executor.Executor` (process pool or Dask), the chunks of every
predictor that can be pickled run on its workers instead; a cached predictor's misses are sent
and each chunk's answers are written to the cache as soon as it comes back, so a worker lost
mid-run costs only its unfinished chunks. Predictors that cannot travel (OSACA's own process
pool, the hardware) stay in the calling process as above.
"""

from __future__ import annotations

import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Callable, Sequence

from pmsolve.predictors.block import Block
from pmsolve.predictors.base import Prediction, Predictor, error_kind

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


def _portable(p: Any) -> bool:
    """Whether a predictor can be sent to another process (cached: its inner predictor)."""
    try:
        pickle.dumps(getattr(p, "inner", p))
    except Exception:  # noqa: BLE001 - locks, pools, open files: stays local
        return False
    return True


def _remote_chunk(*args: Any) -> tuple[list[Prediction], float]:
    """A task: ``args`` = the predictors, then (which predictor, its chunk of blocks); answers
    and the seconds they took on the worker."""
    which, part = args[-1]
    t0 = time.monotonic()
    return _guarded(args[which], part), time.monotonic() - t0


def _run_remote(executor: Any, predictors: Sequence[Predictor], todo: list[Block], size: int,
                results: dict[str, dict[str, Prediction]], progress: Progress | None) -> None:
    """Every predictor's answers for ``todo`` through ``executor``, cached ones from and to their cache."""
    inners, tasks, caches = [], [], []
    for p in predictors:
        cache = getattr(p, "cache", None) if hasattr(p, "inner") else None
        miss = todo
        if cache is not None:
            known = cache.get(p.name, (b.key for b in todo))
            known = {k: a for k, a in known.items() if error_kind(a.error) not in getattr(p, "retry", ())}
            results[p.name].update(known)
            miss = [b for b in todo if b.key not in known]
            with p._lock:  # noqa: SLF001 - keep the wrapper's hit/miss counters right
                p.hits += len(todo) - len(miss)
                p.misses += len(miss)
        k = len(inners)
        inners.append(getattr(p, "inner", p))
        caches.append(cache)
        tasks += [(i // size, k, miss[i:i + size]) for i in range(0, len(miss), size)]
    # interleave predictors so every tool makes progress from the start
    tasks = [(k, part) for _, k, part in sorted(tasks, key=lambda t: t[:2])]
    done = {p.name: len(results[p.name]) for p in predictors}

    def store(idx: int, got: tuple[list[Prediction], float]) -> None:
        (k, part), (answers, seconds) = tasks[idx], got
        p = predictors[k]
        if caches[k] is not None:
            caches[k].put(p.name, list(zip(part, answers)), seconds)
        results[p.name].update((b.key, a) for b, a in zip(part, answers))
        done[p.name] += len(part)
        if progress:
            progress(p.name, done[p.name], len(todo))

    executor.map(partial(_remote_chunk, *inners), tasks, on_result=store)


def predict_many(predictors: Sequence[Predictor], blocks: Sequence[Block], *, workers: int = 2,
                 chunk: int = 64, progress: Progress | None = None,
                 executor: Any = None) -> dict[str, list[Prediction]]:
    """Every predictor's answer for every block: ``{predictor.name: [Prediction per block]}``.
    A block may be given as AT&T text (``"addq %rax, %rbx; imulq %rcx, %rdx"``, :meth:`Block.parse`)."""
    blocks = [Block.parse(b) if isinstance(b, str) else b for b in blocks]
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
    if executor is not None and getattr(executor, "kind", "serial") != "serial" and todo:
        remote = [p for p in shared if _portable(p)]
        shared = [p for p in shared if not any(p is r for r in remote)]
        failed: list[BaseException] = []

        def far() -> None:
            try:
                _run_remote(executor, remote, todo, size, results, progress)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                failed.append(exc)

        remote_thread = threading.Thread(target=far, name="pmsolve-remote-predict")
        remote_thread.start()
    else:
        remote_thread = None
    if shared and parts:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            # interleave predictors so every tool makes progress from the start
            jobs = [pool.submit(run, p, part) for part in parts for p in shared]
            try:
                for j in jobs:
                    j.result()
            except KeyboardInterrupt:   # Ctrl-C: start nothing more (the calls running end on their own)
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    if remote_thread is not None:
        remote_thread.join()
        if failed:
            raise failed[0]
    for p in alone:
        for part in parts:
            run(p, part)
    return {p.name: [results[p.name][b.key] for b in blocks] for p in predictors}
