"""Traversals shared by the problem container, the printers and the backends."""

from __future__ import annotations

from typing import Iterator, Union

from pmsolve.symbolic import nodes as n

Var = Union["n.NumVar", "n.BoolVar"]


def children(node: object) -> Iterator[object]:
    if isinstance(node, n.Lin):
        for atom, _ in node.terms:
            yield atom
    elif isinstance(node, n.Ite):
        yield node.cond
        yield node.then
        yield node.other
    elif isinstance(node, n.NotF):
        yield node.arg
    elif isinstance(node, (n.AndF, n.OrF)):
        yield from node.args
    elif isinstance(node, (n.ImpliesF, n.IffF)):
        yield node.lhs
        yield node.rhs
    elif isinstance(node, n.Compare):
        yield node.lhs
        yield node.rhs


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
        stack.extend(children(cur))


def has_ite(node: object) -> bool:
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, n.Ite):
            return True
        stack.extend(children(cur))
    return False
