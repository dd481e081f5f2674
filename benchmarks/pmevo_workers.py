"""The job's PMEvo comparison (``pmsolve.jobs.host._pmevo``: 40 schemes, 2,000 random training
experiments, 10 ports) with ``PMEVO_WORKERS`` 1 (the reference route) and 2, the same budget,
one after the other per seed on a simulated Zen-like machine: wall time, generations,
evaluations, training error and MAPE on 300 held-out mixes of its schemes.

    python benchmarks/pmevo_workers.py MINUTES SEEDS      # e.g. 1.5 0,1,2

Compare the wall-time ratio within a run (the machine is noisy), and the MAPE per seed.
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

minutes, seeds = float(sys.argv[1]), [int(s) for s in sys.argv[2].split(",")]
real = pipeline.infer
last = {}


def keep(*a, **k):   # the job returns the mapping only: keep the whole result for the figures
    r = real(*a, **k)
    last["r"] = r
    return r


host.pmevo_infer = keep
walls: dict[int, float] = {1: 0.0, 2: 0.0}
for seed in seeds:
    truth = zen_like(seed)
    oracle = SimulatedOracle(truth, r_max=5, noise=0.01, seed=seed)
    names = sorted(random.Random(seed).sample(list(truth.instructions), 40))
    held = host.held_out_experiments(names, 300, seed + 7919)
    meas = oracle.measure(held)
    for w in (1, 2):
        host.PMEVO_WORKERS = w
        with tempfile.TemporaryDirectory() as tmp:
            t = time.monotonic()
            m = host._pmevo(oracle, names, 5, host.JobConfig(pmevo_minutes=minutes, seed=seed), Path(tmp), lambda s: None)
            wall = time.monotonic() - t
            walls[w] += wall
        pred = [float(x) for x in batch_inverse_throughput([(m, e) for e in held], 5)]
        mape = sum(abs(p - x) / x for p, x in zip(pred, meas)) / len(meas)
        r = last["r"]
        ev = r.evolution
        print(f"seed {seed} workers {w} wall {wall:.0f}s generations {ev.generations} evaluations {ev.evaluations} "
              f"d_avg {100 * r.d_avg:.2f}% held-out MAPE {100 * mape:.2f}%", flush=True)
print(f"wall time, 2 workers / 1: {walls[2] / walls[1]:.2f}x")
