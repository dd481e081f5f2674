"""One way to fan work out: serial, a local process pool, or a Dask cluster.

Everything in pmsolve that evaluates many independent items (PMEvo fitness chunks, AnICA
predictor chunks, batch throughputs, independent CEGIS runs) takes an :class:`Executor`, so the
same code runs in-process, on the cores of one machine, or on a cluster, and gives the same
results: every task is a pure function of its arguments, results come back in input order,
and callers derive randomness from seeds, never from which worker ran what.

``map(fn, items, on_result=...)`` hands each finished result to ``on_result`` in the calling
process as soon as it arrives, so callers persist finished work (measurement and prediction
stores) before the rest is done. A lost worker costs only its unfinished tasks: Dask
reschedules them on the other workers (up to ``retries`` times per task), and the pool backend
replaces a broken pool and resubmits what had not finished.

>>> with open_executor(workers=2) as ex:                       # doctest: +SKIP
...     ex.map(abs, [-1, -2, 3])
[1, 2, 3]
>>> open_executor(scheduler="tcp://10.0.0.1:8786")             # doctest: +SKIP
>>> open_executor(kind="dask", workers=4)                      # a LocalCluster on loopback
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib.util
import logging
import multiprocessing
import os
import signal
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterable, Iterator, Sequence

from pmsolve.errors import PmsolveError, ValidationError

KINDS = ("auto", "serial", "pool", "dask")
ENV_VAR = "PMSOLVE_EXECUTOR"
#: on_result(index of the item, its result): called in the caller's process as results arrive
OnResult = Callable[[int, Any], None]


class Executor:
    """The interface: ``map`` (ordered results, optional streaming callback) and ``close``."""

    kind = "serial"
    workers = 1

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, on_result: OnResult | None = None) -> list[Any]:
        out = []
        for k, item in enumerate(items):
            r = fn(item)
            if on_result:
                on_result(k, r)
            out.append(r)
        return out

    def close(self) -> None:
        pass

    def describe(self) -> str:
        return f"{self.kind} ({self.workers} worker{'s' if self.workers != 1 else ''})"

    def __call__(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """A plain ``map`` (DEAP's ``toolbox.map`` signature)."""
        return self.map(fn, items)

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SerialExecutor(Executor):
    """In the calling process, in order (the reference every other backend must match)."""


class PoolExecutor(Executor):
    """A local process pool (fork on Linux: workers inherit the loaded modules).

    A worker that dies breaks a ``ProcessPoolExecutor``; the pool is then replaced and the
    unfinished items resubmitted (at most ``retries`` times), so finished results are kept."""

    kind = "pool"

    def __init__(self, workers: int, retries: int = 3):
        if workers < 1:
            raise ValidationError(f"workers must be at least 1, got {workers}")
        self.workers, self.retries = workers, retries
        self._pool: ProcessPoolExecutor | None = None

    def _get(self) -> ProcessPoolExecutor:
        if self._pool is None:
            method = "fork" if sys.platform.startswith("linux") else "spawn"
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context(method),
                                             initializer=_leave_ctrl_c_to_the_caller)
        return self._pool

    def worker_pids(self) -> list[int]:
        """The pool's worker processes (for tests that kill one)."""
        return sorted(self._get()._processes)  # noqa: SLF001 - no public accessor

    def map(self, fn, items, *, on_result=None):
        items = list(items)
        results: dict[int, Any] = {}
        failures = 0
        while len(results) < len(items):
            pool = self._get()
            futures = {pool.submit(fn, items[k]): k for k in range(len(items)) if k not in results}
            broken = False
            pending = set(futures)
            while pending:
                try:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                except KeyboardInterrupt:
                    self._abort()
                    raise
                for f in done:
                    try:
                        r = f.result()
                    except BrokenProcessPool:
                        broken = True
                        continue
                    results[futures[f]] = r
                    if on_result:
                        on_result(futures[f], r)
            if broken:
                failures += 1
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None
                if failures > self.retries:
                    raise PmsolveError(f"process pool: a worker died {failures} times; "
                                       f"{len(items) - len(results)} of {len(items)} tasks unfinished")
        return [results[k] for k in range(len(items))]

    def _abort(self) -> None:
        """Ctrl-C: end the workers now instead of letting them finish their tasks."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        for proc in list(getattr(pool, "_processes", {}).values()):  # noqa: SLF001 - no public way
            proc.terminate()
        pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


@contextlib.contextmanager
def _ctrl_c_left_to_the_caller() -> Iterator[None]:
    """Processes started inside the block ignore SIGINT (an ignored signal stays ignored across
    exec, and Python then installs no KeyboardInterrupt handler): a terminal's Ctrl-C reaches the
    whole process group, and Dask's nannies and workers printed a traceback each."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _leave_ctrl_c_to_the_caller() -> None:
    """In a pool worker: a terminal's Ctrl-C reaches the whole process group; the calling
    process decides what it means (and stops the pool), the worker must not die of it midway
    through a task with a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _apply(fn: Callable, args: tuple, kwargs: dict, item: Any) -> Any:
    return fn(*args, item, **kwargs)


class DaskExecutor(Executor):
    """Dask distributed: a running scheduler (``tcp://HOST:PORT``; its workers need pmsolve
    installed) or a ``LocalCluster`` of ``workers`` single-threaded processes on loopback.

    The large, shared part of a task (the bound arguments of a ``functools.partial``, e.g.
    PMEvo's evaluator or a predictor) is scattered to the workers once, not sent per task."""

    kind = "dask"

    def __init__(self, scheduler: str | None = None, workers: int = 2, retries: int = 3):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise PmsolveError("the dask executor needs Dask: pip install 'pmsolve[dask]' "
                               "(or pip install 'dask[distributed]')") from None
        self.retries = retries
        self.cluster = None
        if scheduler:
            try:
                self.client = Client(scheduler, timeout=10)
            except OSError as exc:
                raise PmsolveError(f"cannot reach Dask scheduler {scheduler}: {exc}") from None
            self.workers = max(1, len(self.client.scheduler_info().get("workers", {})))
        else:
            if workers < 1:
                raise ValidationError(f"workers must be at least 1, got {workers}")
            import dask

            # Dask's nannies set MALLOC_TRIM_THRESHOLD_, which turns off glibc's dynamic mmap
            # threshold: every large numpy temporary is then mapped and unmapped afresh, and
            # PMEvo's fitness ran 3x slower per individual than in-process. Leave malloc alone.
            environ = {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ").items()
                       if not k.startswith("MALLOC_")}
            with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}), _ctrl_c_left_to_the_caller():
                self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                            host="127.0.0.1", dashboard_address=None,
                                            silence_logs=logging.ERROR, memory_limit=0)
            self.client = Client(self.cluster)
            self.workers = workers
        self._scattered: dict[int, tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    def _remote(self, obj: Any) -> Any:
        """A future for ``obj`` on every worker, scattered once per object."""
        with self._lock:
            hit = self._scattered.get(id(obj))
            if hit is None or hit[0] is not obj:
                hit = (obj, self.client.scatter(obj, broadcast=True, hash=False))
                self._scattered.pop(id(obj), None)
                self._scattered[id(obj)] = hit
                while len(self._scattered) > 32:  # release the oldest (per-call arguments)
                    self._scattered.pop(next(iter(self._scattered)))
            return hit[1]

    def map(self, fn, items, *, on_result=None):
        from distributed import as_completed

        items = list(items)
        if not items:
            return []
        if isinstance(fn, functools.partial) and fn.args:
            func, kwargs = fn.func, dict(fn.keywords)
            args = tuple(a if isinstance(a, (int, float, str, bytes, type(None))) else self._remote(a) for a in fn.args)
        else:
            func, args, kwargs = fn, (), {}
        futures = [self.client.submit(_apply, func, args, kwargs, item, pure=False, retries=self.retries)
                   for item in items]
        index = {f.key: k for k, f in enumerate(futures)}
        results: dict[int, Any] = {}
        for f in as_completed(futures):
            k = index[f.key]
            try:
                results[k] = f.result()
            except Exception as exc:
                if type(exc).__name__ != "KilledWorker":
                    raise
                for g in futures:
                    g.cancel()
                raise PmsolveError(f"dask: task {k + 1} of {len(items)} killed its worker {self.retries + 1} times "
                                   f"or more ({exc}); {len(results)} finished results were kept") from None
            if on_result:
                on_result(k, results[k])
        return [results[k] for k in range(len(items))]

    def worker_pids(self) -> list[int]:
        return sorted(self.client.run(os.getpid).values())

    def describe(self) -> str:
        where = self.client.scheduler.address if self.cluster is None else "LocalCluster on 127.0.0.1"
        return f"dask ({self.workers} workers, {where})"

    def close(self) -> None:
        self._scattered.clear()
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def dask_available() -> bool:
    return importlib.util.find_spec("distributed") is not None


def open_executor(kind: str | None = None, *, workers: int = 1, scheduler: str | None = None,
                  retries: int = 3) -> Executor:
    """The executor a (kind, workers, scheduler) triple names.

    ``auto`` (default; else ``$PMSOLVE_EXECUTOR``): Dask when a scheduler is given, serial for
    one worker, else a local process pool (it starts in milliseconds; a LocalCluster takes
    seconds). ``dask`` without a scheduler starts a LocalCluster of ``workers`` processes."""
    kind = (kind or os.environ.get(ENV_VAR) or "auto").lower()
    if kind not in KINDS:
        raise ValidationError(f"unknown executor {kind!r}: choose one of {', '.join(KINDS)}")
    if workers < 1:
        raise ValidationError(f"workers must be at least 1, got {workers}")
    if scheduler and kind not in ("auto", "dask"):
        raise ValidationError(f"a scheduler needs the dask executor, not {kind!r}")
    if kind == "auto":
        kind = "dask" if scheduler else ("serial" if workers == 1 else "pool")
    if kind == "serial":
        return SerialExecutor()
    if kind == "pool":
        return PoolExecutor(workers, retries)
    return DaskExecutor(scheduler, workers, retries)


_CURRENT: contextvars.ContextVar[Executor | None] = contextvars.ContextVar("pmsolve_executor", default=None)


@contextlib.contextmanager
def use_executor(executor: Executor) -> Iterator[Executor]:
    """Make ``executor`` the ambient one (:func:`current_executor`) inside the block: how a
    caller's choice of executor reaches library code that was not handed one."""
    token = _CURRENT.set(executor)
    try:
        yield executor
    finally:
        _CURRENT.reset(token)


def current_executor() -> Executor | None:
    return _CURRENT.get()


def chunked(items: Sequence[Any], size: int) -> list[list[Any]]:
    """Contiguous parts of at most ``size`` items (order kept): the unit of a task."""
    size = max(1, size)
    return [list(items[i:i + size]) for i in range(0, len(items), size)]
