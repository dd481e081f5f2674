"""The backend interface, and the session that validates every model a backend returns.

A `Backend` describes one solver route (name, capabilities, the Python modules it imports) and
opens `Engine`s. Engines of incremental solvers forward push/pop to the solver; the others get
`ReplayEngine`, which keeps the constraint stack and re-solves it from scratch on every check.
`Session` wraps an engine, owns the IR-side copy of the stack, and checks each returned model
with the exact IR evaluator before handing it out.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pmsolve.errors import SolverError, ValidationError
from pmsolve.backends import result as R
from pmsolve.backends.result import Result
from pmsolve.symbolic import nodes as n
from pmsolve.symbolic.evaluate import ModelEvaluator, eval_term, model_violations, violations
from pmsolve.symbolic.problem import Constraint, Objective, Problem, declaration_str
from pmsolve.symbolic.walk import conjuncts, iter_vars


@dataclass
class RawResult:
    """What an engine reports before validation."""

    status: str
    model: dict[str, Any] = field(default_factory=dict)
    core: tuple[str, ...] = ()
    reason: str = ""
    floating: bool = False  # model values came from a floating-point solver


class Engine:
    """One live solver instance. Subclasses implement add/push/pop/check."""

    def add(self, constraint: Constraint) -> None:
        raise NotImplementedError

    def push(self) -> None:
        raise NotImplementedError

    def pop(self) -> None:
        raise NotImplementedError

    def check(self, problem: Problem, core: bool) -> RawResult:
        """`problem` holds the whole current stack (declared vars, constraints, objective)."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class ReplayEngine(Engine):
    """For solvers without native push/pop: solve the current stack from scratch each time."""

    def __init__(self, solve_once: Any) -> None:
        self._solve_once = solve_once

    def add(self, constraint: Constraint) -> None:
        pass

    def push(self) -> None:
        pass

    def pop(self) -> None:
        pass

    def check(self, problem: Problem, core: bool) -> RawResult:
        return self._solve_once(problem, core)


class Backend:
    """A solver route. `modules` are imported lazily; a failed import marks it not installed."""

    name: str = ""
    summary: str = ""
    capabilities: frozenset[str] = frozenset()
    modules: tuple[str, ...] = ()
    pip: tuple[str, ...] = ()
    # (subclasses set these as class attributes or per instance)

    def __init__(self) -> None:
        self._import_error: str | None = None
        self._checked = False

    def import_error(self) -> str | None:
        """None when the solver can be used, else why not (import failure, missing binary)."""
        if not self._checked:
            self._checked = True
            for mod in self.modules:
                try:
                    importlib.import_module(mod)
                except Exception as exc:  # a broken install must not break pmsolve
                    self._import_error = f"cannot import {mod} ({type(exc).__name__}: {exc})"
                    break
            else:
                self._import_error = self.extra_check()
        return self._import_error

    def extra_check(self) -> str | None:
        return None

    @property
    def installed(self) -> bool:
        return self.import_error() is None

    def engine(self, timeout: float | None, options: dict[str, Any]) -> Engine:
        raise NotImplementedError


class Session:
    """Incremental solving with validated results; works on every backend (see module doc).

    The session keeps the IR side of the stack -- constraints and the variables they introduced,
    per push level -- so every check can validate the solver's model exactly without re-walking
    the whole stack.
    """

    def __init__(self, backend: Backend, timeout: float | None = None,
                 options: dict[str, Any] | None = None, tolerance: Fraction = Fraction(1, 10**6)):
        self.backend = backend
        self.timeout = timeout
        self.tolerance = tolerance
        self._frames: list[list[Constraint]] = [[]]
        self._names: list[set[str]] = [set()]
        self._new_vars: list[list[str]] = [[]]  # variable names each level introduced
        self._vars: dict[str, Any] = {}
        self._declared: list[Any] = []
        self.objective: Objective | None = None
        self.strict_margin: Fraction | None = None
        self._engine = backend.engine(timeout, dict(options or {}))

    # --- building
    def add(self, formula: object, name: str | None = None) -> None:
        if not isinstance(formula, (n.Formula, bool)) and hasattr(formula, "__iter__"):
            for f in formula:  # type: ignore[union-attr]
                self.add(f)
            return
        c = Constraint(n.as_formula(formula), name)
        if name is not None:
            if any(name in names for names in self._names):
                raise SolverError(f"a constraint named {name!r} is already asserted")
            self._names[-1].add(name)
        self._track(iter_vars(c.formula))
        self._frames[-1].append(c)
        self._engine.add(c)

    def _track(self, variables: Any) -> None:
        known = self._vars
        for v in variables:
            old = known.get(v.name)
            if old is None:
                known[v.name] = v
                self._new_vars[-1].append(v.name)
            elif old is not v and (old.kind != v.kind or old.key != v.key):
                raise ValidationError(f"two different variables are named {v.name!r}: "
                                      f"{declaration_str(old)} and {declaration_str(v)}")

    def add_problem(self, problem: Problem) -> None:
        """Assert all of a problem's constraints and adopt its objective, declarations and margin."""
        self.declare(*problem.declared)
        for c in problem.constraints:
            self.add(c.formula, c.name)
        if problem.objective is not None:
            self.objective = problem.objective
            self._track(iter_vars(problem.objective.term))
        if problem.strict_margin is not None:
            self.strict_margin = problem.strict_margin

    def declare(self, *variables: Any) -> None:
        self._declared.extend(variables)
        self._track(variables)

    def push(self) -> None:
        self._frames.append([])
        self._names.append(set())
        self._new_vars.append([])
        self._engine.push()

    def pop(self, count: int = 1) -> None:
        if count < 1 or count >= len(self._frames):
            raise SolverError(f"cannot pop {count} level(s): only {len(self._frames) - 1} pushed")
        for _ in range(count):
            self._frames.pop()
            self._names.pop()
            for name in self._new_vars.pop():
                del self._vars[name]
            self._engine.pop()

    @property
    def depth(self) -> int:
        return len(self._frames) - 1

    def problem(self) -> Problem:
        """The current stack as one Problem (what `check` solves)."""
        p = Problem(constraints=[c for fr in self._frames for c in fr], objective=self.objective,
                    declared=list(self._declared), strict_margin=self.strict_margin)
        return p

    # --- solving
    def check(self, core: bool = False, *, values: Any = None) -> Result:
        """Solve the current stack; the model is validated against every constraint.

        `core=True` names the named constraints of an unsat stack. `values` (variables) says
        which values the caller reads: exact incremental engines then read the model straight
        from the solver (every variable of the stack, validated exactly like any other model)
        and return those values, without rebuilding and re-walking the stack as a Problem.
        """
        fast = getattr(self._engine, "check_values", None)
        if values is None or fast is None or self.objective is not None:
            problem = self.problem()
            raw = self._engine.check(problem, core)
            return finish(self.backend.name, problem, raw, self.tolerance)
        variables = sorted(self._vars.values(), key=lambda v: v.name)
        raw = fast(variables, core)
        if raw.status != R.SAT:
            return Result(raw.status, self.backend.name, core=tuple(raw.core), reason=raw.reason)
        bad = model_violations(variables, (c for fr in self._frames for c in fr), raw.model)
        if bad:
            raise SolverError(f"backend {self.backend.name} returned a model that violates the "
                              f"problem: {'; '.join(bad[:3])}")
        wanted = {v.name for v in values}
        return Result(R.SAT, self.backend.name, model={k: x for k, x in raw.model.items() if k in wanted})

    def close(self) -> None:
        self._engine.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def finish(backend: str, problem: Problem, raw: RawResult, tolerance: Fraction) -> Result:
    """Turn an engine's raw answer into a Result, validating the model exactly (see Result.exact)."""
    status = raw.status
    if status != R.SAT:
        return Result(status, backend, core=tuple(raw.core), reason=raw.reason)
    model, exact = complete_model(problem, raw.model, raw.floating, tolerance)
    if model is None:
        bad = violations(problem, exact_round(problem, raw.model))
        raise SolverError(
            f"backend {backend} returned a model that violates the problem: {'; '.join(bad[:3])}"
        )
    obj = eval_term(problem.objective.term, model) if problem.objective is not None else None
    return Result(status, backend, model=model, objective=obj, exact=exact, reason=raw.reason)


def exact_round(problem: Problem, values: dict[str, Any]) -> dict[str, Any]:
    """Give every variable a value of its sort (defaults for unconstrained ones)."""
    out: dict[str, Any] = {}
    for v in problem.variables():
        raw = values.get(v.name)
        if isinstance(v, n.BoolVar):
            out[v.name] = bool(raw) if raw is not None else False
        elif v.sort is n.Sort.INT:
            out[v.name] = int(round(raw)) if raw is not None else _default(v)
        else:
            out[v.name] = _to_fraction(raw) if raw is not None else Fraction(_default(v))
    return out


def _default(v: n.NumVar) -> int:
    if v.lo is not None and v.lo > 0:
        return int(v.lo.__ceil__())
    if v.hi is not None and v.hi < 0:
        return int(v.hi.__floor__())
    return 0


def _to_fraction(x: Any) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int):
        return Fraction(x)
    return Fraction(float(x))


def complete_model(problem: Problem, values: dict[str, Any], floating: bool,
                   tolerance: Fraction) -> tuple[dict[str, Any] | None, bool]:
    """An exactly validated model, or (model, False) within tolerance for float solvers, or None.

    Floating solvers: integers and booleans are rounded; reals are tried first as the nearest
    fractions with small denominators (limit_denominator 10..10**9), since LP vertices of the
    encodings have small denominators; only if none validates exactly is the float model accepted
    when every comparison holds within `tolerance` (and integrality/booleans exactly).
    """
    base = exact_round(problem, values)
    if not floating:
        return (base, True) if not violations(problem, base) else (None, True)
    reals = [v.name for v in problem.variables()
             if isinstance(v, n.NumVar) and v.sort is n.Sort.REAL]
    for limit in (10, 100, 1000, 10**4, 10**6, 10**9):
        m = dict(base)
        for name in reals:
            m[name] = base[name].limit_denominator(limit)
        if not violations(problem, m):
            return m, True
    if within_tolerance(problem, base, tolerance):
        return base, False
    return None, True


def within_tolerance(problem: Problem, model: dict[str, Any], tol: Fraction) -> bool:
    for v in problem.variables():
        if isinstance(v, n.NumVar):
            val = model[v.name]
            if (v.lo is not None and val < v.lo - tol) or (v.hi is not None and val > v.hi + tol):
                return False
    return all(_holds_tol(c.formula, model, tol) for c in problem.constraints)


def _holds_tol(f: n.Formula, model: dict[str, Any], tol: Fraction) -> bool:
    """Truth with the top-level non-strict comparisons relaxed by tol (nested ones stay exact)."""
    ev = ModelEvaluator(model)
    for atom in conjuncts(f):
        if isinstance(atom, n.Compare) and atom.op in ("=", "<=", ">="):
            d = ev.visit(atom.difference())
            if not {"=": abs(d) <= tol, "<=": d <= tol, ">=": d >= -tol}[atom.op]:
                return False
        elif not ev.visit(atom):
            return False
    return True
