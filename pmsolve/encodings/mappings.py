"""Port-mapping encodings: two-level (sec. 4.2.1), three-level with fixed µop counts (Fig. 4.4)
and with power-set µops (Fig. 4.2). Each gives relateThroughput its µops: a mass term per µop
(from the experiment encoding) and a formula per (µop, port) saying whether the port can run it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from typing import Callable, Iterable

from pmsolve.encodings.encoding import model_of
from pmsolve.encodings.experiments import ExperimentEnc, binary_digits
from pmsolve.errors import UnknownNameError, ValidationError
from pmsolve.model import PortMapping, PortSet, Uop, sort_ports
from pmsolve.symbolic import (
    FALSE, TRUE, Bool, BoolVar, Formula, Int, Lin, NumVar, Or, Sum, as_term, eval_formula, ite,
)
from pmsolve.symbolic.evaluate import Assignment


@dataclass(frozen=True)
class UopKind:
    """One µop of the encoding: its mass in the experiment and its port-membership formulas."""

    name: str
    mass: Lin
    mass_hi: Fraction
    on_port: dict[str, Formula]


@dataclass
class MappingEnc:
    """A (possibly partially) symbolic port mapping.

    `uops(exp, prefix)` lists the µops with masses for an experiment encoding (plus any side
    constraints those masses need); `constraints` are the well-formedness conditions;
    `decode(model or Result)` reads a PortMapping back. The variables are reached by handle:
    `port(insn, port, uop)` (two-level, fixed counts) and `count(insn, ports)` (power set).
    """

    ports: tuple[str, ...]
    instructions: tuple[str, ...]
    uops: Callable[[ExperimentEnc, str], tuple[list[UopKind], list[Formula]]]
    decode_model: Callable[[Assignment], PortMapping]
    constraints: list[Formula] = field(default_factory=list)
    kind: str = "two-level"
    port_vars: dict[tuple[str, int, str], BoolVar] = field(default_factory=dict)
    count_vars: dict[tuple[str, PortSet], NumVar] = field(default_factory=dict)

    def decode(self, answer: object) -> PortMapping:
        return self.decode_model(model_of(answer))

    def port(self, insn: str, port: str, uop: int = 1) -> BoolVar:
        """Boolean "µop `uop` (1-based) of `insn` may run on `port`"."""
        self._check(insn, port)
        try:
            return self.port_vars[insn, uop, port]
        except KeyError:
            if self.kind == "power-set":
                raise UnknownNameError("power-set mappings have count(insn, ports) variables, "
                                       "not port(...)") from None
            raise UnknownNameError(f"{insn!r} has no µop {uop} in this {self.kind} encoding") from None

    def count(self, insn: str, ports: Iterable[str]) -> NumVar:
        """Integer "how many µops on exactly `ports` `insn` has" (power-set mappings)."""
        ps = frozenset(ports)
        self._check(insn, *ps)
        try:
            return self.count_vars[insn, ps]
        except KeyError:
            raise UnknownNameError(f"count(...) variables exist only in power-set encodings, "
                                   f"not in this {self.kind} one") from None

    def _check(self, insn: str, *ports: str) -> None:
        if insn not in self.instructions:
            raise UnknownNameError(f"unknown instruction {insn!r} (the encoding has "
                                   f"{', '.join(self.instructions)})")
        for p in ports:
            if p not in self.ports:
                raise UnknownNameError(f"unknown port {p!r} (the encoding has {', '.join(self.ports)})")


def _const_ports(ports: tuple[str, ...], allowed: frozenset[str]) -> dict[str, Formula]:
    return {k: (TRUE if k in allowed else FALSE) for k in ports}


def fixed_mapping(mapping: PortMapping, instructions: tuple[str, ...] | None = None) -> MappingEnc:
    """A known mapping as constants (any number of levels): each µop port set is one µop kind."""
    insns = tuple(instructions or mapping.instructions)
    ports = tuple(mapping.ports)

    def uops(exp: ExperimentEnc, prefix: str) -> tuple[list[UopKind], list[Formula]]:
        mass: dict[frozenset[str], Lin] = {}
        hi: dict[frozenset[str], Fraction] = {}
        for i in insns:
            for u in mapping.uops_of(i):
                mass[u.ports] = mass.get(u.ports, as_term(0)).plus(exp.counts[i].scaled(u.count))
                hi[u.ports] = hi.get(u.ports, Fraction(0)) + exp.hi[i] * u.count
        return [UopKind(uop_name(ps), mass[ps], hi[ps], _const_ports(ports, ps))
                for ps in sorted(mass, key=lambda s: sort_ports(s))], []

    return MappingEnc(ports, insns, uops, lambda model: mapping.restrict(insns),
                      kind="fixed")


def uop_name(ports: frozenset[str]) -> str:
    return "{" + ",".join(sort_ports(ports)) + "}"


def port_subsets(ports: Iterable[str]) -> list[PortSet]:
    """All non-empty subsets of the ports, smallest first (the µops of Remark 3.13)."""
    ports = tuple(ports)
    return [frozenset(c) for r in range(1, len(ports) + 1) for c in combinations(ports, r)]


def two_level_mapping(instructions: tuple[str, ...], ports: tuple[str, ...],
                      prefix: str = "") -> MappingEnc:
    """Bool mapping[i,k] per instruction and port; every instruction needs a port (Def. 4.5)."""
    var = {(i, k): Bool(f"{prefix}mapping[{i},{k}]") for i in instructions for k in ports}
    wf = [Or(var[i, k] for k in ports) for i in instructions]

    def uops(exp: ExperimentEnc, _prefix: str) -> tuple[list[UopKind], list[Formula]]:
        return [UopKind(i, exp.counts[i], Fraction(exp.hi[i]), {k: var[i, k] for k in ports})
                for i in instructions], []

    def decode(model: Assignment) -> PortMapping:
        return PortMapping.two_level(ports, {i: [k for k in ports if model[var[i, k].name]]
                                             for i in instructions})

    return MappingEnc(tuple(ports), tuple(instructions), uops, decode, wf, "two-level",
                      port_vars={(i, 1, k): v for (i, k), v in var.items()})


def fixed_count_mapping(uops_per_insn: dict[str, int], ports: tuple[str, ...],
                        prefix: str = "") -> MappingEnc:
    """Three-level with known µop counts (Fig. 4.4/4.5): µops (i, r), Bool uop2port[(i,r),k]."""
    for i, c in uops_per_insn.items():
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise ValidationError(f"µop count of {i!r} must be a positive integer, got {c!r}")
    names = [(i, r) for i in uops_per_insn for r in range(1, uops_per_insn[i] + 1)]
    var = {(u, k): Bool(f"{prefix}uop2port[{u[0]}.{u[1]},{k}]") for u in names for k in ports}
    wf = [Or(var[u, k] for k in ports) for u in names]

    def uops(exp: ExperimentEnc, _prefix: str) -> tuple[list[UopKind], list[Formula]]:
        return [UopKind(f"{u[0]}.{u[1]}", exp.counts[u[0]], Fraction(exp.hi[u[0]]),
                        {k: var[u, k] for k in ports}) for u in names], []

    def decode(model: Assignment) -> PortMapping:
        table: dict[str, list[Uop]] = {i: [] for i in uops_per_insn}
        for u in names:
            table[u[0]].append(Uop(frozenset(k for k in ports if model[var[u, k].name]), 1))
        return PortMapping(ports, table)

    return MappingEnc(tuple(ports), tuple(uops_per_insn), uops, decode, wf, "fixed-counts",
                      port_vars={(u[0], u[1], k): v for (u, k), v in var.items()})


def power_set_mapping(instructions: tuple[str, ...], ports: tuple[str, ...], max_count: int,
                      prefix: str = "", *, max_total: int | None = None) -> MappingEnc:
    """Three-level with µops U = P(P) \\ {∅} (Fig. 4.2/4.3): Int insn2uop[i,u] ∈ [0, max_count],
    at least one µop per instruction (and at most `max_total` when given).

    The µop mass Σ_i exp[i]·insn2uop[i,u] is a product of two variables when both the experiment
    and the mapping are free; we keep it linear by writing exp[i] in binary (exp[i] = Σ 2^l·b_l,
    product = Σ 2^l·ite(b_l, insn2uop[i,u], 0)), exact for the bounded experiment variables.
    """
    if max_count < 1:
        raise ValidationError(f"max µop count must be ≥ 1, got {max_count}")
    subsets = port_subsets(ports)
    var = {(i, u): Int(f"{prefix}insn2uop[{i},{uop_name(u)}]", 0, max_count)
           for i in instructions for u in subsets}
    wf: list[Formula] = []
    for i in instructions:
        total = Sum(var[i, u] for u in subsets)
        wf.append(total >= 1)
        if max_total is not None:
            wf.append(total <= max_total)

    def uops(exp: ExperimentEnc, p: str) -> tuple[list[UopKind], list[Formula]]:
        out: list[UopKind] = []
        extra: list[Formula] = []
        bits_of: dict[str, list[tuple[int, BoolVar]]] = {}
        for i in instructions:
            if not exp.counts[i].is_constant:
                bits_of[i], digits = binary_digits(exp, i, p)
                extra.append(digits)
        for u in subsets:
            terms = []
            for i in instructions:
                c = exp.counts[i]
                if c.is_constant:
                    terms.append(var[i, u] * c.const)
                else:
                    terms.extend(ite(bv, var[i, u] * w, 0) for w, bv in bits_of[i])
            mass_hi = Fraction(sum(exp.hi[i] for i in instructions) * max_count)
            out.append(UopKind(uop_name(u), Sum(terms), mass_hi, _const_ports(ports, u)))
        return out, extra

    def decode(model: Assignment) -> PortMapping:
        table = {i: [Uop(u, int(model[var[i, u].name])) for u in subsets if model[var[i, u].name]]
                 for i in instructions}
        return PortMapping(ports, table)

    return MappingEnc(tuple(ports), tuple(instructions), uops, decode, wf, "power-set",
                      count_vars=dict(var))


def holds(enc: MappingEnc, model: Assignment) -> bool:
    return all(eval_formula(f, model) for f in enc.constraints)

