"""tp⁻¹ of a symbolic mapping as IR terms, for the sufficiency encodings (dissertation ch. 9).

Three encodings of the same value, selected by name:

* ``threshold`` -- the bottleneck formula of Thm 5.2 over all non-empty port subsets Q as
  integer threshold tests: ``tp ≥ v ⇔ ∃Q. mass(Q) ≥ v·|Q|`` for every value v = a/q it can
  take. Two throughputs are equal iff they pass the same thresholds (integer comparisons
  only, which propagate far better than real maxima);
* ``max`` -- the same formula as a real ``t = max_Q mass(Q)/|Q|``;
* ``relate`` -- relateThroughput (Def. 4.5, :mod:`pmsolve.encodings.relate`), the model the
  CEGIS encodings use, as a differential alternative.

``mass(Q)`` (µops whose port set lies in Q) is a sum of booleans for two-level mappings and of
µop counts ``insn2uop[i,u]`` over ``u ⊆ Q`` for power-set ones.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence

from pmsolve.encodings.experiments import fixed_experiment
from pmsolve.encodings.mapping_class import FreeExperiment, SymMapping
from pmsolve.encodings.relate import relate_throughput
from pmsolve.errors import ValidationError
from pmsolve.model import Experiment, PortSet
from pmsolve.symbolic import (
    FALSE, TRUE, And, Bool, Formula, Iff, Lin, Not, Or, Real, Sum, as_term, distinct, ite, same,
)

ENCODINGS = ("threshold", "max", "relate")


def _mass_fixed(m: SymMapping, exp: Experiment, q: PortSet) -> Lin:
    terms = []
    for insn, n in exp.items():
        kind, val = m.inside(insn, q)
        if kind == "bool":
            terms.append(ite(val, n, 0))  # type: ignore[arg-type]
        else:
            terms.append(as_term(val) * n)
    return Sum(terms)


def mass_free(m: SymMapping, exp: FreeExperiment, q: PortSet) -> Lin:
    """mass(Q) of the free experiment under a symbolic mapping (linear via binary digits)."""
    terms = []
    for insn in exp.instructions:
        kind, val = m.inside(insn, q)
        if kind == "bool":
            terms.append(ite(val, exp.counts[insn], 0))  # type: ignore[arg-type]
        elif kind == "const":
            terms.append(exp.counts[insn] * val)
        else:
            terms.extend(ite(bit, as_term(val) * w, 0) for w, bit in exp.bits(insn))
    return Sum(terms)


def max_term(values: Sequence[Lin], name: str, hi: Fraction | int) -> tuple[Lin, list[Formula]]:
    """t = max(values): a fresh real with t ≥ v for all v and t = v for one (constants folded)."""
    consts = [v.const for v in values if v.is_constant]
    symbolic = [v for v in values if not v.is_constant]
    if not symbolic:
        return as_term(max(consts)), []
    floor = max(consts) if consts else None
    symbolic = distinct(symbolic)
    if floor is None and len(symbolic) == 1:
        return symbolic[0], []
    t = Real(name, 0, hi)
    cs: list[Formula] = [t >= v for v in symbolic]
    options = [t == v for v in symbolic]
    if floor is not None:
        cs.append(t >= floor)
        options.append(t == floor)
    cs.append(Or(options))
    return t.lin(), cs


def equal(a: Lin, b: Lin) -> Formula:
    """a = b, folded when both are constants."""
    if a.is_constant and b.is_constant:
        return TRUE if a.const == b.const else FALSE
    return a == b


class Tp:
    """A throughput term of the sufficiency encodings: what agreement, difference and
    "equals this constant" mean for it."""

    def agree(self, other: "Tp") -> Formula:
        raise NotImplementedError

    def differ(self, other: "Tp") -> Formula:
        return Not(self.agree(other))

    def equals(self, value: Fraction) -> Formula:
        raise NotImplementedError


class MaxTp(Tp):
    """tp⁻¹ as a real term ``t`` (``t = max_Q v_Q``, the direct reading of Thm 5.2)."""

    def __init__(self, t: Lin):
        self.t = t

    @classmethod
    def of(cls, masses: Sequence[tuple[Lin, int]], name: str, hi: Fraction | int,
           sink: list[Formula]) -> "MaxTp":
        t, cs = max_term([m / q for m, q in masses], name, hi)
        sink.extend(cs)
        return cls(t)

    def agree(self, other: Tp) -> Formula:
        return equal(self.t, _as_max(other).t)

    def differ(self, other: Tp) -> Formula:
        t2 = _as_max(other).t
        if self.t.is_constant and t2.is_constant:
            return Not(equal(self.t, t2))
        return self.t != t2

    def equals(self, value: Fraction) -> Formula:
        return equal(self.t, as_term(value))


def _as_max(tp: Tp) -> MaxTp:
    if not isinstance(tp, MaxTp):
        raise ValidationError("a max/relate throughput term can only be compared with another one")
    return tp


class ThresholdTp(Tp):
    """tp⁻¹ by its thresholds: ``ge(v) ⇔ ∃Q. mass(Q) ≥ v·|Q|`` for every value v = a/q the
    formula can take (a ≤ the mass bound, q ≤ K)."""

    def __init__(self, masses: Sequence[tuple[Lin, int]], name: str, mass_hi: int, n_ports: int,
                 sink: list[Formula]):
        self.masses = list(masses)
        self.name = name
        self.sink = sink
        self.values = sorted({Fraction(a, q) for q in range(1, n_ports + 1) for a in range(1, mass_hi + 1)})
        self._ge: dict[Fraction, Formula] = {}

    def ge(self, v: Fraction) -> Formula:
        if v not in self._ge:
            f = Or(_at_least(m, math.ceil(v * q)) for m, q in self.masses)
            if not _constant(f):
                b = Bool(f"{self.name}>={v}")
                self.sink.append(Iff(b, f))
                f = b
            self._ge[v] = f
        return self._ge[v]

    def agree(self, other: Tp) -> Formula:
        if not isinstance(other, ThresholdTp):
            raise ValidationError("a threshold throughput term can only be compared with another one")
        vs = sorted(set(self.values) | set(other.values))
        return And(_iff(self.ge(v), other.ge(v)) for v in vs)

    def equals(self, value: Fraction) -> Formula:
        if value not in self.values:
            return FALSE
        higher = [w for w in self.values if w > value]
        return And(self.ge(value), Not(self.ge(higher[0])) if higher else TRUE)


def _constant(f: Formula) -> bool:
    return same(f, TRUE) or same(f, FALSE)


def _at_least(mass: Lin, c: int) -> Formula:
    if mass.is_constant:
        return TRUE if mass.const >= c else FALSE
    return mass >= c


def _iff(a: Formula, b: Formula) -> Formula:
    if _constant(a) and _constant(b):
        return TRUE if same(a, b) else FALSE
    if same(a, TRUE):
        return b
    if same(b, TRUE):
        return a
    if same(a, FALSE):
        return Not(b)
    if same(b, FALSE):
        return Not(a)
    return Iff(a, b)


def relate_tp(m: SymMapping, exp: Experiment | FreeExperiment, name: str, sink: list[Formula]) -> MaxTp:
    """tp⁻¹ through relateThroughput on the symbolic mapping's own encoding."""
    enc = m.relate_encoding()
    exp_enc = fixed_experiment(exp, enc.instructions) if isinstance(exp, Experiment) else exp.enc
    rel = relate_throughput(enc, exp_enc, name + ".")
    sink.extend(rel.constraints)
    return MaxTp(rel.t)  # type: ignore[arg-type]


def make_tp(masses: Sequence[tuple[Lin, int]], name: str, mass_hi: int, n_ports: int,
            sink: list[Formula], encoding: str) -> Tp:
    if encoding == "threshold":
        return ThresholdTp(masses, name, mass_hi, n_ports, sink)
    if encoding == "max":
        return MaxTp.of(masses, name, mass_hi, sink)
    raise ValidationError(f"unknown throughput encoding {encoding!r}: {', '.join(ENCODINGS)}")


def tp_fixed(m: SymMapping, exp: Experiment, name: str, sink: list[Formula],
             encoding: str = "threshold") -> Tp:
    """tp⁻¹ of a known experiment under a symbolic mapping (Thm 5.2 over all port subsets)."""
    if encoding == "relate":
        return relate_tp(m, exp, name, sink)
    masses = [(_mass_fixed(m, exp, q), len(q)) for q in m.subsets]
    hi = sum(n * m.max_mass(i) for i, n in exp.items())
    return make_tp(masses, name, hi, len(m.cls.ports), sink, encoding)


def tp_free(m: SymMapping, exp: FreeExperiment, name: str, sink: list[Formula],
            encoding: str = "threshold") -> Tp:
    """tp⁻¹ of the free experiment under a symbolic mapping."""
    if encoding == "relate":
        return relate_tp(m, exp, name, sink)
    masses = [(mass_free(m, exp, q), len(q)) for q in m.subsets]
    hi = exp.bound * max(m.max_mass(i) for i in exp.instructions)
    return make_tp(masses, name, hi, len(m.cls.ports), sink, encoding)
