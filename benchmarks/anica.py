"""AnICA evaluation in the style of Table 8.3 (dissertation sec. 8.2.3).

For a pair of predictors: sample a test set of random 4-instruction blocks (γ̂ of the
unconstrained 4-instruction abstract block, over the campaign's universe, i.e. without schemes a
predictor cannot handle alone), measure the share that is interesting, run an AnICA campaign
(resumable: rerunning with the same --out continues it), and report the share of interesting
test blocks subsumed (Def. 8.7) by the discoveries and by the 10 the coverage ILP picks, plus
run time. Pairs (issue 9, item 5):

    mca-osaca   llvm-mca -mcpu=znver3        vs  OSACA ZEN3
    mca-zenp    llvm-mca -mcpu=znver1        vs  pmsolve's predictor, explainable Zen+ mapping (R_max 5)
    mca-hw      llvm-mca -mcpu=znver3        vs  this CPU (hardware oracle)

    python benchmarks/anica.py mca-osaca --out runs/anica-mca-osaca --seconds 3600 --discoveries 150
    python benchmarks/anica.py mca-hw --blocks 1000 --seconds 900 --out runs/anica-mca-hw

Prints what it measured; writes summary.json and the campaign report into --out.

Measured 2026-11-22 on the shared 2-core Zen 3 VM (load average 4-11 from other work), defaults
(threshold 0.5 relative, 30 samples per check, 3 expansion orders, blocks of ≤ 4 for discovery):

    pair                         BBs interesting  covered (by)        top 10   campaign   test set
    llvm-mca znver3 / OSACA ZEN3      21.7 %      95.1 % (97 of 150)  64.8 %    9.2 min    224 s
    llvm-mca znver1 / Zen+ mapping    28.9 %      94.9 % (112 of 141) 73.7 %   25.0 min      3 s
    llvm-mca znver3 / this CPU        20.6 %      85.0 % (24 of 26)   85.0 %   16.3 min     87 s
        (hardware: 1,000 test blocks, 20 samples per check, 2 orders, 15-minute budget)

    python benchmarks/anica.py mca-osaca --out /tmp/anica-runs/mca-osaca-fixed --seconds 1500
    python benchmarks/anica.py mca-zenp --out /tmp/anica-runs/mca-zenp --seconds 1500
    python benchmarks/anica.py mca-hw --out /tmp/anica-runs/mca-hw --blocks 1000 --seconds 900 \
        --samples 20 --orders 2

An earlier llvm-mca/OSACA run (before commit 4de07d0 fixed the OSACA predictor's history
dependence) had 52.6 % interesting and its top discoveries were exactly the read-modify-write
memory forms whose OSACA answers grew with every block analysed (up to ~900 cycles).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pmsolve.anica import report  # noqa: E402
from pmsolve.predictors import open_predictor  # noqa: E402
from pmsolve.anica.campaign import Campaign  # noqa: E402
from pmsolve.anica.config import Config  # noqa: E402
from pmsolve.anica.domain import AbstractBlock  # noqa: E402
from pmsolve.anica.rank import coverage_table, generality, top_k  # noqa: E402
from pmsolve.anica.sampler import to_block  # noqa: E402
from pmsolve.fileio import atomic_write_text  # noqa: E402

REF = Path(__file__).resolve().parents[2] / "shared" / "reference"
PAIRS = {
    "mca-osaca": ("llvm-mca:znver3", "osaca:ZEN3"),
    "mca-zenp": ("llvm-mca:znver1", f"mapping:{REF / 'zenplus' / 'explainable_port_mapping.json'}?r_max=5"),
    "mca-hw": ("llvm-mca:znver3", "hardware"),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pair", choices=sorted(PAIRS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--blocks", type=int, default=10000, help="test-set size (4-instruction blocks)")
    ap.add_argument("--discoveries", type=int, default=150)
    ap.add_argument("--seconds", type=float, default=3600)
    ap.add_argument("--samples", type=int, default=30, help="samples per interestingness check")
    ap.add_argument("--orders", type=int, default=3, help="random expansion orders per block")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    a_spec, b_spec = PAIRS[args.pair]
    if args.pair == "mca-zenp" and not REF.is_dir():
        print(f"skipped: {REF} is absent", file=sys.stderr)
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cache = str(out / "predictions.sqlite")
    a, b = open_predictor(a_spec, cache=cache), open_predictor(b_spec, cache=cache)
    cfg = Config(a=a_spec, b=b_spec, samples=args.samples, orders=args.orders, max_discoveries=args.discoveries,
                 max_seconds=args.seconds, seed=args.seed, workers=args.workers)
    log = lambda m: print(f"[{args.pair}] {m}", file=sys.stderr, flush=True)  # noqa: E731
    t0, c0 = time.monotonic(), time.process_time()
    camp = Campaign(cfg, out, a, b, progress=log)
    u = camp.universe

    # the test set: 4-instruction blocks of the campaign's universe
    rng = random.Random(f"testset:{args.seed}")
    test = []
    while len(test) < args.blocks:
        c = camp.sampler.sample(AbstractBlock.top(4), rng)
        if c is not None:
            test.append(c)
    log(f"predicting {len(test)} test blocks")
    t1 = time.monotonic()
    preds = camp.pair.predict([to_block(u, c) for c in test])
    test_s = time.monotonic() - t1
    crit = camp.pair.criterion
    inter = [c for c, (x, y) in zip(test, preds) if crit.interesting(x, y)]
    errors = sum(1 for x, y in preds if not (x.ok and y.ok))

    st = camp.run()
    camp.pair.close()
    final = st.final()
    log(f"coverage of {len(inter)} interesting test blocks by {len(final)} discoveries")
    table = coverage_table(u, [d.block for d in final], inter)
    covered = sum(1 for ds in table if ds)
    chosen, top10 = top_k(table, len(final), 10)
    per = [sum(1 for ds in table if k in ds) for k in range(len(final))]
    report.write(st, u, out)
    wall, cpu = time.monotonic() - t0, time.process_time() - c0

    def pct(x: int, n: int) -> str:
        return f"{100 * x / n:.1f} %" if n else "n/a"

    summary = {
        "pair": args.pair, "a": a_spec, "b": b_spec, "universe": len(u), "unsupported": len(st.unsupported or []),
        "test_blocks": len(test), "test_errors": errors, "interesting": len(inter),
        "interesting_pct": 100 * len(inter) / len(test), "discoveries": len(final),
        "discoveries_before_filter": len(st.discoveries), "covered": covered,
        "covered_pct": 100 * covered / len(inter) if inter else None, "top10_covered": top10,
        "top10_pct": 100 * top10 / len(inter) if inter else None, "campaign_seconds": st.elapsed,
        "campaign_samples": st.sampled, "campaign_predictions": st.predicted, "test_predict_seconds": test_s,
        "wall_seconds": wall, "process_cpu_seconds": cpu, "cores": os.cpu_count(),
        "config": cfg.to_json(), "finished": st.finished,
        "top10": [{"id": final[k].id, "describe": final[k].block.describe(), "covers": per[k],
                   "score": None if final[k].score == float("inf") else final[k].score,
                   "generality": generality(u, final[k].block), "example": final[k].minimal["asm"]}
                  for k in chosen],
    }
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1))
    print(f"pair: {a_spec} vs {b_spec}  (universe {len(u)} forms, {summary['unsupported']} unsupported excluded)")
    print(f"  BBs interesting         {pct(len(inter), len(test))}  ({len(inter)} of {len(test)}; "
          f"{errors} with a predictor error)")
    print(f"  int. BBs covered        {pct(covered, len(inter))}  by {len(final)} discoveries "
          f"({len(st.discoveries)} before filtering)")
    print(f"  ... by top 10           {pct(top10, len(inter))}")
    print(f"  campaign time           {st.elapsed / 60:.1f} min ({st.sampled} sampled blocks, "
          f"{st.predicted} predictions per predictor); test set {test_s:.0f} s; whole run {wall / 60:.1f} min")
    print("  top 10 by coverage (ILP):")
    for item in summary["top10"]:
        print(f"    d{item['id']}: covers {item['covers']}, generality {item['generality']}, "
              f"score {item['score'] if item['score'] is not None else 'inf'}: {' | '.join(item['describe'])}")
        print(f"        e.g. {' ; '.join(item['example'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
