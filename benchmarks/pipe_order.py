"""Does the order of independent vector µops decide how well a CPU fills its vector pipes?
A hand-written probe (issue 39; benchmarks/RESULTS.md §1.39).

    python benchmarks/pipe_order.py --mapping runs/aNN/mapping.json [PATTERN ...]

A port mapping's throughput assumes every µop waits for the best of its ports. On the Zen 5
(2026-12-07) mixes whose optimum needs three of the four vector pipes exactly, with no µop for
the fourth, ran up to 1/8 slower than that, and how much depended on program order: ``A B B``
(A a shift on [0,1], B a shuffle on [0,2]) 1.11 cycles where the optimum is 1.00, ``A A A A B×8``
1.125 per third, interleaved ``A B A B A B A B B B B B`` 1.04; one more µop that may use the
fourth pipe (an add on [2,3], a logic op on all four) and the loss is gone (1.00).

Each PATTERN is one copy of a block in program order, a letter per instruction (default: this
session's list); the letters are single-µop vector forms (A ``vpsrld xmm``, B ``valignd xmm``,
C ``vaddpd xmm``, D ``vpaddd xmm``, P ``vpabsd zmm``), written by hand with sources zmm16/zmm17
and destinations rotating over 14 registers, unrolled to about 120 instructions and timed by the
harness's worker (T(2n) − T(n)). The optimum is the port mapping's tp⁻¹ of the block's counts,
with the forms' µops taken from ``--mapping`` (a pmsolve mapping of this CPU: the port names
are the mapping's own). A form the mapping does not hold as one µop is reported and skipped.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pmsolve.harness.hardware import HardwareOracle, available  # noqa: E402
from pmsolve.model import Experiment  # noqa: E402
from pmsolve.modelled import load_model  # noqa: E402

FORMS = {"A": ("vpsrld_xmm_xmm_xmm", "vpsrld %xmm0, %xmm16, %xmm{d}"),
         "B": ("valignd_xmm_xmm_xmm_i8", "valignd $1, %xmm16, %xmm17, %xmm{d}"),
         "C": ("vaddpd_xmm_xmm_xmm", "vaddpd %xmm16, %xmm17, %xmm{d}"),
         "D": ("vpaddd_xmm_xmm_xmm", "vpaddd %xmm16, %xmm17, %xmm{d}"),
         "P": ("vpabsd_zmm_zmm", "vpabsd %zmm16, %zmm{d}")}
PATTERNS = ("A", "B", "C", "D", "P", "AB", "ABB", "AABBBB", "ABABBB", "AAAABBBBBBBB", "ABABABABBBBB",
            "CBB", "CBCBBB", "CCBBBB", "APP", "ABBC", "ABBD", "ABC")
COPIES = 120                      # instructions per block, about
DESTINATIONS = 14                 # zmm18-31


def block(pattern: str) -> list[str]:
    n = max(1, round(COPIES / len(pattern)))
    return [FORMS[ch][1].format(d=18 + c % DESTINATIONS) for c, ch in enumerate(pattern * n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mapping", required=True, help="a pmsolve mapping of this CPU (the forms' µops)")
    ap.add_argument("patterns", nargs="*", default=list(PATTERNS), help="blocks, a letter per instruction")
    args = ap.parse_args()
    if bad := [p for p in args.patterns if not p or set(p) - set(FORMS)]:
        print(f"pipe_order: patterns must be letters of {''.join(FORMS)}: {bad}", file=sys.stderr)
        return 2
    if (why := available()) is not None:
        print(f"no hardware measurement here: {why}")
        return 2
    model = load_model(args.mapping)
    one = {ch: name for ch, (name, _) in FORMS.items()
           if len(us := model.on_ports.get(name, ())) == 1 and us[0].count == 1}
    for ch, (name, _) in FORMS.items():
        if ch not in one:
            print(f"  {ch} ({name}): not one µop in the mapping, skipped")
    patterns = [p for p in args.patterns if set(p) <= set(one)]
    blocks = [block(p) for p in patterns]
    with HardwareOracle([]) as o:
        res = o.measure_blocks(blocks)
    print("cycles per copy of the pattern, against the port mapping's optimum:")
    for p, b, r in zip(patterns, blocks, res):
        copies = len(b) // len(p)
        e = Experiment({one[ch]: p.count(ch) for ch in sorted(set(p))})
        best = float(model.inverse_throughput(e))
        t = (r.cycles or float("nan")) / copies
        sets = " ".join(f"{ch}[{','.join(sorted(model.on_ports[one[ch]][0].ports))}]" for ch in sorted(set(p)))
        print(f"  {t:7.3f}  optimum {best:6.3f}  ratio {t / best:5.3f}  {p:14s} {sets} {r.error or ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
