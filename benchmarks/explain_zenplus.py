"""Explainable port-mapping inference (ch. 6) against a simulated Zen+ (issue 7).

The ground truth is the explainable Zen+ mapping of the ASPLOS'24 study
(``../shared/reference/zenplus/explainable_port_mapping.json``: 1,700 schemes with a port
usage, 10 ports), played by the simulated oracle with a µop counter and a front end of 5
instructions per cycle. The pipeline runs every stage (singletons, candidates, Thm 6.3 classes,
peak IPC, CEGIS on the blocking instructions plus the two stores of Table 6.2 as improper
blocking instructions, characterisation, majority vote) and the result is compared with the
truth up to port renaming. Schemes that disagree are counted by why.

    python benchmarks/explain_zenplus.py                        # exact oracle, 3 runs
    python benchmarks/explain_zenplus.py --noise 0.01           # ±1 % multiplicative noise
    python benchmarks/explain_zenplus.py --counter macro-ops --hook zenplus
        # the counter reports the study's macro-op counts (numuops_unadjusted) and Postulate 6.5
        # adjusts them, as on real Zen+ hardware

``--state DIR`` keeps each configuration's checkpoint (rerun = resume; delete it to start over).

Measured on the shared 2-core VM (22 Nov 2026; load average ≈ 8 from other engineers' jobs,
two of these runs in parallel): all 1,700 schemes of the truth, 10 ports, ε = 0.02, 3 runs.

    exact oracle                      1,700/1,700 identical up to renaming (100.0 %); 40.5 min wall,
                                      12.7 min CPU — CEGIS on the 10+2 blocking instructions is
                                      40.2 min of it (49 added experiments, 3 alternatives the
                                      5-IPC front end hides); the same CEGIS alone on the VM took
                                      8.6 min wall; characterising 1,150 schemes × 3 runs: ~15 s
    noise 0.01 (σ of ±1 %), defaults  930/1,700 (54.7 %): 732 "outside the model" — the estimate
                                      (t(e)−t(base))·|Q| has σ ≈ √2·1 %·k µops, k ≥ 10, so the
                                      0.3 integrality test trips; 33 unstable, 5 unsatisfiable
      --integrality 0.5 --tolerance 0.03 (always round; final check within 3 %):
                                      runs 1: 1,548 (91.1 %)  runs 3: 1,544 (90.8 %)  runs 5: 1,550 (91.2 %)
                                      misses by true µop count (runs 3): 1-2 µops 2/1,244,
                                      3-4 µops 11/299, 5+ µops 143/157 — k = |Q|·µops grows with
                                      the µop count and so does the error; the vote cannot fix a
                                      bias that every run shares
    --counter macro-ops --hook zenplus (exact; blocking stage reused from the first run, whose
                                      class representatives are the same)
                                      1,424/1,700 (83.8 %): the 276 misses are exactly the schemes
                                      whose reference port usage has more µops than the study's
                                      own adjusted count: 258 "micro-coded", 18 "outside the model"
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pmsolve.formats import load_mapping  # noqa: E402
from pmsolve.harness.simulated import SimulatedOracle  # noqa: E402
from pmsolve.infer.explain import ExplainOptions, infer  # noqa: E402
from pmsolve.infer.explain.compare import agreement  # noqa: E402

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "zenplus" / "explainable_port_mapping.json"
STORES = (("mov dword ptr W:MEM(32), R:GPR:32", 2), ("vmovapd xmmword ptr W:MEM(128), R:XMM0..15", 2))


class MacroOpCounter:
    """The simulated oracle, but its counter reports the study's measured macro-op counts."""

    def __init__(self, oracle: SimulatedOracle, counts: dict[str, int]):
        self.oracle, self.counts = oracle, counts

    instructions = property(lambda self: self.oracle.instructions)
    has_uop_counter = property(lambda self: True)

    def measure(self, exps):
        return self.oracle.measure(exps)

    def uop_counts(self, exps):
        return [float(sum(n * self.counts[i] for i, n in e.items())) for e in exps]

    def describe(self):
        return self.oracle.describe() + ", macro-op counter"


def why(insn: str, result) -> str:
    x = result.explanations.get(insn)
    if x is None:
        return "not explained"
    if x.misfit is not None:
        return f"misfit: {x.misfit.category}"
    return "different port usage"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", default=str(REFERENCE))
    ap.add_argument("--noise", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--counter", choices=("uops", "macro-ops"), default="uops")
    ap.add_argument("--hook", default="none")
    ap.add_argument("--integrality", type=float, default=0.3)
    ap.add_argument("--tolerance", type=float, default=0.0)
    ap.add_argument("--k-rule", default="impl")
    ap.add_argument("--limit", type=int, help="only the first N schemes (+ the stores)")
    ap.add_argument("--state", help="folder for checkpoints")
    ap.add_argument("--out", help="write the explained mapping here")
    ap.add_argument("--json", help="append a JSON summary line to this file")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    if not Path(args.reference).exists():
        print(f"reference mapping {args.reference} is missing", file=sys.stderr)
        return 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        truth = load_mapping(args.reference)
    raw = json.loads(Path(args.reference).read_text())["data"]
    oracle = SimulatedOracle(truth, r_max=5, noise=args.noise, seed=args.seed, uop_counter=True)
    if args.counter == "macro-ops":
        oracle = MacroOpCounter(oracle, {i: raw[i]["numuops_unadjusted"] for i in truth.instructions})
    schemes = list(truth.instructions)[:args.limit] if args.limit else list(truth.instructions)
    opts = ExplainOptions(ports=10, epsilon=0.02, runs=args.runs, improper=STORES, uop_hook=args.hook,
                          integrality=args.integrality, tolerance=args.tolerance, k_rule=args.k_rule,
                          instructions=tuple(schemes))
    state = None
    if args.state:
        Path(args.state).mkdir(parents=True, exist_ok=True)
        state = str(Path(args.state) / f"zen-noise{args.noise}-seed{args.seed}-{args.counter}-{args.hook}"
                                       f"-{args.limit or 'all'}.json")
    t0 = time.perf_counter()
    res = infer(oracle, opts, state=state,
                  progress=None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True)))
    seconds = time.perf_counter() - t0
    if args.out:
        res.save(args.out)
    schemes = list(dict.fromkeys(schemes + [s for s, _ in STORES]))
    ag = agreement(truth, res.mapping, schemes)
    reasons = Counter(why(i, res) for i in ag.different + ag.missing)
    blk = res.summary["blocking"]
    print(f"noise {args.noise:g}, seed {args.seed}, runs {args.runs}, counter {args.counter}, hook {args.hook}, "
          f"k rule {args.k_rule}, integrality {args.integrality:g}, tolerance {args.tolerance:g}")
    print(f"schemes {ag.total}: identical port usage up to renaming {len(ag.identical)} "
          f"({100 * ag.rate():.1f} %), different {len(ag.different)}, unmapped {len(ag.missing)}")
    print(f"time {seconds:.0f} s this call ({res.summary['stats']['seconds']:.0f} s), "
          f"{res.summary['stats']['measurements']} measurements")
    print(f"blocking: {len(blk['classes'])} classes, suite {len(blk['suite'])}, peak {res.summary['r_max']}, "
          f"CEGIS added {blk['added_experiments']} experiments, dropped {[d['insn'] for d in blk['dropped']]}, "
          f"{blk['equivalent_mappings']} indistinguishable alternative(s)")
    print("misfit categories: " + ", ".join(f"{k} {v}" for k, v in res.category_counts().items()))
    print("disagreements by reason: " + (", ".join(f"{k} {v}" for k, v in reasons.most_common()) or "none"))
    for i in (ag.different + ag.missing)[:8]:
        x = res.explanations.get(i)
        got = x.misfit.reason if x is not None and x.misfit else (
            " + ".join(f"{n}×[{','.join(ag.renaming.get(p, p) for p in ps)}]" for ps, n in x.uops) if x else "-")
        print(f"  {i}: truth {' + '.join(map(str, truth.uops[i]))}; got {got}")
    by_size = Counter()
    for i in ag.different + ag.missing:
        n = sum(u.count for u in truth.uops[i])
        by_size["1-2 µops" if n <= 2 else "3-4 µops" if n <= 4 else "5+ µops"] += 1
    totals = Counter("1-2 µops" if n <= 2 else "3-4 µops" if n <= 4 else "5+ µops"
                     for n in (sum(u.count for u in truth.uops[i]) for i in schemes))
    print("disagreements by true µop count: " + ", ".join(f"{k} {by_size.get(k, 0)}/{totals[k]}"
                                                           for k in sorted(totals)))
    for w in res.warnings:
        print("warning: " + w)
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps({"noise": args.noise, "seed": args.seed, "runs": args.runs, "counter": args.counter,
                                "hook": args.hook, "integrality": args.integrality, "tolerance": args.tolerance,
                                "k_rule": args.k_rule, "schemes": ag.total, "identical": len(ag.identical),
                                "rate": ag.rate(), "seconds": seconds, "reasons": dict(reasons),
                                "categories": res.category_counts()}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
