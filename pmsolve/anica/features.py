"""Feature abstractions of Table 8.2: the lattices one instruction feature is abstracted in.

Each abstraction says which abstract values an instruction feature can take, how they are
ordered (``succ``: the immediate successors, the only thing the expansions need), which
concrete feature values an abstract value represents (``admits``, the per-feature γ) and the
most specific abstract value of a concrete one (``beta``). ``None`` is ⊤ in every abstraction.
Values are hashable (strings, ints, tuples); JSON turns tuples into lists and back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable

TOP = None
DEF_NONE = "DefNone"


def levenshtein(a: str, b: str, bound: int | None = None) -> int:
    """Edit distance; stops early (returning bound + 1) once every path exceeds ``bound``."""
    if a == b:
        return 0
    if bound is not None and abs(len(a) - len(b)) > bound:
        return bound + 1
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        if bound is not None and min(cur) > bound:
            return bound + 1
        prev = cur
    return prev[-1]


@dataclass(frozen=True)
class Singleton:
    """⊤ over the flat set of values: category, ISA extension, prefix."""

    kind: str = "singleton"

    def beta(self, v: Hashable) -> Any:
        return v

    def admits(self, av: Any, v: Hashable) -> bool:
        return av is TOP or av == v

    def succ(self, av: Any) -> list[Any]:
        return [] if av is TOP else [TOP]

    def leq(self, x: Any, y: Any) -> bool:
        return y is TOP or x == y


@dataclass(frozen=True)
class EditDistance:
    """(base B, bound d) for d ≤ K, then ⊤: mnemonics within d edits of B (K = 3 in AnICA)."""

    k: int = 3
    kind: str = "editdist"

    def beta(self, v: str) -> Any:
        return (v, 0)

    def admits(self, av: Any, v: str) -> bool:
        return av is TOP or levenshtein(v, av[0], av[1]) <= av[1]

    def succ(self, av: Any) -> list[Any]:
        if av is TOP:
            return []
        return [(av[0], av[1] + 1)] if av[1] < self.k else [TOP]

    def leq(self, x: Any, y: Any) -> bool:
        if y is TOP:
            return True
        return x is not TOP and x[0] == y[0] and x[1] <= y[1]


@dataclass(frozen=True)
class LogSizes:
    """0 ⊏ 1 ⊏ … ⊏ K ⊏ ⊤ over counts: value k admits counts < 2^k (µop counts, K = 5).

    β follows the dissertation's corrected Table 8.2: 0 for a count of 0, ⊤ for counts ≥ 2^K,
    else ⌊log2(n)⌋ + 1. An unknown count (``None``) is represented only by ⊤.
    """

    k: int = 5
    kind: str = "logsize"

    def beta(self, v: int | None) -> Any:
        if v is None or v >= 2 ** self.k:
            return TOP
        return 0 if v == 0 else v.bit_length()  # == floor(log2 v) + 1

    def admits(self, av: Any, v: int | None) -> bool:
        if av is TOP:
            return True
        return v is not None and v < 2 ** av

    def succ(self, av: Any) -> list[Any]:
        if av is TOP:
            return []
        return [av + 1] if av < self.k else [TOP]

    def leq(self, x: Any, y: Any) -> bool:
        if y is TOP:
            return True
        return x is not TOP and x <= y


@dataclass(frozen=True)
class SubsetOrNone:
    """DefNone (feature empty) or a set S (feature ⊇ S), then ⊤: memory usage, operand types.

    Concrete values are frozensets of strings; abstract sets are sorted tuples. Dropping
    one element of S is an immediate successor; {} and DefNone go to ⊤.
    """

    kind: str = "subset"

    def beta(self, v: frozenset[str]) -> Any:
        return DEF_NONE if not v else tuple(sorted(v))

    def admits(self, av: Any, v: frozenset[str]) -> bool:
        if av is TOP:
            return True
        if av == DEF_NONE:
            return not v
        return set(av) <= v

    def succ(self, av: Any) -> list[Any]:
        if av is TOP:
            return []
        if av == DEF_NONE or not av:
            return [TOP]
        return [tuple(x for x in av if x != drop) for drop in av]

    def leq(self, x: Any, y: Any) -> bool:
        if y is TOP:
            return True
        if x is TOP:
            return False
        if x == DEF_NONE or y == DEF_NONE:
            return x == y
        return set(y) <= set(x)
