"""Concrete basic blocks: what AnICA samples and what every predictor is asked about (sec. 8.1).

A block is a straight-line sequence of x86-64 instructions with concrete operands, in AT&T
syntax, as a loop body: predictors answer the cycles one iteration takes in the steady state
(inverse throughput). Each instruction keeps the name of the catalogue scheme it instantiates
(:mod:`pmsolve.isa`), so that mapping-based predictors can look it up without parsing assembly.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pmsolve.errors import FormatError


@dataclass(frozen=True)
class Insn:
    """One instruction instance: its catalogue scheme name and its AT&T text."""

    scheme: str
    asm: str


@dataclass(frozen=True)
class Block:
    """An ordered, non-empty sequence of instruction instances (order matters: dependencies)."""

    insns: tuple[Insn, ...]

    def __post_init__(self) -> None:
        if not self.insns:
            raise FormatError("a basic block needs at least one instruction")

    @classmethod
    def of(cls, insns: Sequence[Insn | tuple[str, str]]) -> "Block":
        return cls(tuple(i if isinstance(i, Insn) else Insn(*i) for i in insns))

    @classmethod
    def parse(cls, text: str) -> "Block":
        """A block from AT&T text, instructions separated by ';' or newlines (no scheme names:
        fine for llvm-mca, OSACA and the hardware; a mapping needs :meth:`of` with schemes)."""
        lines = [ln.strip() for ln in text.replace(";", "\n").splitlines() if ln.strip()]
        if not lines:
            raise FormatError(f"empty block {text!r}: give AT&T instructions separated by ';'")
        return cls.of([("", ln) for ln in lines])

    def __len__(self) -> int:
        return len(self.insns)

    @property
    def lines(self) -> list[str]:
        return [i.asm for i in self.insns]

    @property
    def asm(self) -> str:
        """The block as assembly text, one instruction per line."""
        return "\n".join(self.lines)

    @property
    def key(self) -> str:
        """A stable identity for caches: a hash of the assembly text (schemes follow from it)."""
        return hashlib.sha256(self.asm.encode()).hexdigest()[:32]

    def to_json(self) -> list[dict[str, str]]:
        return [{"scheme": i.scheme, "asm": i.asm} for i in self.insns]

    @classmethod
    def from_json(cls, data: Any, where: str = "block") -> "Block":
        if not isinstance(data, list) or not data:
            raise FormatError(f"{where}: expected a non-empty list of {{'scheme', 'asm'}} objects")
        out = []
        for k, item in enumerate(data):
            if not isinstance(item, Mapping) or not isinstance(item.get("asm"), str):
                raise FormatError(f"{where}[{k}]: expected an object with a string 'asm'")
            out.append(Insn(str(item.get("scheme", "")), item["asm"]))
        return cls(tuple(out))
