"""Big-M linearisation: IR problems with booleans, `ite` and bounded numbers -> a MILP.

The MILP backends (HiGHS, scipy) solve the result, so SMT encodings such as relateThroughput
get a second, independent route through the same model (DESIGN §3).

Each boolean subformula that is not a plain top-level conjunct gets a 0/1 literal. A literal is
only tied to its formula in the direction(s) the context needs (polarity): `lit = 1 ⇒ f` for
positive occurrences, `f ⇒ lit = 1` for negative ones, both under ↔ and ite conditions. The
big-M constants come from interval bounds of the terms, computed from the variable bounds the IR
carries; a needed bound that is missing is refused with a SolverError naming the variables.

Strictness: the negation of `d ≤ 0` is `d > 0`. For integer-valued `d` (integer variables,
coefficients scaled to integers) that is `d ≥ 1`, exact. For real `d` it becomes `d ≥ margin`
with the problem's `strict_margin`; without one the problem is refused, because a MILP solver
cannot express strict inequalities and silently choosing a margin could change the answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pmsolve.errors import SolverError
from pmsolve.symbolic import nodes as n
from pmsolve.symbolic.nodes import FORMULA_KINDS
from pmsolve.symbolic.problem import Problem
from pmsolve.symbolic.visit import MemoVisitor, Visitor, handles

POS, NEG, BOTH = 1, 2, 3
Affine = tuple[dict[int, Fraction], Fraction]


@dataclass
class Column:
    name: str
    lo: Fraction | None
    hi: Fraction | None
    integer: bool


@dataclass
class Row:
    coeffs: dict[int, Fraction]
    lo: Fraction | None
    hi: Fraction | None


@dataclass
class Milp:
    """A MILP with exact coefficients: lo ≤ row·x ≤ hi, column bounds, optional objective."""

    columns: list[Column] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    objective: dict[int, Fraction] = field(default_factory=dict)
    objective_const: Fraction = Fraction(0)
    sense: str = "min"
    var_columns: dict[str, int] = field(default_factory=dict)  # IR variable -> column
    bool_vars: set[str] = field(default_factory=set)

    @property
    def has_integers(self) -> bool:
        return any(c.integer for c in self.columns)

    def decode(self, x: list[float]) -> dict[str, Any]:
        """Column values -> IR variable values (booleans by rounding binaries)."""
        out: dict[str, Any] = {}
        for name, j in self.var_columns.items():
            out[name] = (x[j] > 0.5) if name in self.bool_vars else x[j]
        return out


def _fmt(aff: Affine, cols: list[Column]) -> str:
    return " + ".join(f"{c}*{cols[j].name}" for j, c in aff[0].items()) or "0"


class Linearizer(MemoVisitor):
    """Visits terms to affine expressions over columns and formulas (with a polarity) to 0/1
    literals, adding the rows that tie them; `assert_top` handles top-level conjuncts."""

    def __init__(self, problem: Problem) -> None:
        super().__init__()
        self.milp = Milp()
        self.margin = problem.strict_margin
        self._top = _TopLevel(self)
        for v in problem.variables():
            if isinstance(v, n.BoolVar):
                j = self._column(v.name, Fraction(0), Fraction(1), True)
                self.milp.bool_vars.add(v.name)
            else:
                j = self._column(v.name, v.lo, v.hi, v.sort is n.Sort.INT)
            self.milp.var_columns[v.name] = j
        for c in problem.constraints:
            self.assert_top(c.formula)
        if problem.objective is not None:
            coeffs, const = self.affine(problem.objective.term)
            self.milp.objective, self.milp.objective_const = coeffs, const
            self.milp.sense = problem.objective.sense

    # --- columns, rows, affine arithmetic
    def _column(self, name: str, lo: Fraction | None, hi: Fraction | None, integer: bool) -> int:
        self.milp.columns.append(Column(name, lo, hi, integer))
        return len(self.milp.columns) - 1

    def _binary(self, hint: str) -> int:
        return self._column(f"_b{len(self.milp.columns)}[{hint[:40]}]", Fraction(0), Fraction(1), True)

    def _row(self, aff: Affine, lo: Fraction | None, hi: Fraction | None) -> None:
        """lo ≤ aff ≤ hi."""
        coeffs, const = aff
        coeffs = {j: c for j, c in coeffs.items() if c != 0}
        lo2 = None if lo is None else lo - const
        hi2 = None if hi is None else hi - const
        if not coeffs:
            if (lo2 is not None and lo2 > 0) or (hi2 is not None and hi2 < 0):
                self.milp.rows.append(Row({}, Fraction(1), None))  # infeasible: 0 ≥ 1
            return
        self.milp.rows.append(Row(coeffs, lo2, hi2))

    @staticmethod
    def _add(*parts: tuple[Fraction, Affine]) -> Affine:
        out: dict[int, Fraction] = {}
        const = Fraction(0)
        for k, (coeffs, c0) in parts:
            for j, c in coeffs.items():
                out[j] = out.get(j, Fraction(0)) + k * c
            const += k * c0
        return out, const

    @staticmethod
    def _col(j: int) -> Affine:
        return {j: Fraction(1)}, Fraction(0)

    @staticmethod
    def _const(c: Fraction | int) -> Affine:
        return {}, Fraction(c)

    def bounds(self, aff: Affine) -> tuple[Fraction | None, Fraction | None]:
        lo: Fraction | None = aff[1]
        hi: Fraction | None = aff[1]
        for j, c in aff[0].items():
            col = self.milp.columns[j]
            a, b = (col.lo, col.hi) if c > 0 else (col.hi, col.lo)
            lo = None if lo is None or a is None else lo + c * a
            hi = None if hi is None or b is None else hi + c * b
        return lo, hi

    def _need(self, value: Fraction | None, aff: Affine, what: str, where: object) -> Fraction:
        if value is None:
            free = [self.milp.columns[j].name for j, c in aff[0].items()
                    if (self.milp.columns[j].lo is None or self.milp.columns[j].hi is None)]
            raise SolverError(
                f"big-M linearisation needs a finite {what} bound of {_fmt(aff, self.milp.columns)} "
                f"in `{where}`; give these variables bounds (lo/hi): {', '.join(free)}")
        return value

    def _integral(self, aff: Affine) -> bool:
        return all(self.milp.columns[j].integer and c.denominator == 1 for j, c in aff[0].items()) \
            and aff[1].denominator == 1

    def _normalise(self, aff: Affine) -> Affine:
        """Scale an all-integer-columns expression to integer coefficients (exact strictness)."""
        if aff[0] and all(self.milp.columns[j].integer for j in aff[0]):
            den = math.lcm(*(c.denominator for c in aff[0].values()), aff[1].denominator)
            if den != 1:
                return self._add((Fraction(den), aff))
        return aff

    def _strict_step(self, aff: Affine, where: object) -> Fraction:
        if self._integral(aff):
            return Fraction(1)
        if self.margin is None or self.margin <= 0:
            raise SolverError(
                f"`{where}` needs a strict comparison over reals, which MILP solvers cannot "
                "express; set Problem.strict_margin (a gap the encoding guarantees) or use an "
                "SMT backend")
        return self.margin

    def affine(self, t: n.Lin) -> Affine:
        return self.visit(t)  # type: ignore[no-any-return]

    @handles("lin")
    def _lin(self, t: n.Lin) -> Affine:
        out: dict[int, Fraction] = {}
        for atom, c in t.terms:
            for j, k in self.visit(atom)[0].items():
                out[j] = out.get(j, Fraction(0)) + c * k
        return out, t.const

    @handles("num_var")
    def _num_var(self, v: n.NumVar) -> Affine:
        return self._col(self.milp.var_columns[v.name])

    @handles("ite")
    def _ite(self, atom: n.Ite) -> Affine:
        a, b = self.affine(atom.then), self.affine(atom.other)
        (alo, ahi), (blo, bhi) = self.bounds(a), self.bounds(b)
        where = f"ite({atom.cond}, ...)"
        lo = min(self._need(alo, a, "lower", where), self._need(blo, b, "lower", where))
        hi = max(self._need(ahi, a, "upper", where), self._need(bhi, b, "upper", where))
        y = self._column(f"_ite{len(self.milp.columns)}", lo, hi,
                         self._integral(a) and self._integral(b))
        c = self.literal(atom.cond, BOTH)
        ya = self._add((Fraction(1), self._col(y)), (Fraction(-1), a))  # y - a
        yb = self._add((Fraction(1), self._col(y)), (Fraction(-1), b))
        # c = 1 ⇒ y = a :  y - a ≤ U(1-c),  y - a ≥ L(1-c)
        for aff, active in ((ya, c), (yb, self._add((Fraction(-1), c), (Fraction(1), self._const(1))))):
            lo_ = self._need(self.bounds(aff)[0], aff, "lower", where)
            hi_ = self._need(self.bounds(aff)[1], aff, "upper", where)
            inactive = self._add((Fraction(1), self._const(1)), (Fraction(-1), active))
            self._row(self._add((Fraction(1), aff), (-hi_, inactive)), None, Fraction(0))
            self._row(self._add((Fraction(1), aff), (-lo_, inactive)), Fraction(0), None)
        return self._col(y)

    # --- formulas
    def assert_top(self, f: n.Formula) -> None:
        self._top.visit(f)

    def _indicator(self, lit: Affine, cmp: n.Compare) -> None:
        """lit = 1 ⇒ cmp, for non-strict cmp (the common `b → x = 0` shape), without a new binary."""
        d = self._normalise(self.affine(cmp.difference()))
        off = self._add((Fraction(1), self._const(1)), (Fraction(-1), lit))  # 1 - lit
        lo, hi = self.bounds(d)
        if cmp.op in ("=", "<="):
            hi = self._need(hi, d, "upper", cmp)
            if hi > 0:
                self._row(self._add((Fraction(1), d), (-hi, off)), None, Fraction(0))
        if cmp.op in ("=", ">="):
            lo = self._need(lo, d, "lower", cmp)
            if lo < 0:
                self._row(self._add((Fraction(1), d), (-lo, off)), Fraction(0), None)

    def literal(self, f: n.Formula, pol: int) -> Affine:
        """A 0/1 affine expression tied to `f` in the direction(s) `pol` needs (module doc)."""
        return self.visit(f, pol)  # type: ignore[no-any-return]

    @handles("bool_var")
    def _bool_var(self, f: n.BoolVar, pol: int) -> Affine:
        return self._col(self.milp.var_columns[f.name])

    @handles("bool_const")
    def _bool_const(self, f: n.BoolConst, pol: int) -> Affine:
        return self._const(1 if f.value else 0)

    @handles("not")
    def _not(self, f: n.NotF, pol: int) -> Affine:
        flip = {POS: NEG, NEG: POS, BOTH: BOTH}[pol]
        return self._add((Fraction(1), self._const(1)), (Fraction(-1), self.literal(f.arg, flip)))

    @handles("and", "or")
    def _junction(self, f: n.AndF | n.OrF, pol: int) -> Affine:
        one = Fraction(1)
        lits = [self.literal(a, pol) for a in f.args]
        d = self._col(self._binary(type(f).__name__))
        k = Fraction(len(lits))
        if isinstance(f, n.AndF):
            if pol & POS:
                for li in lits:  # d ≤ l_i
                    self._row(self._add((one, d), (-one, li)), None, Fraction(0))
            if pol & NEG:  # d ≥ Σ l_i - (k - 1)
                self._row(self._add((one, d), *((-one, li) for li in lits)), 1 - k, None)
        else:
            if pol & POS:  # d ≤ Σ l_i
                self._row(self._add((one, d), *((-one, li) for li in lits)), None, Fraction(0))
            if pol & NEG:
                for li in lits:  # d ≥ l_i
                    self._row(self._add((one, d), (-one, li)), Fraction(0), None)
        return d

    @handles("compare")
    def _compare(self, f: n.Compare, pol: int) -> Affine:
        one = Fraction(1)
        if f.op == "=":
            return self.literal(n.AndF((n.Compare("<=", f.lhs, f.rhs),
                                        n.Compare(">=", f.lhs, f.rhs))), pol)
        if f.op == "!=":
            return self.literal(n.NotF(n.Compare("=", f.lhs, f.rhs)), pol)
        d = self.affine(f.difference())
        if f.op in (">=", ">"):
            d = self._add((-one, d))
        d = self._normalise(d)
        strict = f.op in ("<", ">")
        delta = self._col(self._binary("cmp"))
        off = self._add((one, self._const(1)), (-one, delta))  # 1 - δ
        lo, hi = self.bounds(d)
        if pol & POS:  # δ = 1 ⇒ d ≤ 0 (or d ≤ -s)
            s = self._strict_step(d, f) if strict else Fraction(0)
            hi = self._need(hi, d, "upper", f)
            if hi + s > 0:  # d + s ≤ (hi + s)(1 - δ)
                self._row(self._add((one, d), (s, self._const(1)), (-(hi + s), off)), None, Fraction(0))
        if pol & NEG:  # δ = 0 ⇒ d > 0 (or d ≥ 0 when strict)
            s = Fraction(0) if strict else self._strict_step(d, f)
            lo = self._need(lo, d, "lower", f)
            if lo < s:  # d ≥ s - (s - lo) δ
                self._row(self._add((one, d), (s - lo, delta)), s, None)
        return delta


class _TopLevel(Visitor):
    """Asserts one top-level conjunct: plain rows for comparisons and literals, an indicator row
    for `b → comparison`, and `literal ≥ 1` (the generic route) for everything else."""

    covers = FORMULA_KINDS

    def __init__(self, lin: Linearizer) -> None:
        self.lin = lin

    @handles("and")
    def _and(self, f: n.AndF) -> None:
        for a in f.args:
            self.visit(a)

    @handles("bool_const")
    def _bool_const(self, f: n.BoolConst) -> None:
        if not f.value:
            self.lin._row(self.lin._const(0), Fraction(1), None)

    @handles("bool_var")
    def _bool_var(self, f: n.BoolVar) -> None:
        self.lin._row(self.lin._col(self.lin.milp.var_columns[f.name]), Fraction(1), None)

    @handles("not")
    def _not(self, f: n.NotF) -> None:
        if isinstance(f.arg, n.BoolVar):
            self.lin._row(self.lin._col(self.lin.milp.var_columns[f.arg.name]), None, Fraction(0))
        else:
            self._generic(f)

    @handles("compare")
    def _compare(self, f: n.Compare) -> None:
        if f.op == "!=":
            return self._generic(f)
        lin = self.lin
        d = lin._normalise(lin.affine(f.difference()))
        if f.op == "=":
            lin._row(d, Fraction(0), Fraction(0))
        elif f.op == "<=":
            lin._row(d, None, Fraction(0))
        elif f.op == ">=":
            lin._row(d, Fraction(0), None)
        elif f.op == "<":
            lin._row(d, None, -lin._strict_step(d, f))
        else:
            lin._row(d, lin._strict_step(d, f), None)

    @handles("implies")
    def _implies(self, f: n.ImpliesF) -> None:
        if isinstance(f.lhs, n.BoolVar) and isinstance(f.rhs, n.Compare) and f.rhs.op in ("=", "<=", ">="):
            self.lin._indicator(self.lin._col(self.lin.milp.var_columns[f.lhs.name]), f.rhs)
        else:
            self._generic(f)

    @handles("or", "iff")
    def _generic(self, f: n.Formula) -> None:
        self.lin._row(self.lin.literal(f, POS), Fraction(1), None)


def linearize(problem: Problem) -> Milp:
    """The MILP equivalent of `problem` (see module doc for exactness), or SolverError."""
    return Linearizer(problem).milp
