"""The parent side of the measurement worker protocol (the child side is
:mod:`pmsolve.harness.worker`): start the worker process, send it pickled requests over stdin,
read its pickled replies from stdout, and turn its death into :class:`WorkerDied`.

Generated code runs only in the worker, so a kernel that faults (SIGILL, SIGSEGV) or never ends
costs one experiment, not the campaign: the oracle starts a fresh worker and goes on.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import subprocess
import sys
from pathlib import Path

from pmsolve.errors import MeasurementError


class WorkerDied(Exception):
    """The worker process ended (a signal, an exit, or killed after a timeout)."""


class WorkerProcess:
    """A measurement worker process; :meth:`call` raises :class:`WorkerDied` when it dies."""

    def __init__(self, cpu: int | None = None):
        env = dict(os.environ)
        if cpu is not None:
            env["PMSOLVE_WORKER_CPU"] = str(cpu)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        # its own session: a terminal's Ctrl-C must not kill it mid-kernel (that would look like
        # a fault of the experiment); the caller handles Ctrl-C and closes it
        self.proc = subprocess.Popen([sys.executable, "-m", "pmsolve.harness.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, start_new_session=True)
        hello = self._read()
        self.pid = hello["pid"]

    def _read(self) -> dict:
        try:
            return pickle.load(self.proc.stdout)
        except (EOFError, pickle.UnpicklingError):
            code = self.proc.wait()
            raise WorkerDied(_signal_name(code)) from None

    def call(self, msg: dict, timeout: float | None = None) -> dict:
        """Send a request and wait for its reply; a worker silent for ``timeout`` seconds (a
        kernel that never ends) is killed and reported as :class:`WorkerDied`."""
        try:
            pickle.dump(msg, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerDied(_signal_name(self.proc.wait())) from None
        if timeout is not None:
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            if not ready:
                self.proc.kill()
                self.proc.wait()
                raise WorkerDied(f"timeout: the kernel did not finish within {timeout:g} s")
        reply = self._read()
        if not reply.get("ok"):
            raise MeasurementError(f"worker: {reply.get('error')}")
        return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.call({"op": "quit"})
            except (WorkerDied, MeasurementError):
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _signal_name(code: int) -> str:
    if code is not None and code < 0:
        try:
            return f"the kernel crashed the worker with {signal.Signals(-code).name}"
        except ValueError:
            return f"the worker died with signal {-code}"
    return f"the worker exited with code {code}"
