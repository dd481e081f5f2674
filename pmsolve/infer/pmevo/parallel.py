"""The pluggable DEAP ``map``: fitness evaluation is the only parallel part, handed out in
chunks so that a worker's cost per task is large against the cost of sending it."""

from __future__ import annotations

import multiprocessing
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

MapFn = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]


def serial_map(func: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    return [func(x) for x in items]


@contextmanager
def local_map(workers: int) -> Iterator[MapFn]:
    """``workers <= 1``: serial. Otherwise a process pool of that size (fork where available,
    since workers need nothing but the pickled chunk)."""
    if workers <= 1:
        yield serial_map
        return
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    pool = multiprocessing.get_context(method).Pool(workers)
    try:
        yield pool.map
    finally:
        pool.terminate()
        pool.join()


def chunks(items: list[Any], n_chunks: int) -> list[list[Any]]:
    """Split into at most ``n_chunks`` contiguous, nearly equal, non-empty parts (order kept)."""
    n_chunks = max(1, min(n_chunks, len(items)))
    size, extra = divmod(len(items), n_chunks)
    out, start = [], 0
    for k in range(n_chunks):
        end = start + size + (1 if k < extra else 0)
        out.append(items[start:end])
        start = end
    return out
