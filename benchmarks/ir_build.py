"""How fast the IR builds large linear terms and problems: `Sum` in one pass, and the coverage
ILP of sec. 8.1.7 (`pmsolve.encodings.coverage`) over many basic blocks.

* Sum of N variables: `Sum` (one pass, one sort) against summing with `+` one term at a time,
  which re-normalises the growing term at every step (quadratic: the way `Sum` itself worked
  before; 2,000 variables took 11 s).
* The coverage ILP over B basic blocks and B/20 abstract blocks, each subsuming 1 % of the
  blocks: built by `build_coverage` (goal: 10,000 blocks in under a second), and, on a smaller
  instance, the same ILP built the old way (each block's sum found by scanning every abstract
  block, every sum by repeated `+`), with the ratio on that instance.

Times on a shared VM are noise; the ratios measured in one run are the result.

    python benchmarks/ir_build.py [--vars 2000] [--blocks 10000] [--old-blocks 2000]
"""

from __future__ import annotations

import argparse
import random
import time
from functools import reduce
from operator import add

from pmsolve.encodings.coverage import build_coverage
from pmsolve.symbolic import Int, Problem, Real, Sum, as_term, same


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def instance(blocks: int, seed: int = 0) -> tuple[dict[str, list[str]], list[str]]:
    rng = random.Random(seed)
    names = [f"bb{j}" for j in range(blocks)]
    per = max(1, blocks // 100)
    return {f"ab{i}": rng.sample(names, per) for i in range(max(1, blocks // 20))}, names


def old_coverage(subsumed: dict[str, list[str]], blocks: list[str], k: int) -> Problem:
    """The coverage ILP as it was built before: a scan of every abstract block per basic block
    and sums by repeated `+`."""
    used = {a: Int(f"AB.used[{a}]", 0, 1) for a in subsumed}
    cov = {b: Int(f"BB.covered[{b}]", 0, 1) for b in blocks}
    covers = {a: set(bs) for a, bs in subsumed.items()}
    p = Problem(name="coverage ILP (old way)")
    p.add(reduce(add, used.values()) <= k, name="at most k")
    for b in blocks:
        p.add(reduce(add, [used[a] for a in subsumed if b in covers[a]], as_term(0)) >= cov[b], name=f"cover[{b}]")
    p.maximize(reduce(add, cov.values()))
    return p


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vars", type=int, default=2000, help="variables in the Sum comparison")
    ap.add_argument("--blocks", type=int, default=10_000, help="basic blocks of the coverage ILP")
    ap.add_argument("--old-blocks", type=int, default=2000, help="basic blocks for the old-way comparison")
    args = ap.parse_args()

    xs = [Real(f"x{i}", 0, 1) for i in range(args.vars)]
    new, s1 = timed(lambda: Sum(xs))
    old, s2 = timed(lambda: reduce(add, xs))
    assert same(s1, s2), "Sum and repeated + disagree"
    print(f"Sum of {args.vars:,} variables: {new * 1e3:.1f} ms; repeated +: {old:.2f} s  "
          f"(Sum is {old / new:,.0f}× faster)")

    subsumed, blocks = instance(args.blocks)
    t_big, enc = timed(lambda: build_coverage(subsumed, blocks, 10))
    n_vars = len(enc.problem.variables())
    print(f"coverage ILP, {args.blocks:,} blocks × {len(subsumed):,} abstract blocks: built in {t_big:.2f} s "
          f"({len(enc.problem.constraints):,} constraints, {n_vars:,} variables; goal < 1 s)")

    subsumed, blocks = instance(args.old_blocks)
    t_new, enc = timed(lambda: build_coverage(subsumed, blocks, 10))
    t_old, p_old = timed(lambda: old_coverage(subsumed, blocks, 10))
    assert [str(c) for c in p_old.constraints] == [str(c) for c in enc.problem.constraints]
    print(f"coverage ILP, {args.old_blocks:,} blocks: build_coverage {t_new:.2f} s, the old way {t_old:.1f} s "
          f"({t_old / t_new:,.0f}× faster; the same constraints)")


if __name__ == "__main__":
    main()
