"""Turning schemes with concrete operands into AT&T assembly text (GNU as, llvm-mca, OSACA)."""

from __future__ import annotations

from typing import Sequence

from pmsolve.isa.scheme import Operand, Scheme

#: the 16 general-purpose registers and their names by width (no ah-dh: never allocated)
GPRS: dict[str, dict[int, str]] = {}
for _r in ("ax", "bx", "cx", "dx"):
    GPRS["r" + _r] = {64: "r" + _r, 32: "e" + _r, 16: _r, 8: _r[0] + "l"}
for _r in ("si", "di", "bp", "sp"):
    GPRS["r" + _r] = {64: "r" + _r, 32: "e" + _r, 16: _r, 8: _r + "l"}
for _n in range(8, 16):
    GPRS[f"r{_n}"] = {64: f"r{_n}", 32: f"r{_n}d", 16: f"r{_n}w", 8: f"r{_n}b"}

#: register name (any width) -> its 64-bit representative (aliasing, Alg. 3.1 footnote 7)
GPR_ALIAS: dict[str, str] = {name: full for full, ws in GPRS.items() for name in ws.values()}
GPR_ALIAS.update({"ah": "rax", "bh": "rbx", "ch": "rcx", "dh": "rdx"})


#: the AVX-512 mask registers; ``k0`` means "no mask" as a write mask, so it is never allocated
MASK_REGS = tuple(f"k{i}" for i in range(8))


def representative(reg: str) -> str:
    """The register a name aliases with: ``ecx`` -> ``rcx``, ``xmm3``/``ymm3``/``zmm3`` ->
    ``vec3``; a mask register is its own representative (``k2``)."""
    reg = reg.lower()
    if reg.startswith(("xmm", "ymm", "zmm")):
        return "vec" + reg[3:]
    return GPR_ALIAS.get(reg, reg)


def reg_name(rep: str, op: Operand) -> str:
    """The name of representative ``rep`` at the operand's class/width."""
    if op.cls == "gpr":
        return GPRS[rep][op.width]
    if op.cls == "k":
        return rep
    return op.cls + rep[3:]


def operand_text(op: Operand, value: str | int) -> str:
    """AT&T text of one concrete operand: a register name, a displacement from the base, an immediate."""
    if op.kind == "reg":
        return "%" + str(value)
    if op.kind == "mem":
        return str(value)
    return f"${value}"


def render(scheme: Scheme, values: Sequence[str | int]) -> str:
    """One instruction instance: the scheme's template filled with concrete operand texts."""
    return scheme.template.format(*(operand_text(o, v) for o, v in zip(scheme.operands, values)))


def render_representative(scheme: Scheme) -> str:
    """A representative instance (as the generator validates it with GNU as)."""
    gpr = iter(["rbx", "rsi", "rdi", "r8"])
    vec = iter(range(1, 9))
    mask = iter(MASK_REGS[1:])
    values: list[str | int] = []
    for o in scheme.operands:
        if o.fixed:
            values.append(o.fixed)
        elif o.kind == "reg" and o.cls == "k":
            values.append(next(mask))
        elif o.kind == "reg":
            values.append(reg_name(next(gpr), o) if o.cls == "gpr" else f"{o.cls}{next(vec)}")
        elif o.kind == "mem":
            values.append("0x40(%r14)")
        elif o.kind == "imm":
            values.append(2 ** (o.width - 8) + 42)
        else:
            values.append(o.value if o.value is not None else 1)
    return render(scheme, values)
