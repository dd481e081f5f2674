"""AnICA's abstract domain for x86-64 (sec. 8.1.2, 8.1.4): abstract blocks, β, γ, expansions.

An abstract block is a sequence of abstract instructions (one value per Table 8.2 feature) and
an aliasing map from operand pairs to must/mustnot (absent pairs are ⊤). The scheme universe is
finite (the catalogue's offered schemes, optionally with lock-prefixed variants), so γ of an
abstract instruction is computed exactly as a bit mask over the universe: C2 of Def. 8.7 and
the "expansion changes nothing" shortcut of the generaliser are exact set comparisons.

Operands of an instruction are its explicit operands followed by its implicit (hardwired)
ones, indexed from 0. Two operands *match* when both are registers of one file (GPR, vector or mask)
or both access memory; registers alias when they share a representative (``ecx``/``rcx``,
``xmm3``/``ymm3``), memory operands when they are syntactically identical (the sampler makes
that exact, sec. 8.1.4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from pmsolve.errors import FormatError, ValidationError
from pmsolve.anica.features import DEF_NONE, TOP, EditDistance, LogSizes, Singleton, SubsetOrNone
from pmsolve.isa.render import representative
from pmsolve.isa.scheme import Operand, Scheme

#: the features of Table 8.2, in a fixed order (abstract instructions are tuples in this order)
FEATURES: tuple[tuple[str, Any], ...] = (
    ("mnemonic", EditDistance(3)),
    ("category", Singleton()),
    ("extension", Singleton()),
    ("prefix", Singleton()),
    ("uops", LogSizes(5)),
    ("memory", SubsetOrNone()),
    ("operands", SubsetOrNone()),
)
FEATURE_NAMES = tuple(n for n, _ in FEATURES)
MUST, MUSTNOT = "must", "mustnot"


@dataclass(frozen=True)
class Form:
    """One element of the instruction universe: a catalogue scheme, maybe lock-prefixed."""

    scheme: Scheme
    lock: bool = False

    @property
    def key(self) -> str:
        return ("lock " if self.lock else "") + self.scheme.name

    @property
    def operands(self) -> tuple[Operand, ...]:
        return self.scheme.operands + self.scheme.implicit


def operand_file(o: Operand) -> str | None:
    """What an operand can alias with: 'gpr', 'vec' (xmm/ymm/zmm), 'mask' (AVX-512 k
    registers), 'mem', or None (immediates, addresses)."""
    if o.kind == "reg":
        return "gpr" if o.cls == "gpr" else "mask" if o.cls == "k" else "vec"
    if o.kind == "mem" and (o.read or o.write):
        return "mem"
    return None


def scheme_features(s: Scheme, lock: bool, uops: int | None) -> dict[str, Any]:
    """The concrete feature values of Table 8.1 for one form."""
    mem: set[str] = set()
    for o in s.operands:
        if o.kind == "mem" and (o.read or o.write):
            mem.update((["R"] if o.read else []) + (["W"] if o.write else []) + [f"Size:{o.width}"])
    ops = {o.describe() for o in s.operands + s.implicit}
    if s.flags_read:
        ops.add("FLAGS:R")
    if s.flags_written:
        ops.add("FLAGS:W")
    return {"mnemonic": s.mnemonic, "category": s.category, "extension": s.extension,
            "prefix": "lock" if lock else "none", "uops": uops, "memory": frozenset(mem),
            "operands": frozenset(ops)}


class Universe:
    """The schemes AnICA samples from, their features, and exact γ masks of abstract values."""

    def __init__(self, forms: Sequence[Form], uops: Mapping[str, int | None]):
        if not forms:
            raise ValidationError("the AnICA instruction universe is empty (check the ISA filter)")
        self.forms = list(forms)
        self.index = {f.key: k for k, f in enumerate(self.forms)}
        self.feats = [scheme_features(f.scheme, f.lock, uops.get(f.scheme.name)) for f in self.forms]
        self._masks: dict[tuple[str, Any], np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.forms)

    def form(self, key: str) -> Form:
        try:
            return self.forms[self.index[key]]
        except KeyError:
            raise ValidationError(f"instruction form {key!r} is not in the AnICA universe") from None

    def feature_mask(self, feature: str, av: Any) -> np.ndarray:
        key = (feature, av)
        m = self._masks.get(key)
        if m is None:
            dom = dict(FEATURES)[feature]
            if av is TOP:
                m = np.ones(len(self.forms), dtype=bool)
            else:
                cache: dict[Any, bool] = {}
                vals = [fv[feature] for fv in self.feats]
                m = np.fromiter((cache.setdefault(v, dom.admits(av, v)) for v in vals), dtype=bool,
                                count=len(vals))
            m.setflags(write=False)
            self._masks[key] = m
        return m

    def gamma(self, ai: "AbstractInsn") -> np.ndarray:
        """γ_in(ai) as a mask over the universe (eq. 8.10: the features' intersection)."""
        m = np.ones(len(self.forms), dtype=bool)
        for name, av in zip(FEATURE_NAMES, ai.values):
            if av is not TOP:
                m &= self.feature_mask(name, av)
        return m

    def beta_insn(self, key: str) -> "AbstractInsn":
        fv = self.feats[self.index[key]] if key in self.index else None
        if fv is None:
            raise ValidationError(f"instruction form {key!r} is not in the AnICA universe")
        return AbstractInsn(tuple(dom.beta(fv[n]) for n, dom in FEATURES))

    def admits(self, ai: "AbstractInsn", key: str) -> bool:
        fv = self.feats[self.index[key]]
        return all(dom.admits(av, fv[n]) for (n, dom), av in zip(FEATURES, ai.values))


@dataclass(frozen=True)
class AbstractInsn:
    values: tuple[Any, ...]

    @classmethod
    def top(cls) -> "AbstractInsn":
        return cls(tuple(TOP for _ in FEATURES))

    def get(self, feature: str) -> Any:
        return self.values[FEATURE_NAMES.index(feature)]

    def leq(self, other: "AbstractInsn") -> bool:
        return all(dom.leq(x, y) for (_, dom), x, y in zip(FEATURES, self.values, other.values))

    def to_json(self) -> dict[str, Any]:
        return {n: _jsonable(v) for n, v in zip(FEATURE_NAMES, self.values)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "AbstractInsn":
        return cls(tuple(_unjson(d.get(n)) for n in FEATURE_NAMES))

    def describe(self) -> str:
        parts = []
        for n, v in zip(FEATURE_NAMES, self.values):
            if v is TOP:
                continue
            if n == "mnemonic":
                parts.append(f"mnemonic: {v[0]}" + (f" (±{v[1]} edits)" if v[1] else ""))
            elif n == "uops":
                parts.append(f"µops < {2 ** v}")
            elif n in ("memory", "operands"):
                parts.append(f"{n}: " + ("none" if v == DEF_NONE else "⊇{" + ", ".join(v) + "}"))
            else:
                parts.append(f"{n}: {v}")
        return "; ".join(parts) or "⊤"


def _jsonable(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def _unjson(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


OpRef = tuple[int, int]  # (instruction index, operand index)


def _pair(a: OpRef, b: OpRef) -> tuple[OpRef, OpRef]:
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True)
class AbstractBlock:
    """(abstract instructions, aliasing) of eq. 8.3; aliasing holds only non-⊤ entries."""

    insns: tuple[AbstractInsn, ...]
    aliasing: tuple[tuple[tuple[OpRef, OpRef], str], ...] = ()

    def __post_init__(self) -> None:
        if not self.insns:
            raise ValidationError("an abstract block needs at least one abstract instruction")

    @property
    def alias(self) -> dict[tuple[OpRef, OpRef], str]:
        return dict(self.aliasing)

    @classmethod
    def make(cls, insns: Iterable[AbstractInsn], alias: Mapping[tuple[OpRef, OpRef], str]) -> "AbstractBlock":
        return cls(tuple(insns), tuple(sorted((_pair(*k), v) for k, v in alias.items() if v in (MUST, MUSTNOT))))

    @classmethod
    def top(cls, n: int) -> "AbstractBlock":
        return cls(tuple(AbstractInsn.top() for _ in range(n)))

    def leq(self, other: "AbstractBlock") -> bool:
        """⊑_A of eq. 8.4 with ⊑_al of eq. 8.14."""
        if len(self.insns) != len(other.insns):
            return False
        mine = self.alias
        return (all(a.leq(b) for a, b in zip(self.insns, other.insns))
                and all(mine.get(k) == v for k, v in other.aliasing))

    def to_json(self) -> dict[str, Any]:
        return {"insns": [a.to_json() for a in self.insns],
                "aliasing": [[list(a), list(b), v] for (a, b), v in self.aliasing]}

    @classmethod
    def from_json(cls, d: Any, where: str = "abstract block") -> "AbstractBlock":
        try:
            insns = [AbstractInsn.from_json(x) for x in d["insns"]]
            alias = {(tuple(a), tuple(b)): v for a, b, v in d.get("aliasing", [])}
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"{where}: malformed abstract block ({exc})") from None
        return cls.make(insns, alias)

    def describe(self) -> list[str]:
        lines = [f"{k + 1}. {a.describe()}" for k, a in enumerate(self.insns)]
        for ((i, o), (j, p)), v in self.aliasing:
            rel = "must alias" if v == MUST else "must not alias"
            lines.append(f"operand {o + 1} of instruction {i + 1} {rel} operand {p + 1} of instruction {j + 1}")
        return lines


@dataclass(frozen=True)
class Expansion:
    """One expansion function (eq. 8.7/8.12/8.17): a feature of one instruction moves to a
    successor, or one aliasing entry becomes ⊤."""

    where: str            # "insn" or "alias"
    index: int = -1       # instruction index (insn)
    feature: str = ""     # feature name (insn)
    value: Any = None     # the successor value (insn)
    pair: tuple[OpRef, OpRef] | None = None  # (alias)

    def apply(self, ab: AbstractBlock) -> AbstractBlock:
        if self.where == "alias":
            alias = ab.alias
            alias.pop(self.pair, None)
            return AbstractBlock.make(ab.insns, alias)
        insns = list(ab.insns)
        vals = list(insns[self.index].values)
        vals[FEATURE_NAMES.index(self.feature)] = self.value
        insns[self.index] = AbstractInsn(tuple(vals))
        return AbstractBlock(tuple(insns), ab.aliasing)

    def describe(self) -> str:
        if self.where == "alias":
            (i, o), (j, p) = self.pair
            return f"drop aliasing constraint op{o + 1}@insn{i + 1} ~ op{p + 1}@insn{j + 1}"
        v = self.value
        shown = "⊤" if v is TOP else (f"{v[0]}±{v[1]}" if self.feature == "mnemonic" else
                                     f"<2^{v}" if self.feature == "uops" else
                                     ("{" + ", ".join(v) + "}") if isinstance(v, tuple) else str(v))
        return f"insn {self.index + 1}: {self.feature} -> {shown}"

    def to_json(self) -> dict[str, Any]:
        if self.where == "alias":
            return {"where": "alias", "pair": [list(self.pair[0]), list(self.pair[1])]}
        return {"where": "insn", "index": self.index, "feature": self.feature, "value": _jsonable(self.value)}


def expansions(ab: AbstractBlock) -> list[Expansion]:
    """Every expansion applicable to ``ab`` (finitely many, Def. 8.2.4)."""
    out: list[Expansion] = []
    for k, ai in enumerate(ab.insns):
        for (n, dom), v in zip(FEATURES, ai.values):
            for succ in dom.succ(v):
                out.append(Expansion("insn", k, n, succ))
    out += [Expansion("alias", pair=p) for p, _ in ab.aliasing]
    return out


# --------------------------------------------------------------------------- concrete blocks

@dataclass(frozen=True)
class Concrete:
    """A sampled basic block with its operand values kept (β needs them, not only the text).

    ``forms`` are universe keys; ``values[k]`` has one entry per operand of form k (explicit
    then implicit): a register name, a memory operand text, or an immediate.
    """

    forms: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]

    def to_json(self) -> dict[str, Any]:
        return {"forms": list(self.forms), "values": [list(v) for v in self.values]}

    @classmethod
    def from_json(cls, d: Any) -> "Concrete":
        try:
            return cls(tuple(d["forms"]), tuple(tuple(v) for v in d["values"]))
        except (KeyError, TypeError) as exc:
            raise FormatError(f"malformed concrete block: {exc}") from None

    def drop(self, k: int) -> "Concrete":
        return Concrete(self.forms[:k] + self.forms[k + 1:], self.values[:k] + self.values[k + 1:])


def _location(o: Operand, v: Any) -> str:
    return representative(str(v)) if o.kind == "reg" else "mem:" + str(v)


def alias_facts(u: Universe, c: Concrete) -> dict[tuple[OpRef, OpRef], str]:
    """β_al (eq. 8.16): must/mustnot for every matching pair of operands of the block."""
    ops: list[tuple[OpRef, str, str]] = []
    for i, (key, vals) in enumerate(zip(c.forms, c.values)):
        for o_idx, (o, v) in enumerate(zip(u.form(key).operands, vals)):
            f = operand_file(o)
            if f is not None:
                ops.append(((i, o_idx), f, _location(o, v)))
    out = {}
    for x in range(len(ops)):
        for y in range(x + 1, len(ops)):
            (a, fa, la), (b, fb, lb) = ops[x], ops[y]
            if fa == fb:
                out[(a, b)] = MUST if la == lb else MUSTNOT
    return out


def beta(u: Universe, c: Concrete) -> AbstractBlock:
    """β_A (eq. 8.6): the most specific abstract block representing ``c``."""
    return AbstractBlock.make([u.beta_insn(k) for k in c.forms], alias_facts(u, c))


def contains(u: Universe, ab: AbstractBlock, c: Concrete) -> bool:
    """c ∈ γ_A(ab) (eq. 8.5 and 8.15): constraints apply to existing, matching operand pairs."""
    if len(c.forms) != len(ab.insns):
        return False
    if not all(u.admits(ai, k) for ai, k in zip(ab.insns, c.forms)):
        return False
    facts = alias_facts(u, c)
    return all(facts.get(p, v) == v for p, v in ab.aliasing)
