"""Lexicographic order constraints for symmetry breaking (lex-leader, double-lex).

One encoding for booleans (true > false) and integer-valued terms alike: a chain of auxiliary
booleans e_r ↔ "the first r+1 entries are equal", so the constraints grow linearly with the
vector length (the nested form ``a0 > b0 ∨ (a0 = b0 ∧ …)`` grows quadratically in text).
"""

from __future__ import annotations

from typing import Sequence

from pmsolve.symbolic import TRUE, And, Bool, Formula, Iff, Implies, Lin


def lex_geq(xs: Sequence[Formula | Lin], ys: Sequence[Formula | Lin], tag: str) -> list[Formula]:
    """Constraints for xs ≥ ys lexicographically; auxiliary booleans are named `{tag}.eq{r}`."""
    out: list[Formula] = []
    eq_prev: Formula = TRUE
    for r, (x, y) in enumerate(zip(xs, ys)):
        boolean = isinstance(x, Formula)
        out.append(Implies(eq_prev, Implies(y, x) if boolean else x >= y))
        if r + 1 < len(xs):
            same_here = Iff(x, y) if boolean else x == y
            e = Bool(f"{tag}.eq{r}")
            out.append(Implies(And(eq_prev, same_here), e))
            out.append(Implies(e, And(eq_prev, same_here)))
            eq_prev = e
    return out
