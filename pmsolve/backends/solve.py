"""The two entry points: `solve(problem)` (one shot) and `open_session()` (incremental)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from pmsolve.backends import capabilities as C
from pmsolve.backends import registry
from pmsolve.backends.base import Backend, Session
from pmsolve.backends.result import Result
from pmsolve.symbolic.problem import Problem


def choose(problem: Problem | None, backend: str | None = None, *, core: bool = False,
           incremental: bool = False, timeout: float | None = None) -> Backend:
    """The backend that would run `problem` (or any SMT problem when None), or SolverError."""
    kind = C.problem_kind(problem) if problem is not None else None
    needs = C.requirements(problem or Problem(), core=core, incremental=incremental,
                           timeout=timeout is not None)
    return registry.select(backend, kind, needs)


def solve(problem: Problem, backend: str | None = None, *, timeout: float | None = None,
          core: bool = False, options: dict[str, Any] | None = None,
          tolerance: Fraction = Fraction(1, 10**6)) -> Result:
    """Solve a problem on a backend (name, or None for $PMSOLVE_BACKEND / auto); validated Result.

    `core=True` asks for an unsat core (names of named constraints) and refuses backends that
    cannot give one. `timeout` is in seconds per check.
    """
    b = choose(problem, backend, core=core, timeout=timeout)
    with Session(b, timeout=timeout, options=options, tolerance=tolerance) as s:
        s.add_problem(problem)
        return s.check(core=core)


def open_session(backend: str | None = None, *, problem: Problem | None = None,
                 timeout: float | None = None, core: bool = False, incremental: bool = False,
                 options: dict[str, Any] | None = None) -> Session:
    """An incremental session (add/push/pop/check). `problem` is only used to pick the backend
    (its constraints are not added); `incremental=True` refuses backends without native push/pop.
    """
    b = choose(problem, backend, core=core, incremental=incremental, timeout=timeout)
    return Session(b, timeout=timeout, options=options)
