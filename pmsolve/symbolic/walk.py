"""Structural walks shared by the problem container and the backends (no per-kind logic here:
nodes list their own children)."""

from __future__ import annotations

from typing import Iterator, Union

from pmsolve.symbolic import nodes as n

Var = Union["n.NumVar", "n.BoolVar"]


def iter_vars(node: object) -> Iterator[Var]:
    """Every variable occurrence below `node` (duplicates included; iterative, no recursion limit)."""
    stack = [node]
    seen: set[int] = set()
    while stack:
        cur = stack.pop()
        if isinstance(cur, (n.NumVar, n.BoolVar)):
            yield cur
            continue
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        stack.extend(cur.children())  # type: ignore[attr-defined]


def has_ite(node: object) -> bool:
    stack = [node]
    seen: set[int] = set()
    while stack:
        cur = stack.pop()
        if isinstance(cur, n.Ite):
            return True
        if id(cur) not in seen:
            seen.add(id(cur))
            stack.extend(cur.children())  # type: ignore[attr-defined]
    return False


def conjuncts(f: "n.Formula") -> list["n.Formula"]:
    """The top-level conjuncts of a formula (nested conjunctions flattened, `true` dropped)."""
    out: list[n.Formula] = []
    stack = [f]
    while stack:
        cur = stack.pop()
        if isinstance(cur, n.AndF):
            stack.extend(reversed(cur.args))
        elif not (isinstance(cur, n.BoolConst) and cur.value):
            out.append(cur)
    return out
