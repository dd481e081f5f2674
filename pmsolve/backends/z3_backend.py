"""z3 through its own Python API (pip: z3-solver, import: z3): SMT, push/pop, cores, optimisation."""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any

from pmsolve import interrupts
from pmsolve.backends import capabilities as C
from pmsolve.backends import result as R
from pmsolve.backends.base import Backend, RawResult
from pmsolve.backends.smt_compile import Compiler, Prims, SmtEngine
from pmsolve.errors import SolverError
from pmsolve.symbolic import nodes as n
from pmsolve.symbolic.problem import Problem


class Z3Prims(Prims):
    def __init__(self) -> None:
        import z3

        self.z3 = z3
        self.ctx = z3.Context()

    def bool_var(self, name: str) -> Any:
        return self.z3.Bool(name, self.ctx)

    def num_var(self, name: str, sort: n.Sort) -> Any:
        return (self.z3.Int if sort is n.Sort.INT else self.z3.Real)(name, self.ctx)

    def const(self, value: Fraction, sort: n.Sort) -> Any:
        if sort is n.Sort.INT:
            return self.z3.IntVal(value.numerator, self.ctx)
        return self.z3.RealVal(f"{value.numerator}/{value.denominator}", self.ctx)

    def bool_const(self, value: bool) -> Any:
        return self.z3.BoolVal(value, self.ctx)

    def to_real(self, term: Any) -> Any:
        return self.z3.ToReal(term)

    def add(self, terms: list[Any]) -> Any:
        return self.z3.Sum(terms)

    def mul(self, c: Any, term: Any) -> Any:
        return c * term

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        return self.z3.If(c, a, b, self.ctx)

    def and_(self, args: list[Any]) -> Any:
        return self.z3.And(args + [self.z3.BoolVal(True, self.ctx)] if len(args) < 2 else args)

    def or_(self, args: list[Any]) -> Any:
        return self.z3.Or(args + [self.z3.BoolVal(False, self.ctx)] if len(args) < 2 else args)

    def not_(self, a: Any) -> Any:
        return self.z3.Not(a, self.ctx)

    def implies(self, a: Any, b: Any) -> Any:
        return self.z3.Implies(a, b, self.ctx)

    def iff(self, a: Any, b: Any) -> Any:
        return a == b

    def cmp(self, op: str, a: Any, b: Any) -> Any:
        return {"=": lambda: a == b, "!=": lambda: a != b, "<=": lambda: a <= b,
                "<": lambda: a < b, ">=": lambda: a >= b, ">": lambda: a > b}[op]()


def z3_value(z3: Any, val: Any) -> Any:
    if z3.is_true(val):
        return True
    if z3.is_false(val):
        return False
    if z3.is_int_value(val):
        return val.as_long()
    if z3.is_rational_value(val):
        return Fraction(val.numerator_as_long(), val.denominator_as_long())
    raise SolverError(f"z3 returned a non-rational value {val}")


class Z3Engine(SmtEngine):
    def __init__(self, timeout: float | None, options: dict[str, Any]) -> None:
        prims = Z3Prims()
        super().__init__(prims)
        self.z3 = prims.z3
        self.timeout = timeout
        self.solver = self.z3.Solver(ctx=prims.ctx)
        if timeout is not None:
            self.solver.set("timeout", max(1, int(timeout * 1000)))
        if interrupts.ignored():  # a process that ignores Ctrl-C: z3 must not catch it either
            self.solver.set("ctrl_c", False)
        for k, v in options.items():
            self.solver.set(k, v)
        self._model: Any = None

    #: improvements tried after z3.Optimize before giving up (an unattained optimum never ends)
    OPTIMALITY_STEPS = 100

    def _assert(self, term: Any) -> None:
        self.solver.add(term)

    def _push(self) -> None:
        self.solver.push()

    def _pop(self) -> None:
        self.solver.pop()

    def _cancelled(self, solver: Any, started: float) -> None:
        """z3 catches Ctrl-C during a check itself and answers "unknown (canceled)": an
        interrupt, not a solver failure (:mod:`pmsolve.interrupts`)."""
        if interrupts.solver_cancelled(solver.reason_unknown(), time.monotonic() - started, self.timeout):
            raise KeyboardInterrupt

    def _check(self, assumptions: list[Any]) -> str:
        started = time.monotonic()
        r = self.solver.check(*assumptions)
        if r == self.z3.sat:
            self._model = self.solver.model()
            return R.SAT
        if r == self.z3.unsat:
            return R.UNSAT
        self._cancelled(self.solver, started)
        return R.UNKNOWN

    def _value(self, v: Any) -> Any:
        return z3_value(self.z3, self._model.eval(v, model_completion=True))

    def _core(self) -> list[Any]:
        return list(self.solver.unsat_core())

    def _reason(self) -> str:
        return self.solver.reason_unknown()

    def optimize(self, problem: Problem) -> RawResult:
        """z3.Optimize over the whole current stack, its answer then proved with a plain solver.

        z3 5.4's optimiser misreports some optima (e.g. ``1 - ε`` with a model worth 1/2 for an
        attained optimum 0 when Int and Real variables share the objective). So its model is only
        a starting point: while a plain solver finds a strictly better model, move to it (sharpened:
        the best model with its integer and Boolean values); the value is returned once
        ``objective < value`` (``>`` for max) is proved unsat.
        """
        z3 = self.z3
        opt = z3.Optimize(ctx=self.compiler.prims.ctx)  # type: ignore[attr-defined]
        chk = z3.Solver(ctx=self.compiler.prims.ctx)  # type: ignore[attr-defined]
        if self.timeout is not None:
            opt.set("timeout", max(1, int(self.timeout * 1000)))
            chk.set("timeout", max(1, int(self.timeout * 1000)))
        if interrupts.ignored():
            opt.set("ctrl_c", False)
            chk.set("ctrl_c", False)
        comp = Compiler(self.compiler.prims)
        facts = []
        for v in problem.variables():
            comp.var(v)
            if isinstance(v, n.NumVar):
                facts += comp.bounds(v)
        facts += [comp.formula(c.formula) for c in problem.constraints]
        opt.add(*facts)
        chk.add(*facts)
        objective = problem.objective
        if objective is None:
            raise SolverError("optimize() needs an objective")
        obj = comp.term(objective.term)
        minimise = objective.sense == "min"
        h = opt.minimize(obj) if minimise else opt.maximize(obj)
        started = time.monotonic()
        r = opt.check()
        if r == z3.unsat:
            return RawResult(R.UNSAT)
        if r != z3.sat:
            self._cancelled(opt, started)
            return RawResult(R.UNKNOWN, reason=opt.reason_unknown())
        bound = opt.upper(h) if minimise else opt.lower(h)
        if "oo" in str(bound):
            return RawResult(R.UNBOUNDED, reason=f"objective bound {bound}")
        model = opt.model()
        discrete = [comp.vars[v.name] for v in problem.variables()
                    if not (isinstance(v, n.NumVar) and v.sort is n.Sort.REAL)]
        for _ in range(self.OPTIMALITY_STEPS):
            value = model.eval(obj, model_completion=True)
            chk.push()
            chk.add(obj < value if minimise else obj > value)
            started = time.monotonic()
            better = chk.check()
            if better == z3.sat:
                model = self._sharpened(facts, obj, minimise, discrete, chk.model())
            chk.pop()
            if better == z3.unsat:
                return RawResult(R.SAT, {v.name: z3_value(z3, model.eval(comp.vars[v.name], model_completion=True))
                                         for v in problem.variables()})
            if better != z3.sat:
                self._cancelled(chk, started)
                return RawResult(R.UNKNOWN, reason=chk.reason_unknown())
        return RawResult(R.UNKNOWN, reason=f"optimum not attained or not proved within "
                                           f"{self.OPTIMALITY_STEPS} improvements (z3 reported {bound})")

    def _sharpened(self, facts: list[Any], obj: Any, minimise: bool, discrete: list[Any], model: Any) -> Any:
        """The best model with ``model``'s integer and Boolean values: with those fixed the rest is
        linear real arithmetic, whose optimum z3.Optimize finds. Each step of the search above then
        moves to a better discrete assignment, where a plain solver's next model may improve a real
        variable only a little each time (``min r + x + y`` with ``r`` in [0, 2]: 100 steps did not
        reach the optimum). Falls back to ``model`` whenever z3 gives no better one."""
        z3 = self.z3
        lp = z3.Optimize(ctx=self.compiler.prims.ctx)  # type: ignore[attr-defined]
        if self.timeout is not None:
            lp.set("timeout", max(1, int(self.timeout * 1000)))
        lp.add(*facts)
        lp.add(*[v == model.eval(v, model_completion=True) for v in discrete])
        lp.minimize(obj) if minimise else lp.maximize(obj)
        if lp.check() != z3.sat:
            return model
        best = lp.model()
        old, new = model.eval(obj, model_completion=True), best.eval(obj, model_completion=True)
        ok = z3.simplify(new <= old if minimise else new >= old)
        return best if z3.is_true(ok) else model


class Z3Backend(Backend):
    name = "z3"
    summary = "Z3 via its Python API"
    capabilities = frozenset({C.SMT, C.SAT, C.INCREMENTAL, C.UNSAT_CORE,
                              C.OPTIMIZE, C.TIMEOUT})
    modules = ("z3",)
    pip = ("z3-solver",)

    def engine(self, timeout: float | None, options: dict[str, Any]) -> Z3Engine:
        return Z3Engine(timeout, options)
