"""How far apart the harness's written copies repeat decides read-modify-write figures (issue 39).

    python benchmarks/written_span.py [--spans 512,2048] [--passes 3] [SCHEME ...]

Measures each scheme alone through the hardware oracle with the written copies repeating over
each span (``allocation.WRITTEN_SPAN``), every span in its own oracle, ``--passes`` times, and
prints the chosen value and each unroll variant's median per pass. Nothing is stored.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pmsolve.harness.allocation as allocation  # noqa: E402
from pmsolve.harness.hardware import HardwareOracle, available  # noqa: E402
from pmsolve.model import Experiment  # noqa: E402

DEFAULT = ["add_m64_r64", "add_m64_i8", "inc_m64", "neg_m16", "and_m32_r32", "add_m8_r8", "sar_m64_cl",
           "mov_m64_r64", "vmovdqa_m256_ymm"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("schemes", nargs="*", default=DEFAULT)
    ap.add_argument("--spans", default="512,2048", help="bytes, comma-separated")
    ap.add_argument("--passes", type=int, default=3)
    args = ap.parse_args()
    if available():
        print(f"skipped: {available()}")
        return 0
    print(f"{'span':>5}  {'scheme':<20} per pass: chosen value [variant medians]")
    for span in (int(x) for x in args.spans.split(",")):
        allocation.WRITTEN_SPAN = span
        rows: dict[str, list[str]] = {s: [] for s in args.schemes}
        with HardwareOracle() as hw:
            for _ in range(args.passes):
                for i, r in hw.measure_iter([Experiment({s: 1}) for s in args.schemes]):
                    medians = " ".join(f"{statistics.median(v):.3f}" for v in r.samples.values())
                    rows[args.schemes[i]].append(f"{r.cycles:.3f} [{medians}]" if r.ok else f"error: {r.error}")
        for s, got in rows.items():
            print(f"{span:>5}  {s:<20} " + "  ".join(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
