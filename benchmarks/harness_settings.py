"""Harness settings A/B on this CPU: measurement rate and accuracy of two ``HarnessSettings``,
interleaved experiment by experiment, on random mixes of the mapped schemes of a finished job,
scored against that job's model (a job's mapped-only mixes are predicted within about 1 %, so
the error is the harness's). Also counts which reference kernels flag the attempts of setting A
noisy, for experiments with and without a memory operand (the gate per resource of issue 41:
a register-only experiment need not wait for the load and store pipes).

    python benchmarks/harness_settings.py MAPPING.json [--n 60] [--seed 1] [--b max_retries=0,deferred_passes=0]

MAPPING.json is a job's ``-o`` file (``pmsolve infer -o``) measured on this CPU. Setting A is
today's default; ``--b`` overrides fields of it for B. Figures: experiments per second of each
setting (wall time of its own calls, so the ratio holds in a noisy hour), MAPE and median error
against the model, how many within 5 %, how many stayed flagged noisy.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pmsolve.harness.hardware as hw  # noqa: E402
from pmsolve.isa import load_catalogue  # noqa: E402
from pmsolve.model import Experiment  # noqa: E402
from pmsolve.modelled import load_model  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mapping", type=Path)
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--b", default="max_retries=0,deferred_passes=0", metavar="FIELD=INT,...")
    args = ap.parse_args()
    doc = json.loads(args.mapping.read_text())
    model, r_max = load_model(args.mapping), doc["explanation"]["r_max"]
    mapped = sorted(doc["instructions"])
    catalogue = load_catalogue()
    rng = random.Random(args.seed)
    exps = [Experiment([(rng.choice(mapped), rng.randint(1, 2)) for _ in range(rng.randint(1, 4))])
            for _ in range(args.n)]
    b = replace(hw.HarnessSettings(), **{k: int(v) for k, v in (f.split("=") for f in args.b.split(","))})
    settings = {"A": hw.HarnessSettings(), "B": b}
    oracles = {k: hw.HardwareOracle(mapped, s, on_error="nan") for k, s in settings.items()}

    flagged: dict[str, Counter] = {"register-only": Counter(), "with memory": Counter()}
    kind = ["register-only"]
    real = hw.lower_baseline

    def spy(base, samples, tol, streak):   # every attempt of A: which references are off their baseline
        real(base, samples, tol, streak)
        off = tuple(sorted(n.rsplit("_", 1)[-1] for n in base
                           if min(abs(s[n] - base[n]) / base[n] for s in samples) > tol))
        flagged[kind[0]][off or ("none",)] += 1

    err = {k: [] for k in settings}
    secs = {k: 0.0 for k in settings}
    noisy = {k: 0 for k in settings}
    for j, e in enumerate(exps):
        truth = float(model.inverse_throughput(e, r_max))
        kind[0] = "with memory" if any(catalogue[i].memory != "none" for i, _ in e.items()) else "register-only"
        for k in ("A", "B") if j % 2 == 0 else ("B", "A"):
            hw.lower_baseline = spy if k == "A" else real
            t = time.monotonic()
            r = next(iter(oracles[k].measure_iter([e])))[1]
            secs[k] += time.monotonic() - t
            noisy[k] += bool(r.noisy)
            err[k].append(abs(r.cycles - truth) / truth if r.ok else float("inf"))
    hw.lower_baseline = real
    for k, v in err.items():
        s = sorted(v)
        print(f"{k} ({'default' if k == 'A' else args.b}): {len(v) / secs[k]:.2f} experiments/s "
              f"({secs['A'] / secs[k]:.2f}x A's rate), MAPE {100 * sum(v) / len(v):.2f} %, median "
              f"{100 * s[len(s) // 2]:.2f} %, within 5 % {sum(x <= 0.05 for x in v)} of {len(v)}, noisy {noisy[k]}")
    for label, c in flagged.items():
        total = sum(c.values())
        if total:
            print(f"A's attempts on {label} experiments: {total}; flagged by "
                  + ", ".join(f"{'+'.join(k)} {n}" for k, n in c.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
