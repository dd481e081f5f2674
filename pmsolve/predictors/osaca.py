"""OSACA as a predictor, through its Python API, in worker processes that a hang cannot block.

Each worker (``python -m pmsolve.predictors.osaca ARCH``) builds OSACA's AT&T parser,
machine model and semantics once, then answers one JSON line per block. The prediction is
what OSACA reports for the block as a loop body: the larger of the optimal port-pressure
throughput (the most loaded port after ``assign_optimal_throughput``) and the longest
loop-carried dependency chain (``KernelDG``; OSACA tracks dependencies through registers and
through identical memory addresses). ``lcd=false`` keeps the port pressure alone. OSACA
drops AT&T size suffixes (``addq``) only next to register operands; for a form it does not
know with a suffix, the block is analysed again with that suffix removed (when OSACA knows the
bare mnemonic), so ``addq 8(%r14), %rax`` gets the load + register form OSACA models.

``ARCH`` may also be a machine-model file (``osaca:host.yml``, e.g. a mapping exported by
:mod:`pmsolve.predictors.osaca_export`); the predictor's name then carries the file's digest.
A ``{vex}``/``{evex}`` pseudo-prefix (it only picks an encoding) is dropped before OSACA parses
a line, since its parser cannot read one.

An instruction form OSACA's model does not know would silently add no pressure; here it makes
the block's answer ``unsupported: OSACA ZEN3 does not know 'vpdpbusd ...'``. The parent waits
for each answer with a timeout: a worker that hangs is killed (``timeout``), one that dies is
replaced (``crash``); either way the next block gets a fresh worker.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import pickle
import re
import select
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Sequence

from pmsolve.predictors.block import Block
from pmsolve.predictors.base import ModelChoice, Prediction
from pmsolve.errors import ValidationError
from pmsolve.harness.cpu import Microarchitecture


class _Worker:
    def __init__(self, arch: str, lcd: bool, start_timeout: float):
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[3])
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        env.setdefault("PYTHONWARNINGS", "ignore")
        args = [sys.executable, "-m", "pmsolve.predictors.osaca", arch] + ([] if lcd else ["--no-lcd"])
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1, env=env,
                                     start_new_session=True)  # Ctrl-C is the caller's to handle
        hello = self.read(start_timeout)
        if hello is None or "error" in hello:
            self.kill()
            why = "did not start in time" if hello is None else hello["error"]
            raise ValidationError(f"OSACA cannot predict for {arch!r}: {why}")

    def read(self, timeout: float) -> dict | None:
        """One reply line, None on timeout; raises EOFError when the worker died."""
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        if not line:
            raise EOFError
        try:
            reply = json.loads(line)
        except ValueError:
            return {"error": f"garbage: OSACA worker wrote {line[:80]!r}"}
        return reply if isinstance(reply, dict) else {"error": f"garbage: OSACA worker wrote {line[:80]!r}"}

    def ask(self, asm: str, timeout: float) -> dict | None:
        self.proc.stdin.write(json.dumps({"asm": asm}) + "\n")
        self.proc.stdin.flush()
        return self.read(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass


def available_models() -> frozenset[str]:
    """OSACA's machine models (``ZEN4``, ``SKX``, ...): its data files, without importing it."""
    spec = importlib.util.find_spec("osaca")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    data = Path(list(spec.submodule_search_locations)[0]) / "data"
    return frozenset(f.stem.upper() for f in data.glob("*.yml"))


def model_for(uarch: Microarchitecture | None) -> ModelChoice:
    """OSACA's model for a microarchitecture: its own, else the nearest one (said as such)."""
    models = available_models()
    if not models:
        return ModelChoice("OSACA", None, None, False, "OSACA is not installed (pip install 'pmsolve[predictors]')")
    version = importlib.metadata.version("osaca")
    if uarch is None:
        return ModelChoice("OSACA", None, version, False, "unknown microarchitecture: no OSACA model is known to match")
    for rank, arch in enumerate(uarch.osaca):
        if arch in models:
            own = rank == 0 and uarch.own_osaca
            why = f"{uarch.name}'s own model" if own else f"nearest model to {uarch.name} (OSACA {version} has none of its own)"
            return ModelChoice("OSACA", arch, version, own, why)
    return ModelChoice("OSACA", None, version, False, f"OSACA {version} has none of {', '.join(uarch.osaca)}")


_PSEUDO_PREFIX = re.compile(r"^(\s*)\{(?:vex|vex2|vex3|evex|disp8|disp32)\}\s*")


def strip_pseudo_prefix(line: str) -> str:
    """``{evex} vaddpd ...`` -> ``vaddpd ...``: the pseudo-prefix only picks an encoding."""
    return _PSEUDO_PREFIX.sub(r"\1", line, count=1)


def is_model_file(arch: str) -> bool:
    """Does ``osaca:ARCH`` name a machine-model file rather than one of OSACA's models?"""
    return arch.lower().endswith((".yml", ".yaml"))


class OsacaPredictor:
    """``osaca:ARCH`` (``ZEN3``, ``ZEN2``, ``ZEN1``, ``SKX``, ``ICL``, ...) or ``osaca:FILE.yml`` (a
    machine-model file). Thread-safe: every concurrent ``predict`` call gets a worker process of
    its own from a small pool."""

    def __init__(self, arch: str, *, lcd: bool = True, timeout: float = 10.0, start_timeout: float = 60.0):
        if is_model_file(arch):
            path = Path(arch).resolve()
            try:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
            except OSError as exc:
                raise ValidationError(f"OSACA machine model {arch}: {exc.strerror or exc}") from None
            self.arch, self._label = str(path), f"{path.name}@{digest}"
        else:
            self.arch = arch.upper()
            self._label = self.arch
        self.lcd = lcd
        self.timeout = timeout
        self.start_timeout = start_timeout
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._idle.append(_Worker(self.arch, lcd, start_timeout))   # fails early for an unknown ARCH

    @property
    def name(self) -> str:
        return f"osaca:{self._label}" + ("" if self.lcd else "?lcd=false")

    def _take(self) -> _Worker:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return _Worker(self.arch, self.lcd, self.start_timeout)

    def _give(self, w: _Worker) -> None:
        with self._lock:
            self._idle.append(w)

    def predict(self, blocks: Sequence[Block]) -> list[Prediction]:
        out: list[Prediction] = []
        w: _Worker | None = None
        try:
            for b in blocks:
                if w is None:
                    try:
                        w = self._take()
                    except ValidationError as exc:
                        out.append(Prediction(None, f"crash: {exc}"))
                        continue
                try:
                    reply = w.ask(b.asm + "\n", self.timeout)
                except (EOFError, BrokenPipeError, OSError):
                    code = w.proc.wait()
                    w.kill()
                    w = None
                    out.append(Prediction(None, f"crash: the OSACA worker died (exit code {code})"))
                    continue
                if reply is None:
                    w.kill()
                    w = None
                    out.append(Prediction(None, f"timeout: OSACA took longer than {self.timeout:g} s"))
                    continue
                out.append(_prediction(reply))
        finally:
            if w is not None:
                self._give(w)
        return out

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for w in idle:
            w.kill()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass


def _prediction(reply: dict) -> Prediction:
    if reply.get("error"):
        return Prediction(None, str(reply["error"]))
    c = reply.get("cycles")
    if isinstance(c, (int, float)) and c > 0 and c == c and c != float("inf"):
        return Prediction(float(c))
    return Prediction(None, f"garbage: OSACA answered {c!r} cycles")


# ----------------------------------------------------------------------------- worker side

_PARSED: dict[str, bytes] = {}
_PARSED_MAX = 100_000


def _parse(parser, asm: str) -> list:
    """``parser.parse_file`` with every line's parse memoised (pickled): pyparsing takes ~4 ms
    per line, unpickling a copy ~20 µs, and sampled blocks repeat their lines a lot."""
    out = []
    for i, line in enumerate(asm.split("\n")):
        if not line.strip():
            continue
        line = strip_pseudo_prefix(line)
        frozen = _PARSED.get(line)
        if frozen is None:
            if len(_PARSED) >= _PARSED_MAX:
                _PARSED.clear()
            frozen = _PARSED[line] = pickle.dumps(parser.parse_line(line, 0), pickle.HIGHEST_PROTOCOL)
        form = pickle.loads(frozen)     # a fresh copy: OSACA's semantics mutate the forms
        form.line_number = i + 1
        out.append(form)
    return out


def _semantics(parser, sem, asm: str) -> list:
    kernel = [f for f in _parse(parser, asm) if getattr(f, "mnemonic", None)]
    if kernel:
        sem.normalize_instruction_forms(kernel)
        sem.add_semantics(kernel)
    return kernel


_KNOWN: set[str] = set()


def _known(model) -> set[str]:
    if not _KNOWN:
        _KNOWN.update(str(f.get("name", "")).lower() if isinstance(f, dict) else str(getattr(f, "name", "")).lower()
                      for f in model["instruction_forms"])
    return _KNOWN


#: OSACA 0.7 changes its machine model while analysing: combining a memory form from the register
#: form and the load data extends the model's load-port list in place (``data_port_uops +=
#: st_data_port_uops`` on ``load_throughput[i][1]``), so every analysed read-modify-write form
#: made later answers slower. The lists are put back before each block (a shallow slice
#: assignment; deep-copying ruamel's structures would cost more than the analysis).
_PRISTINE: dict[int, list] = {}


def _restore(model) -> None:
    data = model._data
    if id(model) not in _PRISTINE:
        saved = []
        for key in ("load_throughput", "store_throughput"):
            for entry in data.get(key) or []:
                if isinstance(entry, (list, tuple)) and len(entry) > 1 and isinstance(entry[1], list):
                    saved.append((entry[1], list(entry[1])))
        for key in ("load_throughput_default", "store_throughput_default"):
            if isinstance(data.get(key), list):
                saved.append((data[key], list(data[key])))
        _PRISTINE[id(model)] = saved
    for target, items in _PRISTINE[id(model)]:
        if len(target) != len(items) or any(x is not y for x, y in zip(target, items)):
            target[:] = items


def _analyse(parser, model, sem, asm: str, lcd: bool, arch: str) -> dict:
    from osaca.semantics import KernelDG

    _restore(model)
    kernel = _semantics(parser, sem, asm)
    if not kernel:
        return {"error": "garbage: OSACA found no instruction in the block"}
    unknown = [f for f in kernel if "tp_unknown" in (f.flags or [])]
    if unknown:   # OSACA strips AT&T size suffixes only next to register operands: help it
        lines = asm.splitlines()
        retry = False
        for f in unknown:
            k = f.line_number - 1
            mn, _, rest = lines[k].strip().partition(" ")
            if (mn[-1:] in ("b", "w", "l", "q") and mn not in _known(model) and mn[:-1] in _known(model)
                    and not mn.startswith(("movs", "movz", "cvt"))):
                lines[k], retry = f"{mn[:-1]} {rest}", True
        if retry:
            kernel = _semantics(parser, sem, "\n".join(lines) + "\n")
            unknown = [f for f in kernel if "tp_unknown" in (f.flags or [])]
    if unknown:
        f = unknown[0]
        text = (getattr(f, "line", None) or f.mnemonic).strip()
        return {"error": f"unsupported: OSACA {arch} does not know {text!r}"
                         + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")}
    sem.assign_optimal_throughput(kernel)
    tp = max(sem.get_throughput_sum(kernel) or [0.0])
    chain = 0.0
    if lcd:
        deps = KernelDG(kernel, parser, model, sem, timeout=-1).get_loopcarried_dependencies()
        chain = max((float(d["latency"]) for d in deps.values()), default=0.0)
    return {"cycles": max(float(tp), chain), "tp": float(tp), "lcd": chain}


def serve(arch: str, lcd: bool) -> None:
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)   # OSACA's prints must not corrupt the channel
    try:
        warnings.simplefilter("ignore")
        from osaca.parser import ParserX86ATT
        from osaca.semantics import ArchSemantics, MachineModel

        parser = ParserX86ATT()
        model = MachineModel(path_to_yaml=arch) if is_model_file(arch) else MachineModel(arch=arch.lower())
        sem = ArchSemantics(parser, model)
    except ImportError:
        out.write(json.dumps({"error": "OSACA is not installed (pip install 'pmsolve[predictors]')"}) + "\n")
        return
    except Exception as exc:  # an unknown ARCH: OSACA raises whatever its loader raises
        out.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"[:300]}) + "\n")
        return
    name = Path(arch).name if is_model_file(arch) else arch.upper()
    out.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    for line in sys.stdin:
        t0 = time.monotonic()
        try:
            reply = _analyse(parser, model, sem, json.loads(line)["asm"], lcd, name)
        except Exception as exc:  # OSACA failing on one block is an answer, not the end
            reply = {"error": f"crash: OSACA raised {type(exc).__name__}: {str(exc)[:200]}"}
        reply["seconds"] = time.monotonic() - t0
        out.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    serve(sys.argv[1], "--no-lcd" not in sys.argv[2:])
