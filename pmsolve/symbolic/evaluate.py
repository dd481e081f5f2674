"""Exact evaluation of IR nodes under an assignment: the independent check of solver models."""

from __future__ import annotations

from fractions import Fraction
from typing import Mapping, Union

from pmsolve.errors import ValidationError
from pmsolve.symbolic import nodes as n

Value = Union[bool, int, Fraction]
Assignment = Mapping[str, Value]


def evaluate(expr: object, assignment: Assignment) -> Value:
    """Value of a term (Fraction) or formula (bool); missing variables raise ValidationError."""
    if isinstance(expr, n.Formula):
        return eval_formula(expr, assignment)
    if isinstance(expr, (n.Lin, n.NumVar, n.Ite)):
        return eval_term(expr.lin(), assignment)
    raise ValidationError(f"cannot evaluate {type(expr).__name__} {expr!r}")


def _lookup(name: str, assignment: Assignment) -> Value:
    try:
        return assignment[name]
    except KeyError:
        raise ValidationError(f"the assignment has no value for variable {name!r}") from None


def eval_term(term: "n.Lin", assignment: Assignment) -> Fraction:
    total = term.const
    for atom, c in term.terms:
        if isinstance(atom, n.NumVar):
            v = _lookup(atom.name, assignment)
            if isinstance(v, bool):
                raise ValidationError(f"variable {atom.name!r} is numeric but assigned {v!r}")
            total += c * Fraction(v)
        else:
            branch = atom.then if eval_formula(atom.cond, assignment) else atom.other
            total += c * eval_term(branch, assignment)
    return total


def eval_formula(f: "n.Formula", assignment: Assignment) -> bool:
    if isinstance(f, n.BoolVar):
        v = _lookup(f.name, assignment)
        if not isinstance(v, bool):
            raise ValidationError(f"variable {f.name!r} is boolean but assigned {v!r}")
        return v
    if isinstance(f, n.BoolConst):
        return f.value
    if isinstance(f, n.NotF):
        return not eval_formula(f.arg, assignment)
    if isinstance(f, n.AndF):
        return all(eval_formula(a, assignment) for a in f.args)
    if isinstance(f, n.OrF):
        return any(eval_formula(a, assignment) for a in f.args)
    if isinstance(f, n.ImpliesF):
        return (not eval_formula(f.lhs, assignment)) or eval_formula(f.rhs, assignment)
    if isinstance(f, n.IffF):
        return eval_formula(f.lhs, assignment) == eval_formula(f.rhs, assignment)
    if isinstance(f, n.Compare):
        d = eval_term(f.difference(), assignment)
        return {
            "=": d == 0, "!=": d != 0, "<=": d <= 0, "<": d < 0, ">=": d >= 0, ">": d > 0,
        }[f.op]
    raise ValidationError(f"not an IR formula: {f!r}")


def violations(problem: object, assignment: Assignment) -> list[str]:
    """Constraints (and variable bounds / integrality) that `assignment` violates, as text."""
    from pmsolve.symbolic.problem import Problem

    if not isinstance(problem, Problem):
        raise ValidationError("violations() expects a Problem")
    bad: list[str] = []
    for v in problem.variables():
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
    for c in problem.constraints:
        if not eval_formula(c.formula, assignment):
            bad.append(f"violated {c.name or 'constraint'}: {c.formula}")
    return bad
