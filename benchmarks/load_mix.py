"""Do general-purpose and vector memory operations slow each other down? A probe independent of
the harness (issue 39), with addresses chosen by hand.

    python benchmarks/load_mix.py [--rounds 5] [--cpu 1]

On the Zen 5 (2026-12-07) the harness measured ``{mov r64, m64: 1, vmovups zmm, m512: 1}`` at 0.95
cycles where the load ports allow 0.5 (each alone: 0.25 and 0.5), two GPR loads beside an xmm
load at 0.93, and ``{mov m64, r64: 1, vmovups m512, zmm: 1}`` at 2.0 where the stores alone take
0.5 and 1.0 (benchmarks/RESULTS.md §1.35). The harness puts the read-only operands of a block in
slots as wide as its widest read, a GPR load at a different offset of the zmm load's lines
(``harness/allocation.py``, ``staggered``). Here each mix runs with its GPR accesses in the vector
accesses' lines, in other lines of the same pages, 32 KiB away, and with each kind at one address
(the Zen 4's loads ran at their published speeds only there, docs/memory-layout.md): if the
slowdown follows the layout, it is the harness's; if it stays, the CPU's.

Same method as ``store_layout.py`` (its C driver: TSC-timed T(2n) − T(n), converted to core cycles
by a chain of dependent adds); 64 instructions per iteration (63 for triples), cycles printed per copy of the mix.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from store_layout import N, run_probe  # noqa: E402  (the timing driver; it shares no code with the harness)

GPR = ["rax", "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11"]
#: where the vector access of copy i and its j-th GPR access go: the vector accesses on 32 lines
#: (or one address), the GPR ones in the same lines, in others, far away (or at one address)
LAYOUTS = {"in the vector access's line": (lambda i: 64 * (i % 32), lambda i, j: 64 * (i % 32) + 8 * (1 + (i + 3 * j) % 7)),
           "in another line of the page": (lambda i: 64 * (i % 32), lambda i, j: 2048 + 64 * (i % 32) + 8 * ((i + 3 * j) % 8)),
           "32 KiB away": (lambda i: 64 * (i % 32), lambda i, j: 32768 + 16 * i + 8 * j),
           "at one address, each kind at its own": (lambda i: 0, lambda i, j: 32768),
           "at one address, each kind at its own, GPR at offset 32": (lambda i: 0, lambda i, j: 32768 + 32)}


def mixes() -> dict[str, tuple[list[str], int]]:
    """name -> (lines of one iteration, instructions per reported unit)."""
    vec = {"vmovups zmm, [m512]": "vmovups {d}(%r14), %zmm{v}", "vmovups xmm, [m128]": "vmovups {d}(%r14), %xmm{v}",
           "vmovups [m512], zmm": "vmovups %zmm{v}, {d}(%r14)"}
    gpr = {"mov r64, [m64]": "movq {d}(%r14), %{r}", "mov [m64], r64": "movq %{r}, {d}(%r14)",
           "add [m64], r64": "addq %{r}, {d}(%r14)"}
    out: dict[str, tuple[list[str], int]] = {
        "mov r64, [m64] alone, 8 bytes apart": ([gpr["mov r64, [m64]"].format(d=8 * i, r=GPR[i % 8]) for i in range(N)], 1),
        "vmovups zmm, [m512] alone, 64 bytes apart":
            ([vec["vmovups zmm, [m512]"].format(d=64 * (i % 32), v=i % 8) for i in range(N)], 1),
        "mov [m64], r64 alone, 8 bytes apart": ([gpr["mov [m64], r64"].format(d=8 * i, r=GPR[i % 8]) for i in range(N)], 1),
        "vmovups [m512], zmm alone, 64 bytes apart":
            ([vec["vmovups [m512], zmm"].format(d=64 * (i % 32), v=i % 8) for i in range(N)], 1),
    }
    pairs = [("mov r64, [m64]", "vmovups zmm, [m512]", 1), ("mov r64, [m64]", "vmovups xmm, [m128]", 1),
             ("mov r64, [m64]", "vmovups xmm, [m128]", 2), ("add [m64], r64", "vmovups zmm, [m512]", 1),
             ("mov [m64], r64", "vmovups [m512], zmm", 1)]
    for g, v, k in pairs:
        for where, (vat, at) in LAYOUTS.items():
            lines: list[str] = []
            for i in range(N // (k + 1)):
                lines.append(vec[v].format(d=vat(i), v=i % 8))
                lines += [gpr[g].format(d=at(i, j), r=GPR[(i + j) % 8]) for j in range(k)]
            name = f"{{{g}: {k}, {v}: 1}}, GPR {where}"
            out[name] = (lines, k + 1)
    return out


def main() -> int:
    return run_probe(__doc__, mixes(), "per copy of the mix")


if __name__ == "__main__":
    sys.exit(main())
