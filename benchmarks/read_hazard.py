"""Stores and 3-source vector forms slow each other where no port placement can (RESULTS §1.34).

On the Zen 5 a vector store (``vmovdqu32 m128, xmm``, 0.5 cycles alone) beside a merge-masked
``vpaddd zmm{k}`` (0.27 alone, on other ports) takes 1.0 cycle a pair, and every further
3-source form adds 0.5: as if the two shared one resource of two slots a cycle. It vanishes when
the third source comes from the bypass network (written by the instruction just before). This
probe measures:

* the grid ``{D: s, K: k}`` of a transfer-out form D and a 3-source form K (harness experiments);
* hand-written blocks: K's third source from the register file against from the bypass;
* with ``--catalogue MAPPING``: every vector scheme of the mapping (but non-temporal stores)
  beside D and beside K at ``{1, 1}``, against the mapping's prediction; JSON to ``--out``.

    python benchmarks/read_hazard.py [--d vmovdqu32_m128_xmm] [--k vpaddd_zmm_zmm_zmm_k]
                                     [--catalogue runs/aNN/mapping.json --out pairs.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pmsolve.harness.hardware import HardwareOracle, available  # noqa: E402
from pmsolve.model import Experiment  # noqa: E402

COUNTS = (1, 2, 3, 4, 6, 8)
#: K's merge destination from the register file (rotating, written 14 copies earlier) or from the
#: bypass (written by the plain add just before it); the store beside both
BLOCKS = {
    "store alone": ["vmovdqu32 %xmm16, {m}(%r14)"],
    "store + vpaddd{k}, third source from the register file": [
        "vmovdqu32 %xmm16, {m}(%r14)", "vpaddd %zmm16, %zmm17, %zmm{d}{{%k1}}"],
    "store + vpaddd + vpaddd{k} on its result (bypass)": [
        "vmovdqu32 %xmm16, {m}(%r14)", "vpaddd %zmm16, %zmm17, %zmm{d}", "vpaddd %zmm16, %zmm17, %zmm{d}{{%k1}}"],
    "store + vpaddd + vpaddd (no 3-source form)": [
        "vmovdqu32 %xmm16, {m}(%r14)", "vpaddd %zmm16, %zmm17, %zmm{d}", "vpaddd %zmm17, %zmm16, %zmm1"],
}


def grid(d: str, k: str) -> None:
    o = HardwareOracle([d, k])
    exps = [Experiment({d: 1}), Experiment({k: 1})] + [Experiment({d: s, k: n}) for s in (1, 2, 3, 4) for n in COUNTS]
    try:
        v = o.measure(exps)
    finally:
        o.close()
    print(f"alone: {d} {v[0]:.3f}, {k} {v[1]:.3f} cycles; cycles of {{{d}: s, {k}: k}}:")
    print("  s\\k " + " ".join(f"{n:6d}" for n in COUNTS))
    for r, s in enumerate((1, 2, 3, 4)):
        print(f"  {s:3d} " + " ".join(f"{x:6.3f}" for x in v[2 + r * len(COUNTS):2 + (r + 1) * len(COUNTS)]))


def blocks() -> None:
    copies = 14
    bodies = []
    for lines in BLOCKS.values():
        body = [t.format(m=2048 + 16 * (c % 32), d=18 + c) for c in range(copies) for t in lines]
        bodies.append(body)
    o = HardwareOracle([])
    try:
        res = o.measure_blocks(bodies)
    finally:
        o.close()
    print("hand-written blocks, cycles per copy:")
    for name, r in zip(BLOCKS, res):
        print(f"  {(r.cycles or float('nan')) / copies:6.3f}  {name} {r.error or ''}")


def catalogue(path: str, d: str, k: str, out: str | None) -> None:
    from pmsolve.modelled import load_model
    mm = load_model(path)
    r_max = json.loads(Path(path).read_text())["explanation"].get("r_max")
    # non-temporal stores are left out: beside a store they take 200-750 cycles (the memory behind
    # the write-combining buffers), which says nothing about the core and takes minutes to measure
    xs = [x for x in mm.schemes if x.startswith("v") and not x.startswith("vmovnt") and x not in (d, k)]
    o = HardwareOracle(xs + [d, k])
    exps = [Experiment({x: 1, d: 1}) for x in xs] + [Experiment({x: 1, k: 1}) for x in xs]
    try:
        v = o.measure(exps)
    finally:
        o.close()
    rows = {x: {"beside_d": v[i], "beside_k": v[len(xs) + i],
                "model_d": float(mm.inverse_throughput(exps[i], r_max)),
                "model_k": float(mm.inverse_throughput(exps[len(xs) + i], r_max))} for i, x in enumerate(xs)}
    k_like = [x for x, r in rows.items() if r["beside_d"] - r["model_d"] > 0.25]
    d_like = [x for x, r in rows.items() if r["beside_k"] - r["model_k"] > 0.25 and x not in k_like]
    print(f"{len(xs)} vector schemes: {len(k_like)} run over 0.25 cycles slower beside {d} than the mapping says, "
          f"{len(d_like)} (of the rest) beside {k}")
    if out:
        Path(out).write_text(json.dumps(rows, indent=0))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d", default="vmovdqu32_m128_xmm", help="a form whose data leaves the vector pipes")
    ap.add_argument("--k", default="vpaddd_zmm_zmm_zmm_k", help="a form with three vector sources")
    ap.add_argument("--catalogue", metavar="MAPPING", help="also pair every vector scheme of this mapping")
    ap.add_argument("--out", help="JSON of the catalogue pairs")
    args = ap.parse_args()
    if (why := available()) is not None:
        print(f"no hardware measurement here: {why}")
        return 2
    grid(args.d, args.k)
    blocks()
    if args.catalogue:
        catalogue(args.catalogue, args.d, args.k, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
