"""Speed of the main job on this machine: measurement throughput and the time per stage.

    python benchmarks/host_job.py [--experiments 120] [--profile smoke|quick|all] [--workdir DIR] [--no-job] [--json]

1. Measurement throughput, in process: the same random 1-4-instruction experiments of the
   quick profile's schemes measured as one batch (how the job measures: one assembly and one
   worker round trip for many experiments) and one experiment per call (the reference route),
   each on a fresh oracle without a store. Printed: experiments per second of each and their
   ratio (the machine is noisy; compare the ratio, not the absolute figures).
2. The gate (``HarnessSettings.gate_seconds``): the same experiments measured twice with the
   worker waiting for quiet reference kernels and twice without, interleaved; printed are the
   experiments per second of each, the share of its time the worker waited for quiet
   references, and how far the two passes of each disagree (median and share above 2 %): on a
   noisy VM the gate costs time and buys repeatable values.
3. Rounds (``HarnessSettings.separate_rounds``): the same, rounds that open with the closing
   calibration of the round before (timing version 5) and rounds that each warm the variants
   and calibrate on their own (version 4); printed as in 2, and how far the two rules' values
   are apart.
4. Reference ticks (``HarnessSettings.reference_ticks``): the same, the calibration chain and the
   reference kernels timed for their own ticks (15,000 since 2026-12-02) and as long as the
   variants (``target_ticks``, the rule before).
5. The clock (``HarnessSettings.steady_clock``): the same, rounds that count only when their
   calibrations agree (timing version 7) and rounds that count whatever the clock did (6).
6. Preparation: what the parent does per experiment while the worker measures (operand
   allocation and rendering, then GNU ``as`` for a batch of 48, the object file read in
   process), against the reference route of reading it with ``objcopy`` and ``nm`` (the rule
   until 2026-12-07), beside the batch route's time per experiment (1.): the parent must stay
   below the worker's share of it, or the worker waits for it.
7. The job (skipped with ``--no-job``) (`pmsolve infer --profile …`) with its time and experiments per stage, the
   explainable inference's own stages included. ``--workdir`` keeps the measurement store, so
   a second run shows what a resumed run costs; without it a temporary folder is used.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pmsolve.harness.assemble import assemble, source  # noqa: E402
from pmsolve.harness.hardware import HardwareOracle, HarnessSettings, available  # noqa: E402
from pmsolve.isa.catalogue import load_catalogue  # noqa: E402
from pmsolve.jobs import profiles  # noqa: E402
from pmsolve.jobs.host import JobConfig, run  # noqa: E402
from pmsolve.model import Experiment  # noqa: E402


def throughput(n: int, seed: int) -> dict:
    names = profiles.choose(load_catalogue(), "quick")
    rng = random.Random(seed)
    exps = list({Experiment([rng.choice(names) for _ in range(rng.randint(1, 4))]): None for _ in range(n)})
    out = {"experiments": len(exps)}
    for route in ("batch", "one per call"):
        with HardwareOracle(names, HarnessSettings(), on_error="nan") as oracle:   # a crash is one NaN
            oracle.measure([Experiment({names[0]: 1})])      # start the worker outside the timing
            t = time.perf_counter()
            if route == "batch":
                oracle.measure(exps)
            else:
                for e in exps:
                    oracle.measure([e])
            out[route] = len(exps) / (time.perf_counter() - t)
    out["ratio"] = out["batch"] / out["one per call"]
    return out


def interleaved(n: int, seed: int, routes: dict[str, HarnessSettings], chunk: int = 10) -> dict:
    """The same experiments measured twice by each route, the routes interleaved in chunks of
    ``chunk`` experiments (every route's worker alive throughout, the order within a chunk
    alternating), so that a neighbour's burst of a few seconds falls on every route alike: whole
    passes in turn gave one route the burst (on the Zen 4 VM, 2026-12-02: 95 % of one route's time
    waiting for quiet references). Experiments per second of each route, how far its two passes
    disagree, and how far the routes' values are apart (each route's two passes averaged)."""
    names = profiles.choose(load_catalogue(), "quick")
    rng = random.Random(seed)
    exps = list({Experiment([rng.choice(names) for _ in range(rng.randint(1, 4))]): None for _ in range(n)})
    runs: dict[str, list[list[float]]] = {r: [[], []] for r in routes}
    seconds = {r: 0.0 for r in routes}
    waited = {r: 0.0 for r in routes}   # by the worker's gate, for quiet reference kernels
    oracles = {r: HardwareOracle(names, settings, on_error="nan") for r, settings in routes.items()}
    try:
        for oracle in oracles.values():
            oracle.measure([Experiment({names[0]: 1})])
        for p in range(2):
            for c in range(0, len(exps), chunk):
                order = list(routes) if (c // chunk + p) % 2 == 0 else list(routes)[::-1]
                for route in order:
                    oracle = oracles[route]
                    t, w = time.perf_counter(), oracle.waited
                    runs[route][p] += oracle.measure(exps[c:c + chunk])
                    seconds[route] += time.perf_counter() - t
                    waited[route] += oracle.waited - w
    finally:
        for oracle in oracles.values():
            oracle.close()
    out: dict = {"experiments": len(exps)}
    for route, (a, b) in runs.items():
        n, median, share = _apart(a, b)
        out[route] = {"per_second": 2 * len(exps) / seconds[route], "gate_waited": waited[route] / seconds[route],
                      "measured_twice": n,
                      "median_disagreement": median, "above_2_percent": share}
    first, second = ([(x + y) / 2 for x, y in zip(*runs[r])] for r in list(routes)[:2])
    _, median, share = _apart(first, second)
    out["routes_apart"] = {"median": median, "above_2_percent": share}
    return out


def preparation(n: int, seed: int, per_batch: int = 48) -> dict:
    """Milliseconds per experiment of the parent's kernel preparation, on experiments shaped like
    the characterisation's (a scheme beside up to eight copies of another)."""
    names = profiles.choose(load_catalogue(), "quick")
    rng = random.Random(seed)
    exps = list({Experiment({rng.choice(names): 1, rng.choice(names): rng.randint(1, 8)}): None for _ in range(n)})
    with HardwareOracle(names, HarnessSettings(), on_error="nan") as oracle:
        t = time.perf_counter()
        kernels = [oracle._kernels(i, e)[0] for i, e in enumerate(exps)]
        allocation = time.perf_counter() - t
        support = oracle.support_kernels()
    batches = [{**support, **{k: v for ks in kernels[i:i + per_batch] for k, v in ks.items()}}
               for i in range(0, len(kernels), per_batch)]
    t = time.perf_counter()
    for b in batches:
        assemble(b)
    in_process = time.perf_counter() - t
    tools = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for b in batches:
            s_file, o_file = Path(tmp) / "k.s", Path(tmp) / "k.o"
            t = time.perf_counter()
            s_file.write_text(source(b))
            subprocess.run(["as", "--64", "-o", str(o_file), str(s_file)], check=True)
            subprocess.run(["objcopy", "-O", "binary", "--only-section=.text", str(o_file), str(Path(tmp) / "k.bin")],
                           check=True)
            subprocess.run(["nm", "--defined-only", str(o_file)], check=True, capture_output=True)
            tools += time.perf_counter() - t
    ms = 1000 / len(exps)
    return {"experiments": len(exps), "allocation_ms": allocation * ms, "assembly_ms": in_process * ms,
            "assembly_objcopy_nm_ms": tools * ms}


def _apart(a: list[float], b: list[float]) -> tuple[int, float | None, float | None]:
    """How far two passes' values are apart: how many compared, the median relative gap, the
    share of gaps over 2 % (None when nothing was measured by both)."""
    d = sorted(abs(x - y) / min(x, y) for x, y in zip(a, b) if x == x and y == y and min(x, y) > 0)
    return len(d), (d[len(d) // 2] if d else None), (sum(x > 0.02 for x in d) / len(d) if d else None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiments", type=int, default=120, help="experiments for the throughput part")
    ap.add_argument("--profile", default="smoke", choices=sorted(profiles.PROFILES))
    ap.add_argument("--workdir", help="keep the job's store and state here (default: a temporary folder)")
    ap.add_argument("--no-pmevo", action="store_true", help="skip PMEvo's comparison in the job")
    ap.add_argument("--no-job", action="store_true", help="only the measurement comparisons, not the job")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if available():
        print(f"skipped: {available()}")
        return 0
    tp = throughput(args.experiments, 1)
    tp["preparation"] = preparation(4 * args.experiments, 6)
    ab = {"gate": interleaved(args.experiments // 2, 2, {"gate": HarnessSettings(),
                                                          "no gate": HarnessSettings(gate_seconds=0.0)}),
          "rounds": interleaved(args.experiments // 2, 3, {"carried": HarnessSettings(),
                                                           "separate": HarnessSettings(separate_rounds=True)}),
          "clock": interleaved(args.experiments // 2, 5, {
              "steady clock": HarnessSettings(),
              "any clock": HarnessSettings(steady_clock=False, timing_version=6)}),
          "reference ticks": interleaved(args.experiments // 2, 4, {
              f"{HarnessSettings().reference_ticks:,}": HarnessSettings(),
              f"{HarnessSettings().target_ticks:,}":
                  HarnessSettings(reference_ticks=HarnessSettings().target_ticks)})}
    if args.no_job:
        print(json.dumps({"throughput": tp, **ab}, indent=1) if args.json else _ab_text(tp, ab))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        config = JobConfig(profile=args.profile, workdir=args.workdir or tmp, compare_pmevo=not args.no_pmevo)
        t = time.perf_counter()
        report = run(config, say=lambda m: print(m, file=sys.stderr, flush=True) if not args.json else None)
        wall = time.perf_counter() - t
    stages = report.result.summary["stats"].get("stages", {}) if report.result is not None else {}
    doc = {"machine": report.machine, "throughput": tp, **ab, "profile": args.profile, "wall_seconds": round(wall, 1),
           "job_seconds": report.seconds, "inference_stages": stages,
           "mapped": len(report.mapping.uops) if report.mapping else 0}
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    print(f"{report.machine}")
    print(_ab_text(tp, ab))
    print(f"job, profile {args.profile}: {doc['mapped']} schemes mapped, {wall:.0f} s wall")
    for name, sec in report.seconds.items():
        print(f"  {name:28s} {sec:8.1f} s")
    for name, st in stages.items():
        rate = st["measured"] / st["seconds"] if st["seconds"] else 0.0
        print(f"    inference: {name:38s} {st['seconds']:8.1f} s  {st['measured']:6d} experiments  "
              f"{rate:6.1f}/s")
    return 0


def _ab_text(tp: dict, ab: dict) -> str:
    lines = [f"measurement throughput ({tp['experiments']} experiments of 1-4 instructions, in process):",
             f"  one batch          {tp['batch']:7.1f} experiments/s",
             f"  one per call       {tp['one per call']:7.1f} experiments/s   (reference route)",
             f"  ratio              {tp['ratio']:7.2f}x"]
    prep = tp["preparation"]
    lines += [f"the parent's preparation per experiment ({prep['experiments']} experiments of a scheme beside "
              f"another's copies):",
              f"  allocation and rendering     {prep['allocation_ms']:6.2f} ms",
              f"  assembly, object read here   {prep['assembly_ms']:6.2f} ms",
              f"  assembly, objcopy and nm     {prep['assembly_objcopy_nm_ms']:6.2f} ms   (reference route; "
              f"{prep['assembly_objcopy_nm_ms'] / prep['assembly_ms']:.2f}x)",
              f"  one batch takes per one      {1000 / tp['batch']:6.2f} ms   (above, worker and parent together): "
              f"the parent's {prep['allocation_ms'] + prep['assembly_ms']:.2f} ms must stay below the worker's share"]
    for what, res in ab.items():
        routes = [r for r in res if r not in ("experiments", "routes_apart")]
        lines.append(f"{what} ({res['experiments']} experiments measured twice each way, interleaved):")
        for route in routes:
            g = res[route]
            agree = (f"two passes disagree by {100 * g['median_disagreement']:.2f} % (median), "
                     f"{100 * g['above_2_percent']:.0f} % above 2 %") if g["measured_twice"] else "nothing measured twice"
            lines.append(f"  {route:12s} {g['per_second']:7.1f} experiments/s ({100 * g['gate_waited']:.0f} % of the time "
                         f"waiting for quiet references), {agree}")
        apart = res["routes_apart"]
        lines.append(f"  rate ratio ({routes[0]} / {routes[1]}) "
                     f"{res[routes[0]]['per_second'] / res[routes[1]]['per_second']:.2f}x; the routes' values "
                     + (f"{100 * apart['median']:.2f} % apart (median), {100 * apart['above_2_percent']:.0f} % above 2 %"
                        if apart["median"] is not None else "not compared"))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
