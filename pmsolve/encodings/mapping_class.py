"""The bounded class of mappings that strategy questions range over, and symbolic mappings and
experiments of it (dissertation ch. 9).

A `SymMapping` is one of the mapping encodings of :mod:`pmsolve.encodings.mappings` -- two-level
booleans mapping[i,k], or power-set µop counts insn2uop[i,u] with at most U µops per
instruction -- plus the pieces of the bottleneck formula (Thm 5.2) the sufficiency encodings
need: how many µops of an instruction lie inside a port set, µop counts, port profiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations_with_replacement

from pmsolve.formula import bottleneck
from pmsolve.encodings.experiments import binary_digits, free_experiment
from pmsolve.encodings.mappings import MappingEnc, port_subsets, power_set_mapping, two_level_mapping
from pmsolve.errors import ValidationError
from pmsolve.model import Experiment, PortMapping, PortSet, Uop
from pmsolve.symbolic import And, Formula, Lin, Not, Sum, as_term, ite

__all__ = ["FreeExperiment", "Inside", "MappingClass", "SymMapping", "port_subsets"]


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
            seen.add((bottleneck(m, Experiment({"x": 1})).inverse_throughput, sum(u.count for u in uops)))
        return sorted(seen)


Inside = tuple[str, object]  # ("bool", Formula) | ("int", Lin) | ("const", int)


class SymMapping:
    """One symbolic mapping of a class (variables carry ``prefix``): the two-level or power-set
    encoding of :mod:`pmsolve.encodings.mappings` (``enc``), its variables by (instruction,
    port) or (instruction, port set) in ``var``, and the known instructions of the class."""

    def __init__(self, cls: MappingClass, prefix: str):
        self.cls = cls
        self.prefix = prefix
        self.subsets = port_subsets(cls.ports)
        self.enc: MappingEnc
        if cls.two_level:
            self.enc = two_level_mapping(cls.instructions, cls.ports, prefix)
            self.var = {(i, k): self.enc.port(i, k) for i in cls.instructions for k in cls.ports}
        else:
            self.enc = power_set_mapping(cls.instructions, cls.ports, cls.max_uops, prefix,
                                         max_total=cls.max_uops)
            self.var = {(i, u): self.enc.count(i, u) for i in cls.instructions for u in self.subsets}
        self.constraints: list[Formula] = list(self.enc.constraints)
        self._fixed = cls.fixed

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

    def relate_encoding(self) -> MappingEnc:
        """The mapping encoding relateThroughput (Def. 4.5) runs on; it has no known instructions."""
        if self._fixed is not None:
            raise ValidationError("the relate encoding does not support known (blocking) instructions; "
                                  "use the threshold or max encoding")
        return self.enc

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
                out += [self.var[i, u] == uops.get(u, 0) for u in self.subsets]
        return out

    def port_profile(self, k: str) -> list[Lin]:
        """Per symbolic instruction, how many of its µops may use port k (renaming-covariant)."""
        if self.cls.two_level:
            return [ite(self.var[i, k], 1, 0) for i in self.cls.instructions]
        return [Sum(self.var[i, u] for u in self.subsets if k in u) for i in self.cls.instructions]

    def decode(self, answer: object) -> PortMapping:
        """The mapping in a model or Result (with the class's known instructions)."""
        m = self.enc.decode(answer)
        if self._fixed is None:
            return m
        return PortMapping(self.cls.ports, {**m.uops, **self._fixed.uops})


class FreeExperiment:
    """e*: a free experiment (:func:`free_experiment`: Int exp[i] ∈ [0, bound], 1 ≤ Σ exp[i] ≤
    bound) whose counts can also be read in binary digits, so that exp[i]·(integer term) stays
    linear; the digits' definitions join ``constraints`` when first used."""

    def __init__(self, instructions: tuple[str, ...], bound: int, prefix: str = "E."):
        self.enc = free_experiment(tuple(instructions), bound, prefix)
        self.instructions = self.enc.instructions
        self.bound = bound
        self.prefix = prefix
        self.counts = self.enc.counts
        self.constraints: list[Formula] = list(self.enc.constraints)
        self._bits: dict[str, list[tuple[int, Formula]]] = {}

    def bits(self, insn: str) -> list[tuple[int, Formula]]:
        """exp[insn] = Σ 2^b·bit_b."""
        if insn not in self._bits:
            bits, digits = binary_digits(self.enc, insn, self.prefix)
            self.constraints.append(digits)
            self._bits[insn] = bits  # type: ignore[assignment]
        return self._bits[insn]

    def decode(self, answer: object) -> Experiment:
        return self.enc.decode(answer)
