"""A scheduler rule for the vector side, tried against measurements (issue 39; RESULTS §1.20).

    python benchmarks/fp_queues.py grid
    python benchmarks/fp_queues.py held-out WORKDIR JOB.json [--width 6] [--capacity 32]

On the Zen 4 a shuffle on two of the four vector pipes beside one flexible µop runs at 4/3 of the
port mapping's optimum (RESULTS §1.18's grid), and no port mapping reproduces the grid. The rule
simulated here: the four pipes are fed by two scheduling queues of two pipes each; µops are
renamed in program order, ``--width`` a cycle, each into a random queue among those that have a
pipe it can use and room (``--capacity`` entries); every cycle each pipe takes the oldest µop of
its queue that it can run. Every µop is independent and takes its pipe for one cycle.

``grid`` scores the three ways of pairing the pipes and four queue-choice rules on the grid (the
pipe names are a5's: M ``vpmulld xmm`` on [0,1], A ``vaddps xmm`` on [2,3], S ``vpshufb xmm`` on
[0,2], F ``vpaddd xmm`` on all four, L ``vpalignr xmm`` on [0,2]).

``held-out`` takes a finished ``pmsolve infer`` run (its mapping and the held-out mixes of its
``--json`` output), finds the pipes in the run's own names (the four-pipe set of ``vpaddd xmm``;
the queue of the shuffle pipes, those of ``vbroadcastss ymm, xmm``, and the other two), and
prints the held-out MAPE of the run's predictions and of max(prediction, the simulated vector
side) for each mix. The simulation is a Monte Carlo of a few thousand cycles (seeded): a lead
to model, not a predictor of the package.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pmsolve.harness.allocation import body  # noqa: E402
from pmsolve.isa import load_catalogue  # noqa: E402
from pmsolve.modelled import load_model  # noqa: E402


def simulate(stream: list[frozenset], queues: list[frozenset], width: int, capacity: int, rule: str = "random",
             cycles: int = 3000, seed: int = 1) -> float:
    """Cycles per pass over ``stream`` (µops as the pipes each may use) in steady state."""
    rng = random.Random(seed)
    held: list[list[frozenset]] = [[] for _ in queues]
    done = nxt = turn = 0
    for _ in range(cycles):
        for q, pipes in enumerate(queues):
            for p in sorted(pipes):
                k = next((k for k, u in enumerate(held[q]) if p in u), None)
                if k is not None:
                    held[q].pop(k)
                    done += 1
        for _ in range(width):
            u = stream[nxt % len(stream)]
            room = [q for q, pipes in enumerate(queues) if u & pipes and len(held[q]) < capacity]
            if not room:
                break
            if rule == "random":
                q = rng.choice(room)
            elif rule == "fewer":
                q = min(room, key=lambda q: len(held[q]))
            elif rule == "alternate":
                q, turn = room[turn % len(room)], turn + (len(room) > 1)
            else:   # "fewer-able": the queue with fewer µops that compete for this one's pipes
                q = min(room, key=lambda q: sum(1 for v in held[q] if v & u & queues[q]))
            held[q].append(u)
            nxt += 1
    return cycles * len(stream) / done if done else float("inf")


@functools.cache
def _catalogue():
    return load_catalogue(host=False)


def program_order(counts: dict[str, int]) -> list[str]:
    """One copy's schemes in the order the harness runs them (:func:`allocation.body`)."""
    return [s.name for s in body({_catalogue()[n]: c for n, c in counts.items()}, 1)]


S, F, M, A, L = ("vpshufb_xmm_xmm_xmm", "vpaddd_xmm_xmm_xmm", "vpmulld_xmm_xmm_xmm", "vaddps_xmm_xmm_xmm",
                 "vpalignr_xmm_xmm_xmm_i8")
GRID_UOPS = {A: {2, 3}, F: {0, 1, 2, 3}, L: {0, 2}, M: {0, 1}, S: {0, 2}}
#: RESULTS §1.18 (Zen 4, 2026-11-29, /work/lab/grid.py): cycles per copy, the middle of three
GRID = [({S: 1}, 0.500), ({F: 1}, 0.250), ({S: 1, F: 1}, 0.666), ({S: 1, F: 2}, 0.750), ({S: 1, F: 3}, 1.000),
        ({S: 2, F: 1}, 1.000), ({S: 2, F: 2}, 1.333), ({S: 1, F: 4}, 1.250), ({S: 1, M: 1}, 0.666),
        ({F: 1, M: 1}, 0.500), ({S: 1, F: 1, M: 1}, 0.800), ({S: 1, F: 1, A: 1}, 0.800),
        ({S: 2, M: 1, A: 1}, 1.111), ({S: 1, A: 2, F: 1}, 1.188), ({L: 1, F: 1}, 0.666)]


def grid(width: int, capacity: int) -> None:
    rows = []
    for pairs in (({0, 1}, {2, 3}), ({0, 2}, {1, 3}), ({0, 3}, {1, 2})):
        queues = [frozenset(p) for p in pairs]
        for rule in ("random", "fewer", "alternate", "fewer-able"):
            got = [simulate([frozenset(GRID_UOPS[n]) for n in program_order(c)], queues, width, capacity, rule)
                   for c, _ in GRID]
            err = statistics.mean(abs(g - y) / y for g, (_, y) in zip(got, GRID))
            rows.append((err, pairs, rule, got))
    rows.sort(key=lambda r: r[0])
    print(f"queues: rename {width} a cycle, {capacity} entries each; mean error on the {len(GRID)} mixes, then each "
          "mix simulated / measured")
    for err, pairs, rule, got in rows:
        print(f"  {sorted(pairs[0])}{sorted(pairs[1])} {rule:10s} {100 * err:5.1f} %  "
              + "  ".join(f"{g:.3f}/{y:.3f}" for g, (_, y) in zip(got, GRID)))


def held_out(workdir: Path, job: Path, width: int, capacity: int) -> None:
    model = load_model(workdir / "mapping.json")
    uops = {i: [(frozenset(u.ports), u.count) for u in us] for i, us in model.mapping.uops.items()}
    uops.update({i: [(frozenset(ps), n) for ps, n in m.uops] for i, m in model.schemes.items() if m.uops})
    four = next(ps for ps, _ in uops["vpaddd_xmm_xmm_xmm"])
    shuffle = next(ps for ps, _ in uops["vbroadcastss_ymm_xmm"])
    queues = [shuffle, four - shuffle]
    rows = json.loads(job.read_text())["held_out"][:300]
    old, new, changed = [], [], 0
    for r in rows:
        y, p = r["measured"], r["pmsolve (explain)"]
        stream = [ps for s in program_order(r["experiment"]) for ps, n in uops.get(s, []) if ps <= four
                  for _ in range(n)]
        q = max(p, simulate(stream, queues, width, capacity)) if stream else p
        changed += q > p * 1.001
        old.append((p - y) / y)
        new.append((q - y) / y)
    print(f"{workdir}: queues {sorted(queues[0])} {sorted(queues[1])}, rename {width}, {capacity} entries: "
          f"{changed} of {len(rows)} mixes change; MAPE {100 * statistics.mean(map(abs, old)):.2f} % -> "
          f"{100 * statistics.mean(map(abs, new)):.2f} %, signed {100 * statistics.mean(old):+.2f} % -> "
          f"{100 * statistics.mean(new):+.2f} %")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("grid", "held-out"))
    ap.add_argument("workdir", nargs="?", type=Path)
    ap.add_argument("job", nargs="?", type=Path)
    ap.add_argument("--width", type=int, default=6)
    ap.add_argument("--capacity", type=int, default=32)
    args = ap.parse_args()
    if args.what == "grid":
        grid(args.width, args.capacity)
    elif args.workdir is None or args.job is None:
        ap.error("held-out needs WORKDIR and JOB.json")
    else:
        held_out(args.workdir, args.job, args.width, args.capacity)
    return 0


if __name__ == "__main__":
    sys.exit(main())
