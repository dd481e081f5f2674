"""Experiment encodings (sec. 4.2.1): one Int variable exp[i] per instruction, or constants."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from pmsolve.encodings.encoding import model_of
from pmsolve.errors import UnknownNameError, ValidationError
from pmsolve.model import Experiment
from pmsolve.symbolic import Bool, BoolVar, Formula, Int, Lin, Sum, as_term, ite
from pmsolve.symbolic.evaluate import Assignment, eval_term


@dataclass(frozen=True)
class ExperimentEnc:
    """`counts[i]` is a term for how often instruction i occurs; `constraints` make it well-formed.

    `hi[i]` is an upper bound of counts[i] (needed for big-M and for µop-count products).
    """

    instructions: tuple[str, ...]
    counts: dict[str, Lin]
    hi: dict[str, int]
    constraints: tuple[Formula, ...] = ()

    @property
    def size(self) -> Lin:
        """|exp|, the number of instruction instances."""
        return Sum(self.counts.values())

    @property
    def size_hi(self) -> int:
        return sum(self.hi.values())

    @property
    def is_fixed(self) -> bool:
        return all(c.is_constant for c in self.counts.values())

    def decode(self, answer: object) -> Experiment:
        """The experiment in a model or solver Result."""
        model = model_of(answer)
        return Experiment({i: int(eval_term(c, model)) for i, c in self.counts.items()})

    def count(self, insn: str) -> Lin:
        """The term "how often `insn` occurs" (a variable's term for free experiments)."""
        try:
            return self.counts[insn]
        except KeyError:
            raise UnknownNameError(f"unknown instruction {insn!r} (the experiment encoding has "
                                   f"{', '.join(self.instructions)})") from None


def fixed_experiment(experiment: Experiment, instructions: tuple[str, ...]) -> ExperimentEnc:
    """Constants for a known experiment (the encodings then drop what becomes trivial)."""
    unknown = [i for i in experiment if i not in instructions]
    if unknown:
        raise ValidationError(f"experiment {experiment} uses instructions not in the encoding: {unknown}")
    counts = {i: as_term(experiment[i]) for i in instructions}
    return ExperimentEnc(tuple(instructions), counts, {i: experiment[i] for i in instructions})


def free_experiment(instructions: tuple[str, ...], bound: int, prefix: str = "") -> ExperimentEnc:
    """Variables exp[i] ∈ [0, bound] with 1 ≤ Σ exp[i] ≤ bound (the size bound of sec. 4.3)."""
    if bound < 1:
        raise ValidationError(f"experiment size bound must be ≥ 1, got {bound}")
    counts = {i: Int(f"{prefix}exp[{i}]", 0, bound).lin() for i in instructions}
    total = Sum(counts.values())
    return ExperimentEnc(tuple(instructions), counts, {i: bound for i in instructions},
                         (total >= 1, total <= bound))


def binary_digits(exp: ExperimentEnc, insn: str, prefix: str) -> tuple[list[tuple[int, BoolVar]], Formula]:
    """exp[insn] = Σ 2^b·bit_b over fresh booleans `{prefix}bit[insn,b]`: (weights and bits, the
    defining equation), so a product of the count with an integer term stays linear."""
    width = max(1, exp.hi[insn].bit_length())
    bits = [(1 << b, Bool(f"{prefix}bit[{insn},{b}]")) for b in range(width)]
    return bits, exp.counts[insn] == Sum(ite(v, w, 0) for w, v in bits)


def mass_bound(enc: ExperimentEnc) -> Fraction:
    return Fraction(enc.size_hi)
