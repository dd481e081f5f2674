"""Pure boolean problems on a SAT solver via python-sat (pip: python-sat, import: pysat).

Formulas are Tseitin-encoded (definitions are global, so they survive pops); each push level
gets an activation literal that guards its assertions and is assumed while the level is live,
which gives native incremental push/pop. Named constraints get tracking literals, so the
solver's assumption core names them. The solver runs in a helper thread that a timeout or
Ctrl-C interrupts.
"""

from __future__ import annotations

from typing import Any

from pmsolve import interrupts
from pmsolve.backends import capabilities as C
from pmsolve.backends import result as R
from pmsolve.backends.base import Backend, Engine, RawResult
from pmsolve.errors import SolverError
from pmsolve.symbolic import nodes as n
from pmsolve.symbolic.evaluate import eval_formula
from pmsolve.symbolic.nodes import FORMULA_KINDS
from pmsolve.symbolic.problem import Constraint, Problem
from pmsolve.symbolic.visit import MemoVisitor, handles

SOLVER = "glucose4"


class Tseitin(MemoVisitor):
    """Each formula node -> one literal, with its definition clauses added to the solver."""

    covers = FORMULA_KINDS

    def __init__(self, engine: "SatEngine") -> None:
        super().__init__()
        self.engine = engine

    @handles("bool_var")
    def _bool_var(self, f: n.BoolVar) -> int:
        return self.engine.pool.id(("var", f.name))

    @handles("bool_const")
    def _bool_const(self, f: n.BoolConst) -> int:
        return self.engine.true if f.value else -self.engine.true

    @handles("not")
    def _not(self, f: n.NotF) -> int:
        return -self.visit(f.arg)

    @handles("and", "or")
    def _junction(self, f: n.AndF | n.OrF) -> int:
        add = self.engine.solver.add_clause
        ls = [self.visit(a) for a in f.args]
        v = self.engine.fresh()
        if isinstance(f, n.AndF):  # v ↔ ∧ ls
            for li in ls:
                add([-v, li])
            add([v] + [-li for li in ls])
        else:  # v ↔ ∨ ls
            for li in ls:
                add([v, -li])
            add([-v] + ls)
        return v

    @handles("iff")
    def _iff(self, f: n.IffF) -> int:
        a, b, v = self.visit(f.lhs), self.visit(f.rhs), self.engine.fresh()
        for cl in ([-v, -a, b], [-v, a, -b], [v, a, b], [v, -a, -b]):
            self.engine.solver.add_clause(cl)
        return v

    @handles("compare")
    def _compare(self, f: n.Compare) -> int:
        if f.difference().terms:
            raise SolverError(f"the sat backend only takes boolean formulas, not `{f}`")
        return self.engine.true if eval_formula(f, {}) else -self.engine.true


class SatEngine(Engine):
    def __init__(self, timeout: float | None, options: dict[str, Any]) -> None:
        from pysat.formula import IDPool
        from pysat.solvers import Solver

        self.pool = IDPool()
        self.solver = Solver(name=str(options.get("solver", SOLVER)))
        self.timeout = timeout
        self.true = self.pool.id(("const", True))
        self.solver.add_clause([self.true])
        self._frames: list[int] = [self.pool.id(("frame", 0))]
        self._tracks: list[list[tuple[str, int]]] = [[]]
        self._nframes = 1
        self._var_ids: dict[str, int] = {}
        self.tseitin = Tseitin(self)

    def lit(self, f: n.Formula) -> int:
        return self.tseitin.visit(f)  # type: ignore[no-any-return]

    def fresh(self) -> int:
        return self.pool.id(("aux", self.pool.top + 1))

    def add(self, constraint: Constraint) -> None:
        x = self.lit(constraint.formula)
        act = self._frames[-1]
        if constraint.name is None:
            self.solver.add_clause([-act, x])
        else:
            t = self.pool.id(("track", constraint.name, self._nframes))
            self.solver.add_clause([-act, -t, x])
            self._tracks[-1].append((constraint.name, t))

    def push(self) -> None:
        self._frames.append(self.pool.id(("frame", self._nframes)))
        self._nframes += 1
        self._tracks.append([])

    def pop(self) -> None:
        self.solver.add_clause([-self._frames.pop()])
        self._tracks.pop()

    def check(self, problem: Problem, core: bool) -> RawResult:
        if problem.objective is not None:
            raise SolverError("the sat backend cannot optimise an objective")
        return self.check_values(problem.variables(), core)

    def check_values(self, variables: Any, core: bool) -> RawResult:
        """Solve the live levels; on sat read back `variables` (see Session.check(values=...))."""
        variables = list(variables)
        for v in variables:
            if not isinstance(v, n.BoolVar):
                raise SolverError(f"the sat backend only takes boolean variables, not {v.name}")
        tracks = [t for fr in self._tracks for t in fr]
        assumptions = list(self._frames) + [t for _, t in tracks]
        try:   # in a helper thread, so Ctrl-C and the timeout interrupt the solver at once
            ok = interrupts.run_cancellable(
                lambda: self.solver.solve_limited(assumptions=assumptions, expect_interrupt=True),
                self.solver.interrupt, timeout=self.timeout)
        finally:
            self.solver.clear_interrupt()
        if ok is None:
            return RawResult(R.UNKNOWN, reason="timeout")
        if ok:
            model = self.solver.get_model() or []
            true = {lit for lit in model if lit > 0}
            ids = self._var_ids
            for v in variables:
                if v.name not in ids:
                    ids[v.name] = self.pool.id(("var", v.name))
            return RawResult(R.SAT, {v.name: ids[v.name] in true for v in variables})
        named: tuple[str, ...] = ()
        if core:
            got = set(self.solver.get_core() or [])
            named = tuple(name for name, t in tracks if t in got)
        return RawResult(R.UNSAT, core=named)

    def close(self) -> None:
        self.solver.delete()


class SatBackend(Backend):
    name = "sat"
    summary = f"python-sat ({SOLVER}) for pure boolean problems"
    capabilities = frozenset({C.SAT, C.INCREMENTAL, C.UNSAT_CORE, C.TIMEOUT})
    modules = ("pysat.solvers", "pysat.formula")
    pip = ("python-sat",)

    def engine(self, timeout: float | None, options: dict[str, Any]) -> SatEngine:
        return SatEngine(timeout, options)
