"""The pluggable DEAP ``map``: fitness evaluation is the only parallel part, handed out in
chunks so that a worker's cost per task is large against the cost of sending it. Any
:class:`pmsolve.executor.Executor` is such a map."""

from __future__ import annotations

from typing import Any, Callable, Iterable

MapFn = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]


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
