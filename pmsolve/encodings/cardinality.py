"""Counting booleans without arithmetic: a sequential counter (Sinz 2005) over literals.

``Counter(xs, top, tag).at_least(c)`` is a boolean that holds iff at least c of the formulas xs
are true (a formula may appear several times: it then counts that often). The counter's
auxiliary booleans are *defined* (↔), so ``Not(at_least(c))`` means "fewer than c" as well;
a pure-boolean problem stays pure-boolean, which SAT solvers and the SAT core of SMT solvers
handle far better than sums of if-then-else terms.
"""

from __future__ import annotations

from collections.abc import Sequence

from pmsolve.symbolic import FALSE, TRUE, And, Bool, Formula, Iff, Not, Or, same


class Counter:
    """s[i][c] ↔ "at least c of xs[:i] hold", for c ≤ top; ``definitions`` must be asserted."""

    def __init__(self, xs: Sequence[Formula], top: int, tag: str):
        self.n = len(xs)
        self.top = min(top, self.n)
        self.definitions: list[Formula] = []
        prev: list[Formula] = [TRUE] + [FALSE] * self.top
        for i, x in enumerate(xs):
            row: list[Formula] = [TRUE]
            for c in range(1, self.top + 1):
                f = Or(prev[c], And(x, prev[c - 1]))
                if same(f, TRUE) or same(f, FALSE):
                    row.append(f)
                    continue
                s = Bool(f"{tag}s[{i},{c}]")
                self.definitions.append(Iff(s, f))
                row.append(s)
            prev = row
        self.last = prev

    def at_least(self, c: int) -> Formula:
        """At least c of the inputs hold (c ≤ 0: true; c > the inputs: false)."""
        if c <= 0:
            return TRUE
        if c > self.n:
            return FALSE
        if c > self.top:
            raise ValueError(f"this counter counts up to {self.top}, not {c}")
        return self.last[c]

    def at_most(self, c: int) -> Formula:
        """At most c of the inputs hold."""
        return Not(self.at_least(c + 1))


def between(xs: Sequence[Formula], lo: int, hi: int, tag: str) -> Formula:
    """lo ≤ (number of xs that hold) ≤ hi, as one pure-boolean formula with its definitions."""
    c = Counter(xs, hi + 1, tag)
    return And(*c.definitions, c.at_least(lo), c.at_most(hi))
