"""Basic-block throughput predictors behind one interface (dissertation sec. 8.1, 8.2.1): they
serve the leaderboard, the host job (:mod:`pmsolve.jobs.host`) and AnICA alike.

Every predictor has a ``name`` (stable; caches key on it) and ``predict(blocks)``, answering
one :class:`Prediction` per block: cycles per iteration of the block as a loop body, or an
error (``crash: …``, ``timeout: …``, ``garbage: …``, ``unsupported: …``). Predictors never
raise for a bad block. Open one from a spec string:

=============================================  ==============================================
``llvm-mca:CPU[?iterations=100&noalias=true``  the newest installed llvm-mca with ``-mcpu=CPU``
``&timeout=60]``, ``llvm-mca-NN:CPU``           (``znver5``, ``skylake``, …), many blocks per call;
                                               ``llvm-mca-14:znver3`` pins LLVM 14
``osaca:ARCH[?lcd=true&timeout=10]``           OSACA's Python API (``ZEN3``, ``ZEN2``, ``SKX``, …)
``mapping:FILE[?r_max=5&names=explainable]``   pmsolve's bottleneck formula on a mapping file in
                                               any format (scheme names bridged from the catalogue)
``hardware[?rounds=5&noise_tolerance=0.02``    this CPU, measuring the block (x86-64 Linux, AVX)
``&timeout=60]``
``cmd:COMMAND``                                an external program, JSON on stdin/stdout
                                               (protocol: :mod:`~pmsolve.predictors.user`)
``python:MODULE:FUNCTION[?batch=true]``        a Python function ``fn(block) -> cycles``
``factory:MODULE:ATTR``                        a Python object that is a predictor, or makes one
                                               when called (tests and experiments)
=============================================  ==============================================

>>> from pmsolve.predictors.block import Block
>>> from pmsolve.predictors import open_predictor, predict_many
>>> mca = open_predictor("llvm-mca:znver3", cache="predictions.sqlite")     # doctest: +SKIP
>>> mca.predict([Block.of([("add_r64_r64", "addq %rax, %rbx")])])          # doctest: +SKIP
[Prediction(cycles=1.03, error=None)]
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any, Callable

from pmsolve.errors import ValidationError
from pmsolve.predictors.base import (ERROR_KINDS, Prediction, Predictor, bisect_failures, checked,
                                           error_kind)
from pmsolve.predictors.cache import CachedPredictor, PredictionCache
from pmsolve.predictors.hardware import HardwarePredictor
from pmsolve.predictors.llvm_mca import LlvmMcaPredictor
from pmsolve.predictors.mapping import MappingPredictor
from pmsolve.predictors.osaca import OsacaPredictor
from pmsolve.predictors.parallel import predict_many
from pmsolve.predictors.user import CallablePredictor, CommandPredictor, callable_predictor

__all__ = ["ERROR_KINDS", "CachedPredictor", "CallablePredictor", "CommandPredictor", "Prediction",
           "PredictionCache", "Predictor", "bisect_failures", "callable_predictor", "checked", "error_kind",
           "open_predictor", "parse_spec", "predict_many", "SPEC_KINDS"]

SPEC_KINDS = ("llvm-mca", "osaca", "mapping", "hardware", "cmd", "python", "factory")


def parse_spec(spec: str) -> tuple[str, str, dict[str, str]]:
    """``KIND[:ARG][?key=value&...]`` -> (kind, arg, options); ``cmd:`` keeps the rest verbatim."""
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    kind = kind.strip().lower()
    if "?" in kind:                         # hardware?rounds=3
        kind, _, query = kind.partition("?")
        rest = "?" + query
    if re.fullmatch(r"llvm-mca-\d+", kind):    # llvm-mca-14:znver3 pins the LLVM version
        pass
    elif kind not in SPEC_KINDS:
        raise ValidationError(f"unknown predictor {spec!r}: the kind must be one of {', '.join(SPEC_KINDS)}")
    if kind == "cmd":
        return kind, rest, {}
    arg, _, query = rest.partition("?")
    options: dict[str, str] = {}
    for item in filter(None, query.split("&")):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValidationError(f"predictor {spec!r}: option {item!r} is not key=value")
        options[key.strip()] = value.strip()
    return kind, arg.strip(), options


def _bool(value: str, where: str) -> bool:
    v = value.lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise ValidationError(f"{where}: expected true or false, got {value!r}")


def _options(spec: str, options: dict[str, str], known: dict[str, Callable[[str], Any]]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValidationError(f"predictor {spec!r}: unknown option(s) {', '.join(unknown)}; "
                              f"known: {', '.join(sorted(known)) or 'none'}")
    out = {}
    for key, value in options.items():
        try:
            out[key] = known[key](value)
        except ValueError:
            raise ValidationError(f"predictor {spec!r}: bad value {value!r} for {key}") from None
    return out


def open_predictor(spec: str, *, cache: str | Path | PredictionCache | None = None,
                   retry: tuple[str, ...] = ()) -> Predictor:
    """The predictor a spec names (see the table above); with ``cache`` wrapped in a
    :class:`CachedPredictor` (``retry``: error kinds to ask again instead of reusing)."""
    kind, arg, options = parse_spec(spec)
    b = lambda where: (lambda v: _bool(v, f"{spec} {where}"))  # noqa: E731
    p: Predictor
    if kind.startswith("llvm-mca"):
        if not arg:
            raise ValidationError("llvm-mca predictor needs a CPU: llvm-mca:znver3")
        o = _options(spec, options, {"iterations": int, "noalias": b("noalias"), "timeout": float})
        version = int(kind.split("-")[2]) if kind.count("-") == 2 else None
        p = LlvmMcaPredictor(arg, version=version, **o)
    elif kind == "osaca":
        if not arg:
            raise ValidationError("OSACA predictor needs an architecture: osaca:ZEN3")
        p = OsacaPredictor(arg, **_options(spec, options, {"lcd": b("lcd"), "timeout": float}))
    elif kind == "mapping":
        if not arg:
            raise ValidationError("mapping predictor needs a file: mapping:FILE[?r_max=5]")
        o = _options(spec, options, {"r_max": float, "names": str})
        p = MappingPredictor.from_file(arg, r_max=o.get("r_max"), naming=o.get("names"))
    elif kind == "hardware":
        if arg:
            raise ValidationError(f"hardware predictor takes no argument, got {arg!r} (options go after '?')")
        p = HardwarePredictor(**_options(spec, options, {"rounds": int, "noise_tolerance": float,
                                                         "timeout": float}))
    elif kind == "cmd":
        p = CommandPredictor(arg)
    elif kind == "python":
        o = _options(spec, options, {"batch": b("batch")})
        p = callable_predictor(f"python:{arg}", _load(spec, arg, "python:MODULE:FUNCTION"),
                               batch=o.get("batch", False))
    else:
        _options(spec, options, {})
        obj = _load(spec, arg, "factory:MODULE:ATTR")
        p = obj() if callable(obj) and not isinstance(obj, Predictor) else obj
        if not isinstance(p, Predictor):
            raise ValidationError(f"predictor {spec!r} does not implement the Predictor protocol")
    return CachedPredictor(p, cache, retry=retry) if cache is not None else p


def _load(spec: str, arg: str, form: str) -> Any:
    """The Python object ``MODULE:ATTR`` names, or one clear error."""
    module, _, attr = arg.partition(":")
    if not module or not attr:
        raise ValidationError(f"predictor {spec!r}: expected {form}")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValidationError(f"predictor {spec!r}: cannot load {arg}: {exc}") from None
