"""Kernels to machine code: the measurement frame, one GNU ``as`` call per batch, and the rules
a concrete block must follow to run inside the frame.

The frame (``harness/frame_x86_64.s``, shipped as data) saves callee-saved registers, sets up the
operand memory at ``%r14``, runs the loop body ``%r15`` times and returns the TSC ticks. Batching
many kernels per assembler call costs ~0.6 ms per experiment instead of ~70 ms per separately
compiled program (DESIGN.md §4).
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from pmsolve.errors import MeasurementError
from pmsolve.harness.allocation import OPERAND_MEMORY
from pmsolve.isa.catalogue import data_dir

TOOLS = ("as",)   # GNU binutils the assembler needs (the object file is read here: elf_text)


def harness_dir() -> Path:
    env = os.environ.get("PMSOLVE_HARNESS_DIR")
    return Path(env) if env else data_dir("harness")


def frame() -> str:
    path = harness_dir() / "frame_x86_64.s"
    try:
        text = path.read_text()
    except OSError:
        raise MeasurementError(f"measurement frame {path} is missing") from None
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    # in its own session: a terminal's Ctrl-C must not look like a kernel the assembler rejects
    return subprocess.run(cmd, capture_output=True, text=True, start_new_session=True, **kw)


def _hi16(body: str) -> str:
    """The frame's loads of zmm16-31: 512 bits wide only when the body names a zmm register.
    One 512-bit instruction puts an Intel core into its AVX-512 mode for a while, and in that
    mode code without any AVX-512 runs slower: on an Ice Lake-SP VM 16 ``add [m64], r64`` to
    packed slots took 0.77 cycles each after two zmm loads and 0.53-0.58 after ymm loads or none
    (uops.info's Ice Lake: 0.53). A 256-bit EVEX load still gives VL forms their initial values."""
    width = "zmm" if "%zmm" in body else "ymm"
    return "\n    ".join(f"vmovups {4608 + 64 * i}(%r14), %{width}{16 + i}" for i in range(16))


def source(kernels: dict[str, str]) -> str:
    """The assembler source of a batch: each kernel (label -> body text) in the frame."""
    tmpl = frame()
    src = ["    .text"]
    for name, text in kernels.items():
        src.append(tmpl.replace("{name}", name).replace("{hi16}", _hi16(text)).replace("{body}", text))
    return "\n".join(src) + "\n"


def assemble(kernels: dict[str, str]) -> tuple[bytes, dict[str, int]]:
    """Assemble kernels (label -> body text) in one GNU as call; return the flat code and
    each label's offset. Raises MeasurementError with the assembler's message on failure."""
    with tempfile.TemporaryDirectory(prefix="pmsolve-as-") as tmp:
        s, o = Path(tmp) / "k.s", Path(tmp) / "k.o"
        s.write_text(source(kernels))
        p = _run(["as", "--64", "-o", str(o), str(s)])
        if p.returncode:
            raise MeasurementError("GNU as rejected the kernel: " + " | ".join(p.stderr.strip().splitlines()[:3]))
        code, found = elf_text(o.read_bytes())
    symbols = {name: off for name, off in found.items() if name in kernels}
    missing = set(kernels) - set(symbols)
    if missing:
        raise MeasurementError(f"assembler output lacks kernels {sorted(missing)[:3]}")
    return code, symbols


def elf_text(obj: bytes) -> tuple[bytes, dict[str, int]]:
    """The ``.text`` section of an ELF64 little-endian object file and the offsets of the symbols
    defined in it: what ``objcopy -O binary --only-section=.text`` and ``nm --defined-only`` give,
    without their two processes per batch (``nm`` alone took 1.2 ms per experiment of a 48-experiment
    batch, twice the assembler's 0.5 ms: benchmarks/RESULTS.md §1.32)."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        raise MeasurementError("assembler output is no 64-bit little-endian ELF object")
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", obj, 0x3A)
    # name, type, flags, addr, offset, size, link, info, addralign, entsize
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + k * shentsize) for k in range(shnum)]

    def data(k: int) -> bytes:
        off, size = sections[k][4], sections[k][5]
        return obj[off:off + size]

    def name(table: bytes, at: int) -> str:
        return table[at:table.index(b"\0", at)].decode()
    names = data(shstrndx)
    text = next((k for k, sec in enumerate(sections) if name(names, sec[0]) == ".text"), None)
    symtab = next((k for k, sec in enumerate(sections) if sec[1] == 2), None)   # SHT_SYMTAB
    if text is None or symtab is None:
        raise MeasurementError("assembler output lacks .text or its symbol table")
    strings, table = data(sections[symtab][6]), data(symtab)
    symbols = {}
    for at in range(0, len(table), 24):
        st_name, _, _, st_shndx, st_value, _ = struct.unpack_from("<IBBHQQ", table, at)
        if st_shndx == text and st_name:
            symbols[name(strings, st_name)] = st_value
    return data(text), symbols


_RESERVED_REGS = {name for rep in ("r13", "r14", "r15", "rsp") for name in
                  ((rep, rep + "d", rep + "w", rep + "b") if rep != "rsp" else ("rsp", "esp", "sp", "spl"))}
_MEM_OPERAND = re.compile(r"(-?(?:0x[0-9a-fA-F]+|\d+))?\(([^)]*)\)")
_CONTROL = re.compile(r"^\s*(j[a-z]+|call[a-z]*|ret[a-z]*|loop[a-z]*|syscall|sysenter|int[0-9a-z]*|hlt|ud[0-2]?|"
                      r"enter|leave|push[a-z]*|pop[a-z]*|iret[a-z]*)\b", re.I)


def check_block(lines: Sequence[str]) -> str | None:
    """Why a concrete block cannot run in the measurement frame, or None when it can: memory
    operands must be ``disp(%r14)`` within the frame's 4 KiB of operand memory, the reserved
    registers (loop counter r15, memory base r14, divisor r13, rsp) must not appear otherwise,
    and nothing may change control flow or the stack. Labels and directives are refused too."""
    limit = OPERAND_MEMORY
    if not lines:
        return "empty block"
    for line in lines:
        text = line.split("#", 1)[0].strip()
        if not text or text.endswith(":") or text.startswith("."):
            return f"{line!r} is not an instruction"
        if _CONTROL.match(text):
            return f"{text!r} changes control flow or the stack"
        rest = text
        for m in _MEM_OPERAND.finditer(text):
            inside = [p.strip() for p in m.group(2).split(",")]
            disp = int(m.group(1) or "0", 0)
            if inside != ["%r14"] or not 0 <= disp < limit:
                return (f"{text!r}: memory operands must be disp(%r14) with 0 <= disp < {limit} "
                        "(the measurement frame's memory)")
            rest = rest.replace(m.group(0), " ")
        for reg in re.findall(r"%([a-z0-9]+)", rest.lower()):
            if reg in _RESERVED_REGS:
                return f"{text!r} uses %{reg}, which the measurement frame reserves"
    return None
