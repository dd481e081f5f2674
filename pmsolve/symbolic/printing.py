"""Readable infix text for IR nodes (what `str()` shows); SMT-LIB2 text lives in backends.

The printer dispatches on node kinds (:mod:`pmsolve.symbolic.visit`) and imports no node
class, so :mod:`pmsolve.symbolic.nodes` can use it for ``__str__`` without an import cycle.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from pmsolve.symbolic.visit import Visitor, handles

_ATOMIC = ("bool_var", "bool_const", "not")
_OPS = {"<=": "≤", ">=": "≥", "!=": "≠"}


def num_str(c: Fraction) -> str:
    return str(c.numerator) if c.denominator == 1 else f"{c.numerator}/{c.denominator}"


class Printer(Visitor):
    @handles("num_var", "bool_var")
    def _name(self, v: Any) -> str:
        return v.name

    @handles("bool_const")
    def _const(self, f: Any) -> str:
        return "true" if f.value else "false"

    @handles("ite")
    def _ite(self, a: Any) -> str:
        return f"ite({self.visit(a.cond)}, {self.visit(a.then)}, {self.visit(a.other)})"

    @handles("lin")
    def _lin(self, t: Any) -> str:
        parts: list[str] = []
        for atom, c in t.terms:
            a = self.visit(atom)
            parts.append(a if c == 1 else f"-{a}" if c == -1 else f"{num_str(c)}*{a}")
        if t.const != 0 or not parts:
            parts.append(num_str(t.const))
        out = parts[0]
        for p in parts[1:]:
            out += f" - {p[1:]}" if p.startswith("-") else f" + {p}"
        return out

    def _wrap(self, f: Any) -> str:
        s = self.visit(f)
        return s if f.kind in _ATOMIC else f"({s})"

    @handles("not")
    def _not(self, f: Any) -> str:
        return f"¬{self._wrap(f.arg)}"

    @handles("and")
    def _and(self, f: Any) -> str:
        return " ∧ ".join(self._wrap(a) for a in f.args)

    @handles("or")
    def _or(self, f: Any) -> str:
        return " ∨ ".join(self._wrap(a) for a in f.args)

    @handles("implies")
    def _implies(self, f: Any) -> str:
        return f"{self._wrap(f.lhs)} → {self._wrap(f.rhs)}"

    @handles("iff")
    def _iff(self, f: Any) -> str:
        return f"{self._wrap(f.lhs)} ↔ {self._wrap(f.rhs)}"

    @handles("compare")
    def _compare(self, f: Any) -> str:
        return f"{self.visit(f.lhs)} {_OPS.get(f.op, f.op)} {self.visit(f.rhs)}"


_PRINTER = Printer()


def show(node: Any) -> str:
    """The infix text of any IR node."""
    return _PRINTER.visit(node)
