"""Solver backends for the IR: z3, cvc5, pysmt, HiGHS, scipy, python-sat, SMT-LIB2 text.

No solver is imported until a backend is used, so a missing solver never breaks `import pmsolve`.

    from pmsolve.backends import solve, open_session, describe, format_table
    result = solve(problem, backend="z3")         # or None: $PMSOLVE_BACKEND, else auto
"""

from pmsolve.backends import builtin as _builtin  # noqa: F401  (registers the backends)
from pmsolve.backends.base import Backend, Session
from pmsolve.backends.capabilities import problem_kind
from pmsolve.backends.registry import (
    ALIASES, AUTO, ENV_VAR, canonical, describe, format_table, get, known_names, names, register,
    requested_name, select, unregister,
)
from pmsolve.backends.result import Result
from pmsolve.backends.smtlib import to_smtlib2
from pmsolve.backends.solve import choose, open_session, solve

__all__ = [
    "ALIASES", "AUTO", "ENV_VAR", "Backend", "Result", "Session", "canonical", "choose",
    "describe", "format_table", "get", "known_names", "names", "open_session", "problem_kind", "register",
    "requested_name", "select", "solve", "to_smtlib2", "unregister",
]
