"""Do loads beside stores run at one speed? Every round of each mix, as the harness times it.

    python benchmarks/store_load_regimes.py [--passes 6] [--cpu 1] [MIX ...]

A MIX is ``scheme:count,scheme:count``. Measures each mix ``--passes`` times in one hardware
oracle and prints, per mix, the reported cycles per copy of every pass (``*`` where the harness
marked it noisy) and the rounds of all unroll variants pooled: their quartiles and how many fall
below the mix's port bound (``--bound``, cycles per copy; the load ports by default: loads / 3).
On an Emerald Rapids (2026-12-06) 21 GPR loads alone took 7.00 in every round, and beside one to
eight stores the rounds jumped between 7.0, 9.0, 10.5, 12 and 14 (three, 2.33, two, 1.75 and 1.5
loads a cycle) from one round to the next (benchmarks/RESULTS.md §1.27). Nothing is stored.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pmsolve.harness.hardware import HardwareOracle, available  # noqa: E402
from read_slot import parse  # noqa: E402  (the mix syntax of the benchmarks beside it)

DEFAULT = ["mov_r64_m64:21", "mov_m64_r64:1,mov_r64_m64:21", "mov_m64_r64:2,mov_r64_m64:21",
           "mov_m64_r64:4,mov_r64_m64:21", "mov_m64_r64:8,mov_r64_m64:21", "vmovdqu_m128_xmm:1,mov_r64_m64:12"]
LOADS = {"mov_r64_m64": 1}     # schemes counted by the default bound: one load-port µop each


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mixes", nargs="*", default=DEFAULT)
    ap.add_argument("--passes", type=int, default=6)
    ap.add_argument("--cpu", type=int, default=None, help="the worker's CPU (default: the harness's)")
    ap.add_argument("--bound", type=float, default=None, help="port bound per copy (default: loads / 3)")
    args = ap.parse_args()
    reason = available()
    if reason:
        print(f"skipped: {reason}")
        return 0
    exps = [parse(m) for m in args.mixes]
    names = sorted({n for e in exps for n in e})
    reported: list[list[str]] = [[] for _ in exps]
    rounds: list[list[float]] = [[] for _ in exps]
    kwargs = {} if args.cpu is None else {"cpu": args.cpu}
    with HardwareOracle(names, on_error="nan", **kwargs) as hw:
        for _ in range(args.passes):
            for j, (e, v) in enumerate(zip(exps, hw.measure(exps))):
                m = hw.results.get(e)
                reported[j].append(f"{v:.3f}{'*' if m is not None and m.noisy else ''}")
                if m is not None:
                    rounds[j] += [x for xs in m.samples.values() for x in xs]
    for e, mix, rep, rs in zip(exps, args.mixes, reported, rounds):
        bound = args.bound if args.bound is not None else sum(c * LOADS.get(n, 0) for n, c in e.items()) / 3
        q = statistics.quantiles(rs, n=4) if len(rs) > 1 else [float("nan")] * 3
        below = sum(x < bound * 0.98 for x in rs)
        print(f"{mix}\n    passes: {' '.join(rep)}\n    rounds: {len(rs)}, quartiles {q[0]:.2f} / {q[1]:.2f} / "
              f"{q[2]:.2f}, {below} below the bound {bound:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
