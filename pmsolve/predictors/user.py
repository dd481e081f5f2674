"""Predictors a user brings: a Python callable, or any program speaking a small JSON protocol.

The ``cmd:COMMAND`` protocol (COMMAND is split like a shell would, but run without a shell):
the program is started once per batch, reads one JSON object from stdin::

    {"protocol": "pmsolve-predictor/1",
     "blocks": [{"key": "3f2a...", "asm": "addq %rax, %rbx\\nimulq %rcx, %rdx",
                 "insns": [{"scheme": "add_r64_r64", "asm": "addq %rax, %rbx"}, ...]}, ...]}

and writes one JSON object to stdout, one entry per block, in order::

    {"predictions": [{"cycles": 1.25}, {"error": "cannot handle vpdpbusd"}, ...]}

(a bare list ``[1.25, null, ...]`` is accepted too). ``cycles`` are per block iteration, the
block taken as a loop body. A non-zero exit, a crash, a timeout or output that does not follow
the protocol fails the batch; the batch is then split until the offending blocks stand alone
(:func:`~pmsolve.predictors.base.bisect_failures`) and only they get the error.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any, Callable, Sequence

from pmsolve.predictors.block import Block
from pmsolve.predictors.base import Prediction, bisect_failures, checked
from pmsolve.errors import ValidationError

PROTOCOL = "pmsolve-predictor/1"


class CallablePredictor:
    """A Python function as a predictor. ``fn(block)`` returns cycles (or a Prediction); with
    ``batch=True`` it takes the list of blocks and returns one answer per block. Whatever it
    raises becomes a ``crash`` for that block (or batch), never an exception in a campaign."""

    def __init__(self, name: str, fn: Callable[..., Any], *, batch: bool = False, thread_safe: bool = False):
        if not name or not isinstance(name, str):
            raise ValidationError("a callable predictor needs a non-empty name (the cache keys on it)")
        self._name = name
        self.fn = fn
        self.batch = batch
        # predict_many runs a predictor from several threads only when it says it may
        self.max_workers = None if thread_safe else 1

    @property
    def name(self) -> str:
        return self._name

    def predict(self, blocks: Sequence[Block]) -> list[Prediction]:
        if self.batch:
            return bisect_failures(blocks, self._call_batch)
        out = []
        for b in blocks:
            try:
                out.append(checked(self.fn(b), self._name))
            except Exception as exc:  # noqa: BLE001 - a user's bug is a recorded crash
                out.append(Prediction(None, f"crash: {self._name} raised {type(exc).__name__}: {exc}"[:300]))
        return out

    def _call_batch(self, blocks: Sequence[Block]) -> tuple[list[Prediction], str | None]:
        try:
            answers = list(self.fn(list(blocks)))
        except Exception as exc:  # noqa: BLE001
            return [], f"crash: {self._name} raised {type(exc).__name__}: {exc}"[:300]
        if len(answers) != len(blocks):
            return [], f"garbage: {self._name} gave {len(answers)} answers for {len(blocks)} blocks"
        return [checked(a, self._name) for a in answers], None


def callable_predictor(name: str, fn: Callable[..., Any], *, batch: bool = False,
                       thread_safe: bool = False) -> CallablePredictor:
    """Wrap ``fn`` (see :class:`CallablePredictor`) as a predictor called ``name``."""
    return CallablePredictor(name, fn, batch=batch, thread_safe=thread_safe)


class CommandPredictor:
    """``cmd:COMMAND`` — an external program speaking the protocol in this module's docstring."""

    def __init__(self, command: str | Sequence[str], *, timeout: float = 60.0, per_block_timeout: float = 0.1,
                 batch: int = 500, name: str | None = None):
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise ValidationError("cmd: predictor needs a command, e.g. cmd:'python3 my_predictor.py'")
        self.argv = argv
        self.timeout = timeout
        self.per_block_timeout = per_block_timeout
        self.batch = max(1, batch)
        self._name = name or "cmd:" + shlex.join(argv)
        self.calls = 0

    @property
    def name(self) -> str:
        return self._name

    def predict(self, blocks: Sequence[Block]) -> list[Prediction]:
        return bisect_failures(blocks, self._call, self.batch)

    def _call(self, blocks: Sequence[Block]) -> tuple[list[Prediction], str | None]:
        request = {"protocol": PROTOCOL,
                   "blocks": [{"key": b.key, "asm": b.asm, "insns": b.to_json()} for b in blocks]}
        limit = self.timeout + self.per_block_timeout * len(blocks)
        self.calls += 1
        try:
            p = subprocess.run(self.argv, input=json.dumps(request), capture_output=True, text=True, timeout=limit,
                               start_new_session=True)  # Ctrl-C must not make a "crash" answer
        except subprocess.TimeoutExpired:
            return [], f"timeout: {self.argv[0]} took longer than {limit:g} s"
        except OSError as exc:
            return [], f"crash: cannot run {self.argv[0]}: {exc}"
        if p.returncode != 0:
            tail = " | ".join(p.stderr.strip().splitlines()[-3:])[:200]
            how = f"signal {-p.returncode}" if p.returncode < 0 else f"exit code {p.returncode}"
            return [], f"crash: {self.argv[0]} failed with {how}" + (f": {tail}" if tail else "")
        try:
            reply = json.loads(p.stdout)
        except ValueError:
            return [], f"garbage: {self.argv[0]} wrote no JSON ({p.stdout.strip()[:80]!r})"
        answers = reply.get("predictions") if isinstance(reply, dict) else reply
        if not isinstance(answers, list) or len(answers) != len(blocks):
            return [], f"garbage: {self.argv[0]} did not answer one prediction per block"
        return [self._one(a) for a in answers], None

    def _one(self, a: Any) -> Prediction:
        if isinstance(a, dict):
            if a.get("error"):
                err = str(a["error"])
                return Prediction(None, err if err.split(":", 1)[0] in ("crash", "timeout", "garbage", "unsupported")
                                  else f"unsupported: {err}")
            a = a.get("cycles")
        if a is None:
            return Prediction(None, f"unsupported: {self.argv[0]} gave no prediction")
        return checked(a, self.argv[0])
