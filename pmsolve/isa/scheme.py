"""Instruction schemes (dissertation sec. 3.2.1): an instruction with operand *kinds*, not operands.

A scheme such as ``add_r64_i8`` stands for every ``add`` of an 8-bit immediate to a 64-bit
register. It records everything operand allocation (Alg. 3.1) and the AnICA features need:
each explicit operand's kind, width and read/write access, hardwired (implicit) registers,
flags, memory usage, ISA extension and CPUID features, a category, lock/rep capability, and an
AT&T emission template. Values only: generating them needs iced-x86 (:mod:`pmsolve.isa.x86_gen`),
using them does not.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from pmsolve.errors import FormatError

OPERAND_KINDS = ("reg", "mem", "imm", "const")
#: register classes: general-purpose, vector (xmm/ymm/zmm alias: one register file) and the
#: AVX-512 mask registers k0-k7
REG_CLASSES = ("gpr", "xmm", "ymm", "zmm", "k")
VECTOR_CLASSES = ("xmm", "ymm", "zmm")
#: ``cls`` of a memory operand: a plain access, or an EVEX embedded broadcast (one element of
#: ``width`` bits read and broadcast to every lane, AT&T ``{1toN}``)
MEM_CLASSES = ("mem", "bcst")


@dataclass(frozen=True)
class Operand:
    """One operand of a scheme.

    ``kind`` is ``reg`` (``cls`` one of gpr/xmm/ymm/zmm/k), ``mem`` (``width`` 0 means an
    address only, as in ``lea``; ``cls`` ``bcst`` marks an EVEX embedded broadcast of one
    ``width``-bit element), ``imm`` (an immediate of ``width`` bits) or ``const`` (a value fixed
    by the encoding, e.g. the 1 of ``shl r64, 1``; ``value`` holds it). ``fixed`` names a
    hardwired register (``cl`` in ``shl r64, cl``; every implicit operand has one).

    An EVEX write mask (``{%k1}`` on the destination) is an ordinary read-only ``k`` operand,
    the scheme's last explicit one; its template puts it in braces after the destination.
    """

    kind: str
    cls: str
    width: int
    read: bool
    write: bool
    fixed: str | None = None
    value: int | None = None

    @property
    def access(self) -> str:
        return ("R" if self.read else "") + ("W" if self.write else "")

    def short(self) -> str:
        """The operand's part of a scheme name: ``r64``, ``m32``, ``xmm``, ``zmm``, ``k``,
        ``m64bcst`` (a broadcast element, the SDM's notation), ``i8``, ``cl``, ``1``."""
        if self.fixed:
            return self.fixed
        if self.kind == "reg":
            return f"r{self.width}" if self.cls == "gpr" else self.cls
        if self.kind == "mem":
            if self.cls == "bcst":
                return f"m{self.width}bcst"
            return f"m{self.width}" if self.width else "m"
        if self.kind == "imm":
            return f"i{self.width}"
        return str(self.value)

    def describe(self) -> str:
        """Dissertation notation, e.g. ``GPR[64]:RW``, ``ZMM:R``, ``K:R``, ``BCST[32]:R``."""
        if self.fixed:
            base = self.fixed
        elif self.kind == "reg":
            base = f"GPR[{self.width}]" if self.cls == "gpr" else self.cls.upper()
        elif self.kind == "mem":
            if self.cls == "bcst":
                base = f"BCST[{self.width}]"
            else:
                base = f"MEM[{self.width}]" if self.width else "AGEN"
        elif self.kind == "imm":
            base = f"IMM[{self.width}]"
        else:
            base = str(self.value)
        return f"{base}:{self.access or '-'}"


@dataclass(frozen=True)
class Scheme:
    """An x86-64 instruction scheme. ``excluded`` is the reason it is not offered, or None."""

    name: str
    mnemonic: str
    code: str
    template: str
    operands: tuple[Operand, ...]
    implicit: tuple[Operand, ...] = ()
    flags_read: tuple[str, ...] = ()
    flags_written: tuple[str, ...] = ()
    memory: str = "none"
    encoding: str = "legacy"
    extension: str = "BASE"
    features: tuple[str, ...] = ()
    category: str = "other"
    lock: bool = False
    rep: bool = False
    excluded: str | None = None
    alternatives: tuple[str, ...] = field(default=(), compare=False)

    def signature(self) -> str:
        """``add GPR[64]:RW, IMM[8]:R`` — the dissertation's notation."""
        return f"{self.mnemonic} " + ", ".join(o.describe() for o in self.operands)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["operands"] = [_op_json(o) for o in self.operands]
        d["implicit"] = [_op_json(o) for o in self.implicit]
        for k in ("flags_read", "flags_written", "features", "alternatives"):
            d[k] = list(d[k])
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Scheme":
        try:
            return cls(
                name=d["name"], mnemonic=d["mnemonic"], code=d["code"], template=d["template"],
                operands=tuple(Operand(**o) for o in d["operands"]),
                implicit=tuple(Operand(**o) for o in d.get("implicit", ())),
                flags_read=tuple(d.get("flags_read", ())), flags_written=tuple(d.get("flags_written", ())),
                memory=d.get("memory", "none"), encoding=d.get("encoding", "legacy"),
                extension=d.get("extension", "BASE"), features=tuple(d.get("features", ())),
                category=d.get("category", "other"), lock=bool(d.get("lock", False)), rep=bool(d.get("rep", False)),
                excluded=d.get("excluded"), alternatives=tuple(d.get("alternatives", ())))
        except (KeyError, TypeError) as exc:
            raise FormatError(f"ISA catalogue entry {d.get('name', '?')!r} is malformed: {exc}") from None


def _op_json(o: Operand) -> dict[str, Any]:
    d = asdict(o)
    return {k: v for k, v in d.items() if v is not None}
