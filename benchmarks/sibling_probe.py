"""Which kernels does a busy SMT sibling slow down? Each probe kernel is measured between two
samples of the ALU reference (``add r64, i8``) with no gate, for SECONDS; the probes are then
grouped by whether that reference ran at its quiet speed (under 0.26 cycles) or slower.

    python benchmarks/sibling_probe.py [--seconds 25] [--cpu N]

Run it while something else runs on the sibling vCPU (another job's worker, a neighbour from
outside the VM). On the Zen 3 (2026-11-27) a sibling that slowed the ALU reference slowed
vector mixes by up to 17 % while ``vfmadd231pd ymm`` (like the FP reference kernel, two a
cycle) stayed at 0.500: a gate on the FP reference alone would let disturbed vector experiments
through (benchmarks/RESULTS.md §1.6).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pmsolve.harness.hardware import HardwareOracle, HarnessSettings, available  # noqa: E402
from pmsolve.model import Experiment  # noqa: E402

PROBES = [Experiment({"vpaddd_ymm_ymm_ymm": 1}), Experiment({"vfmadd231pd_ymm_ymm_ymm": 1}),
          Experiment({"vpaddd_xmm_xmm_xmm": 2, "vpshufd_xmm_xmm_i8": 1}),
          Experiment({"vpaddd_ymm_ymm_ymm": 2, "vmulpd_ymm_ymm_ymm": 1, "vpshufb_ymm_ymm_ymm": 1}),
          Experiment({"mov_r64_m64": 1}), Experiment({"add_r64_r64": 1})]
ALU = Experiment({"add_r64_i8": 1})
QUIET = 0.26


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=25.0)
    ap.add_argument("--cpu", type=int, default=None, help="the CPU to measure on (default: the harness's)")
    args = ap.parse_args()
    if (why := available()) is not None:
        print(f"no hardware measurement here: {why}")
        return 2
    names = sorted({i for e in PROBES + [ALU] for i in e})
    hw = HardwareOracle(names, HarnessSettings(gate_seconds=0, max_retries=0, deferred_passes=0, rounds=3),
                        on_error="nan", cpu=args.cpu)
    groups: dict[str, dict[bool, list[float]]] = {str(p): {True: [], False: []} for p in PROBES}
    t0 = time.time()
    try:
        while time.time() - t0 < args.seconds:
            seq = [x for p in PROBES for x in (ALU, p)] + [ALU]
            vals = hw.measure(seq)
            for k, p in enumerate(PROBES):
                groups[str(p)][max(vals[2 * k], vals[2 * k + 2]) < QUIET].append(vals[2 * k + 1])
    finally:
        hw.close()

    def med(xs: list[float]) -> str:
        return f"{statistics.median(xs):.4f} (n={len(xs)})" if xs else "-"
    print(f"{'probe':66s} {'ALU reference quiet':>22s} {'ALU reference slow':>22s}")
    for p, g in groups.items():
        print(f"{p:66s} {med(g[True]):>22s} {med(g[False]):>22s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
