"""findOtherMapping (sec. 4.2.3) on every solver route, side by side as ratios to z3.

Instances grow in instructions × ports (`pmsolve.encodings.instances`: a seeded random
two-level ground truth, its singleton measurements, and a first candidate mapping; the
question is whether another mapping agrees on them but differs on some experiment of ≤ 4
instructions). Routes: z3, cvc5, pysmt driving z3, and HiGHS as a MILP via big-M
linearisation. Every answer is validated by pmsolve and must agree across routes (sat/unsat).
Times are the best of ``--repeat`` runs in this process; ratios > 1 mean slower than z3.

    python benchmarks/backends.py [--sizes 3x3,4x4,6x4,8x5,10x6] [--repeat 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

from pmsolve.backends import describe, solve
from pmsolve.encodings.instances import find_other_mapping_instance

ROUTES = ["z3", "cvc5", "pysmt:z3", "highs"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="3x3,4x4,6x4,8x5,10x6", help="comma-separated INSNSxPORTS")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    installed = {r["name"] for r in describe() if r["installed"]}
    routes = [r for r in ROUTES if r in installed]
    print(f"{'instance':<10} {'answer':<7} {'z3 time':>9}  " + "  ".join(f"{r:>9}" for r in routes[1:]))
    for size in args.sizes.split(","):
        n_insns, n_ports = map(int, size.lower().split("x"))
        times: dict[str, float] = {}
        answers: dict[str, str] = {}
        for route in routes:
            best = float("inf")
            for _ in range(args.repeat):
                problem = find_other_mapping_instance(n_insns, n_ports, args.seed)
                start = time.perf_counter()
                result = solve(problem, route)
                best = min(best, time.perf_counter() - start)
            times[route], answers[route] = best, result.status
        if len(set(answers.values())) != 1:
            raise SystemExit(f"routes disagree on {size}: {answers}")
        base = times["z3"]
        print(f"{size:<10} {answers['z3']:<7} {1000 * base:>7.0f} ms  "
              + "  ".join(f"{times[r] / base:>8.2f}×" for r in routes[1:]))


if __name__ == "__main__":
    main()
