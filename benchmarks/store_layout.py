"""Where stores go decides how fast they retire: a probe independent of the harness (issue 39).

    python benchmarks/store_layout.py [--rounds 5] [--cpu 1]

Generates GNU-as kernels of 64 instructions per loop iteration, compiles them with a small C
driver (gcc), pins it to one CPU and times T(2n) − T(n) with the TSC, converted to core cycles by
a chain of dependent adds timed the same way (one cycle each). Each kernel is timed in ``--rounds``
rounds spread over the run; the median per kernel is printed in cycles per instruction (per pair
for the mixed kernels). It shares no code with the harness: a second opinion on its layouts.

The kernels put read-modify-write adds and plain stores at addresses 8, 16, 32 or 64 bytes apart,
alternate between two lines, and mix read-modify-writes with stores to the same or another block;
non-temporal 32-byte stores go over 1 to 32 cache lines (the write-combining buffers decide).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

N = 64
REGS = ["rax", "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11"]


def _seq(addrs: list[int], op: str) -> list[str]:
    return [op.format(r=REGS[i % 8], d=addrs[i % len(addrs)]) for i in range(N)]


def kernels() -> dict[str, tuple[list[str], int]]:
    """name -> (lines of one iteration, instructions per reported unit)."""
    rmw, store = "addq %{r}, {d}(%r14)", "movq %{r}, {d}(%r14)"
    two_lines = [64 * (i % 2) + 8 * (i // 2) + (i // 16) * 128 for i in range(64)]
    out = {
        "add [m64], r64, 8 bytes apart": (_seq([8 * i for i in range(64)], rmw), 1),
        "add [m64], r64, 16 bytes apart": (_seq([16 * i for i in range(64)], rmw), 1),
        "add [m64], r64, 32 bytes apart": (_seq([32 * i for i in range(64)], rmw), 1),
        "add [m64], r64, 64 bytes apart": (_seq([64 * i for i in range(32)], rmw), 1),
        "add [m64], r64, two lines in turn": (_seq(two_lines, rmw), 1),
        "add [m64], imm8, 8 bytes apart": (_seq([8 * i for i in range(64)], "addq $42, {d}(%r14)"), 1),
        "mov [m64], r64, one address": (_seq([1024], store), 1),
        "mov [m64], r64, 8 bytes apart": (_seq([8 * i for i in range(64)], store), 1),
        "mov [m64], r64, 32 bytes apart": (_seq([32 * i for i in range(64)], store), 1),
        "mov [m64], r64, 64 bytes apart": (_seq([64 * i for i in range(32)], store), 1),
        "mov [m64], r64, two lines in turn": (_seq(two_lines, store), 1),
    }
    nt, vst = "vmovntdq %ymm{r}, {d}(%r14)", "vmovdqa %ymm{r}, {d}(%r14)"
    ymm = lambda addrs, op: [op.format(r=i % 8, d=addrs[i % len(addrs)]) for i in range(N)]   # noqa: E731
    for span in (32, 256, 512, 2048):   # non-temporal stores over 1, 4, 8 and 32 lines (uops.info: ≤ 16 × 32 B)
        out[f"vmovntdq [m256], ymm, 32 bytes apart over {span} B"] = (ymm([32 * i for i in range(span // 32)], nt), 1)
    out["vmovdqa [m256], ymm, 32 bytes apart over 2048 B"] = (ymm([32 * i for i in range(64)], vst), 1)
    same, apart = [], []
    for i in range(N // 2):
        same += [f"addq %{REGS[i % 8]}, {16 * i}(%r14)", f"movq %{REGS[(i + 3) % 8]}, {16 * i + 8}(%r14)"]
        apart += [f"addq %{REGS[i % 8]}, {8 * i}(%r14)", f"movq %{REGS[(i + 3) % 8]}, 2048(%r14)"]
    out["{add [m64], r64; mov [m64], r64}, neighbours"] = (same, 2)
    out["{add [m64], r64; mov [m64], r64}, store to one far address"] = (apart, 2)
    return out


def _asm(name: str, lines: list[str]) -> str:
    body = "\n".join("    " + x for x in lines)
    # vzeroupper: kernels with zmm registers leave no dirty upper state to the C driver
    return (f".globl {name}\n{name}:\n    push %rbx\n    push %r14\n    mov %rsi, %r14\n1:\n{body}\n"
            f"    dec %rdi\n    jnz 1b\n    vzeroupper\n    pop %r14\n    pop %rbx\n    ret\n")


DRIVER = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <x86intrin.h>
typedef void (*k_t)(long, char *);
%(decls)s
static char buf[65536] __attribute__((aligned(4096)));
static double ticks(k_t f, long n) { unsigned long long a = __rdtsc(); f(n, buf); return (double)(__rdtsc() - a); }
static double best(k_t f, long n) {   /* min T(2n) - min T(n) over interleaved runs */
    double a = 1e30, b = 1e30;
    for (int i = 0; i < 25; i++) { double x = ticks(f, n); if (x < a) a = x; x = ticks(f, 2 * n); if (x < b) b = x; }
    return b - a;
}
int main(int argc, char **argv) {
    cpu_set_t s; CPU_ZERO(&s); CPU_SET(atoi(argv[1]), &s); sched_setaffinity(0, sizeof s, &s);
    memset(buf, 0, sizeof buf);
    k_t ks[] = {%(names)s};
    for (unsigned i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        double cal = best(k_cal, 2000), x = best(ks[i], 2000);   /* k_cal: 64 dependent adds = 64 cycles */
        printf("%%.4f\n", x / cal);
    }
    return 0;
}
"""


def timed_kernels(bodies: list[list[str]], rounds: int, cpu: int) -> list[float]:
    """Per kernel (lines of one loop iteration), the median over ``rounds`` runs of its cycles per
    N instructions, pinned to ``cpu``. Raises RuntimeError when gcc fails."""
    names = [f"k{j}" for j in range(len(bodies))]
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        asm = [_asm("k_cal", ["add $1, %rax"] * N)] + [_asm(n, lines) for n, lines in zip(names, bodies)]
        (d / "k.S").write_text(".text\n" + "\n".join(asm))
        (d / "main.c").write_text(DRIVER % {"decls": "".join(f"extern void {n}(long, char *);\n" for n in ["k_cal"] + names),
                                            "names": ", ".join(names)})
        built = subprocess.run(["gcc", "-O2", "-o", str(d / "probe"), str(d / "main.c"), str(d / "k.S")],
                               capture_output=True, text=True)
        if built.returncode:
            raise RuntimeError(f"gcc failed: {(built.stderr.strip().splitlines() or [str(built.returncode)])[-1]}")
        runs = [[float(x) for x in subprocess.run([str(d / "probe"), str(cpu)], check=True, capture_output=True,
                                                  text=True).stdout.split()] for _ in range(rounds)]
    return [statistics.median(r[j] for r in runs) for j in range(len(bodies))]


def run_probe(description: str, probes: dict[str, tuple[list[str], int]], unit: str) -> int:
    """The command line of a probe: ``--rounds``, ``--cpu``; prints each of ``probes`` (name ->
    lines of one iteration, instructions per reported unit) in cycles per unit. Exit 2 without gcc
    or when it fails."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=1, help="CPU to pin the probe to (default 1)")
    args = ap.parse_args()
    if not shutil.which("gcc"):
        print("needs gcc", file=sys.stderr)
        return 2
    try:
        got = timed_kernels([lines for lines, _ in probes.values()], args.rounds, args.cpu)
    except RuntimeError as err:
        print(err, file=sys.stderr)
        return 2
    width = max(map(len, probes)) + 2
    print(f"{'kernel':<{width}} {'cycles':>7}  (median of {args.rounds} rounds; {unit})")
    for (name, (lines, per)), v in zip(probes.items(), got):    # timed per N instructions
        print(f"{name:<{width}} {per * N / len(lines) * v:7.3f}")
    return 0


def main() -> int:
    return run_probe(__doc__, kernels(), "per instruction, per pair for mixes")


if __name__ == "__main__":
    sys.exit(main())
