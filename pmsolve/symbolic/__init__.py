"""A small typed IR for constraint problems: written once by the encodings, compiled by backends.

Bool/Int/Real variables carry optional bounds (the MILP route needs them), terms are linear
with `ite` atoms, formulas use and/or/not/implies/iff and comparisons. ``x == 3`` builds an
equation; no comparison has a Python truth value, so ``if x == 3:`` and ``2 <= x <= 4`` raise,
and nodes are compared with `same(a, b)` and keyed by `node.ident` (see
:mod:`pmsolve.symbolic.nodes`). `evaluate` computes any node exactly under an assignment;
backends use it to validate every model they return. Every operation on nodes (printing,
evaluation, each backend's converter) is a :class:`Visitor`.
"""

from pmsolve.symbolic.evaluate import ModelEvaluator, eval_formula, eval_term, evaluate, violations
from pmsolve.symbolic.nodes import (
    FALSE, TRUE, And, Bool, BoolConst, BoolVar, Compare, Eq, Formula, Ident, Iff, Implies, Int, Ite,
    Lin, Ne, Node, Not, NumVar, Or, Real, Sort, Sum, as_formula, as_term, compare, distinct, ite,
    same, to_fraction,
)
from pmsolve.symbolic.problem import Constraint, Objective, Problem
from pmsolve.symbolic.visit import MemoVisitor, Visitor, handles

__all__ = [
    "FALSE", "TRUE", "And", "Bool", "BoolConst", "BoolVar", "Compare", "Constraint", "Eq",
    "Formula", "Ident", "Iff", "Implies", "Int", "Ite", "Lin", "MemoVisitor", "ModelEvaluator", "Ne", "Node",
    "Not", "NumVar", "Objective", "Or", "Problem", "Real", "Sort", "Sum", "Visitor", "as_formula",
    "as_term", "compare", "distinct", "eval_formula", "eval_term", "evaluate", "handles", "ite", "same",
    "to_fraction", "violations",
]
