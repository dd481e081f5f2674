"""One traversal for every operation on IR nodes: a visitor that dispatches on the node's kind.

Printing, exact evaluation, each backend's converter, the SMT-LIB2 writer and the big-M
linearisation are `Visitor` subclasses. A handler is a method marked ``@handles("and", "or")``
(kinds are the ``kind`` names of :mod:`pmsolve.symbolic.nodes`); it receives the node and any
context arguments of ``visit`` (a sort, a polarity) and visits children itself, so a handler
can short-circuit or pass context down. A node kind a visitor has no handler for is lowered
with the node's ``desugar()`` (implication, equivalence) and visited again; a kind that cannot
be lowered raises, naming the visitor and the kind. A new node type therefore needs its class
(``kind``, ``children``, ``key`` and, when it is sugar, ``desugar``) and a handler only in the
visitors that must treat it natively; ``tests/test_symbolic.py`` checks that every visitor
covers every kind.

This module imports no node class, so the printer can sit below the nodes without a cycle.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Iterable

from pmsolve.errors import ValidationError


def handles(*kinds: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a visitor method as the handler of these node kinds."""
    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn._handles = kinds  # type: ignore[attr-defined]
        return fn
    return mark


class Visitor:
    """Type dispatch on ``node.kind`` (see module doc); subclasses add ``@handles`` methods.

    ``covers`` lists the kinds the visitor must be able to take (all by default; visitors of
    formulas only, such as the SAT encoder, list the formula kinds).
    """

    _table: ClassVar[dict[str, Callable[..., Any]]] = {}
    covers: ClassVar[Iterable[str] | None] = None  # None: every kind

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        table: dict[str, Callable[..., Any]] = {}
        for klass in reversed(cls.__mro__):
            for attr in vars(klass).values():
                for kind in getattr(attr, "_handles", ()):
                    table[kind] = attr
        cls._table = table

    def visit(self, node: Any, *ctx: Any) -> Any:
        try:
            handler = self._table.get(node.kind)
        except AttributeError:
            raise ValidationError(f"{type(self).__name__}: not an IR node: {node!r}") from None
        if handler is None:
            lowered = node.desugar()
            if lowered is None:
                raise ValidationError(f"{type(self).__name__} has no rule for IR nodes of kind "
                                      f"{node.kind!r} ({node})")
            return self.visit(lowered, *ctx)
        return handler(self, node, *ctx)


class MemoVisitor(Visitor):
    """A visitor that computes each (node, context) once: IR problems are DAGs with shared terms."""

    def __init__(self) -> None:
        self._memo: dict[tuple[Any, ...], tuple[Any, Any]] = {}

    def visit(self, node: Any, *ctx: Any) -> Any:
        key = (id(node), *ctx)
        hit = self._memo.get(key)
        if hit is not None and hit[0] is node:
            return hit[1]
        out = super().visit(node, *ctx)
        self._memo[key] = (node, out)  # the node is kept alive so its id is not reused
        return out
