"""Exact evaluation of IR nodes under an assignment: the independent check of solver models."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable, Mapping, Union

from pmsolve.errors import ValidationError
from pmsolve.symbolic import nodes as n
from pmsolve.symbolic.visit import Visitor, handles

Value = Union[bool, int, Fraction]
Assignment = Mapping[str, Value]

_CMP = {"=": lambda d: d == 0, "!=": lambda d: d != 0, "<=": lambda d: d <= 0,
        "<": lambda d: d < 0, ">=": lambda d: d >= 0, ">": lambda d: d > 0}


class ModelEvaluator(Visitor):
    """Terms evaluate to Fractions, formulas to bools; a missing or ill-sorted value raises."""

    def __init__(self, assignment: Assignment) -> None:
        self.assignment = assignment

    def _lookup(self, name: str) -> Value:
        try:
            return self.assignment[name]
        except KeyError:
            raise ValidationError(f"the assignment has no value for variable {name!r}") from None

    @handles("num_var")
    def _num_var(self, v: n.NumVar) -> Fraction:
        val = self._lookup(v.name)
        if isinstance(val, bool):
            raise ValidationError(f"variable {v.name!r} is numeric but assigned {val!r}")
        return Fraction(val)

    @handles("lin")
    def _lin(self, t: n.Lin) -> Fraction:
        total = t.const
        for atom, c in t.terms:
            total += c * self.visit(atom)
        return total

    @handles("ite")
    def _ite(self, a: n.Ite) -> Fraction:
        return self.visit(a.then if self.visit(a.cond) else a.other)

    @handles("bool_var")
    def _bool_var(self, v: n.BoolVar) -> bool:
        val = self._lookup(v.name)
        if not isinstance(val, bool):
            raise ValidationError(f"variable {v.name!r} is boolean but assigned {val!r}")
        return val

    @handles("bool_const")
    def _bool_const(self, f: n.BoolConst) -> bool:
        return f.value

    @handles("not")
    def _not(self, f: n.NotF) -> bool:
        return not self.visit(f.arg)

    @handles("and")
    def _and(self, f: n.AndF) -> bool:
        return all(self.visit(a) for a in f.args)

    @handles("or")
    def _or(self, f: n.OrF) -> bool:
        return any(self.visit(a) for a in f.args)

    @handles("implies")
    def _implies(self, f: n.ImpliesF) -> bool:
        return (not self.visit(f.lhs)) or self.visit(f.rhs)

    @handles("iff")
    def _iff(self, f: n.IffF) -> bool:
        return self.visit(f.lhs) == self.visit(f.rhs)

    @handles("compare")
    def _compare(self, f: n.Compare) -> bool:
        return _CMP[f.op](self.visit(f.lhs) - self.visit(f.rhs))


def evaluate(expr: object, assignment: Assignment) -> Value:
    """Value of a term (Fraction) or formula (bool); missing variables raise ValidationError."""
    if not isinstance(expr, n.Node):
        raise ValidationError(f"cannot evaluate {type(expr).__name__} {expr!r}")
    return ModelEvaluator(assignment).visit(expr)


def eval_term(term: object, assignment: Assignment) -> Fraction:
    return ModelEvaluator(assignment).visit(n.as_term(term))


def eval_formula(f: "n.Formula", assignment: Assignment) -> bool:
    return ModelEvaluator(assignment).visit(f)


def violations(problem: Any, assignment: Assignment) -> list[str]:
    """Constraints (and variable bounds / integrality) of a Problem that `assignment` violates."""
    return model_violations(problem.variables(), problem.constraints, assignment)


def model_violations(variables: Iterable[Any], constraints: Iterable[Any],
                     assignment: Assignment) -> list[str]:
    """What `assignment` violates among these variables' sorts and bounds and these constraints
    (objects with `formula` and `name`), as text; empty when it is a model."""
    bad: list[str] = []
    for v in variables:
        if v.name not in assignment:
            bad.append(f"no value for {v.name}")
            continue
        val = assignment[v.name]
        if isinstance(v, n.BoolVar):
            if not isinstance(val, bool):
                bad.append(f"{v.name} = {val!r} is not a boolean")
            continue
        if isinstance(val, bool):
            bad.append(f"{v.name} = {val!r} is not a number")
            continue
        val = Fraction(val)
        if v.sort is n.Sort.INT and val.denominator != 1:
            bad.append(f"{v.name} = {val} is not an integer")
        if v.lo is not None and val < v.lo:
            bad.append(f"{v.name} = {val} is below its lower bound {v.lo}")
        if v.hi is not None and val > v.hi:
            bad.append(f"{v.name} = {val} is above its upper bound {v.hi}")
    if bad:
        return bad
    ev = ModelEvaluator(assignment)
    for c in constraints:
        # a compiled boolean formula only confirms "true"; anything else the evaluator decides
        fast = n._once(c.formula, "_holds", lambda: _compile_boolean(c.formula) or False)
        try:
            ok = fast is not False and fast(assignment) is True
        except KeyError:
            ok = False
        if not ok and not ev.visit(c.formula):
            bad.append(f"violated {c.name or 'constraint'}: {c.formula}")
    return bad


_BOOL_OPS = {"and": " and ", "or": " or "}


def _compile_boolean(f: n.Formula, max_depth: int = 60) -> Any:
    """A purely boolean formula as one compiled Python expression: true exactly when
    :class:`ModelEvaluator` says true (a variable counts only when its value is the boolean
    True), many times faster on the large clause sets of SAT encodings, which the sessions
    validate on every check. None when the formula has other kinds of nodes or nests too deep."""
    def expr(g: n.Formula, depth: int) -> str | None:
        if depth > max_depth:
            return None
        k = g.kind
        if k == "bool_var":
            return f"(a[{g.name!r}] is True)"
        if k == "bool_const":
            return "True" if g.value else "False"
        if k == "not":
            x = expr(g.arg, depth + 1)
            return None if x is None else f"(not {x})"
        if k in _BOOL_OPS:
            parts = [expr(x, depth + 1) for x in g.args]
            if any(x is None for x in parts):
                return None
            return "(" + (_BOOL_OPS[k].join(parts) or ("True" if k == "and" else "False")) + ")"
        if k in ("implies", "iff"):
            x, y = expr(g.lhs, depth + 1), expr(g.rhs, depth + 1)
            if x is None or y is None:
                return None
            return f"((not {x}) or {y})" if k == "implies" else f"({x} == {y})"
        return None

    try:
        body = expr(f, 0)
        return None if body is None else eval(compile(f"lambda a: {body}", "<formula>", "eval"))  # noqa: S307
    except (RecursionError, SyntaxError, MemoryError, ValueError):
        return None
