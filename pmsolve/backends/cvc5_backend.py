"""cvc5 through its own (base) Python API (pip: cvc5, import: cvc5): SMT, push/pop, cores."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from pmsolve import interrupts
from pmsolve.backends import capabilities as C
from pmsolve.backends import result as R
from pmsolve.backends.base import Backend
from pmsolve.backends.smt_compile import Prims, SmtEngine
from pmsolve.errors import SolverError
from pmsolve.symbolic import nodes as n


class Cvc5Prims(Prims):
    def __init__(self) -> None:
        import cvc5

        self.cvc5 = cvc5
        self.kinds = cvc5.Kind
        self.tm = cvc5.TermManager()

    def bool_var(self, name: str) -> Any:
        return self.tm.mkConst(self.tm.getBooleanSort(), name)

    def num_var(self, name: str, sort: n.Sort) -> Any:
        s = self.tm.getIntegerSort() if sort is n.Sort.INT else self.tm.getRealSort()
        return self.tm.mkConst(s, name)

    def const(self, value: Fraction, sort: n.Sort) -> Any:
        if sort is n.Sort.INT:
            return self.tm.mkInteger(str(value.numerator))
        return self.tm.mkReal(f"{value.numerator}/{value.denominator}")

    def bool_const(self, value: bool) -> Any:
        return self.tm.mkBoolean(value)

    def to_real(self, term: Any) -> Any:
        return self.tm.mkTerm(self.kinds.TO_REAL, term)

    def add(self, terms: list[Any]) -> Any:
        return self.tm.mkTerm(self.kinds.ADD, *terms)

    def mul(self, c: Any, term: Any) -> Any:
        return self.tm.mkTerm(self.kinds.MULT, c, term)

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        return self.tm.mkTerm(self.kinds.ITE, c, a, b)

    def and_(self, args: list[Any]) -> Any:
        if len(args) == 1:
            return args[0]
        return self.tm.mkTerm(self.kinds.AND, *args) if args else self.tm.mkTrue()

    def or_(self, args: list[Any]) -> Any:
        if len(args) == 1:
            return args[0]
        return self.tm.mkTerm(self.kinds.OR, *args) if args else self.tm.mkFalse()

    def not_(self, a: Any) -> Any:
        return self.tm.mkTerm(self.kinds.NOT, a)

    def implies(self, a: Any, b: Any) -> Any:
        return self.tm.mkTerm(self.kinds.IMPLIES, a, b)

    def iff(self, a: Any, b: Any) -> Any:
        return self.tm.mkTerm(self.kinds.EQUAL, a, b)

    def cmp(self, op: str, a: Any, b: Any) -> Any:
        kind = {"=": self.kinds.EQUAL, "!=": self.kinds.DISTINCT, "<=": self.kinds.LEQ, "<": self.kinds.LT,
                ">=": self.kinds.GEQ, ">": self.kinds.GT}[op]
        return self.tm.mkTerm(kind, a, b)


class Cvc5Engine(SmtEngine):
    def __init__(self, timeout: float | None, options: dict[str, Any]) -> None:
        prims = Cvc5Prims()
        super().__init__(prims)
        self.solver = prims.cvc5.Solver(prims.tm)
        for k, v in (("produce-models", "true"), ("incremental", "true"),
                     ("produce-unsat-assumptions", "true")):
            self.solver.setOption(k, v)
        if timeout is not None:
            self.solver.setOption("tlimit-per", str(max(1, int(timeout * 1000))))
        for k, v in options.items():
            self.solver.setOption(str(k), str(v))
        self.solver.setLogic("QF_LIRA")
        self._reason_text = ""

    def _assert(self, term: Any) -> None:
        self.solver.assertFormula(term)

    def _push(self) -> None:
        self.solver.push()

    def _pop(self) -> None:
        self.solver.pop()

    def _check(self, assumptions: list[Any]) -> str:
        with interrupts.uncancellable():   # cvc5 holds the interpreter and has no cancel
            r = self.solver.checkSatAssuming(*assumptions) if assumptions else self.solver.checkSat()
        if r.isSat():
            return R.SAT
        if r.isUnsat():
            return R.UNSAT
        self._reason_text = str(r.getUnknownExplanation())
        return R.UNKNOWN

    def _value(self, v: Any) -> Any:
        val = self.solver.getValue(v)
        if val.isBooleanValue():
            return val.getBooleanValue()
        if val.isIntegerValue():
            return int(val.getIntegerValue())
        if val.isRealValue():
            return Fraction(val.getRealValue())
        raise SolverError(f"cvc5 returned an unexpected value {val}")

    def _core(self) -> list[Any]:
        return list(self.solver.getUnsatAssumptions())

    def _reason(self) -> str:
        return self._reason_text


class Cvc5Backend(Backend):
    name = "cvc5"
    summary = "cvc5 via its base Python API"
    capabilities = frozenset({C.SMT, C.SAT, C.INCREMENTAL, C.UNSAT_CORE, C.TIMEOUT})
    modules = ("cvc5",)
    pip = ("cvc5",)

    def engine(self, timeout: float | None, options: dict[str, Any]) -> Cvc5Engine:
        return Cvc5Engine(timeout, options)
