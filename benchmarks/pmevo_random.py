"""PMEvo's defaults on a hidden random three-level truth: 8 ports, 30 schemes (issue 17 item 6).

The truth (``pmsolve.generate.random_mapping``, seed 8): 1-3 µops per scheme drawn from a
vocabulary of 12 random port sets of 1-4 ports, each issued once or twice (54 µops, 10 distinct
port sets), no front-end limit. A simulated oracle answers for it; PMEvo infers a mapping with
the options given (the library's defaults unless flags say otherwise: the flags are those of
``pmsolve infer pmevo``), and we report MAPE, Pearson and Kendall τ-b on 5,000 random
5-instruction experiments, the wall time and the load.

    python benchmarks/pmevo_random.py                      # the defaults: preset best, 2 minutes
    python benchmarks/pmevo_random.py --preset paper       # PLDI'20's algorithm for the same budget
    python benchmarks/pmevo_random.py --minutes 0 --preset paper --volume-weight 0.01 --population 1000 \\
        --generations 100                                 # the defaults before the budget (105-113 s)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pmevo_zenplus import add_pmevo_arguments, evaluate, options_from_args, progress  # noqa: E402
from pmsolve.generate import random_mapping  # noqa: E402
from pmsolve.harness import SimulatedOracle  # noqa: E402
from pmsolve.infer.pmevo import infer  # noqa: E402


def hidden_truth(seed: int = 8):
    return random_mapping(np.random.default_rng(seed), 8, 30, max_uops=3, max_ports_per_uop=4, max_uop_count=2,
                          uop_vocabulary=12)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--truth-seed", type=int, default=8)
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    add_pmevo_arguments(ap)
    args = ap.parse_args(argv)
    truth = hidden_truth(args.truth_seed)
    print(f"ground truth: {len(truth.instructions)} schemes, {len(truth.ports)} ports, "
          f"{sum(len(us) for us in truth.uops.values())} µops, "
          f"{len({u.ports for us in truth.uops.values() for u in us})} distinct port sets")
    oracle = SimulatedOracle(truth)
    options = options_from_args(args, len(truth.ports), None)
    print(f"options: {options.resolved()}")
    t0 = time.monotonic()
    result = infer(oracle, options, state=args.checkpoint, progress=None if args.quiet else progress)
    evaluate(truth, oracle, options, result, time.monotonic() - t0, args, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
