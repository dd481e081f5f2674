"""Where the harness's loads point decides mixes of loads and stores (allocation versions 11 and 12).

    python benchmarks/read_slot.py [--slots 0,512,1536] [--passes 2] [MIX ...]

A MIX is ``scheme:count,scheme:count``. Measures each mix through the hardware oracle with the
block's read-only slots starting at each offset from r14 (the others next to it, as
``allocation.READ_REGION`` lays them out; the written copies start at 2048 as always), every
offset in its own oracle, ``--passes`` times. A Zen 4 held loads at 32 back behind the store at
2080 (docs/memory-layout.md, "Loads beside stores"). Nothing is stored.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pmsolve.harness.allocation as allocation  # noqa: E402
from pmsolve.harness.hardware import HardwareOracle, available  # noqa: E402
from pmsolve.model import Experiment  # noqa: E402

DEFAULT = ["add_m64_r64:1,add_r64_i32:4,clc:1,mov_r64_m64:1", "add_m64_r64:1,clc:1,mov_r64_m64:1",
           "mov_m64_r64:2,mov_r64_m64:1,add_r64_i32:2", "mov_m64_r64:1,mov_r64_m64:1",
           "add_m64_r64:1,add_r64_m64:1", "mov_r64_m64:1", "vmovdqa_xmm_m128:1"]


def parse(mix: str) -> Experiment:
    return Experiment({name: int(count) for name, count in (part.split(":") for part in mix.split(","))})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mixes", nargs="*", default=DEFAULT)
    ap.add_argument("--slots", default="0,512,1536", help="offsets of the first read slot, comma-separated")
    ap.add_argument("--passes", type=int, default=2)
    args = ap.parse_args()
    reason = available()
    if reason:
        print(f"skipped: {reason}")
        return 0
    exps = [parse(m) for m in args.mixes]
    names = sorted({n for e in exps for n in e})
    print(f"{'slot':>5}  cycles per copy, one column per pass: mix")
    for first in (int(x) for x in args.slots.split(",")):
        allocation.READ_REGION = (first, first + 512)
        got: list[list[float]] = [[] for _ in exps]
        with HardwareOracle(names, on_error="nan") as hw:
            for _ in range(args.passes):
                for i, t in enumerate(hw.measure(exps)):
                    got[i].append(t)
        for mix, ts in zip(args.mixes, got):
            print(f"{first:>5}  " + " ".join(f"{t:6.3f}" for t in ts) + f"  {mix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
