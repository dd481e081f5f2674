"""The scheduling-queue rule (pmsolve.queues) against measurements (issue 39; RESULTS §1.20, §1.21).

    python benchmarks/fp_queues.py grid
    python benchmarks/fp_queues.py held-out WORKDIR JOB.json

On the Zen 4 a shuffle on two of the four vector pipes beside one flexible µop runs at 4/3 of the
port mapping's optimum (RESULTS §1.18's grid), and no port mapping reproduces the grid. The rule
(:mod:`pmsolve.queues`): two scheduling queues of two pipes each; µops renamed in program order
into a random queue among those that can take them; each pipe takes the oldest µop of its queue
it can run.

``grid`` prints the rule's time for each of the grid's 15 mixes under the three ways of pairing
the pipes (the pipe names are a5's: M ``vpmulld xmm`` on [0,1], A ``vaddps xmm`` on [2,3], S
``vpshufb xmm`` on [0,2], F ``vpaddd xmm`` on all four, L ``vpalignr xmm`` on [0,2]) and the
mean error of each pairing. (Placing a µop in the emptier queue, or alternating, were tried on
2026-12-01 and gave 7-9 %: RESULTS §1.20.)

``held-out`` takes a finished ``pmsolve infer`` run made before the queues stage existed (its
``mapping.json``, store and ``--json`` output), runs the stage on the run's stored measurements
(:func:`pmsolve.infer.explain.queues.find`: what the job would have chosen) and prints the
held-out MAPE of the run's predictions and of the model with the chosen queues, on the mixes the
stage never saw.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pmsolve.harness.store import parse_experiment  # noqa: E402
from pmsolve.infer.explain import queues as stage  # noqa: E402
from pmsolve.model import Experiment, PortMapping  # noqa: E402
from pmsolve.modelled import ModelledMapping, load_model  # noqa: E402
from pmsolve.queues import Queues  # noqa: E402

S, F, M, A, L = ("vpshufb_xmm_xmm_xmm", "vpaddd_xmm_xmm_xmm", "vpmulld_xmm_xmm_xmm", "vaddps_xmm_xmm_xmm",
                 "vpalignr_xmm_xmm_xmm_i8")
GRID_MAPPING = PortMapping(["0", "1", "2", "3"], {A: [({"2", "3"}, 1)], F: [({"0", "1", "2", "3"}, 1)],
                                                  L: [({"0", "2"}, 1)], M: [({"0", "1"}, 1)], S: [({"0", "2"}, 1)]})
#: RESULTS §1.18 (Zen 4, 2026-11-29, /work/lab/grid.py): cycles per copy, the middle of three
GRID = [({S: 1}, 0.500), ({F: 1}, 0.250), ({S: 1, F: 1}, 0.666), ({S: 1, F: 2}, 0.750), ({S: 1, F: 3}, 1.000),
        ({S: 2, F: 1}, 1.000), ({S: 2, F: 2}, 1.333), ({S: 1, F: 4}, 1.250), ({S: 1, M: 1}, 0.666),
        ({F: 1, M: 1}, 0.500), ({S: 1, F: 1, M: 1}, 0.800), ({S: 1, F: 1, A: 1}, 0.800),
        ({S: 2, M: 1, A: 1}, 1.111), ({S: 1, A: 2, F: 1}, 1.188), ({L: 1, F: 1}, 0.666)]


def grid() -> None:
    print("the rule (rename 6 a cycle, 32 entries a queue) on §1.18's grid: simulated / measured per mix")
    for pairs in (None, ({"0", "1"}, {"2", "3"}), ({"0", "2"}, {"1", "3"}), ({"0", "3"}, {"1", "2"})):
        model = ModelledMapping(GRID_MAPPING, queues=Queues(tuple(map(frozenset, pairs))) if pairs else None)
        got = [float(model.inverse_throughput(Experiment(c))) for c, _ in GRID]
        err = statistics.mean(abs(g - y) / y for g, (_, y) in zip(got, GRID))
        name = " ".join(str(sorted(p)) for p in pairs) if pairs else "ports only"
        print(f"  {name:22s} {100 * err:5.1f} %  " + "  ".join(f"{g:.3f}/{y:.3f}" for g, (_, y) in zip(got, GRID)))


def held_out(workdir: Path, job: Path) -> None:
    doc = json.loads(job.read_text())
    r_max = doc.get("r_max")
    model = load_model(workdir / "mapping.json")
    db = sqlite3.connect(workdir / "measurements.sqlite")
    measured = {parse_experiment(t): y for t, y in db.execute("select experiment, cycles from measurements")
                if y is not None and y == y and y > 0}
    t0 = time.perf_counter()
    found = stage.find(model, measured, r_max, print)
    print(f"the stage on {len(measured)} stored measurements: {time.perf_counter() - t0:.1f} s")
    queued = stage.with_queues(model, found)
    rows = doc["held_out"][:300]
    exps = [Experiment(r["experiment"]) for r in rows]
    y = [r["measured"] for r in rows]
    t0 = time.perf_counter()
    after = queued.evaluate_many(exps, r_max)
    print(f"{len(rows)} held-out mixes evaluated in {time.perf_counter() - t0:.1f} s")
    for name, p in (("the run's predictions", [r["pmsolve (explain)"] for r in rows]),
                    ("with the chosen queues", list(after))):
        err = [(a - b) / b for a, b in zip(p, y)]
        print(f"  {name:24s} MAPE {100 * statistics.mean(map(abs, err)):.2f} %, signed {100 * statistics.mean(err):+.2f} %")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("grid", "held-out"))
    ap.add_argument("workdir", nargs="?", type=Path)
    ap.add_argument("job", nargs="?", type=Path)
    args = ap.parse_args()
    if args.what == "grid":
        grid()
    elif args.workdir is None or args.job is None:
        ap.error("held-out needs WORKDIR and JOB.json")
    else:
        held_out(args.workdir, args.job)
    return 0


if __name__ == "__main__":
    sys.exit(main())
