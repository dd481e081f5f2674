"""Any SMT solver that pysmt drives (pip: pysmt + the solver's package), named `pysmt:<solver>`.

pysmt 0.9.6 finds z3 (`z3-solver`) and cvc5 (`cvc5`) when their Python packages are importable
(`pysmt-install --check` lists them). We use logic QF_UFLIRA. Timeouts are passed as each solver's
own option (z3 `timeout` ms, cvc5 `tlimit-per` ms); solvers pysmt drives without a known timeout
option are listed without the timeout capability. Unsat cores are not offered: pysmt only
exposes them for z3 and not together with push/pop and assumptions.
"""

from __future__ import annotations

import contextlib
import time
from fractions import Fraction
from typing import Any

from pmsolve import interrupts
from pmsolve.backends import capabilities as C
from pmsolve.backends import result as R
from pmsolve.backends.base import Backend
from pmsolve.backends.smt_compile import Prims, SmtEngine
from pmsolve.errors import SolverError
from pmsolve.symbolic import nodes as n

TIMEOUT_OPTION = {"z3": ("timeout", lambda ms: ms), "cvc5": ("tlimit-per", lambda ms: str(ms))}


class PysmtPrims(Prims):
    def __init__(self) -> None:
        from pysmt import shortcuts, typing
        from pysmt.environment import Environment

        self.env = Environment()  # private environment: no global state shared between sessions
        self.mgr = self.env.formula_manager
        self.shortcuts = shortcuts
        self.types = typing

    def bool_var(self, name: str) -> Any:
        return self.mgr.Symbol(name, self.types.BOOL)

    def num_var(self, name: str, sort: n.Sort) -> Any:
        return self.mgr.Symbol(name, self.types.INT if sort is n.Sort.INT else self.types.REAL)

    def const(self, value: Fraction, sort: n.Sort) -> Any:
        if sort is n.Sort.INT:
            return self.mgr.Int(value.numerator)
        return self.mgr.Real(value)

    def bool_const(self, value: bool) -> Any:
        return self.mgr.Bool(value)

    def to_real(self, term: Any) -> Any:
        return self.mgr.ToReal(term)

    def add(self, terms: list[Any]) -> Any:
        return self.mgr.Plus(terms)

    def mul(self, c: Any, term: Any) -> Any:
        return self.mgr.Times(c, term)

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        return self.mgr.Ite(c, a, b)

    def and_(self, args: list[Any]) -> Any:
        return self.mgr.And(args)

    def or_(self, args: list[Any]) -> Any:
        return self.mgr.Or(args)

    def not_(self, a: Any) -> Any:
        return self.mgr.Not(a)

    def implies(self, a: Any, b: Any) -> Any:
        return self.mgr.Implies(a, b)

    def iff(self, a: Any, b: Any) -> Any:
        return self.mgr.Iff(a, b)

    def cmp(self, op: str, a: Any, b: Any) -> Any:
        m = self.mgr
        return {"=": lambda: m.Equals(a, b), "!=": lambda: m.Not(m.Equals(a, b)),
                "<=": lambda: m.LE(a, b), "<": lambda: m.LT(a, b),
                ">=": lambda: m.GE(a, b), ">": lambda: m.GT(a, b)}[op]()


class PysmtEngine(SmtEngine):
    def __init__(self, solver: str, timeout: float | None, options: dict[str, Any]) -> None:
        prims = PysmtPrims()
        super().__init__(prims)
        opts = dict(options)
        if timeout is not None:
            if solver not in TIMEOUT_OPTION:
                raise SolverError(f"pysmt:{solver} has no timeout option known to pmsolve")
            key, conv = TIMEOUT_OPTION[solver]
            opts[key] = conv(max(1, int(timeout * 1000)))
        from pysmt.logics import QF_UFLIRA

        self.solver = prims.env.factory.Solver(name=solver, logic=QF_UFLIRA, solver_options=opts)
        self.name, self.timeout = solver, timeout
        native = getattr(self.solver, "z3", None)     # pysmt's z3 solver object
        if native is not None and interrupts.ignored():
            native.set("ctrl_c", False)

    def _assert(self, term: Any) -> None:
        self.solver.add_assertion(term)

    def _push(self) -> None:
        self.solver.push()

    def _pop(self) -> None:
        self.solver.pop()

    def _check(self, assumptions: list[Any]) -> str:
        from pysmt.exceptions import SolverReturnedUnknownResultError

        native = getattr(self.solver, "z3", None)
        # z3 catches Ctrl-C itself and answers unknown; cvc5 holds the interpreter
        guard = interrupts.uncancellable() if native is None else contextlib.nullcontext()
        started = time.monotonic()
        try:
            with guard:
                r = self.solver.solve(assumptions) if assumptions else self.solver.solve()
        except SolverReturnedUnknownResultError:
            reason = native.reason_unknown() if native is not None else ""
            if interrupts.solver_cancelled(reason, time.monotonic() - started, self.timeout):
                raise KeyboardInterrupt from None
            self._why = f"solver returned unknown ({reason or 'timeout or incompleteness'})"
            return R.UNKNOWN
        return R.SAT if r else R.UNSAT

    def _reason(self) -> str:
        return getattr(self, "_why", "")

    def _value(self, v: Any) -> Any:
        val = self.solver.get_value(v)
        c = val.constant_value()
        if val.is_bool_constant():
            return bool(c)
        if val.is_int_constant():
            return int(c)
        return Fraction(c)

    def close(self) -> None:
        self.solver.exit()


class PysmtBackend(Backend):
    summary = "pysmt driving a solver"
    modules: tuple[str, ...] = ("pysmt",)
    pip: tuple[str, ...] = ("pysmt",)

    def __init__(self, solver: str, solver_pip: str, solver_module: str) -> None:
        super().__init__()
        self.solver = solver
        self.name = f"pysmt:{solver}"
        self.summary = f"pysmt driving {solver}"
        self.pip = ("pysmt", solver_pip)
        self.modules = ("pysmt", solver_module)
        caps = {C.SMT, C.SAT, C.INCREMENTAL}
        if solver in TIMEOUT_OPTION:
            caps.add(C.TIMEOUT)
        self.capabilities = frozenset(caps)

    def extra_check(self) -> str | None:
        try:
            from pysmt.environment import Environment

            names = Environment().factory.all_solvers()
        except Exception as exc:
            return f"pysmt cannot list its solvers ({type(exc).__name__}: {exc})"
        if self.solver not in names:
            return f"pysmt does not find the {self.solver} solver (see `pysmt-install --check`)"
        return None

    def engine(self, timeout: float | None, options: dict[str, Any]) -> PysmtEngine:
        return PysmtEngine(self.solver, timeout, options)
