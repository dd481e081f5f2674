"""Is this machine quiet enough to measure? The harness's four reference kernels, sampled as its
gate samples them, with their quantiles (cycles per instruction).

    python benchmarks/reference_kernels.py [--bursts 3] [--samples 300] [--cpu 1]

Each burst times every reference kernel ``--samples`` times, each converted to core cycles by
the calibration kernel timed just before it, and prints the 5/25/50/75/95 % quantiles per
kernel and the share of samples within a quarter of the noise tolerance of their median (the
steadiness ``tests/test_hardware.py`` judges). Undisturbed, each kernel sits at one speed (a
narrow 5-95 % range); a neighbour on the same physical core (the other SMT thread, inside the VM
or outside it) slows the kernels that share its pipes and widens their range, while the others
stay put. Run it pinned to the CPU the harness worker uses, with nothing else running.
"""

from __future__ import annotations

import argparse
import os
import sys

from pmsolve.harness.assemble import assemble
from pmsolve.harness.hardware import CALIBRATION, REFERENCE_COUNT, REFERENCES, HardwareOracle, HarnessSettings
from pmsolve.harness.worker import Executor

SETTINGS = HarnessSettings(rounds=3, target_ticks=20_000)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bursts", type=int, default=3)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--cpu", type=int, default=1, help="CPU to pin this process to (default 1)")
    args = ap.parse_args()
    if args.cpu in os.sched_getaffinity(0):
        os.sched_setaffinity(0, {args.cpu})
    support = HardwareOracle(["add_r64_r64"], SETTINGS)._support
    ex = Executor()
    ex.load(*assemble(support))
    n = {name: ex.iterations(name, SETTINGS.target_ticks) for name in support}
    band = SETTINGS.noise_tolerance / 4
    print(f"{'burst':<6} {'reference kernel':<18} {'(scheme)':<22} {'5%':>7} {'25%':>7} {'50%':>7} {'75%':>7} "
          f"{'95%':>7}  steady")
    for burst in range(args.bursts):
        samples = {name: [] for name in REFERENCES}
        for _ in range(args.samples):
            ratio = ex.calibrate(CALIBRATION, n[CALIBRATION])
            for name in REFERENCES:
                samples[name].append(ex.diff(name, n[name]) / ratio / REFERENCE_COUNT)
        for name, v in samples.items():
            v.sort()
            q = [v[min(len(v) - 1, int(len(v) * f))] for f in (0.05, 0.25, 0.5, 0.75, 0.95)]
            steady = sum(abs(x - q[2]) <= band * q[2] for x in v) / len(v)
            print(f"{burst:<6} {name.removeprefix('pmsolve_ref_'):<18} {REFERENCES[name]:<22} "
                  + " ".join(f"{x:7.3f}" for x in q) + f"  {steady:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
