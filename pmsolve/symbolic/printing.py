"""Readable infix text for IR nodes (what `str()` shows); SMT-LIB2 text lives in backends."""

from __future__ import annotations

from fractions import Fraction

from pmsolve.symbolic import nodes as n


def num_str(c: Fraction) -> str:
    return str(c.numerator) if c.denominator == 1 else f"{c.numerator}/{c.denominator}"


def term_str(term: "n.Lin") -> str:
    parts: list[str] = []
    for atom, c in term.terms:
        a = str(atom)
        if c == 1:
            s = a
        elif c == -1:
            s = f"-{a}"
        else:
            s = f"{num_str(c)}*{a}"
        parts.append(s)
    if term.const != 0 or not parts:
        parts.append(num_str(term.const))
    out = parts[0]
    for p in parts[1:]:
        out += f" - {p[1:]}" if p.startswith("-") else f" + {p}"
    return out


def _wrap(f: "n.Formula") -> str:
    s = formula_str(f)
    return s if isinstance(f, (n.BoolVar, n.BoolConst, n.NotF)) else f"({s})"


def formula_str(f: "n.Formula") -> str:
    if isinstance(f, n.BoolVar):
        return f.name
    if isinstance(f, n.BoolConst):
        return "true" if f.value else "false"
    if isinstance(f, n.NotF):
        return f"¬{_wrap(f.arg)}"
    if isinstance(f, n.AndF):
        return " ∧ ".join(_wrap(a) for a in f.args)
    if isinstance(f, n.OrF):
        return " ∨ ".join(_wrap(a) for a in f.args)
    if isinstance(f, n.ImpliesF):
        return f"{_wrap(f.lhs)} → {_wrap(f.rhs)}"
    if isinstance(f, n.IffF):
        return f"{_wrap(f.lhs)} ↔ {_wrap(f.rhs)}"
    if isinstance(f, n.Compare):
        op = {"<=": "≤", ">=": "≥", "!=": "≠"}.get(f.op, f.op)
        return f"{f.lhs} {op} {f.rhs}"
    raise TypeError(f"not an IR formula: {f!r}")
