"""Pure boolean problems on a SAT solver via python-sat (pip: python-sat, import: pysat).

Formulas are Tseitin-encoded (definitions are global, so they survive pops); each push level
gets an activation literal that guards its assertions and is assumed while the level is live,
which gives native incremental push/pop. Named constraints get tracking literals, so the
solver's assumption core names them. Timeouts interrupt the solver from a timer thread.
"""

from __future__ import annotations

import threading
from typing import Any

from pmsolve.backends import capabilities as C
from pmsolve.backends import result as R
from pmsolve.backends.base import Backend, Engine, RawResult
from pmsolve.errors import SolverError
from pmsolve.symbolic import nodes as n
from pmsolve.symbolic.problem import Constraint, Problem

SOLVER = "glucose4"


class SatEngine(Engine):
    def __init__(self, timeout: float | None, options: dict[str, Any]) -> None:
        from pysat.formula import IDPool
        from pysat.solvers import Solver

        self.pool = IDPool()
        self.s = Solver(name=str(options.get("solver", SOLVER)))
        self.timeout = timeout
        self._cache: dict[int, tuple[object, int]] = {}
        self._true = self.pool.id(("const", True))
        self.s.add_clause([self._true])
        self._frames: list[int] = [self.pool.id(("frame", 0))]
        self._tracks: list[list[tuple[str, int]]] = [[]]
        self._nframes = 1

    def lit(self, f: n.Formula) -> int:
        hit = self._cache.get(id(f))
        if hit is not None and hit[0] is f:
            return hit[1]
        out = self._lit(f)
        self._cache[id(f)] = (f, out)
        return out

    def _fresh(self) -> int:
        return self.pool.id(("aux", self.pool.top + 1))

    def _lit(self, f: n.Formula) -> int:
        add = self.s.add_clause
        if isinstance(f, n.BoolVar):
            return self.pool.id(("var", f.name))
        if isinstance(f, n.BoolConst):
            return self._true if f.value else -self._true
        if isinstance(f, n.NotF):
            return -self.lit(f.arg)
        if isinstance(f, (n.AndF, n.OrF)):
            ls = [self.lit(a) for a in f.args]
            v = self._fresh()
            if isinstance(f, n.AndF):  # v ↔ ∧ ls
                for li in ls:
                    add([-v, li])
                add([v] + [-li for li in ls])
            else:  # v ↔ ∨ ls
                for li in ls:
                    add([v, -li])
                add([-v] + ls)
            return v
        if isinstance(f, n.ImpliesF):
            return self.lit(n.OrF((n.Not(f.lhs), f.rhs)))
        if isinstance(f, n.Compare) and not f.difference().terms:
            from pmsolve.symbolic.evaluate import eval_formula

            return self._true if eval_formula(f, {}) else -self._true
        if isinstance(f, n.IffF):
            a, b, v = self.lit(f.lhs), self.lit(f.rhs), self._fresh()
            for cl in ([-v, -a, b], [-v, a, -b], [v, a, b], [v, -a, -b]):
                add(cl)
            return v
        raise SolverError(f"the sat backend only takes boolean formulas, not `{f}`")

    def add(self, constraint: Constraint) -> None:
        x = self.lit(constraint.formula)
        act = self._frames[-1]
        if constraint.name is None:
            self.s.add_clause([-act, x])
        else:
            t = self.pool.id(("track", constraint.name, self._nframes))
            self.s.add_clause([-act, -t, x])
            self._tracks[-1].append((constraint.name, t))

    def push(self) -> None:
        self._frames.append(self.pool.id(("frame", self._nframes)))
        self._nframes += 1
        self._tracks.append([])

    def pop(self) -> None:
        self.s.add_clause([-self._frames.pop()])
        self._tracks.pop()

    def check(self, problem: Problem, want_core: bool) -> RawResult:
        if problem.objective is not None:
            raise SolverError("the sat backend cannot optimise an objective")
        for v in problem.variables():
            if not isinstance(v, n.BoolVar):
                raise SolverError(f"the sat backend only takes boolean variables, not {v.name}")
        tracks = [t for fr in self._tracks for t in fr]
        assumptions = list(self._frames) + [t for _, t in tracks]
        if self.timeout is None:
            ok = self.s.solve(assumptions=assumptions)
        else:
            timer = threading.Timer(self.timeout, self.s.interrupt)
            timer.start()
            try:
                ok = self.s.solve_limited(assumptions=assumptions, expect_interrupt=True)
            finally:
                timer.cancel()
                self.s.clear_interrupt()
        if ok is None:
            return RawResult(R.UNKNOWN, reason="timeout")
        if ok:
            model = set(self.s.get_model() or [])
            return RawResult(R.SAT, {v.name: self.pool.id(("var", v.name)) in model
                                     for v in problem.variables()})
        core: tuple[str, ...] = ()
        if want_core:
            got = set(self.s.get_core() or [])
            core = tuple(name for name, t in tracks if t in got)
        return RawResult(R.UNSAT, core=core)

    def close(self) -> None:
        self.s.delete()


class SatBackend(Backend):
    name = "sat"
    summary = f"python-sat ({SOLVER}) for pure boolean problems"
    capabilities = frozenset({C.SAT, C.INCREMENTAL, C.UNSAT_CORE, C.TIMEOUT})
    modules = ("pysat.solvers", "pysat.formula")
    pip = ("python-sat",)

    def engine(self, timeout: float | None, options: dict[str, Any]) -> SatEngine:
        return SatEngine(timeout, options)
