"""Measure single schemes on this machine several times and compare with the published values
for its microarchitecture (pmsolve/data/singles/; none for a CPU without a table).

    python benchmarks/hardware_singles.py [--runs 3] [--json]

Prints, per scheme: the median over runs, the published inverse throughput, the deviation, and the
stability across runs (max - min over runs, relative to the median), plus each run's spread
and the time per experiment. Nothing is stored; every run measures afresh (a new oracle, a new
worker process, a new noise baseline).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pmsolve.harness.cpu import host_cpu, reference_singles  # noqa: E402
from pmsolve.harness.hardware import HardwareOracle, available  # noqa: E402
from pmsolve.model import Experiment  # noqa: E402



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if available():
        print(f"skipped: {available()}")
        return 0
    cpu = host_cpu()
    ref = reference_singles(cpu.microarchitecture)
    if ref is None:
        print(f"skipped: no published singles are shipped for {cpu.describe()}")
        return 0
    from pmsolve.isa import load_catalogue

    cat = load_catalogue()
    known = {s: v for s, v in ref.values.items() if s in cat and cat.status(cat[s]) == "offered"}
    exps = {s: Experiment({s: 1}) for s in known}
    print(f"{cpu.describe()}; published values: {ref.source.split(';')[0]}", file=sys.stderr)
    runs: list[dict[str, tuple[float, float, int]]] = []
    per_exp = []
    for _ in range(args.runs):
        t = time.monotonic()
        with HardwareOracle(list(known)) as hw:
            res = dict(hw.measure_iter(list(exps.values())))
        per_exp.append((time.monotonic() - t) / len(exps))
        runs.append({name: (res[i].cycles, res[i].spread, res[i].attempts) for i, name in enumerate(exps)})
    rows = []
    for name in exps:
        vals = [r[name][0] for r in runs]
        med = statistics.median(vals)
        rows.append({"experiment": name, "median": med, "known": known[name],
                     "deviation": (med - known[name]) / known[name], "runs": vals,
                     "stability": (max(vals) - min(vals)) / med, "spreads": [r[name][1] for r in runs],
                     "attempts": [r[name][2] for r in runs]})
    if args.json:
        json.dump({"rows": rows, "seconds_per_experiment": per_exp}, sys.stdout, indent=1)
        return 0
    print(f"{'experiment':<32} {'measured':>9} {'known':>7} {'dev':>7} {'across runs':>12} {'max spread':>11}")
    for r in rows:
        print(f"{r['experiment']:<32} {r['median']:9.3f} {r['known']:7.3f} {100 * r['deviation']:+6.1f}% "
              f"{100 * r['stability']:11.2f}% {100 * max(r['spreads']):10.2f}%")
    print(f"\n{args.runs} runs; seconds per experiment (incl. worker start and noise baseline): "
          + ", ".join(f"{x:.3f}" for x in per_exp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
