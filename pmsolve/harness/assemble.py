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
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from pmsolve.errors import MeasurementError
from pmsolve.harness.allocation import OPERAND_MEMORY
from pmsolve.isa.catalogue import data_dir

TOOLS = ("as", "objcopy", "nm")   # GNU binutils the assembler needs


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


def assemble(kernels: dict[str, str]) -> tuple[bytes, dict[str, int]]:
    """Assemble kernels (label -> body text) in one GNU as call; return the flat code and
    each label's offset. Raises MeasurementError with the assembler's message on failure."""
    tmpl = frame()
    src = ["    .text"]
    for name, text in kernels.items():
        src.append(tmpl.replace("{name}", name).replace("{hi16}", _hi16(text)).replace("{body}", text))
    with tempfile.TemporaryDirectory(prefix="pmsolve-as-") as tmp:
        s, o, b = Path(tmp) / "k.s", Path(tmp) / "k.o", Path(tmp) / "k.bin"
        s.write_text("\n".join(src) + "\n")
        p = _run(["as", "--64", "-o", str(o), str(s)])
        if p.returncode:
            raise MeasurementError("GNU as rejected the kernel: " + " | ".join(p.stderr.strip().splitlines()[:3]))
        p = _run(["objcopy", "-O", "binary", "--only-section=.text", str(o), str(b)])
        if p.returncode:
            raise MeasurementError(f"objcopy failed: {p.stderr.strip()}")
        p = _run(["nm", "--defined-only", str(o)])
        symbols = {}
        for line in p.stdout.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tT" and parts[2] in kernels:
                symbols[parts[2]] = int(parts[0], 16)
        code = b.read_bytes()
    missing = set(kernels) - set(symbols)
    if missing:
        raise MeasurementError(f"assembler output lacks kernels {sorted(missing)[:3]}")
    return code, symbols


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
