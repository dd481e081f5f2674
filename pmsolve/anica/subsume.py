"""Subsumption of abstract and concrete blocks (Def. 8.7) for the AnICA domain.

C2 (γ(a2[m(i)]) ⊆ γ(a1[i])) is decided exactly on the finite universe with γ masks; C1-C4 are
then the SAT encoding of :mod:`pmsolve.encodings.subsumption`. A direct search over injective
maps (at most 5!/1! = 120 for AnICA's block sizes) decides the same constraints much faster; the
campaign asks the solver only about pairs the search accepts, so every subsumption it acts on
is a SAT model, and tests check both routes agree everywhere.

For many concrete blocks at once (test-set coverage) :func:`covers` decides the same
constraints by a direct search over injective maps; tests check it against the SAT route.
For this domain γ(β(i)) ⊆ γ(a) iff i ∈ γ(a) (every feature's β is its most precise value), so
C2 for a concrete block is a lookup in the γ mask.
"""

from __future__ import annotations

from itertools import permutations
from typing import Sequence

import numpy as np

from pmsolve.anica.domain import AbstractBlock, Concrete, Universe, alias_facts, beta
from pmsolve.encodings.subsumption import subsumes as sat_subsumes


def compatible(u: Universe, a1: AbstractBlock, a2: AbstractBlock) -> list[list[bool]]:
    g1 = [u.gamma(x) for x in a1.insns]
    g2 = [u.gamma(x) for x in a2.insns]
    return [[not bool((y & ~x).any()) for y in g2] for x in g1]


def subsumes(u: Universe, a1: AbstractBlock, a2: AbstractBlock, backend: str | None = None) -> bool:
    """Def. 8.7: does a1 subsume a2? A direct search rules most pairs out in microseconds;
    the SAT encoding decides the rest (tests check that both always agree)."""
    n1, n2 = len(a1.insns), len(a2.insns)
    if n1 > n2:
        return False
    table = compatible(u, a1, a2)
    if not all(any(row) for row in table):
        return False
    if not search(table, a1, a2.alias):
        return False
    return sat_subsumes(n1, n2, table, a1.alias, a2.alias, backend=backend) is not None


def sat_only(u: Universe, a1: AbstractBlock, a2: AbstractBlock, backend: str | None = None) -> bool:
    """Def. 8.7 decided by the SAT encoding alone (for cross-checks)."""
    n1, n2 = len(a1.insns), len(a2.insns)
    if n1 > n2:
        return False
    return sat_subsumes(n1, n2, compatible(u, a1, a2), a1.alias, a2.alias, backend=backend) is not None


def search(table, a1: AbstractBlock, facts: dict) -> bool:
    """C1-C4 by enumerating injective maps (C2 given as ``table[i][j]``)."""
    n1 = len(table)
    n2 = len(table[0]) if n1 else 0
    for m in permutations(range(n2), n1):
        if not all(table[i][m[i]] for i in range(n1)) or not _rotation_ok(m, n2):
            continue
        if all(_get(facts, (m[i], o), (m[j], p)) == x for ((i, o), (j, p)), x in a1.aliasing):
            return True
    return False


def subsumes_concrete(u: Universe, a1: AbstractBlock, c: Concrete, backend: str | None = None) -> bool:
    return subsumes(u, a1, beta(u, c), backend)


def _rotation_ok(images: Sequence[int], n2: int) -> bool:
    """C4: walking the images cyclically in a1's order visits them in cyclic order in a2."""
    n1 = len(images)
    if n1 <= 2:
        return True
    start = images[0]
    offs = [(j - start) % n2 for j in images]
    return all(offs[k] < offs[k + 1] for k in range(n1 - 1))


class Coverage:
    """Fast exact Def. 8.7 for many concrete blocks against many abstract blocks."""

    def __init__(self, u: Universe, discoveries: Sequence[AbstractBlock]):
        self.universe = u
        self.discs = list(discoveries)
        self.masks = [np.stack([u.gamma(x) for x in d.insns]) for d in self.discs]

    def covers(self, d: int, c: Concrete, facts: dict | None = None) -> bool:
        a1 = self.discs[d]
        n1, n2 = len(a1.insns), len(c.forms)
        if n1 > n2:
            return False
        idx = [self.universe.index[k] for k in c.forms]
        table = self.masks[d][:, idx]
        if not table.any(axis=1).all():
            return False
        return search(table, a1, alias_facts(self.universe, c) if facts is None else facts)

    def covered_by(self, c: Concrete) -> list[int]:
        facts = alias_facts(self.universe, c)
        return [d for d in range(len(self.discs)) if self.covers(d, c, facts)]


def _get(facts: dict, a, b) -> str:
    return facts.get((a, b), facts.get((b, a), "top"))
