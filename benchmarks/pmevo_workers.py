"""The job's PMEvo comparison (``pmsolve.jobs.host._pmevo``: 40 schemes, 2,000 random training
experiments, 10 ports) on a simulated Zen-like machine, per seed and for each budget and number
of processes, one after the other: wall time (and how far it ran past the budget),
generations, evaluations, training error and MAPE on 300 held-out mixes of its schemes.

    python benchmarks/pmevo_workers.py MINUTES SEEDS [WORKERS]   # e.g. 1.5 0,1,2  or  1.5,2 0,1,2,3 2

MINUTES and WORKERS are comma lists (WORKERS default 1,2: one process is the reference
route). Compare wall-time ratios within a run (the machine is noisy), and the MAPE per seed;
to compare code versions, run the script in a worktree of each, one after the other.
"""
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import pmsolve.jobs.host as host  # noqa: E402
import pmsolve.infer.pmevo.pipeline as pipeline  # noqa: E402
from pmsolve.generate import zen_like  # noqa: E402
from pmsolve.harness.simulated import SimulatedOracle  # noqa: E402
from pmsolve.throughput import batch_inverse_throughput  # noqa: E402

budgets = [float(m) for m in sys.argv[1].split(",")]
seeds = [int(s) for s in sys.argv[2].split(",")]
workers = [int(w) for w in (sys.argv[3] if len(sys.argv) > 3 else "1,2").split(",")]
real = pipeline.infer
last = {}


def keep(*a, **k):   # the job returns the mapping only: keep the whole result for the figures
    r = real(*a, **k)
    last["r"] = r
    return r


host.pmevo_infer = keep
walls: dict[tuple[float, int], float] = {}
mapes: dict[tuple[float, int], list[float]] = {}
for seed in seeds:
    truth = zen_like(seed)
    oracle = SimulatedOracle(truth, r_max=5, noise=0.01, seed=seed)
    names = sorted(random.Random(seed).sample(list(truth.instructions), 40))
    held = host.held_out_experiments(names, 300, seed + 7919)
    meas = oracle.measure(held)
    for minutes in budgets:
        for w in workers:
            host.PMEVO_WORKERS = w
            with tempfile.TemporaryDirectory() as tmp:
                t = time.monotonic()
                m = host._pmevo(oracle, names, 5, host.JobConfig(pmevo_minutes=minutes, seed=seed), Path(tmp),
                                lambda s: None)
                wall = time.monotonic() - t
            pred = [float(x) for x in batch_inverse_throughput([(m, e) for e in held], 5)]
            mape = sum(abs(p - x) / x for p, x in zip(pred, meas)) / len(meas)
            walls[minutes, w] = walls.get((minutes, w), 0.0) + wall
            mapes.setdefault((minutes, w), []).append(mape)
            r = last["r"]
            ev = r.evolution
            print(f"seed {seed} budget {60 * minutes:.0f}s workers {w} wall {wall:.0f}s "
                  f"(past the budget {wall - 60 * minutes:+.0f}s) generations {ev.generations} "
                  f"evaluations {ev.evaluations} d_avg {100 * r.d_avg:.2f}% held-out MAPE {100 * mape:.2f}%", flush=True)
first = next(iter(walls))
for key, wall in walls.items():
    print(f"budget {60 * key[0]:.0f}s, {key[1]} worker(s): mean held-out MAPE "
          f"{100 * sum(mapes[key]) / len(mapes[key]):.2f}%, wall time {wall / walls[first]:.2f}x "
          f"that of budget {60 * first[0]:.0f}s on {first[1]} worker(s)")
