"""Two chunks of the characterisation at once (issue 41): while the worker measures one chunk's
batch, the parent analyses the other chunk's last one.

A chunk's analysis between its measurement batches (fits, placements, checks) took about half
of a ``--all`` characterisation on the Zen 5 (a17: worker busy 59 % of it), and the worker sat
idle meanwhile. Here each chunk runs in a thread of its own and hands its batches to the thread
that iterates :func:`overlapped`, which measures them one batch at a time in arrival order: the
oracle (its SQLite store, its worker process) is used from that thread only, and while it waits
for the worker it holds no lock, so the other chunk's analysis runs.

A chunk's result depends on its own measurements alone, and an oracle answers an experiment
alike whenever it is asked (the store; the simulated oracle seeds its noise by the experiment),
so the results are those of one chunk at a time, and come out in chunk order. The chunks'
threads keep off the worker's CPU (:meth:`pmsolve.harness.hardware.HardwareOracle.off_worker_cpus`):
they now run while it measures.
"""

from __future__ import annotations

import os
import queue
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from pmsolve.model import Experiment

T = TypeVar("T")

#: chunks in flight: one measured while the other is analysed
DEPTH = 2
#: the interpreter's thread switch interval while chunks overlap (seconds; Python's default is
#: 0.005): the measuring thread wakes from the worker's pipe once per experiment, a few
#: milliseconds apart, and must not wait a whole default interval for an analysing thread
SWITCH = 0.0005


class Stopped(Exception):
    """The run stopped (an error or an interrupt elsewhere) while a chunk waited to be measured."""


class Broker:
    """What a chunk's thread measures through: :meth:`measure` posts the batch to the measuring
    thread and waits for its values (exceptions, a :class:`MeasurementError` among them, come back
    the same way)."""

    def __init__(self, oracle: Any):
        self.oracle = oracle
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False

    def measure(self, experiments: Sequence[Experiment]) -> list[float]:
        if self._closed:
            raise Stopped("the characterisation stopped")
        done: Future = Future()
        self._inbox.put((list(experiments), done))
        return done.result()

    def _wake(self, _: Future) -> None:
        self._inbox.put(None)

    def _serve_until(self, job: Future) -> None:
        """Measure the chunks' batches until ``job`` is done."""
        while not job.done():
            item = self._inbox.get()
            if item is None:     # a chunk finished
                continue
            experiments, done = item
            try:
                done.set_result(self.oracle.measure(experiments))
            except BaseException as exc:     # the chunk gets the error; an interrupt stops the run too
                done.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise

    def _close(self, jobs: Iterable[Future]) -> None:
        """Let waiting chunks fail with :class:`Stopped` until every job is done."""
        self._closed = True
        jobs = list(jobs)
        while not all(j.done() for j in jobs):
            try:
                item = self._inbox.get(timeout=0.05)
            except queue.Empty:
                continue
            if item is not None:
                item[1].set_exception(Stopped("the characterisation stopped"))


def overlapped(oracle: Any, jobs: Sequence[Callable[[Any], T]], depth: int | None = None) -> Iterator[T]:
    """Each job's result, in order, with up to ``depth`` (:data:`DEPTH`) jobs at once; a job is
    called with the oracle it must measure through (a :class:`Broker`; ``oracle`` itself where
    ``depth`` is 1)."""
    depth = DEPTH if depth is None else depth
    if depth <= 1:
        for job in jobs:
            yield job(oracle)
        return
    broker = Broker(oracle)
    cpus = _off_worker(oracle)

    def run(job: Callable[[Any], T]) -> T:
        if cpus:
            os.sched_setaffinity(0, cpus)      # this thread
        return job(broker)

    pending: deque[Future] = deque()
    todo = iter(jobs)
    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, SWITCH))
    try:
        with ThreadPoolExecutor(depth, thread_name_prefix="pmsolve-chunk") as pool:
            try:
                while True:
                    for job in todo:
                        f = pool.submit(run, job)
                        f.add_done_callback(broker._wake)
                        pending.append(f)
                        if len(pending) >= depth:
                            break
                    if not pending:
                        return
                    broker._serve_until(pending[0])
                    yield pending.popleft().result()
            finally:
                broker._close(pending)
    finally:
        sys.setswitchinterval(old)


def _off_worker(oracle: Any) -> set[int] | None:
    """The CPUs off the measuring worker's, from the oracle or the oracle it wraps."""
    while oracle is not None:
        if hasattr(oracle, "off_worker_cpus"):
            return oracle.off_worker_cpus() if hasattr(os, "sched_setaffinity") else None
        oracle = getattr(oracle, "inner", None)
    return None
