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

from pmsolve.harness.hardware import REFERENCES, HarnessSettings
from pmsolve.harness.references import reference_bursts, steadiness

SETTINGS = HarnessSettings(rounds=3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bursts", type=int, default=3)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--cpu", type=int, default=1, help="CPU to pin this process to (default 1)")
    args = ap.parse_args()
    if args.cpu in os.sched_getaffinity(0):
        os.sched_setaffinity(0, {args.cpu})
    print(f"{'burst':<6} {'reference kernel':<18} {'(scheme)':<22} {'5%':>7} {'25%':>7} {'50%':>7} {'75%':>7} "
          f"{'95%':>7}  steady")
    for burst, samples in zip(range(args.bursts), reference_bursts(SETTINGS, args.samples)):
        for name, v in samples.items():
            v.sort()
            q = [v[min(len(v) - 1, int(len(v) * f))] for f in (0.05, 0.25, 0.5, 0.75, 0.95)]
            print(f"{burst:<6} {name.removeprefix('pmsolve_ref_'):<18} {REFERENCES[name]:<22} "
                  + " ".join(f"{x:7.3f}" for x in q) + f"  {steadiness(v, SETTINGS.noise_tolerance):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
