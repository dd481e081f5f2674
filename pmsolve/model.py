"""Port mappings and experiments as immutable, validated values (dissertation ch. 3).

A *two-level* mapping assigns each instruction scheme a non-empty set of ports (Def. 3.2).
A *three-level* mapping assigns each instruction a multiset of µops and each µop a non-empty
port set (Def. 3.9). By Remark 3.13 a µop is identified with its port set, so a three-level
mapping is stored as ``instruction -> {port set: count}``; a two-level mapping is the special
case of one µop with count 1 per instruction. Reading and writing files lives in
:mod:`pmsolve.formats`.

The exact bottleneck formula of Thm 5.2 on a µop multiset (:func:`bottleneck_of`) lives here,
below everything else, so that a mapping can answer :meth:`PortMapping.indistinguishable`
itself; :mod:`pmsolve.formula` and :mod:`pmsolve.throughput` build on it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations_with_replacement
from typing import Container, Iterable, Iterator, Mapping

from pmsolve.errors import UnknownNameError, ValidationError

PortSet = frozenset[str]

#: The largest count of an instruction in an experiment or of a µop in a mapping: far above any
#: real loop body or µop count, low enough that a typo such as 1e300 is refused, not computed with.
MAX_COUNT = 1_000_000_000


def _check_count(value: object, what: str, *, allow_zero: bool = False) -> int:
    """Return ``value`` as an int if it is a (non-negative / positive) integer ≤ MAX_COUNT, else raise."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValidationError(f"{what}: count must be an integer, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValidationError(f"{what}: count must be {'≥ 0' if allow_zero else '≥ 1'}, got {value}")
    if value > MAX_COUNT:
        raise ValidationError(f"{what}: count must be at most {MAX_COUNT:,}, got {value:.3g}")
    return value


_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^[-+]?(inf|infinity|nan)$", re.IGNORECASE)


def _count_text(text: str) -> int | float | None:
    """The count an experiment item spells after its last ``:``, or None if it is no number
    (then the ``:`` belongs to the name). Negative, fractional and huge counts come back as
    numbers so that the count check names them, instead of an "unknown instruction"."""
    text = text.strip()
    if not _NUMBER.match(text):
        return None
    try:
        return int(text)
    except ValueError:
        return float(text)


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(f"{what}: name must be a non-empty string, got {name!r}")
    return name


@dataclass(frozen=True, order=True)
class Uop:
    """One µop kind: the ports that can execute it, and how often the instruction issues it."""

    ports: PortSet
    count: int = 1

    def __str__(self) -> str:
        return f"{self.count}*[{','.join(sort_ports(self.ports))}]"


def sort_ports(ports: Iterable[str]) -> list[str]:
    """Ports in natural order: numeric names numerically, then the rest alphabetically."""
    return sorted(ports, key=lambda p: (0, int(p), p) if p.isdigit() else (1, 0, p))


@dataclass(frozen=True)
class Experiment:
    """A multiset of instruction schemes (Def. 3.1): an order-free loop body to measure.

    Build it from a mapping ``{insn: count}``; counts are positive integers (zero entries are
    dropped). Equal multisets compare and hash equal, whatever the input order.
    """

    counts: tuple[tuple[str, int], ...]

    def __init__(self, counts: Mapping[str, int] | Iterable[tuple[str, int]] | Iterable[str]):
        items: dict[str, int] = {}
        pairs = counts.items() if isinstance(counts, Mapping) else counts
        for entry in pairs:
            insn, n = (entry, 1) if isinstance(entry, str) else entry
            _check_name(insn, "experiment")
            n = _check_count(n, f"experiment entry {insn!r}", allow_zero=True)
            if n:
                items[insn] = items.get(insn, 0) + n
        if not items:
            raise ValidationError("experiment is empty: it needs at least one instruction")
        object.__setattr__(self, "counts", tuple(sorted(items.items())))

    @classmethod
    def parse(cls, text: str, known: Iterable[str] | None = None) -> "Experiment":
        """Parse ``"add:2,mul:1"`` (``;`` separates items instead when present, for names with
        commas; a trailing ``;`` makes one such name an experiment). A count may be omitted.
        ``known`` resolves names that themselves end in ``:digits`` (uops.info style ``add
        R:GPR:32``) or contain commas: a whole item, or adjacent comma-separated pieces, that
        spell a known name count as that name. An empty item (``add:1,,mul:1``) is refused."""
        known_set = set(known) if known is not None else None
        sep = ";" if ";" in text else ","
        pieces = text.split(sep)
        if sep == ";" and len(pieces) > 1 and not pieces[-1].strip():
            pieces.pop()  # the documented trailing ';'
        if any(not p.strip() for p in pieces) and text.strip():
            raise ValidationError(f"experiment {text!r}: empty item between {sep!r} separators "
                                  f"(expected 'insn:count{sep}insn:count')")
        items: list[tuple[str, int]] = []
        k = 0
        while k < len(pieces):
            item, k = cls._next_item(pieces, k, sep, known_set)
            name, _, tail = item.rpartition(":")
            count = _count_text(tail) if name.strip() else None
            if known_set is not None and item in known_set:
                items.append((item, 1))
            elif count is not None:
                items.append((name.strip(), _check_count(count, f"experiment {text!r}: {name.strip()!r}",
                                                         allow_zero=True)))
            else:
                items.append((item, 1))
        if not items:
            raise ValidationError(f"experiment {text!r} names no instruction")
        return cls(items)

    @staticmethod
    def _next_item(pieces: list[str], k: int, sep: str, known: set[str] | None) -> tuple[str, int]:
        """The item starting at ``pieces[k]`` and the index after it: with ``known`` names, the
        longest run of comma-separated pieces that spells a known name (with or without a count)."""
        if known is not None and sep == ",":
            for j in range(len(pieces), k + 1, -1):
                joined = sep.join(pieces[k:j]).strip()
                if joined in known or joined.rpartition(":")[0].strip() in known:
                    return joined, j
        return pieces[k].strip(), k + 1

    def restricted(self, keep: Container[str]) -> "Experiment | None":
        """The part of this experiment on the schemes in ``keep``, or None when none is (no
        second validation: the evaluators build one per experiment and call)."""
        counts = tuple((i, n) for i, n in self.counts if i in keep)
        if not counts:
            return None
        part = object.__new__(Experiment)
        object.__setattr__(part, "counts", counts)
        return part

    def __iter__(self) -> Iterator[str]:
        return (insn for insn, _ in self.counts)

    def items(self) -> tuple[tuple[str, int], ...]:
        return self.counts

    def __getitem__(self, insn: str) -> int:
        return dict(self.counts).get(insn, 0)

    def in_program_order(self) -> list[str]:
        """One copy in the order the harness runs it: round-robin over the names in sorted order,
        so that equal instructions are spread out (:func:`pmsolve.harness.allocation.body`)."""
        left = dict(self.counts)
        out: list[str] = []
        while len(out) < self.size:
            for i, _ in self.counts:
                if left[i]:
                    out.append(i)
                    left[i] -= 1
        return out

    @property
    def size(self) -> int:
        """|e|: the number of instruction instances in one iteration."""
        return sum(n for _, n in self.counts)

    def __str__(self) -> str:
        sep = ";" if any("," in i for i, _ in self.counts) else ","
        return sep.join(f"{i}:{n}" for i, n in self.counts)

    def __repr__(self) -> str:
        return f"Experiment({dict(self.counts)!r})"


def as_experiment(value: object) -> Experiment:
    """An `Experiment`, or a plain ``{insn: count}`` dict made into one; anything else is refused
    with a line that says what to pass (a string would otherwise read as its letters)."""
    if isinstance(value, Experiment):
        return value
    if isinstance(value, Mapping):
        return Experiment(value)
    if isinstance(value, str):
        raise ValidationError(f"the string {value!r} is not an experiment: pass "
                              f"Experiment.parse({value!r}) or a dict such as {{'add': 2}}")
    raise ValidationError(f"not an experiment: {type(value).__name__} {value!r:.60}; pass an "
                          f"Experiment or a dict such as {{'add': 2, 'mul': 1}}")


def as_experiments(value: object) -> "tuple[bool, list[Experiment]]":
    """One experiment (an `Experiment` or a dict) or a sequence of them, as (single?, list)."""
    if isinstance(value, (Experiment, Mapping, str)):
        return True, [as_experiment(value)]
    if not isinstance(value, Iterable):
        as_experiment(value)  # raises, saying what to pass
    items = list(value)  # type: ignore[call-overload]
    if all(type(e) is Experiment for e in items):
        return False, items
    return False, [as_experiment(e) for e in items]


@dataclass(frozen=True)
class PortMapping:
    """A two- or three-level port mapping over named ports.

    ``uops`` maps each instruction to its µops; equal port sets are merged (Remark 3.13), so
    each instruction's µops are distinct port sets with positive counts, in a canonical order.
    ``levels`` is 2 when every instruction is one µop issued once, else 3.
    """

    ports: tuple[str, ...]
    uops: Mapping[str, tuple[Uop, ...]] = field(hash=False)

    def __init__(self, ports: Iterable[str], uops: Mapping[str, Iterable[Uop | tuple]]):
        port_list = [_check_name(p, "port") for p in ports]
        if not port_list:
            raise ValidationError("port mapping has no ports")
        dup = {p for p in port_list if port_list.count(p) > 1}
        if dup:
            raise ValidationError(f"port mapping lists ports more than once: {sorted(dup)}")
        port_set = set(port_list)
        table: dict[str, tuple[Uop, ...]] = {}
        for insn, insn_uops in uops.items():
            _check_name(insn, "instruction")
            merged: dict[PortSet, int] = {}
            for j, u in enumerate(insn_uops):
                ps, n = (u.ports, u.count) if isinstance(u, Uop) else u
                where = f"instruction {insn!r}, µop {j + 1}"
                if isinstance(ps, str):
                    raise ValidationError(f"{where}: port set must be a list of ports, got {ps!r}")
                ps = frozenset(str(p) for p in ps)
                if not ps:
                    raise ValidationError(f"{where}: empty port set (every µop needs a port)")
                unknown = ps - port_set
                if unknown:
                    raise UnknownNameError(f"{where}: unknown ports {sort_ports(unknown)}")
                merged[ps] = merged.get(ps, 0) + _check_count(n, where)
            if not merged:
                raise ValidationError(f"instruction {insn!r} has no µops")
            table[insn] = tuple(sorted((Uop(ps, n) for ps, n in merged.items()),
                                       key=lambda u: (sort_ports(u.ports), u.count)))
        if not table:
            raise ValidationError("port mapping has no instructions")
        object.__setattr__(self, "ports", tuple(port_list))
        object.__setattr__(self, "uops", dict(sorted(table.items())))

    @classmethod
    def two_level(cls, ports: Iterable[str], assignment: Mapping[str, Iterable[str]]) -> "PortMapping":
        """Build a two-level mapping from ``{insn: ports}`` (Def. 3.2)."""
        return cls(ports, {i: [(tuple(ps), 1)] for i, ps in assignment.items()})

    @property
    def instructions(self) -> tuple[str, ...]:
        return tuple(self.uops)

    @property
    def levels(self) -> int:
        return 2 if all(len(u) == 1 and u[0].count == 1 for u in self.uops.values()) else 3

    @property
    def is_two_level(self) -> bool:
        return self.levels == 2

    def uops_of(self, insn: str) -> tuple[Uop, ...]:
        try:
            return self.uops[insn]
        except KeyError:
            raise UnknownNameError(f"unknown instruction {insn!r}: the mapping does not cover it") from None

    def check(self, experiment: Experiment) -> None:
        """Raise :class:`UnknownNameError` if the experiment uses instructions not mapped here."""
        missing = [i for i in experiment if i not in self.uops]
        if missing:
            raise UnknownNameError(f"unknown instruction(s) {missing[:5]} in experiment {experiment}: "
                                   f"the mapping does not cover them")

    def uop_masses(self, experiment: Experiment) -> dict[PortSet, int]:
        """The µop multiset of an experiment: port set -> number of µops per iteration."""
        self.check(experiment)
        mass: dict[PortSet, int] = {}
        for insn, n in experiment.items():
            for u in self.uops[insn]:
                mass[u.ports] = mass.get(u.ports, 0) + n * u.count
        return mass

    def indistinguishable(self, other: "PortMapping", *, max_len: int = 3) -> bool:
        """Def. 3.16 on a bounded domain: whether every experiment of at most `max_len`
        instructions has the same exact tp⁻¹ under both mappings (an experiment that tells
        them apart: :meth:`distinguishing_experiment`)."""
        return self.distinguishing_experiment(other, max_len=max_len) is None

    def distinguishing_experiment(self, other: "PortMapping", *, max_len: int = 3) -> "Experiment | None":
        """The first experiment of at most `max_len` instructions (fewest first) whose exact
        tp⁻¹ differs between the two mappings, or None when there is none (they are
        indistinguishable on that domain, Def. 3.16). Exhaustive: C(n + max_len, max_len)
        experiments for n instructions; both mappings must cover the same instructions."""
        if set(self.instructions) != set(other.instructions):
            raise ValidationError(f"the mappings cover different instructions: "
                                  f"{sorted(set(self.instructions) ^ set(other.instructions))[:5]}")
        if max_len < 1:
            raise ValidationError(f"max_len must be ≥ 1, got {max_len}")
        for size in range(1, max_len + 1):
            for combo in combinations_with_replacement(self.instructions, size):
                e = Experiment(combo)
                if bottleneck_of(self.uop_masses(e))[0] != bottleneck_of(other.uop_masses(e))[0]:
                    return e
        return None

    def as_two_level_on_uops(self) -> "PortMapping":
        """Remark 3.13: the two-level mapping whose instructions are this mapping's µops."""
        names = {u.ports: "[" + ",".join(sort_ports(u.ports)) + "]"
                 for us in self.uops.values() for u in us}
        return PortMapping.two_level(self.ports, {n: ps for ps, n in names.items()})

    def restrict(self, instructions: Iterable[str]) -> "PortMapping":
        """The sub-mapping on the given instructions (unknown names raise)."""
        return PortMapping(self.ports, {i: self.uops_of(i) for i in instructions})

    def rename_ports(self, renaming: Mapping[str, str]) -> "PortMapping":
        """Apply a bijective port renaming; the result is indistinguishable (Def. 3.16)."""
        if sorted(renaming) != sorted(self.ports) or len(set(renaming.values())) != len(renaming):
            raise ValidationError("port renaming must be a bijection on the mapping's ports")
        return PortMapping([renaming[p] for p in self.ports],
                           {i: [(frozenset(renaming[p] for p in u.ports), u.count) for u in us]
                            for i, us in self.uops.items()})

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, PortMapping) and set(self.ports) == set(other.ports)
                and self.uops == other.uops)

    def __hash__(self) -> int:
        return hash((frozenset(self.ports), tuple(self.uops.items())))

    def __str__(self) -> str:
        width = max(len(i) for i in self.uops)
        lines = [f"{len(self.uops)} instructions, {len(self.ports)} ports "
                 f"({' '.join(self.ports)}), {self.levels}-level"]
        lines += [f"  {i:<{width}}  {' + '.join(map(str, us))}" for i, us in self.uops.items()]
        return "\n".join(lines)


def check_mapping(value: object) -> "PortMapping":
    """`value` if it is a PortMapping; anything else is refused with a line that says what to pass."""
    if isinstance(value, PortMapping):
        return value
    raise ValidationError(f"not a port mapping: {type(value).__name__} {value!r:.60}; pass a PortMapping "
                          f"(load_mapping(path), or PortMapping.two_level(ports, {{insn: ports}}))")


def bottleneck_of(mass: Mapping[PortSet, int]) -> tuple[Fraction, PortSet]:
    """Thm 5.2 on a µop multiset (port set -> mass): the maximum over port sets Q of (mass of
    µops whose ports lie inside Q) / |Q|, and the largest Q attaining it.

    Only unions of the µops' port sets need to be tried: any other Q can be shrunk to the union
    of the µops inside it without losing mass. Maximisers are closed under union (the mass
    function is supermodular), so the largest one is unique; all its ports are fully loaded.
    """
    candidates: set[PortSet] = set()
    frontier = set(mass)
    while frontier:
        candidates |= frontier
        frontier = {q | u for q in frontier for u in mass} - candidates
    values = {q: Fraction(sum(m for ps, m in mass.items() if ps <= q), len(q)) for q in candidates}
    best = max(values.values())
    return best, frozenset().union(*(q for q, v in values.items() if v == best))


#: port -> bit and port set -> bit mask for :func:`peak_load`, shared by every call: its inner
#: loops pass the same few sets thousands of times
_PORT_BIT: dict[str, int] = {}
_SET_MASK: dict[PortSet, int] = {}


def _mask_of(q: PortSet) -> int:
    m = _SET_MASK.get(q)
    if m is None:
        m = 0
        for p in q:
            m |= 1 << _PORT_BIT.setdefault(p, len(_PORT_BIT))
        _SET_MASK[q] = m
    return m


def peak_load(mass: Mapping[PortSet, int]) -> float:
    """The value of :func:`bottleneck_of` as a float (the same float: each ratio and their
    maximum round alike), computed over bit masks for inner loops that try thousands of µop
    multisets (the counter-free characterisation's placements of missed µops).

    With few distinct sets, over every subset S of them: mass(S) / |union(S)| is at most the
    formula's value at union(S), and S = the µops inside the best Q attains it, so the maximum
    is the formula's (:func:`~pmsolve.formula.evaluate_masks` does the same in numpy); the
    subsets double set by set, with no sum over the µops per union. With many, over the unions
    themselves, which overlapping sets keep far fewer than the subsets."""
    masks: dict[int, int] = {}
    for q, m in mass.items():
        b = _mask_of(q)
        masks[b] = masks.get(b, 0) + m
    if len(masks) <= 8:
        unions, weights = [0], [0]
        for u, m in masks.items():
            unions += [c | u for c in unions]
            weights += [w + m for w in weights]
        return max(w / c.bit_count() for c, w in zip(unions[1:], weights[1:]))
    closure = {0}
    for u in masks:
        closure |= {c | u for c in closure}
    closure.discard(0)
    items = list(masks.items())
    return max(sum(m for u, m in items if u & q == u) / q.bit_count() for q in closure)


@dataclass(frozen=True)
class Measurement:
    """An experiment with its measured inverse throughput (cycles per iteration) and, where
    known, other predictors' answers by name."""

    experiment: Experiment
    cycles: float
    others: Mapping[str, float] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        if (not isinstance(self.cycles, (int, float)) or isinstance(self.cycles, bool) or not self.cycles > 0
                or not math.isfinite(self.cycles)):
            raise ValidationError(f"measurement of {self.experiment}: cycles must be a positive finite number, "
                                  f"got {self.cycles!r}")
