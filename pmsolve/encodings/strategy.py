"""Strategy sufficiency (dissertation ch. 9) written once in the IR.

Two symbolic mappings M1, M2 of a bounded class (N instructions, K ports, two levels or three
levels with at most U µops per instruction) must agree on every experiment of a benchmarking
strategy, while a free experiment e* of at most L instructions tells them apart:

    wf(M1) ∧ wf(M2) ∧ ⋀_{e ∈ S} tp_M1(e) = tp_M2(e) ∧ tp_M1(e*) ≠ tp_M2(e*)

Satisfiable: a counterexample (the strategy does not determine the mapping up to
indistinguishability). Unsatisfiable: it does, within the bounds.

Throughputs use the bottleneck formula of Thm 5.2 over *all* non-empty port subsets Q, which is
finite for small K: ``tp = max_Q inside(Q)/|Q|`` where ``inside(Q)`` is the mass of µops whose
port set lies in Q. For a two-level mapping ``[M[i] ⊆ Q]`` is a conjunction of negated
``mapping[i,k]`` booleans; for a three-level mapping with power-set µops (Remark 3.13) it is the
linear sum of the counts ``n[i,u]`` over ``u ⊆ Q``. A maximum is a fresh real ``t`` with
``t ≥ v_Q`` for every Q and ``t = v_Q`` for one Q.

Adaptive strategies (PMEvo's ratio pairs depend on singleton throughputs, the uops.info
blocking counts on throughputs and µop counts) are encoded by enumerating the finitely many
values a singleton observation can take in the class: "if the observations are v, then the
experiments f(v) must agree". Since M1 and M2 must agree on the singletons, both mappings
generate the same experiments, so M1's observation terms decide which ones.

Instructions of the class may also be *fixed* (known, identical in M1 and M2), such as the
blocking instructions of the uops.info strategy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations, combinations_with_replacement, product
from typing import Callable, Iterable, Sequence

from pmsolve.errors import ValidationError
from pmsolve.model import Experiment, PortMapping, PortSet, Uop, sort_ports
from pmsolve.symbolic import (
    FALSE, TRUE, And, Bool, Formula, Iff, Implies, Int, Lin, Not, Or, Problem, Real, Sum, as_term,
    ite,
)
from pmsolve.symbolic.evaluate import Assignment, eval_term
from pmsolve.throughput import inverse_throughput


# --------------------------------------------------------------------------- the class

def port_subsets(ports: Sequence[str]) -> list[PortSet]:
    """All non-empty subsets of the ports, smallest first."""
    return [frozenset(c) for r in range(1, len(ports) + 1) for c in combinations(ports, r)]


@dataclass(frozen=True)
class MappingClass:
    """The bounded class of mappings a strategy is checked on.

    ``instructions`` are symbolic (unknown); ``fixed`` holds known instructions shared by both
    mappings (e.g. blocking instructions). ``levels`` 2: each instruction is one µop on a
    non-empty port set. ``levels`` 3: each instruction is a multiset of 1..``max_uops`` µops,
    each a non-empty port set.
    """

    instructions: tuple[str, ...]
    ports: tuple[str, ...]
    levels: int = 2
    max_uops: int = 1
    fixed: PortMapping | None = None

    def __post_init__(self) -> None:
        if self.levels not in (2, 3):
            raise ValidationError(f"levels must be 2 or 3, got {self.levels}")
        if not self.ports:
            raise ValidationError("the class needs at least one port")
        if self.max_uops < 1:
            raise ValidationError(f"max µops per instruction must be ≥ 1, got {self.max_uops}")
        if self.fixed is not None:
            clash = set(self.fixed.instructions) & set(self.instructions)
            if clash:
                raise ValidationError(f"instructions both fixed and symbolic: {sorted(clash)}")
            if set(self.fixed.ports) != set(self.ports):
                raise ValidationError("the fixed instructions must use the class's ports")

    @property
    def two_level(self) -> bool:
        return self.levels == 2 or self.max_uops == 1

    @property
    def all_instructions(self) -> tuple[str, ...]:
        fixed = self.fixed.instructions if self.fixed is not None else ()
        return tuple(self.instructions) + tuple(fixed)

    def single_uop_options(self) -> list[tuple[Uop, ...]]:
        """Every µop multiset one symbolic instruction can have (for observation domains)."""
        subsets = port_subsets(self.ports)
        if self.two_level:
            return [(Uop(q, 1),) for q in subsets]
        out = []
        for n in range(1, self.max_uops + 1):
            for combo in combinations_with_replacement(range(len(subsets)), n):
                counts: dict[PortSet, int] = {}
                for j in combo:
                    counts[subsets[j]] = counts.get(subsets[j], 0) + 1
                out.append(tuple(Uop(q, c) for q, c in counts.items()))
        return out

    def observation_domain(self) -> list[tuple[Fraction, int]]:
        """The distinct (singleton tp⁻¹, µop count) values a symbolic instruction can show."""
        seen = set()
        for uops in self.single_uop_options():
            m = PortMapping(self.ports, {"x": uops})
            seen.add((inverse_throughput(m, Experiment({"x": 1})), sum(u.count for u in uops)))
        return sorted(seen)


# --------------------------------------------------------------------------- symbolic mappings

Inside = tuple[str, object]  # ("bool", Formula) | ("int", Lin) | ("const", int)


class SymMapping:
    """One symbolic mapping of a class; variables carry ``prefix``."""

    def __init__(self, cls: MappingClass, prefix: str):
        self.cls = cls
        self.prefix = prefix
        self.subsets = port_subsets(cls.ports)
        self.constraints: list[Formula] = []
        ports = cls.ports
        if cls.two_level:
            self.var = {(i, k): Bool(f"{prefix}mapping[{i},{k}]") for i in cls.instructions for k in ports}
            self.constraints += [Or(self.var[i, k] for k in ports) for i in cls.instructions]
        else:
            self.var = {(i, u): Int(f"{prefix}n[{i},{_set_name(u)}]", 0, cls.max_uops)
                        for i in cls.instructions for u in self.subsets}
            for i in cls.instructions:
                total = Sum(self.var[i, u] for u in self.subsets)
                self.constraints += [total >= 1, total <= cls.max_uops]
        self._fixed = cls.fixed
        self._relate = None

    def inside(self, insn: str, q: PortSet) -> Inside:
        """How many µops of ``insn`` lie inside ``q`` (a formula for two-level instructions)."""
        if insn not in self.cls.instructions:
            if self._fixed is None or insn not in self._fixed.uops:
                raise ValidationError(f"instruction {insn!r} is not in the class")
            return ("const", sum(u.count for u in self._fixed.uops_of(insn) if u.ports <= q))
        if self.cls.two_level:
            return ("bool", And(Not(self.var[insn, k]) for k in self.cls.ports if k not in q))
        return ("int", Sum(self.var[insn, u] for u in self.subsets if u <= q))

    def uop_count(self, insn: str) -> Lin:
        if insn not in self.cls.instructions:
            return as_term(sum(u.count for u in self._fixed.uops_of(insn)))  # type: ignore[union-attr]
        if self.cls.two_level:
            return as_term(1)
        return Sum(self.var[insn, u] for u in self.subsets)

    def max_mass(self, insn: str) -> int:
        if insn not in self.cls.instructions:
            return sum(u.count for u in self._fixed.uops_of(insn))  # type: ignore[union-attr]
        return 1 if self.cls.two_level else self.cls.max_uops

    def relate_encoding(self, sink: list[Formula]):
        """The same mapping as a :class:`pmsolve.encodings.MappingEnc` for relateThroughput: the
        two-level encoding shares this one's variables; the power-set one is tied to n[i,u]."""
        from pmsolve.encodings.mappings import power_set_mapping, two_level_mapping, uop_name

        if self._fixed is not None:
            raise ValidationError("the relate encoding does not support known (blocking) instructions; "
                                  "use the threshold or max encoding")
        if self._relate is None:
            if self.cls.two_level:
                self._relate = two_level_mapping(self.cls.instructions, self.cls.ports, self.prefix)
            else:
                enc = power_set_mapping(self.cls.instructions, self.cls.ports, self.cls.max_uops, self.prefix)
                sink.extend(self.var[i, u].eq(Int(f"{self.prefix}insn2uop[{i},{uop_name(u)}]", 0,
                                                  self.cls.max_uops))
                            for i in self.cls.instructions for u in self.subsets)
                self._relate = enc
            sink.extend(self._relate.constraints)
        return self._relate

    def fix(self, mapping: PortMapping) -> list[Formula]:
        """Constraints pinning this symbolic mapping to a concrete one (its symbolic instructions)."""
        out: list[Formula] = []
        for i in self.cls.instructions:
            uops = {u.ports: u.count for u in mapping.uops_of(i)}
            if self.cls.two_level:
                if len(uops) != 1 or next(iter(uops.values())) != 1:
                    raise ValidationError(f"instruction {i!r} of the given mapping is not one µop")
                (q,) = uops
                out += [self.var[i, k] if k in q else Not(self.var[i, k]) for k in self.cls.ports]
            else:
                if sum(uops.values()) > self.cls.max_uops:
                    raise ValidationError(f"instruction {i!r} of the given mapping has more than "
                                          f"{self.cls.max_uops} µops")
                out += [self.var[i, u].eq(uops.get(u, 0)) for u in self.subsets]
        return out

    def port_profile(self, k: str) -> list[Lin]:
        """Per symbolic instruction, how many of its µops may use port k (renaming-covariant)."""
        if self.cls.two_level:
            return [ite(self.var[i, k], 1, 0) for i in self.cls.instructions]
        return [Sum(self.var[i, u] for u in self.subsets if k in u) for i in self.cls.instructions]

    def decode(self, model: Assignment) -> PortMapping:
        table: dict[str, list[Uop]] = {}
        for i in self.cls.instructions:
            if self.cls.two_level:
                table[i] = [Uop(frozenset(k for k in self.cls.ports if model[self.var[i, k].name]), 1)]
            else:
                table[i] = [Uop(u, int(model[self.var[i, u].name])) for u in self.subsets
                            if model[self.var[i, u].name]]
        if self._fixed is not None:
            table.update({i: list(us) for i, us in self._fixed.uops.items()})
        return PortMapping(self.cls.ports, table)


def _set_name(q: Iterable[str]) -> str:
    return "{" + ",".join(sort_ports(q)) + "}"


# --------------------------------------------------------------------------- throughput terms

@dataclass
class FreeExperiment:
    """e*: Int exp[i] ∈ [0, bound] with 1 ≤ Σ exp[i] ≤ bound; binary digits when products need them."""

    instructions: tuple[str, ...]
    bound: int
    prefix: str = "E."
    counts: dict[str, Lin] = field(init=False)
    constraints: list[Formula] = field(init=False)
    _bits: dict[str, list[tuple[int, Formula]]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        if self.bound < 1:
            raise ValidationError(f"the distinguishing experiment needs a size bound ≥ 1, got {self.bound}")
        self.counts = {i: Int(f"{self.prefix}exp[{i}]", 0, self.bound).lin() for i in self.instructions}
        total = Sum(self.counts.values())
        self.constraints = [total >= 1, total <= self.bound]

    def bits(self, insn: str) -> list[tuple[int, Formula]]:
        """exp[insn] = Σ 2^b·bit_b, so exp·(integer term) stays linear."""
        if insn not in self._bits:
            bs = [(1 << b, Bool(f"{self.prefix}bit[{insn},{b}]")) for b in range(self.bound.bit_length())]
            self.constraints.append(self.counts[insn].eq(Sum(ite(v, w, 0) for w, v in bs)))
            self._bits[insn] = bs
        return self._bits[insn]

    def decode(self, model: Assignment) -> Experiment:
        return Experiment({i: int(eval_term(c, model)) for i, c in self.counts.items()})


def _mass_fixed(m: SymMapping, exp: Experiment, q: PortSet) -> Lin:
    terms = []
    for insn, n in exp.items():
        kind, val = m.inside(insn, q)
        if kind == "bool":
            terms.append(ite(val, n, 0))  # type: ignore[arg-type]
        else:
            terms.append(as_term(val) * n)
    return Sum(terms)


def _mass_free(m: SymMapping, exp: FreeExperiment, q: PortSet) -> Lin:
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
    symbolic = list(dict.fromkeys(symbolic))
    if floor is None and len(symbolic) == 1:
        return symbolic[0], []
    t = Real(name, 0, hi)
    cs: list[Formula] = [t >= v for v in symbolic]
    options = [t.eq(v) for v in symbolic]
    if floor is not None:
        cs.append(t >= floor)
        options.append(t.eq(floor))
    cs.append(Or(options))
    return t.lin(), cs


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
    """tp⁻¹ as a real ``t = max_Q v_Q`` (the direct reading of Thm 5.2)."""

    def __init__(self, masses: Sequence[tuple[Lin, int]], name: str, hi: Fraction | int,
                 sink: list[Formula]):
        self.t, cs = max_term([m / q for m, q in masses], name, hi)
        sink.extend(cs)

    def agree(self, other: Tp) -> Formula:
        assert isinstance(other, MaxTp)
        return equal(self.t, other.t)

    def differ(self, other: Tp) -> Formula:
        assert isinstance(other, MaxTp)
        if self.t.is_constant and other.t.is_constant:
            return Not(equal(self.t, other.t))
        return self.t.ne(other.t)

    def equals(self, value: Fraction) -> Formula:
        return equal(self.t, as_term(value))


class ThresholdTp(Tp):
    """tp⁻¹ by its thresholds: ``ge(v) ⇔ ∃Q. mass(Q) ≥ v·|Q|`` for every value v = a/q the
    formula can take (a ≤ the mass bound, q ≤ K). Two throughputs are equal iff they pass the
    same thresholds. Integer comparisons only, which propagate far better than real maxima."""

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
            if f not in (TRUE, FALSE):
                b = Bool(f"{self.name}>={v}")
                self.sink.append(Iff(b, f))
                f = b
            self._ge[v] = f
        return self._ge[v]

    def agree(self, other: Tp) -> Formula:
        assert isinstance(other, ThresholdTp)
        vs = sorted(set(self.values) | set(other.values))
        return And(_iff(self.ge(v), other.ge(v)) for v in vs)

    def equals(self, value: Fraction) -> Formula:
        if value not in self.values:
            return FALSE
        higher = [w for w in self.values if w > value]
        return And(self.ge(value), Not(self.ge(higher[0])) if higher else TRUE)


def _at_least(mass: Lin, c: int) -> Formula:
    if mass.is_constant:
        return TRUE if mass.const >= c else FALSE
    return mass >= c


def _iff(a: Formula, b: Formula) -> Formula:
    if a in (TRUE, FALSE) and b in (TRUE, FALSE):
        return TRUE if a == b else FALSE
    if a == TRUE:
        return b
    if b == TRUE:
        return a
    if a == FALSE:
        return Not(b)
    if b == FALSE:
        return Not(a)
    return Iff(a, b)


class RelateTp(MaxTp):
    """tp⁻¹ through relateThroughput (Def. 4.5, :mod:`pmsolve.encodings.relate`): the model the
    CEGIS encodings use, here as a differential alternative to the bottleneck-formula routes."""

    def __init__(self, m: "SymMapping", exp: object, name: str, sink: list[Formula]):
        from pmsolve.encodings.experiments import ExperimentEnc, fixed_experiment
        from pmsolve.encodings.relate import relate_throughput

        enc = m.relate_encoding(sink)
        if isinstance(exp, Experiment):
            exp_enc = fixed_experiment(exp, enc.instructions)
        else:
            assert isinstance(exp, FreeExperiment)
            exp_enc = ExperimentEnc(exp.instructions, dict(exp.counts), {i: exp.bound for i in exp.instructions})
        rel = relate_throughput(enc, exp_enc, name + ".")
        sink.extend(rel.constraints)
        self.t = rel.t


ENCODINGS = ("threshold", "max", "relate")


def make_tp(masses: Sequence[tuple[Lin, int]], name: str, mass_hi: int, n_ports: int,
            sink: list[Formula], encoding: str) -> Tp:
    if encoding == "threshold":
        return ThresholdTp(masses, name, mass_hi, n_ports, sink)
    if encoding == "max":
        return MaxTp(masses, name, mass_hi, sink)
    raise ValidationError(f"unknown throughput encoding {encoding!r}: {', '.join(ENCODINGS)}")


def tp_fixed(m: SymMapping, exp: Experiment, name: str, sink: list[Formula],
             encoding: str = "threshold") -> Tp:
    """tp⁻¹ of a known experiment under a symbolic mapping (Thm 5.2 over all port subsets)."""
    if encoding == "relate":
        return RelateTp(m, exp, name, sink)
    masses = [(_mass_fixed(m, exp, q), len(q)) for q in m.subsets]
    hi = sum(n * m.max_mass(i) for i, n in exp.items())
    return make_tp(masses, name, hi, len(m.cls.ports), sink, encoding)


def tp_free(m: SymMapping, exp: FreeExperiment, name: str, sink: list[Formula],
            encoding: str = "threshold") -> Tp:
    """tp⁻¹ of the free experiment under a symbolic mapping."""
    if encoding == "relate":
        return RelateTp(m, exp, name, sink)
    masses = [(_mass_free(m, exp, q), len(q)) for q in m.subsets]
    hi = exp.bound * max(m.max_mass(i) for i in exp.instructions)
    return make_tp(masses, name, hi, len(m.cls.ports), sink, encoding)


def equal(a: Lin, b: Lin) -> Formula:
    """a = b, folded when both are constants."""
    if a.is_constant and b.is_constant:
        return TRUE if a.const == b.const else FALSE
    return a.eq(b)


def lex_geq(a: Sequence[Lin], b: Sequence[Lin]) -> Formula:
    """a ≥ b lexicographically (integer-valued terms)."""
    if not a:
        return TRUE
    return Or(a[0] > b[0], And(a[0].eq(b[0]), lex_geq(a[1:], b[1:])))


# --------------------------------------------------------------------------- strategies as families

Observation = tuple[Fraction, int]  # singleton tp⁻¹, µop count


@dataclass(frozen=True)
class Family:
    """Experiments that depend on the singleton observations of ``depends_on``.

    ``make`` receives one observation (tp⁻¹, µop count) per instruction of ``depends_on`` and
    returns the experiments the strategy runs in that case. ``uses_uops`` says whether the
    µop counts matter (the sparse µop counter of ch. 6); otherwise only tp⁻¹ does.
    """

    depends_on: tuple[str, ...]
    make: Callable[[tuple[Observation, ...]], list[Experiment]]
    uses_uops: bool = False


class StrategySpec:
    """What the encoder needs from a strategy (see :mod:`pmsolve.strategy`)."""

    observes_uops: bool = False
    port_symmetric: bool = True  # invariant under port renaming (with the fixed instructions' names)
    instruction_symmetric: bool = True  # invariant under renaming the symbolic instructions

    def families(self, cls: MappingClass) -> list[Family]:
        raise NotImplementedError


@dataclass
class SufficiencyProblem:
    """The IR problem and what is needed to read a counterexample back."""

    problem: Problem
    m1: SymMapping
    m2: SymMapping
    e_star: FreeExperiment
    experiments: int  # distinct strategy experiments encoded (incl. conditional ones)

    def decode(self, model: Assignment) -> tuple[PortMapping, PortMapping, Experiment]:
        return self.m1.decode(model), self.m2.decode(model), self.e_star.decode(model)


def build_sufficiency(cls: MappingClass, strategy: StrategySpec, max_exp_len: int, *,
                      symmetry_breaking: bool = True, encoding: str = "threshold",
                      given: PortMapping | None = None) -> SufficiencyProblem:
    """The problem "two mappings of ``cls`` agree on every experiment of ``strategy`` but differ
    on an experiment of at most ``max_exp_len`` instructions"; with ``given``, M1 is that mapping."""
    m1, m2 = SymMapping(cls, "M1."), SymMapping(cls, "M2.")
    p = Problem(name="strategy sufficiency")
    p.add(m1.constraints)
    p.add(m2.constraints)
    if given is not None:  # is this particular mapping determined? (no symmetry to break then)
        p.add(m1.fix(given))
        symmetry_breaking = False
    cache: dict[tuple[int, Experiment], Tp] = {}
    sink: list[Formula] = []

    def tp(which: int, exp: Experiment) -> Tp:
        key = (which, exp)
        if key not in cache:
            m = m1 if which == 1 else m2
            cache[key] = tp_fixed(m, exp, f"M{which}.t[{exp}]", sink, encoding)
        return cache[key]

    agreed: set[Experiment] = set()

    def agree(exp: Experiment, when: Formula = TRUE) -> None:
        if when == FALSE:
            return
        f = tp(1, exp).agree(tp(2, exp))
        p.add(f if when == TRUE else Implies(when, f))
        agreed.add(exp)

    families = strategy.families(cls)
    observed = sorted({i for f in families for i in f.depends_on if i in cls.instructions})
    for insn in observed:  # the observations the adaptive experiments are computed from
        agree(Experiment({insn: 1}))
    if strategy.observes_uops:
        for insn in cls.instructions:
            p.add(equal(m1.uop_count(insn), m2.uop_count(insn)), name=f"uops[{insn}]")

    domain = cls.observation_domain()
    indicator: dict[tuple[str, Observation, bool], Formula] = {}

    def holds(insn: str, obs: Observation, uses_uops: bool) -> Formula:
        """M1 shows observation ``obs`` for ``insn`` (a formula; constants for fixed ones)."""
        key = (insn, obs, uses_uops)
        if key not in indicator:
            f = tp(1, Experiment({insn: 1})).equals(obs[0])
            if uses_uops:
                f = And(f, equal(m1.uop_count(insn), as_term(obs[1])))
            if f not in (TRUE, FALSE):
                b = Bool(f"obs[{insn},{obs[0]},{obs[1] if uses_uops else '*'}]")
                p.add(Iff(b, f))
                f = b
            indicator[key] = f
        return indicator[key]

    for fam in families:
        doms = []
        for insn in fam.depends_on:
            if insn in cls.instructions:
                vals = domain if fam.uses_uops else sorted({(t, 0) for t, _ in domain})
            else:
                fixed_m = cls.fixed.restrict([insn])  # type: ignore[union-attr]
                obs = (inverse_throughput(fixed_m, Experiment({insn: 1})),
                       sum(u.count for u in fixed_m.uops_of(insn)))
                vals = [obs if fam.uses_uops else (obs[0], 0)]
            doms.append(vals)
        cases: dict[Experiment, list[Formula]] = {}
        for combo in product(*doms):
            cond = And(holds(i, o, fam.uses_uops) for i, o in zip(fam.depends_on, combo))
            if cond == FALSE:
                continue
            for exp in fam.make(tuple(combo)):
                cases.setdefault(exp, []).append(cond)
        for exp, conds in cases.items():
            agree(exp, Or(conds))

    e_star = FreeExperiment(cls.all_instructions, max_exp_len)
    t1 = tp_free(m1, e_star, "M1.t*", sink, encoding)
    t2 = tp_free(m2, e_star, "M2.t*", sink, encoding)
    p.add(t1.differ(t2), name="distinguish")
    p.add(e_star.constraints)
    p.add(sink)
    if symmetry_breaking:
        # double-lex on M1's profile matrix P[i,k] = #µops of i that may use port k: columns
        # (and rows, if instructions are interchangeable) in decreasing lexicographic order.
        # P transforms as a matrix under port and instruction renamings, and every matrix has a
        # double-lex ordered image, so some renaming of any counterexample satisfies this.
        prof = [m1.port_profile(k) for k in cls.ports]
        if strategy.port_symmetric:
            for a, b in zip(prof, prof[1:]):
                p.add(lex_geq(a, b))
        if strategy.instruction_symmetric:
            rows = [[col[j] for col in prof] for j in range(len(cls.instructions))]
            for a, b in zip(rows, rows[1:]):
                p.add(lex_geq(a, b))
    # every tp⁻¹ here is mass/|Q| with |Q| ≤ K: distinct values differ by ≥ 1/K² (MILP route)
    p.strict_margin = Fraction(1, len(cls.ports) ** 2)
    return SufficiencyProblem(p, m1, m2, e_star, len(agreed))


# --------------------------------------------------------------------------- shortcut formulas

def build_shortcut_gap(cls: MappingClass, max_exp_len: int,
                       admissible: Callable[[SymMapping, FreeExperiment, PortSet], Formula],
                       ) -> tuple[Problem, SymMapping, FreeExperiment]:
    """A mapping of ``cls`` and an experiment on which a shortcut formula — the maximum of
    mass(Q)/|Q| over only the port sets Q that ``admissible`` allows — differs from the exact
    bottleneck formula over all Q (Thm 5.2). Used for Facile's pairwise shortcut (App. E.2)."""
    m = SymMapping(cls, "M.")
    e = FreeExperiment(cls.all_instructions, max_exp_len)
    p = Problem(name="shortcut gap")
    p.add(m.constraints)
    cs: list[Formula] = []
    exact = tp_free(m, e, "M.t", cs, "max").t  # type: ignore[attr-defined]
    p.add(cs)
    hi = max_exp_len * max(m.max_mass(i) for i in e.instructions)
    short = Real("M.t_short", 0, hi)
    options = []
    for q in m.subsets:
        value = _mass_free(m, e, q) / len(q)
        ok = admissible(m, e, q)
        p.add(Implies(ok, short >= value))
        options.append(And(ok, short.eq(value)))
    p.add(Or(options))
    p.add(e.constraints)
    p.add(short.ne(exact), name="gap")
    p.strict_margin = Fraction(1, len(cls.ports) ** 2)
    return p, m, e


def pairwise_union_admissible(m: SymMapping, e: FreeExperiment, q: PortSet) -> Formula:
    """Q is M[a] ∪ M[b] for µops a, b (possibly equal) of instructions present in e (two-level)."""
    if not m.cls.two_level:
        raise ValidationError("the pairwise-union shortcut is encoded for two-level mappings")
    insns = [i for i in e.instructions if i in m.cls.instructions]
    opts = []
    for a, b in combinations_with_replacement(insns, 2):
        present = And(e.counts[a] >= 1, e.counts[b] >= 1)
        union_is_q = And([Or(m.var[a, k], m.var[b, k]) if k in q else
                          And(Not(m.var[a, k]), Not(m.var[b, k])) for k in m.cls.ports])
        opts.append(And(present, union_is_q))
    return Or(opts)
