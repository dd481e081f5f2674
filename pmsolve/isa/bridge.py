"""One canonical key for an instruction scheme, whatever naming scheme names it.

Three naming schemes denote x86-64 instruction schemes in this project and its reference data:

* ``catalogue`` — pmsolve's own (:mod:`pmsolve.isa.catalogue`): ``add_r64_i8``, ``shl_r64_1``,
  ``lea_r64_m``, ``aesimc_xmm_m128``, ``cmp_al_i8``;
* ``explainable`` — the iwho names of the explainable Zen+ mapping (ASPLOS'24) and of PMEvo's
  Zen+ mapping in ``zenplus/``: ``add RW:GPR:64, IMM(32)``, ``add RW:GPR:16, word ptr R:MEM(16)``,
  ``shl RW:GPR:64`` (the shift-by-one form), ``add RW:GPR:64, 0x0`` (the immediate-zero form);
* ``pmevo`` — the PMEvo artifact's names: ``ADD_((REG:RW:G:64)),_((IMM:32))``,
  ``AND_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((IMM:8))``.

The key is ``mnemonic op,op,...`` with one token per explicit operand: ``r8``..``r64``, ``xmm``,
``ymm``, ``zmm``, ``k`` (an AVX-512 mask register, also the write mask of a masked EVEX form),
``m8``..``m512`` (``m`` for an address only, as in ``lea``), ``m32bcst`` (an EVEX embedded
broadcast), ``i8``..``i64``, a constant (``1``, ``0``) or a hardwired register (``al``, ``cl``,
``rax``); an EVEX form the catalogue marks ``_evex`` (a twin of a VEX form) ends in `` {evex}``. Access (R/W/RW) is
left out on purpose: the schemes sets disagree on it (iwho calls ``mov r16, imm16`` RW) and no
two x86 schemes differ only in access. Distinctions one scheme set makes and another cannot
express collapse onto one key (iwho's REX/non-REX 8-bit register classes, PMEvo's addressing
modes of ``lea``): :func:`bridge` then picks the most general name deterministically.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from pmsolve.errors import ValidationError
from pmsolve.formats import _read_json, mapping_from_json
from pmsolve.isa.catalogue import load_catalogue

NAMINGS = ("catalogue", "explainable", "pmevo")

#: shifts and rotates, whose one-operand iwho form is the shift-by-one encoding
_SHIFTS = frozenset({"shl", "sal", "shr", "sar", "rol", "ror", "rcl", "rcr"})
#: mnemonics spelled differently by the schemes sets (to the catalogue's spelling)
_MNEMONIC_ALIASES = {"sal": "shl"}
_GPR8 = frozenset("al bl cl dl sil dil bpl spl ah bh ch dh".split() + [f"r{i}b" for i in range(8, 16)])
_PTR_WIDTH = {"byte": 8, "word": 16, "dword": 32, "qword": 64, "tbyte": 80, "xmmword": 128, "ymmword": 256,
              "zmmword": 512}


@dataclass(frozen=True)
class Parsed:
    """A scheme name in canonical form. ``generality`` ranks names sharing a key (higher is more
    general: e.g. the iwho register class with all 16 byte registers beats the REX-only one)."""

    key: str
    generality: int = 0


def _canon(mnemonic: str, ops: Sequence[str]) -> str:
    mn = mnemonic.strip().lower()
    mn = _MNEMONIC_ALIASES.get(mn, mn)
    return f"{mn} {','.join(ops)}" if ops else mn


# ----------------------------------------------------------------------------- catalogue

_FIXED_REGS = frozenset("al ax eax rax cl cx ecx rcx dl dx edx rdx xmm0".split())
_CAT_TOKEN = re.compile(r"^(r(8|16|32|64)|xmm|ymm|zmm|k|m\d*|m\d+bcst|i(8|16|32|64)|\d+)$")
_EVEX_MARK = "evex"   # the catalogue's suffix of an EVEX twin of a VEX scheme (pmsolve.isa.x86_gen)


def _parse_catalogue(name: str) -> Parsed | None:
    """``mnemonic_op_op``; operand tokens are taken from the right, so mnemonics with an
    underscore (``ccs_hash``) survive."""
    parts = name.strip().split("_")
    evex = len(parts) > 2 and parts[-1] == _EVEX_MARK
    if evex:
        parts = parts[:-1]
    k = len(parts)
    while k > 1 and (_CAT_TOKEN.match(parts[k - 1]) or parts[k - 1] in _FIXED_REGS):
        k -= 1
    mnemonic = "_".join(parts[:k])
    if not re.fullmatch(r"[a-z][a-z0-9_ ]*", mnemonic):
        return None
    return Parsed(_canon(mnemonic, parts[k:]) + (" {evex}" if evex else ""))


def scheme_key_of(scheme) -> str:
    """The key of a catalogue :class:`~pmsolve.isa.scheme.Scheme` from its structure (not its
    name): mnemonic, operand kinds, and the ``{evex}`` pseudo-prefix of a forced EVEX form."""
    key = _canon(scheme.mnemonic, [o.short() for o in scheme.operands])
    return key + (" {evex}" if scheme.template.startswith("{{evex}}") else "")


# ----------------------------------------------------------------------------- explainable (iwho)

_EXP_GPR = re.compile(r"^(?:[RW]+:)?GPR:(\d+)$")
_EXP_VEC = re.compile(r"^(?:[RW]+:)?([XYZ]MM)\d+\.\.\d+$")
_EXP_MEM = re.compile(r"^(?:(\w+) ptr )?(?:[RW]+:)?MEM\((\d+)\)$")
_EXP_IMM = re.compile(r"^IMM\((\d+)\)$")
_EXP_REGS = re.compile(r"^(?:[RW]+:)?([a-z0-9]+(?:,[a-z0-9]+)*)$")
_EXP_CONST = re.compile(r"^(0x[0-9a-f]+|\d+)$")


def _split_explainable(rest: str) -> list[str]:
    """Operands are separated by ``, `` but register lists use bare commas (``al,bl,...``)."""
    return [p for p in rest.split(", ")] if rest else []


def _parse_explainable(name: str) -> Parsed | None:
    mnemonic, _, rest = name.strip().partition(" ")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", mnemonic):
        return None
    ops: list[str] = []
    generality = 0
    for raw in _split_explainable(rest):
        op = raw.strip()
        if m := _EXP_GPR.match(op):
            ops.append(f"r{m.group(1)}")
        elif m := _EXP_VEC.match(op):
            ops.append(m.group(1).lower())
        elif m := _EXP_MEM.match(op):
            width = int(m.group(2))
            if m.group(1) and _PTR_WIDTH.get(m.group(1)) not in (None, width):
                return None
            ops.append(f"m{width}" if width else "m")
        elif m := _EXP_IMM.match(op):
            ops.append(f"i{m.group(1)}")
        elif m := _EXP_CONST.match(op):
            ops.append(str(int(m.group(1), 0)))
        elif m := _EXP_REGS.match(op):
            regs = m.group(1).split(",")
            if len(regs) == 1:
                ops.append(regs[0])
            elif all(r in _GPR8 for r in regs):
                ops.append("r8")
                generality += len(regs)
            else:
                return None
        else:
            return None
    if mnemonic in _SHIFTS and len(ops) == 1:
        ops.append("1")
    return Parsed(_canon(mnemonic, ops), generality)


# ----------------------------------------------------------------------------- PMEvo

_PM_OPERAND = re.compile(r"\(\((REG|IMM|DIV|MEM|MIMM):([A-Z:]*?):?(\d+)\)\)")
_PM_REG = re.compile(r"^\(\(REG:[RW]+:([GV]):(\d+)\)\)$")
_PM_DIV = re.compile(r"^\(\(DIV:(\d+)\)\)$")
_PM_IMM = re.compile(r"^\(\(IMM:(\d+)\)\)$")
_PM_MEM = re.compile(r"^(?:(\w+)_ptr_)?_?\[(.*)\]$")


def _parse_pmevo(name: str) -> Parsed | None:
    mnemonic, sep, rest = name.strip().partition("_")
    if not re.fullmatch(r"[A-Z][A-Z0-9]*", mnemonic):
        return None
    ops: list[str] = []
    generality = 0
    for op in (rest.split(",_") if sep else []):
        if m := _PM_REG.match(op):
            kind, width = m.group(1), int(m.group(2))
            ops.append(f"r{width}" if kind == "G" else {128: "xmm", 256: "ymm", 512: "zmm"}.get(width, f"v{width}"))
        elif m := _PM_DIV.match(op):
            ops.append(f"r{m.group(1)}")
        elif m := _PM_IMM.match(op):
            ops.append(f"i{m.group(1)}")
        elif m := _PM_MEM.match(op):
            if m.group(1):
                width = _PTR_WIDTH.get(m.group(1))
                if width is None:
                    return None
                ops.append(f"m{width}")
            else:
                ops.append("m")     # an address only (lea); its addressing modes share a key
                generality += 1 if m.group(2) == "((MEM:64))_+_((MIMM:16))" else 0
        else:
            return None
    return Parsed(_canon(mnemonic, ops), generality)


_PARSERS = {"catalogue": _parse_catalogue, "explainable": _parse_explainable, "pmevo": _parse_pmevo}


# ----------------------------------------------------------------------------- API

def parse(name: str, naming: str) -> Parsed | None:
    """The canonical form of ``name`` in ``naming``, or None when it is not such a name."""
    try:
        parser = _PARSERS[naming]
    except KeyError:
        raise ValidationError(f"unknown naming scheme {naming!r}; known: {', '.join(NAMINGS)}") from None
    return parser(name)


def scheme_key(name: str, naming: str | None = None) -> str | None:
    """The canonical key of ``name`` (naming detected from the name itself when not given)."""
    naming = naming or detect_naming([name])
    p = parse(name, naming)
    return p.key if p else None


def _looks_like(name: str) -> str | None:
    if "((" in name:
        return "pmevo"
    if " " in name or ":" in name:
        return "explainable"
    if re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", name):
        return "catalogue"
    return None


def detect_naming(names: Iterable[str]) -> str:
    """The naming most of ``names`` follow (a mapping file's instruction names, a list)."""
    votes: dict[str, int] = defaultdict(int)
    for n in names:
        kind = _looks_like(n)
        if kind:
            votes[kind] += 1
    if not votes:
        raise ValidationError("cannot tell the naming scheme of these instruction names "
                              f"(expected one of {', '.join(NAMINGS)})")
    return max(NAMINGS, key=lambda k: votes.get(k, 0))


@dataclass(frozen=True)
class Bridge:
    """Names of side ``a`` paired with names of side ``b`` that denote the same scheme.

    ``pairs`` gives each matched ``a`` name its one ``b`` name (the most general one when several
    share the key); ``unmatched_*`` are names whose key the other side lacks or that did not
    parse (``unparsed_*``). ``collisions_*`` lists keys several names of one side share."""

    naming_a: str
    naming_b: str
    pairs: tuple[tuple[str, str], ...]
    unmatched_a: tuple[str, ...]
    unmatched_b: tuple[str, ...]
    unparsed_a: tuple[str, ...] = ()
    unparsed_b: tuple[str, ...] = ()
    collisions_a: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False)
    collisions_b: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False)

    @property
    def mapping(self) -> dict[str, str]:
        return dict(self.pairs)

    def coverage(self) -> dict[str, float | int]:
        """How much of each side found a partner (fractions of names)."""
        na = len(self.pairs) + len(self.unmatched_a)
        matched_b = {b for _, b in self.pairs}
        reached_b = len(matched_b) + sum(len(v) - 1 for k, v in self.collisions_b.items()
                                          if any(b in matched_b for b in v))
        nb = reached_b + len(self.unmatched_b)
        return {"names_a": na, "names_b": nb, "matched_a": len(self.pairs), "matched_b": reached_b,
                "coverage_a": len(self.pairs) / na if na else 0.0,
                "coverage_b": reached_b / nb if nb else 0.0}

    def report(self, examples: int = 8) -> str:
        """A readable coverage report with examples of what did not match."""
        c = self.coverage()
        lines = [f"{self.naming_a} -> {self.naming_b}: {c['matched_a']}/{c['names_a']} names matched "
                 f"({100 * c['coverage_a']:.1f} %)",
                 f"{self.naming_b} -> {self.naming_a}: {c['matched_b']}/{c['names_b']} names matched "
                 f"({100 * c['coverage_b']:.1f} %)"]
        for side, un, unp in (("a", self.unmatched_a, self.unparsed_a), ("b", self.unmatched_b, self.unparsed_b)):
            naming = self.naming_a if side == "a" else self.naming_b
            if unp:
                lines.append(f"  {len(unp)} {naming} name(s) not understood, e.g. {', '.join(unp[:examples])}")
            rest = [n for n in un if n not in set(unp)]
            if rest:
                lines.append(f"  {len(rest)} {naming} name(s) without a partner, e.g. {', '.join(rest[:examples])}")
        return "\n".join(lines)


def keyed(names: Iterable[str], naming: str) -> tuple[dict[str, list[tuple[int, str]]], list[str]]:
    """Names grouped by key (each with its generality), and the names that did not parse."""
    groups: dict[str, list[tuple[int, str]]] = defaultdict(list)
    bad: list[str] = []
    for n in names:
        p = parse(n, naming)
        if p is None:
            bad.append(n)
        else:
            groups[p.key].append((p.generality, n))
    return groups, bad


def _best(group: list[tuple[int, str]]) -> str:
    return min(group, key=lambda g: (-g[0], len(g[1]), g[1]))[1]


def bridge(names_a: Iterable[str], names_b: Iterable[str], naming_a: str | None = None,
           naming_b: str | None = None) -> Bridge:
    """Pair the names of two scheme sets that denote the same scheme (see :class:`Bridge`)."""
    names_a, names_b = list(dict.fromkeys(names_a)), list(dict.fromkeys(names_b))
    naming_a = naming_a or detect_naming(names_a)
    naming_b = naming_b or detect_naming(names_b)
    ga, bad_a = keyed(names_a, naming_a)
    gb, bad_b = keyed(names_b, naming_b)
    pairs = []
    unmatched_a = list(bad_a)
    for n in names_a:
        p = parse(n, naming_a)
        if p is None:
            continue
        if p.key in gb:
            pairs.append((n, _best(gb[p.key])))
        else:
            unmatched_a.append(n)
    unmatched_b = list(bad_b) + [n for k, g in gb.items() if k not in ga for _, n in g]
    return Bridge(naming_a, naming_b, tuple(pairs), tuple(unmatched_a), tuple(unmatched_b),
                  tuple(bad_a), tuple(bad_b),
                  {k: tuple(n for _, n in g) for k, g in ga.items() if len(g) > 1},
                  {k: tuple(n for _, n in g) for k, g in gb.items() if len(g) > 1})


def translator(names_to: Iterable[str], naming_from: str, naming_to: str | None = None):
    """A function from names in ``naming_from`` to the matching name among ``names_to`` (or None)."""
    names_to = list(names_to)
    naming_to = naming_to or detect_naming(names_to)
    groups, _ = keyed(names_to, naming_to)
    best = {k: _best(g) for k, g in groups.items()}

    def translate(name: str) -> str | None:
        p = parse(name, naming_from)
        return best.get(p.key) if p else None

    return translate


def names_of(source: str) -> list[str]:
    """Scheme names from ``catalogue`` (every catalogue scheme), ``catalogue:offered`` (those
    offered on this host), or a mapping / experiment file in any format pmsolve reads."""
    if source in ("catalogue", "catalogue:offered", "catalogue:all"):
        cat = load_catalogue(host=source == "catalogue:offered")
        return [s.name for s in (cat.offered() if source == "catalogue:offered" else cat)]

    data = _read_json(source)
    if isinstance(data, dict):   # the raw names: a mapping reader drops schemes without ports
        if data.get("kind") == "ExperimentList" and isinstance(data.get("arch"), dict):
            return [str(n) for n in data["arch"].get("insns", [])]
        for key in ("assignment", "data"):
            if isinstance(data.get(key), dict):
                return [str(n) for n in data[key]]
    return list(mapping_from_json(data, source).instructions)
