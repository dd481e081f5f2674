"""Thin adapter to the predictors package: ``open_any(spec)`` opens a predictor by name.

The predictors (llvm-mca, OSACA, mapping, hardware, user commands, SQLite cache) belong to
:mod:`pmsolve.anica.predictors`; this module only resolves names through its
``open_predictor`` and, while that is not available, offers a minimal llvm-mca predictor (many
blocks per process call, one code region each) so campaigns can run. ``factory:MODULE:ATTR``
names a Python object that is a predictor or returns one, for tests and experiments; every
other name (``llvm-mca:``, ``osaca:``, ``mapping:``, ``hardware``, ``cmd:``, ``python:``) is the
predictors package's, opened with its SQLite cache when ``cache`` is given.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import tempfile
from typing import Sequence

from pmsolve.anica.block import Block
from pmsolve.anica.predictors.base import Prediction, Predictor
from pmsolve.errors import UnknownNameError, ValidationError


class MinimalLlvmMca:
    """llvm-mca ``-mcpu=CPU --json``: cycles per iteration of the block as a loop body are
    TotalCycles / Iterations of its 100-iteration simulation."""

    def __init__(self, mcpu: str, timeout: float = 60):
        self.mcpu, self.timeout = mcpu, timeout

    @property
    def name(self) -> str:
        return f"llvm-mca:{self.mcpu}"

    def predict(self, blocks: Sequence[Block]) -> list[Prediction]:
        blocks = list(blocks)
        out = self._run(blocks)
        if out is not None:
            return out
        if len(blocks) == 1:
            return [Prediction(None, "crash: llvm-mca rejected the block")]
        return [x for b in blocks for x in self.predict([b])]

    def _run(self, blocks: list[Block]) -> list[Prediction] | None:
        body = []
        for k, b in enumerate(blocks):
            body += [f"# LLVM-MCA-BEGIN b{k}", *b.lines, "# LLVM-MCA-END"]
        fd, path = tempfile.mkstemp(suffix=".s")
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(body) + "\n")
        try:
            proc = subprocess.run(["llvm-mca", f"-mcpu={self.mcpu}", "--json", "--iterations=100", path],
                                  capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return [Prediction(None, "timeout")] * len(blocks)
        except OSError as exc:
            return [Prediction(None, f"crash: {exc}")] * len(blocks)
        finally:
            os.unlink(path)
        if proc.returncode != 0:
            return None
        try:
            res: list[Prediction] = [Prediction(None, "garbage: no region")] * len(blocks)
            for r in json.loads(proc.stdout)["CodeRegions"]:
                s = r["SummaryView"]
                res[int(str(r["Name"])[1:])] = Prediction(s["TotalCycles"] / s["Iterations"])
            return res
        except (KeyError, ValueError, TypeError, ZeroDivisionError, json.JSONDecodeError) as exc:
            return [Prediction(None, f"garbage: {exc}")] * len(blocks)


def open_any(spec: str, cache: str | None = None) -> Predictor:
    """A predictor by name: the predictors package first, then the fallbacks above."""
    if spec.startswith("factory:"):
        try:
            _, mod, attr = spec.split(":", 2)
            obj = getattr(importlib.import_module(mod), attr)
        except (ValueError, ImportError, AttributeError) as exc:
            raise UnknownNameError(f"predictor {spec!r}: {exc}") from None
        p = obj() if callable(obj) and not isinstance(obj, Predictor) else obj
        if not isinstance(p, Predictor):
            raise ValidationError(f"predictor {spec!r} does not implement the Predictor protocol")
        return p
    try:
        from pmsolve.anica.predictors import open_predictor  # type: ignore[attr-defined]
    except ImportError:
        open_predictor = None
    if open_predictor is not None:
        return open_predictor(spec, cache=cache)
    if spec.startswith("llvm-mca:"):
        return MinimalLlvmMca(spec.split(":", 1)[1] or "znver3")
    raise UnknownNameError(f"predictor {spec!r} needs pmsolve.anica.predictors.open_predictor, "
                           "which is not available yet (fallbacks: llvm-mca:CPU, factory:MODULE:ATTR)")
