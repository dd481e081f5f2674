"""A small typed IR for constraint problems: written once by the encodings, compiled by backends.

Bool/Int/Real variables carry optional bounds (the MILP route needs them), terms are linear
with `ite` atoms, formulas use and/or/not/implies/iff and comparisons. `evaluate` computes any
node exactly under an assignment; backends use it to validate every model they return.
"""

from pmsolve.symbolic.evaluate import eval_formula, eval_term, evaluate, violations
from pmsolve.symbolic.nodes import (
    FALSE, TRUE, And, Bool, BoolConst, BoolVar, Compare, Eq, Formula, Iff, Implies, Int, Ite, Lin,
    Ne, Not, NumVar, Or, Real, Sort, Sum, as_formula, as_term, compare, ite, to_fraction,
)
from pmsolve.symbolic.problem import Constraint, Objective, Problem

__all__ = [
    "FALSE", "TRUE", "And", "Bool", "BoolConst", "BoolVar", "Compare", "Constraint", "Eq",
    "Formula", "Iff", "Implies", "Int", "Ite", "Lin", "Ne", "Not", "NumVar", "Objective", "Or",
    "Problem", "Real", "Sort", "Sum", "as_formula", "as_term", "compare", "eval_formula",
    "eval_term", "evaluate", "ite", "to_fraction", "violations",
]
