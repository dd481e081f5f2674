"""Registers the built-in backends; importing this imports no solver."""

from __future__ import annotations

import importlib

from pmsolve.backends.registry import register


def _lazy(module: str, cls: str, *args: str):  # type: ignore[no-untyped-def]
    def make():  # type: ignore[no-untyped-def]
        return getattr(importlib.import_module(module), cls)(*args)

    return make


register("z3", _lazy("pmsolve.backends.z3_backend", "Z3Backend"))
register("cvc5", _lazy("pmsolve.backends.cvc5_backend", "Cvc5Backend"))
register("pysmt:z3", _lazy("pmsolve.backends.pysmt_backend", "PysmtBackend", "z3", "z3-solver", "z3"))
register("pysmt:cvc5", _lazy("pmsolve.backends.pysmt_backend", "PysmtBackend", "cvc5", "cvc5", "cvc5"))
register("highs", _lazy("pmsolve.backends.highs_backend", "HighsBackend"))
register("scipy", _lazy("pmsolve.backends.scipy_backend", "ScipyBackend"))
register("sat", _lazy("pmsolve.backends.sat_backend", "SatBackend"))
register("smtlib:z3", _lazy("pmsolve.backends.smtlib_backend", "SmtlibProcessBackend", "z3"))
