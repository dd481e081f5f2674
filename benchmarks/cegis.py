"""CEGIS port-mapping inference: the Fig. 4.6 grid (two-level) and the Table 4.1 three-level rows.

For every point (ports × instructions) three random ground truths (each instruction on 1–4
random ports; seeded) are inferred three times each (z3 random_seed 0, 1, 2) against an exact
simulated oracle with ε = 0.02 in the algorithm, as in the dissertation's sec. 4.5. Every run
is checked: the inferred mapping must explain all measurements, and its predictions are compared
with the ground truth on 1,000 random 5-instruction experiments (Pearson, largest CPI error).

Each finished run is appended as one JSON line to --log, and runs already in the log are
skipped, so the grid can be run in the background, interrupted and continued:

    python benchmarks/cegis.py --log cegis_grid.jsonl                  # the whole grid, small first
    python benchmarks/cegis.py --points 6x16,8x10 --log grid.jsonl      # selected points
    python benchmarks/cegis.py --table41 --log t41.jsonl                # three-level rows
    python benchmarks/cegis.py --summary --log cegis_grid.jsonl         # just print the table
    python benchmarks/cegis.py --points 6x10 --lever symmetry=0 --log levers.jsonl
    python benchmarks/cegis.py --points 4x8 --workers 2 --log g.jsonl   # runs on a pool (or --scheduler)
    python benchmarks/cegis.py --ladder --log ladder.jsonl              # issue 42's size ladder, new vs cb01ca0
    python benchmarks/cegis.py --components --log comps.jsonl           # the structure stage's port search

The ladder (10×6, 10×8, 16×8, 16×10, 20×10 instructions × ports; --truths seeds each) infers
random two-level truths exactly with the default options, as `pmsolve infer cegis --oracle
simulated:TRUTH --ports K` does, once with this tree and once with the reference commit's
pmsolve/ (unpacked by `git archive` into --reference-dir), each run in its own interpreter and
stopped after --cpu-limit CPU seconds; it prints wall and CPU seconds, solver checks and
measurements per size, the reference/new ratios (median over seeds of the per-seed ratio) and
how many results are exact (the mapping predicts the truth's tp⁻¹ on every experiment of ≤ 3
instructions and 500 random ones of 4–8). `--components` does the same for the counter-free
structure stage's port search on generated components of 6–12 blocking candidates.

The table lists median [min–max] seconds and added experiments per point next to the
dissertation's figures (i9-10900K, single thread; read off Fig. 4.6 / Table 4.1 text).

Measured on the shared 2-core VM (22 Nov 2026, other benchmarks running; medians of 9 runs,
process CPU seconds; wall-clock was 1–3× that under the load; ε = 0.02, exact oracle):

    4×16: 1.8 s CPU / 4.2 s wall (dissertation ≈10 s)
    6×10: 6.8 s (75 s)   6×12: 9.2 s (159 s)   6×16: 18.0 s CPU / 20.4 s wall (920–1,000 s)
    8×10: 16.6 s CPU / 23.1 s wall (>10,000 s)   8×12: 40 s CPU / 130 s wall   8×14: 146 s CPU (3 runs)
    Table 4.1, 4 insns × 6 ports, fixed µop counts: 4×2+0 µops 30 s (94 s), 2×3+2 75 s (96 s) —
    the three-level space gains far less than the two-level one.

Levers (3 ground truths × 1 run, median CPU seconds; `--lever …`):

    port-renaming symmetry breaking (lex-leader columns)   6×6: 1.2 s vs 23.4 s without
    split findOtherMapping vs the joint one (Alg. 4.1)     6×6: 1.2 s vs 8.6 s
    everything off ≈ the dissertation's configuration      6×6: 57 s (joint, relate, no symmetry, no reuse)
    bounds encoding of measurements vs relateThroughput    6×8: 1.5 s vs 4.0 s
    reuse of a surviving candidate as next m1              6×8: 1.5 s vs 3.5 s (49 → 27 solver checks)
    partial model read-back (Session.check(values=…))      4×10: 4.6 s vs 21 s wall (single run)
    committee of 3 candidates per iteration (vs 1)         6×12: ≈3× slower, same experiment count
    initial pairs (vs singletons)                          6×8: 2.5 s vs 1.5 s, 5 vs 15 added but +28 initial
    cvc5 (vs z3)                                           6×8: 6.5 s vs 1.5 s
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from fractions import Fraction

# --ladder runs the reference route's code from another tree in a subprocess (see ladder_one)
sys.path.insert(0, os.environ.get("PMSOLVE_CEGIS_ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pmsolve.errors import PmsolveError
from pmsolve.cli.flags import add_executor_arguments, executor_from_args
from pmsolve.harness.simulated import SimulatedOracle
from pmsolve.infer.cegis import CegisOptions, infer
from pmsolve.metrics import pearson
from pmsolve.model import Experiment, PortMapping
from pmsolve.throughput import evaluate_many

GRID = [(4, n) for n in (4, 6, 8, 10, 12, 14, 16)] + [(6, n) for n in (4, 6, 8, 10, 12, 14, 16)] + \
       [(8, n) for n in (4, 6, 8, 10)]
# dissertation, Fig. 4.6 text and Table 4.1 (2-level column: 6 ports, like the 3-level runs)
PAPER = {(4, 16): "≈10 s", (6, 8): "42 s", (6, 10): "75 s", (6, 12): "159 s", (6, 16): "920 s (≈1,000 s)",
         (8, 10): ">10,000 s (45 min–13 h)"}
# Table 4.1 three-level rows: 4 instructions, 6 ports; µops per instruction
TABLE41 = {"4x2+0": [2, 2, 2, 2], "2x3+2": [3, 3, 1, 1], "3x3+1": [3, 3, 3, 1], "2x4+2": [4, 4, 1, 1],
           "4x3+0": [3, 3, 3, 3], "4x4+0": [4, 4, 4, 4]}
PAPER41 = {"4x2+0": "94 s", "2x3+2": "96 s", "3x3+1": "238 s", "2x4+2": "542 s", "4x3+0": "884 s",
           "4x4+0": "5,815 s"}
EPSILON = Fraction(2, 100)


def ground_truth(ports: int, insns: int, g: int, uops: list[int] | None = None) -> PortMapping:
    rng = random.Random(1_000_003 * ports + 1009 * insns + g)
    names = [f"p{k}" for k in range(ports)]
    table = {}
    for j in range(insns):
        n_uops = uops[j] if uops else 1
        table[f"i{j}"] = [(rng.sample(names, rng.randint(1, min(4, ports))), 1) for _ in range(n_uops)]
    return PortMapping(names, table)


def check(truth: PortMapping, found: PortMapping, seed: int) -> tuple[float, float]:
    rng = random.Random(seed)
    exps = [Experiment([rng.choice(truth.instructions) for _ in range(5)]) for _ in range(1000)]
    a, b = evaluate_many(truth, exps), evaluate_many(found, exps)
    return float(pearson(b, a)), float(abs(a - b).max() / 5)


def parse_lever(items: list[str]) -> dict:
    out: dict = {}
    for item in items:
        k, _, v = item.partition("=")
        out[k] = int(v) if v.lstrip("-").isdigit() else v
    if "symmetry" in out:
        out["symmetry"] = bool(out["symmetry"])
    return out


def run_one(key: str, truth: PortMapping, run: int, lever: dict, uops: dict | None) -> dict:
    opts: dict = {"ports": truth.ports, "noise_epsilon": EPSILON, "solver_options": {"random_seed": run},
                  "check_experiments": 0}  # the benchmark checks on 1,000 experiments itself
    opts.update(lever)
    if uops:
        opts.update(kind="fixed-counts", uops_per_insn=uops)
    if opts.get("backend", "z3") != "z3":
        opts["solver_options"] = None
    oracle = SimulatedOracle(truth)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        res = infer(oracle, CegisOptions(**opts))
    except PmsolveError as exc:  # e.g. a per-check timeout from --lever timeout=…
        return {"key": key, "seconds": round(time.perf_counter() - t0, 3), "status": f"failed: {exc}"[:200],
                "added": oracle.queries, "initial": 0, "max_size": None, "pearson": float("nan"),
                "max_cpi_err": float("nan"), "equivalents": 0, "checks": None}
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    p, err = check(truth, res.mapping, run) if res.mapping else (float("nan"), float("nan"))
    return {"key": key, "seconds": round(secs, 3), "cpu_seconds": round(cpu, 3), "status": res.status, "added": len(res.added_experiments),
            "initial": res.initial, "max_size": res.stats.get("max_size"), "pearson": p, "max_cpi_err": err,
            "equivalents": len(res.equivalent), "checks": res.stats.get("solver_checks")}


def run_job(job: tuple) -> dict:
    """One independent run (a task for the executor): the row for the log."""
    key, truth, run, lever, counts, g = job
    row = run_one(key, truth, run, lever, counts)
    row.update(truth=g, run=run)
    return row


def summarize(rows: list[dict], keys: list[str], paper: dict, use_cpu: bool = False) -> None:
    """Median [min–max] wall-clock seconds per point (CPU seconds of the process with use_cpu:
    fairer on a shared machine; z3 runs in-process, so it is all of the work)."""
    last = {(r["key"], r.get("truth"), r.get("run")): r for r in rows}  # a rerun replaces a run
    by: dict[str, list[dict]] = {}
    for r in last.values():
        by.setdefault(r["key"], []).append(r)
    print(f"{'point':<22} {'runs':>4} {'median s' if not use_cpu else 'med CPU s':>9} {'min–max s':>16} {'added exps med [min–max]':>25} "
          f"{'max |e|':>7} {'Pearson min':>11} {'CPI err max':>11}  dissertation")
    for key in keys:
        rs = by.get(key)
        if not rs:
            continue
        failed = sum(not r["status"].startswith("inferred") for r in rs)
        secs = [r.get("cpu_seconds", r["seconds"]) if use_cpu else r["seconds"] for r in rs]
        added = [r["added"] for r in rs]
        base = key.split("|")[0]
        ref = paper.get(base, "")
        print(f"{key:<22} {len(rs):>4} {statistics.median(secs):>9.1f} {min(secs):>7.1f}–{max(secs):<8.1f} "
              f"{statistics.median(added):>11.0f} [{min(added)}–{max(added)}]{'':>8} "
              f"{max(r['max_size'] or 0 for r in rs):>7} {min(r['pearson'] for r in rs):>11.4f} "
              f"{max(r['max_cpi_err'] for r in rs):>11.4f}  {ref}" + (f"  ({failed} failed/timed out)" if failed else ""))


# --------------------------------------------------------------------------- the size ladder
LADDER = [(10, 6), (10, 8), (16, 8), (16, 10), (20, 10)]  # (instructions, ports)
REFERENCE = "cb01ca0"  # the commit before issue 42: today's code for the ratio


def ladder_one(ports: int, insns: int, g: int) -> dict:
    """One exact run with the default options (as `pmsolve infer cegis --ports K` does), in this
    process, with whatever pmsolve is first on sys.path: the row as JSON-able data."""
    from pmsolve.formats import mapping_to_json
    truth = ground_truth(ports, insns, g)
    oracle = SimulatedOracle(truth)
    t0, c0 = time.perf_counter(), time.process_time()
    res = infer(oracle, CegisOptions(ports=ports, check_experiments=0))
    return {"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0, "status": res.status,
            "checks": res.stats.get("solver_checks"), "measurements": len(res.measurements),
            "backend": res.stats.get("backend"),
            "stats": {k: v for k, v in res.stats.items() if isinstance(v, (int, float, str))}, "mapping": mapping_to_json(res.mapping) if res.mapping else None}


def exact(truth: PortMapping, data: dict) -> bool:
    """Inferred, and the mapping predicts the truth's tp⁻¹ exactly on every experiment of at most
    three instructions and on 500 random ones of 4–8 (what "exact" means for the ladder)."""
    from itertools import combinations_with_replacement
    from pmsolve.formats import mapping_from_json
    from pmsolve.throughput import inverse_throughput
    if data.get("status") != "inferred" or not data.get("mapping"):
        return False
    found = mapping_from_json(data["mapping"])
    insns = list(truth.instructions)
    rng = random.Random(7)
    exps = [Experiment(list(c)) for k in (1, 2, 3) for c in combinations_with_replacement(insns, k)]
    exps += [Experiment([rng.choice(insns) for _ in range(rng.randint(4, 8))]) for _ in range(500)]
    return all(inverse_throughput(found, e) == inverse_throughput(truth, e) for e in exps)


def reference_tree(ref: str, where: str) -> str:
    """The reference commit's pmsolve/ unpacked (git archive) into `where`, once."""
    import subprocess
    root = os.path.join(where, ref)
    if not os.path.isdir(os.path.join(root, "pmsolve")):
        os.makedirs(root, exist_ok=True)
        repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        tar = subprocess.run(["git", "-C", repo, "archive", ref, "pmsolve"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", root], input=tar, check=True)
    return root


def ladder_subprocess(root: str | None, ports: int, insns: int, g: int, cpu_limit: float,
                      mode: str = "--ladder-one") -> dict:
    """ladder_one in a fresh interpreter (the reference route: `root` = its tree), stopped after
    `cpu_limit` CPU seconds (then the row says so: its time is a lower bound). A CPU limit, not a
    wall-clock one: the runs share a loaded machine at low priority, where wall-clock time says
    more about the neighbours than about the algorithm."""
    import resource
    import signal
    import subprocess
    env = dict(os.environ)
    if root:
        env["PMSOLVE_CEGIS_ROOT"] = root

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_limit), int(cpu_limit) + 5))

    cmd = [sys.executable, os.path.abspath(__file__), mode, f"{insns}x{ports}:{g}"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, preexec_fn=limit)
    if proc.returncode == 0:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return {"seconds": time.perf_counter() - t0, "cpu_seconds": cpu_limit, "status": "cpu limit",
                "checks": None, "measurements": None}
    return {"seconds": None, "cpu_seconds": None, "status": f"failed: {proc.stderr.strip()[-200:]}",
            "checks": None, "measurements": None}


def _ladder_job(job: tuple) -> dict:
    key, g, route, root, ports, insns, cpu_limit, mode = job
    row = ladder_subprocess(root, ports, insns, g, cpu_limit, mode)
    truth = ground_truth(ports, insns, g) if mode == "--ladder-one" else component_truth(insns, g)
    # the component search may name its ports differently or use fewer: compare tp⁻¹ where both exist
    row["exact"] = (mode == "--ladder-one" or row.get("ports") == row.get("true_ports")) and exact(truth, row)
    row.update(size=key, truth=g, route=route, date=time.strftime("%Y-%m-%d %H:%M"))
    row.pop("mapping", None)
    return row


def read_rows(log: str) -> dict:
    """The rows of a ladder or components log, by (size, truth, route); a later line wins."""
    done: dict = {}
    if os.path.exists(log):
        with open(log) as fh:
            for line in fh:
                if line.strip():
                    r = json.loads(line)
                    done[r["size"], r["truth"], r["route"]] = r
    return done


def run_rows(args: argparse.Namespace, points: list[tuple[str, int, int]], mode: str) -> dict:
    """Every (point, seed) on both routes, the new route's runs first, `--jobs` at a time; JSON
    lines into --log (resumable). points: (key, ports, instructions)."""
    from concurrent.futures import ThreadPoolExecutor
    ref_root = reference_tree(args.reference, args.reference_dir)
    done = read_rows(args.log)
    routes = [(r, root) for r, root in (("new", None), ("reference", ref_root)) if r in args.routes.split(",")]
    jobs = [(key, g, route, root, k, n, args.cpu_limit, mode)
            for route, root in routes
            for key, k, n in points for g in range(args.truths) if (key, g, route) not in done]

    def finished(row: dict) -> None:
        done[row["size"], row["truth"], row["route"]] = row
        with open(args.log, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"{row['size']} truth {row['truth']} {row['route']}: {row['status']}, {row['seconds'] or 0:.1f} s wall, "
              f"{row['cpu_seconds'] or 0:.1f} s CPU, exact {row['exact']}", file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:  # each job is a subprocess
        for row in pool.map(_ladder_job, jobs):
            finished(row)
    return done


def run_ladder(args: argparse.Namespace) -> None:
    sizes = LADDER if not args.sizes else [tuple(int(x) for x in p.split("x")) for p in args.sizes.split(",")]
    done = run_rows(args, [(f"{n}x{k}", k, n) for n, k in sizes], "--ladder-one")
    ladder_table(done, sizes, args.truths)


def ladder_table(done: dict, sizes: list, truths: int) -> None:
    def med(xs: list) -> str:
        xs = [x for x in xs if x is not None]
        return f"{statistics.median(xs):.1f}" if xs else "–"

    print(f"{'insns×ports':<11} {'route':<9} {'runs':>4} {'wall s med':>10} {'[min–max]':>15} {'CPU s med':>9} "
          f"{'checks med':>10} {'measured med':>12} {'exact':>6} {'ref/new wall':>12} {'ref/new CPU':>11}")
    for n, k in sizes:
        key = f"{n}x{k}" if k is not None else str(n)
        rows = {route: [done[key, g, route] for g in range(truths) if (key, g, route) in done]
                for route in ("new", "reference")}
        for route, rs in rows.items():
            if not rs:
                continue
            secs = [r["seconds"] for r in rs if r["seconds"] is not None]
            capped = any(r["status"] == "cpu limit" for r in rs)
            ratio = cpu_ratio = ""
            if route == "reference" and rows["new"]:  # median over seeds of the per-seed ratio
                new = {r["truth"]: r for r in rows["new"]}
                rat = [r["seconds"] / new[r["truth"]]["seconds"] for r in rs if r["truth"] in new and r["seconds"]]
                ratio = (("≥ " if capped else "") + f"{statistics.median(rat):.1f}×") if rat else ""
                rat = [r["cpu_seconds"] / new[r["truth"]]["cpu_seconds"] for r in rs
                       if r["truth"] in new and r["cpu_seconds"] and new[r["truth"]]["cpu_seconds"]]
                cpu_ratio = (("≥ " if capped else "") + f"{statistics.median(rat):.1f}×") if rat else ""
            print(f"{key:<11} {route:<9} {len(rs):>4} {('≥ ' if capped else '') + med(secs):>10} "
                  f"{(f'{min(secs):.1f}–{max(secs):.1f}' if secs else '–'):>15} "
                  f"{('≥ ' if capped else '') + med([r['cpu_seconds'] for r in rs]):>9} {med([r['checks'] for r in rs]):>10} "
                  f"{med([r['measurements'] for r in rs]):>12} {sum(r['exact'] for r in rs):>3}/{len(rs):<2} {ratio:>12} {cpu_ratio:>11}")


# --------------------------------------------------------------------------- structure-stage components
COMPONENTS = [6, 8, 10, 11, 12]  # blocking candidates in one component (on up to 10 ports, R_max 6)


def component_truth(n: int, g: int, ports: int = 10) -> PortMapping:
    """n single-µop blocking candidates on 1–3 of `ports` ports whose overlaps connect them all
    (one component of the counter-free structure stage); seeded."""
    rng = random.Random(7919 * n + g)
    names = [f"p{k}" for k in range(ports)]
    while True:
        sets = [frozenset(rng.sample(names, rng.randint(1, 3))) for _ in range(n)]
        if len(set(sets)) < n:  # a class has one representative: no two share a port set
            continue
        seen, todo = {0}, [0]
        while todo:
            a = todo.pop()
            for b in range(n):
                if b not in seen and sets[a] & sets[b]:
                    seen.add(b)
                    todo.append(b)
        if len(seen) == n:
            return PortMapping(names, {f"b{j}": [(sorted(sets[j]), 1)] for j in range(n)})


def component_one(n: int, g: int) -> dict:
    """The structure stage's port search (structure._port_search, as _solve_component calls it: pairs
    and random mixes first, P = lower bound, +1, …) on one generated component, in this process."""
    from pmsolve.infer.explain import ExplainOptions
    from pmsolve.infer.explain import structure as S
    truth = component_truth(n, g)
    r_max = 6.0
    oracle = SimulatedOracle(truth, r_max=r_max)
    comp = list(truth.instructions)
    size = {i: len(truth.uops_of(i)[0].ports) for i in comp}
    # no per-check timeout (the main job's 20 s are wall-clock: on a loaded machine at low priority
    # they fire and leave port counts open); an exact oracle; port counts up to the sum of the
    # sizes, so that the search reaches the truth's count (the main job tries 2 beyond the lower
    # bound, then multiplicities)
    o = ExplainOptions(tolerance=0.0, extra_ports=16)
    pairs = S.pair_experiments(sorted(comp), size)
    values = dict(zip(pairs, oracle.measure(pairs)))
    interacting = {frozenset(e) for e, t in values.items() if S.interacts(e, t, size, r_max, o)}
    extra = list(values) + S.random_mixes(comp, size, min(12, 2 * len(comp)), seed=len(comp))
    t0, c0 = time.perf_counter(), time.process_time()
    res, core, runs = S._port_search(oracle, 0, comp, size, {}, extra, interacting, r_max, o, lambda msg: None)
    from pmsolve.formats import mapping_to_json
    return {"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0, "runs": runs,
            "status": res.status if res is not None else "none", "measurements": oracle.queries,
            "ports": len(res.mapping.ports) if res is not None and res.mapping else None,
            "true_ports": len(set().union(*(truth.uops_of(i)[0].ports for i in comp))),
            "checks": res.stats.get("solver_checks") if res is not None else None,
            "mapping": mapping_to_json(res.mapping) if res is not None and res.mapping else None}


def run_components(args: argparse.Namespace) -> None:
    sizes = COMPONENTS if not args.sizes else [int(x) for x in args.sizes.split(",")]
    done = run_rows(args, [(str(n), 0, n) for n in sizes], "--component-one")
    ladder_table(done, [(n, None) for n in sizes], args.truths)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", help="comma-separated PORTSxINSNS (default: the whole grid)")
    ap.add_argument("--table41", action="store_true", help="the three-level rows of Table 4.1 instead")
    ap.add_argument("--truths", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lever", action="append", default=[],
                    help="CegisOptions override NAME=VALUE (symmetry=0, committee=1, initial=pairs, "
                         "strategy=joint, encoding=relate, backend=cvc5, ...); repeatable")
    ap.add_argument("--log", default="cegis_bench.jsonl", help="JSON lines, one per finished run (resumable)")
    ap.add_argument("--summary", action="store_true", help="only print the table from --log")
    ap.add_argument("--cpu", action="store_true", help="report process CPU seconds instead of wall-clock")
    ap.add_argument("--ladder", action="store_true",
                    help="the size ladder (10×6 … 20×10 instructions×ports, exact, default options) against the "
                         "reference commit's code, both in subprocesses, one at a time; --truths seeds per size")
    ap.add_argument("--sizes", help="ladder sizes as INSNSxPORTS,... (default 10x6,10x8,16x8,16x10,20x10)")
    ap.add_argument("--reference", default=REFERENCE, help=f"the reference commit (default {REFERENCE})")
    ap.add_argument("--reference-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cegis-reference"),
                    help="where the reference commit's pmsolve/ is unpacked")
    ap.add_argument("--cpu-limit", type=float, default=900.0, help="CPU seconds per ladder run (then: ≥ that)")
    ap.add_argument("--routes", default="new,reference", help="which routes to run: new, reference or both")
    ap.add_argument("--jobs", type=int, default=1, help="ladder runs at once (each in its own process)")
    ap.add_argument("--components", action="store_true",
                    help="the structure stage's port search on generated components of 6–12 blocking candidates "
                         "(10 ports), new vs the reference commit, like --ladder")
    ap.add_argument("--ladder-one", help=argparse.SUPPRESS)
    ap.add_argument("--component-one", help=argparse.SUPPRESS)
    add_executor_arguments(ap, workers_help="independent runs at once (timings then include contention)")
    args = ap.parse_args()
    if args.ladder_one:
        size, g = args.ladder_one.split(":")
        n, k = (int(x) for x in size.split("x"))
        print(json.dumps(ladder_one(k, n, int(g))))
        return 0
    if args.component_one:
        size, g = args.component_one.split(":")
        print(json.dumps(component_one(int(size.split("x")[0]), int(g))))
        return 0
    if args.components and args.summary:
        sizes = COMPONENTS if not args.sizes else [int(x) for x in args.sizes.split(",")]
        ladder_table(read_rows(args.log), [(n, None) for n in sizes], args.truths)
        return 0
    if args.components:
        run_components(args)
        return 0
    if args.ladder:
        if args.summary:
            done = read_rows(args.log)
            sizes = LADDER if not args.sizes else [tuple(int(x) for x in p.split("x")) for p in args.sizes.split(",")]
            ladder_table(done, sizes, args.truths)
        else:
            run_ladder(args)
        return 0
    lever = parse_lever(args.lever)
    tag = ("|" + ",".join(args.lever)) if args.lever else ""
    if args.table41:
        points = [(name, 6, len(u), u) for name, u in TABLE41.items()]
        paper = PAPER41
    else:
        grid = GRID if not args.points else [tuple(int(x) for x in p.split("x")) for p in args.points.split(",")]
        points = [(f"{k}x{n}", k, n, None) for k, n in grid]
        paper = {f"{k}x{n}": v for (k, n), v in PAPER.items()}
    done: list[dict] = []
    if os.path.exists(args.log):
        with open(args.log) as fh:
            done = [json.loads(line) for line in fh if line.strip()]
    keys = [name + tag for name, *_ in points]
    if not args.summary:
        seen = {(r["key"], r["truth"], r["run"]) for r in done}
        jobs = []
        for name, k, n, uops in points:
            for g in range(args.truths):
                truth = ground_truth(k, n, g, uops)
                counts = {i: len(truth.uops_of(i)) for i in truth.instructions} if uops else None
                if uops:  # equal port sets merge into one µop with count 2: keep the count per insn
                    counts = {i: sum(u.count for u in truth.uops_of(i)) for i in truth.instructions}
                jobs += [(name + tag, truth, run, lever, counts, g) for run in range(args.runs)
                         if (name + tag, g, run) not in seen]

        def finished(k: int, row: dict) -> None:  # in this process, as each run returns
            done.append(row)
            with open(args.log, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(f"{row['key']} truth {row['truth']} run {row['run']}: {row['seconds']:.1f}s, {row['status']}, "
                  f"+{row['added']} experiments, Pearson {row['pearson']:.4f}", file=sys.stderr, flush=True)

        with executor_from_args(args) as ex:
            ex.map(run_job, jobs, on_result=finished)
    summarize(done, keys, paper, args.cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
