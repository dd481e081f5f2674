"""Throughput of the AnICA predictors, measured in one run, with ratios.

Workload: random 4-instruction blocks over the main job's ~50 schemes (ALU, shifts, bit ops,
multiplies, loads/stores, AVX2 FP/integer/shuffles), operands allocated as the hardware
harness does (Alg. 3.1), deterministic under ``--seed``.

* llvm-mca batched     -- ``LlvmMcaPredictor.predict`` on all blocks: one process call with one
                          ``LLVM-MCA-BEGIN/END`` region per block;
* llvm-mca one per call -- the same predictor called once per block (what a naive adapter does);
* OSACA                -- ``OsacaPredictor`` (one worker process, parser and model built once;
                          port pressure + loop-carried dependencies); unknown forms are answers too;
* OSACA, predict_many  -- the same through ``predict_many`` with ``--workers`` threads
                          (a worker process each, started before timing);
* mapping              -- pmsolve's bottleneck formula on the explainable Zen+ mapping (when
                          ``../shared/reference`` is present), names bridged from the catalogue;
* cache hit            -- ``CachedPredictor`` around llvm-mca, second pass over the same blocks
                          (SQLite lookups only), against the uncached batched rate.

The batched and one-per-call llvm-mca answers are checked to be identical before rates are
reported. Absolute rates on a shared 2-core VM are noise; the ratios of one run are the result.

    python benchmarks/predictors.py [--blocks 1000] [--single 100] [--osaca 200] [--seed 0]

Measured here (2-core VM shared with other work, load average 4-10; five runs, 22 Nov 2026):
llvm-mca batched 880-1830 blocks/s (0.55-1.1 ms/block) vs one call per block 23-37 blocks/s:
36-49x; OSACA 76-139 blocks/s with one worker (7-13 ms/block; 151 of 200 blocks hold a form
its ZEN3 model lacks), predict_many with 2 workers 0.55-1.15x of that (no gain while the
machine's two cores are busy with other work); mapping predictor 15,000-48,000 blocks/s;
cache hits 37,000-114,000 blocks/s, 43-93x the uncached batched llvm-mca rate.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pmsolve.predictors.block import Block  # noqa: E402
from pmsolve.predictors import CachedPredictor, predict_many  # noqa: E402
from pmsolve.predictors.llvm_mca import LlvmMcaPredictor  # noqa: E402
from pmsolve.harness.allocation import allocate  # noqa: E402
from pmsolve.jobs.host import DEFAULT_SCHEMES  # noqa: E402
from pmsolve.isa import load_catalogue  # noqa: E402

EXPLAINABLE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "zenplus" / "explainable_port_mapping.json"


def random_blocks(n: int, seed: int, size: int = 4) -> list[Block]:
    cat = load_catalogue(host=False)
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        schemes = [cat[rng.choice(DEFAULT_SCHEMES)] for _ in range(size)]
        out.append(Block.of([(i.scheme.name, i.text()) for i in allocate(schemes)]))
    return out


def timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=1000, help="blocks for the batched/cached runs")
    ap.add_argument("--single", type=int, default=100, help="blocks for the one-call-per-block run")
    ap.add_argument("--osaca", type=int, default=200, help="blocks for the OSACA runs")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--mcpu", default="znver3")
    ap.add_argument("--arch", default="ZEN3")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    blocks = random_blocks(args.blocks, args.seed)
    rows: list[tuple[str, int, float]] = []
    mca = LlvmMcaPredictor(args.mcpu)
    batched, t_batch = timed(lambda: mca.predict(blocks))
    rows.append((f"llvm-mca {args.mcpu}, batched (1 call)", len(blocks), t_batch))
    few = blocks[:args.single]
    single, t_single = timed(lambda: [mca.predict([b])[0] for b in few])
    rows.append((f"llvm-mca {args.mcpu}, one call per block", len(few), t_single))
    if [p.cycles for p in single] != [p.cycles for p in batched[:len(few)]]:
        sys.exit("llvm-mca: batched and single-call answers differ")
    errors = sum(not p.ok for p in batched)

    osaca_rows = []
    try:
        from pmsolve.predictors.osaca import OsacaPredictor

        osa = OsacaPredictor(args.arch)
        part = blocks[:args.osaca]
        o1, t_o1 = timed(lambda: osa.predict(part))
        osaca_rows.append((f"OSACA {args.arch}, 1 worker", len(part), t_o1))
        known = [b for b, p in zip(part, o1) if p.ok]
        if known:
            _, t_known = timed(lambda: osa.predict(known))
            osaca_rows.append((f"OSACA {args.arch}, 1 worker, only blocks it can predict", len(known), t_known))
        osa2 = OsacaPredictor(args.arch)
        part2 = blocks[args.osaca:2 * args.osaca] or part
        predict_many([osa2], blocks[-2 * args.workers:], workers=args.workers, chunk=1)  # start the workers
        _, t_o2 = timed(lambda: predict_many([osa2], part2, workers=args.workers, chunk=16))
        osaca_rows.append((f"OSACA {args.arch}, predict_many {args.workers} workers", len(part2), t_o2))
        o_unsup = sum(not p.ok for p in o1)
        osa.close()
        osa2.close()
    except Exception as exc:  # noqa: BLE001 - report and go on
        print(f"OSACA skipped: {exc}", file=sys.stderr)
        o_unsup = None
    rows += osaca_rows

    if EXPLAINABLE.exists():
        from pmsolve.predictors import open_predictor

        mp = open_predictor(f"mapping:{EXPLAINABLE}?r_max=5")
        mres, t_map = timed(lambda: mp.predict(blocks))
        rows.append(("mapping (explainable Zen+, R_max 5)", len(blocks), t_map))
        m_unsup = sum(not p.ok for p in mres)
    else:
        m_unsup = None

    with tempfile.TemporaryDirectory() as tmp:
        cached = CachedPredictor(LlvmMcaPredictor(args.mcpu), Path(tmp) / "cache.sqlite")
        _, t_fill = timed(lambda: cached.predict(blocks))
        hit, t_hit = timed(lambda: cached.predict(blocks))
        rows.append(("llvm-mca through the cache, first pass (miss)", len(blocks), t_fill))
        rows.append(("llvm-mca through the cache, second pass (hit)", len(blocks), t_hit))
        assert [p.cycles for p in hit] == [p.cycles for p in batched]

    import os

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{len(blocks)} random 4-instruction blocks over {len(DEFAULT_SCHEMES)} schemes, seed {args.seed}; "
          f"{os.cpu_count()} CPUs, load average {load:.1f}")
    print(f"{'route':<52} {'blocks':>7} {'seconds':>8} {'blocks/s':>10} {'ms/block':>9}")
    for name, n, t in rows:
        print(f"{name:<52} {n:>7} {t:>8.2f} {n / t:>10.0f} {1000 * t / n:>9.2f}")
    rate = {name: n / t for name, n, t in rows}
    b, s = rate[rows[0][0]], rate[rows[1][0]]
    print(f"\nllvm-mca batched / one call per block: {b / s:.1f}x  ({errors} of {len(blocks)} blocks errors)")
    if osaca_rows:
        par = next(r for r in osaca_rows if "predict_many" in r[0])[0]
        print(f"OSACA predict_many / 1 worker: {rate[par] / rate[osaca_rows[0][0]]:.2f}x; "
              f"OSACA could not predict {o_unsup} of {args.osaca} blocks (forms its model lacks)")
    if m_unsup is not None:
        print(f"mapping predictor: {m_unsup} of {len(blocks)} blocks unsupported (schemes without a Zen+ counterpart)")
    print(f"cache hit / uncached batched llvm-mca: {(len(blocks) / t_hit) / b:.1f}x; "
          f"cache hit / llvm-mca one per call: {(len(blocks) / t_hit) / s:.0f}x")


if __name__ == "__main__":
    main()
