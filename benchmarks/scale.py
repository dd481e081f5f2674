"""Scaling the fan-out parts over workers: PMEvo fitness and AnICA predictions, 1 vs 2 workers.

In one run, for every executor backend (local process pool, Dask LocalCluster on loopback):

* PMEvo fitness throughput (individuals/s): a population of random genomes scored by the
  vectorised fitness on the singleton + pair + ratio-pair experiments of a random three-level
  ground truth (``--insns`` schemes after congruence filtering, ``--ports`` ports), through
  ``executor.map(partial(evaluate_chunk, evaluator), chunks)``, as DEAP's map does in PMEvo;
* AnICA predictions/s: fresh random 4-instruction blocks from the x86-64 catalogue predicted by
  llvm-mca znver3 and znver1 (a real tool, many blocks per call) through ``predict_many``, as a
  campaign's evaluator does, next to the default thread path;

and prints each 2-worker/1-worker ratio, the per-item costs (what a cluster projection needs),
the bytes a PMEvo genome costs to ship, and the load average (this 2-core VM is shared).

    python benchmarks/scale.py                       # defaults: 150 schemes, population 4000, 800 blocks
    python benchmarks/scale.py --insns 300 --population 2000 --json

Measured 2026-11-22 on the shared 2-core Zen 3 VM, ``--population 1500 --reps 2``, load average
0.5-1.8 during the run (another engineer's jobs came and went):

    PMEvo (150 schemes, 20,642 experiments)  1 worker  2 workers  2/1   per individual
      pool                                     44/s       90/s     2.05   22.7 ms
      Dask LocalCluster                        39/s       66/s     1.70   25.8 ms (client + scheduler share the 2 cores)
      client side per individual: recombination 0.57 ms, pickle round trip 0.21 ms; 4.5 kB per genome
    AnICA (llvm-mca znver3 + znver1)          1 worker  2 workers  2/1   per prediction
      threads (default path)                  869/s    1,748/s    2.01    1.15 ms
      pool                                    709/s    1,489/s    2.10    1.41 ms
      Dask LocalCluster                       708/s    1,431/s    2.02    1.41 ms

An earlier run at load 2.2-3.0 (two other processes at 100 % on the 2 cores) measured PMEvo
pool 43 -> 44/s (1.01) and Dask 40 -> 53/s (1.32): on a busy machine the second worker has no
core to run on.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import random
import sys
import time
from functools import partial

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pmsolve.anica.domain import AbstractBlock, Form, Universe  # noqa: E402
from pmsolve.predictors import open_predictor, predict_many  # noqa: E402
from pmsolve.anica.sampler import Sampler, to_block  # noqa: E402
from pmsolve.executor import dask_available, open_executor  # noqa: E402
from pmsolve.harness import SimulatedOracle  # noqa: E402
from pmsolve.infer.pmevo.fitness import evaluate_chunk  # noqa: E402
from pmsolve.infer.pmevo.operators import random_genome, recombine  # noqa: E402
from pmsolve.infer.pmevo.parallel import chunks  # noqa: E402
from pmsolve.infer.pmevo.pipeline import build_evaluator, measure_all  # noqa: E402
from pmsolve.isa import load_catalogue  # noqa: E402
from pmsolve.model import Experiment, PortMapping  # noqa: E402


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def truth(n_insns: int, n_ports: int, seed: int) -> PortMapping:
    """A random three-level mapping drawn from a small µop vocabulary, as real ones are."""
    rng = random.Random(seed)
    ports = [str(p) for p in range(n_ports)]
    vocab = [tuple(sorted(rng.sample(ports, rng.randint(1, min(4, n_ports))))) for _ in range(12)]
    return PortMapping(ports, {f"i{k}": [(rng.choice(vocab), rng.randint(1, 2)) for _ in range(rng.randint(1, 3))]
                               for k in range(n_insns)})


def pmevo_setup(n_insns: int, n_ports: int, population: int, seed: int):
    m = truth(n_insns, n_ports, seed)
    insns = list(m.instructions)
    measured = measure_all(SimulatedOracle(m), insns)
    ev = build_evaluator(n_ports, insns, measured, None)
    single = [measured[Experiment({i: 1})] for i in insns]
    rng = random.Random(seed)
    genomes = [random_genome(rng, n_ports, single) for _ in range(population)]
    return ev, genomes


def time_map(ex, fn, items, reps: int) -> float:
    ex.map(fn, items[:2])  # warm-up: workers started, shared arguments shipped
    best = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        ex.map(fn, items)
        best = min(best, time.perf_counter() - t0)
    return best


def anica_blocks(n: int, seed: int, universe: Universe) -> list:
    smp, rng = Sampler(universe), random.Random(seed)
    out = []
    while len(out) < n:
        c = smp.sample(AbstractBlock.top(4), rng)
        if c is not None:
            out.append(to_block(universe, c))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--insns", type=int, default=150, help="PMEvo schemes (congruence representatives)")
    ap.add_argument("--ports", type=int, default=10)
    ap.add_argument("--population", type=int, default=4000, help="genomes scored per measurement")
    ap.add_argument("--blocks", type=int, default=800, help="AnICA blocks per measurement (× 2 predictors)")
    ap.add_argument("--reps", type=int, default=3, help="best of this many repetitions (PMEvo)")
    ap.add_argument("--backends", default="pool,dask")
    ap.add_argument("--skip", choices=("pmevo", "anica"), help="leave one part out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    backends = [b for b in args.backends.split(",") if b != "dask" or dask_available()]
    out: dict = {"cpus": os.cpu_count(), "load_start": load(), "pmevo": {}, "anica": {}}
    print(f"{os.cpu_count()} CPUs, load average {out['load_start']} (1/5/15 min) at start", file=sys.stderr)

    if args.skip != "pmevo":
        ev, genomes = pmevo_setup(args.insns, args.ports, args.population, args.seed)
        bytes_per = len(pickle.dumps(genomes[:200])) / 200
        out["pmevo"].update(experiments=len(ev.measured), genome_bytes=round(bytes_per),
                            evaluator_bytes=len(pickle.dumps(ev)))
        print(f"PMEvo: {args.insns} schemes, {args.ports} ports, {len(ev.measured)} experiments, "
              f"{len(genomes)} genomes ({bytes_per:.0f} bytes each pickled)", file=sys.stderr)
        fn = partial(evaluate_chunk, ev)
        t0 = time.perf_counter()
        fn(genomes)
        serial = time.perf_counter() - t0
        # what stays on the client per individual: recombination, and shipping genomes out
        rng = random.Random(1)
        t0 = time.perf_counter()
        for k in range(0, len(genomes) - 1, 2):
            recombine(rng, genomes[k], genomes[k + 1])
        t_mate = (time.perf_counter() - t0) / len(genomes)
        t0 = time.perf_counter()
        pickle.loads(pickle.dumps(genomes))
        t_ship = (time.perf_counter() - t0) / len(genomes)
        out["pmevo"].update(client_ms_per_individual={"recombine": t_mate * 1e3, "pickle_roundtrip": t_ship * 1e3})
        print(f"  client side per individual: recombination {t_mate * 1e3:.3f} ms, pickle round trip "
              f"{t_ship * 1e3:.3f} ms", file=sys.stderr)
        out["pmevo"]["in-process"] = {"1": len(genomes) / serial}
        for kind in backends:
            rates = {}
            for w in (1, 2):
                with open_executor(kind, workers=w) as ex:
                    secs = time_map(ex, fn, chunks(genomes, 4 * w), args.reps)
                rates[str(w)] = len(genomes) / secs
                print(f"  {kind} {w} worker(s): {rates[str(w)]:,.0f} individuals/s (load {load()})", file=sys.stderr)
            out["pmevo"][kind] = rates

    if args.skip != "anica":
        cat = load_catalogue()
        u = Universe([Form(s) for s in cat.offered()], {})
        preds = [open_predictor("llvm-mca:znver3"), open_predictor("llvm-mca:znver1")]
        seed = iter(range(10_000, 20_000))
        predict_many(preds, anica_blocks(20, next(seed), u))  # warm the tool's page cache
        runs = [("threads", None)] + [(k, k) for k in backends]
        for label, kind in runs:
            rates = {}
            for w in (1, 2):
                blocks = anica_blocks(args.blocks, next(seed), u)   # fresh blocks: no memo, no cache
                chunk = max(1, min(64, math.ceil(len(blocks) / (4 * w))))
                if kind is None:
                    t0 = time.perf_counter()
                    predict_many(preds, blocks, workers=w, chunk=chunk)
                    secs = time.perf_counter() - t0
                else:
                    with open_executor(kind, workers=w) as ex:
                        predict_many(preds, anica_blocks(4, next(seed), u), executor=ex)  # warm-up
                        t0 = time.perf_counter()
                        predict_many(preds, blocks, chunk=chunk, executor=ex)
                        secs = time.perf_counter() - t0
                rates[str(w)] = len(preds) * len(blocks) / secs
                print(f"  {label} {w} worker(s): {rates[str(w)]:,.0f} predictions/s (load {load()})", file=sys.stderr)
            out["anica"][label] = rates
    out["load_end"] = load()

    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"\n{out['cpus']} CPUs; load average {out['load_start']} at start, {out['load_end']} at end (1/5/15 min)")
    for part, unit in (("pmevo", "individuals/s"), ("anica", "predictions/s")):
        rows = {k: v for k, v in out[part].items() if isinstance(v, dict) and "1" in v}
        if not rows:
            continue
        print(f"\n{part}: {unit}" + (f"  ({out['pmevo']['experiments']} experiments per individual, "
                                      f"{out['pmevo']['genome_bytes']} bytes per pickled genome)" if part == "pmevo" else
                                      "  (llvm-mca znver3 + znver1, 4-instruction blocks)"))
        if part == "pmevo":
            c = out["pmevo"]["client_ms_per_individual"]
            print(f"  client side per individual: recombination {c['recombine']:.3f} ms, "
                  f"pickle round trip {c['pickle_roundtrip']:.3f} ms")
        print(f"  {'backend':<12} {'1 worker':>12} {'2 workers':>12} {'2/1':>7}   per item, 1 worker")
        for k, v in rows.items():
            two = v.get("2")
            ratio = f"{two / v['1']:.2f}" if two else "—"
            print(f"  {k:<12} {v['1']:>12,.0f} {two or float('nan'):>12,.0f} {ratio:>7}   {1e3 / v['1']:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
