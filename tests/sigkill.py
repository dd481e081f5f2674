"""Kill a ``pmsolve`` command with SIGKILL at a known point (for the kill -9 resume tests).

The command runs in a child process in which one method (``module:Class.method``, e.g. the
simulated oracle's ``measure`` or a test predictor's ``predict``) is wrapped: every call is
logged (one line per item of its first argument, ``str(item)``), and the ``kill_at``-th call
SIGKILLs the process after computing its answer and before handing it back, the worst moment
for a checkpoint. No sleeps and no races: the point is a call count, the same in every run.
:func:`recording` wraps the same method in-process (for the uninterrupted and the resumed run).
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import importlib, os, signal, sys, threading
target, kill_at, log_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
module, _, attr = target.partition(":")
owner_name, _, method = attr.partition(".")
owner = getattr(importlib.import_module(module), owner_name)
real = getattr(owner, method)
lock, calls, log = threading.Lock(), [0], open(log_path, "a", buffering=1)

def wrapped(self, items, *args, **kwargs):
    out = real(self, items, *args, **kwargs)
    with lock:
        calls[0] += 1
        for x in items:
            log.write(str(x) + "\\n")
        if calls[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)   # the answers exist but are never handed back
    return out

setattr(owner, method, wrapped)
from pmsolve.cli import main
sys.exit(main(sys.argv[4:]))
"""


def run_killed(target: str, kill_at: int, log: Path, argv: list[str]) -> subprocess.CompletedProcess:
    """Run ``pmsolve argv`` with ``target`` wrapped; it must die by SIGKILL at call ``kill_at``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    proc = subprocess.run([sys.executable, "-c", CHILD, target, str(kill_at), str(log), *argv], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr[-2000:])
    return proc


def recording(monkeypatch, target: str) -> list[str]:
    """Log ``target``'s calls in this process as the child does (``str`` of each item)."""
    module, _, attr = target.partition(":")
    owner_name, _, method = attr.partition(".")
    owner = getattr(importlib.import_module(module), owner_name)
    real = getattr(owner, method)
    log: list[str] = []

    def wrapped(self, items, *args, **kwargs):
        out = real(self, items, *args, **kwargs)
        log.extend(str(x) for x in items)
        return out

    monkeypatch.setattr(owner, method, wrapped)
    return log
