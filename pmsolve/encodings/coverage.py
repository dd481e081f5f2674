"""The coverage ILP of sec. 8.1.7: choose ≤ k abstract blocks covering most basic blocks.

    maximise Σ_j covered[j]   s.t.  Σ_i used[i] ≤ k,
                                    Σ_{i subsumes j} used[i] ≥ covered[j]  for every block j,
                                    used, covered ∈ {0, 1}
"""

from __future__ import annotations

from typing import Iterable, Mapping

from pmsolve.backends import solve
from pmsolve.encodings.encoding import Encoding, model_of
from pmsolve.errors import ValidationError
from pmsolve.symbolic import Int, Problem, Sum


def build_coverage(subsumed: Mapping[str, Iterable[str]], blocks: Iterable[str], k: int,
                   ) -> Encoding[tuple[list[str], list[str]]]:
    """`subsumed[a]` lists the basic blocks abstract block a subsumes. Linear in the size of
    `subsumed` (each block's constraint is built from the abstract blocks that cover it).
    `decode` gives (chosen abstract blocks, covered basic blocks); `vars` holds "used" and
    "covered"."""
    if k < 0:
        raise ValidationError(f"k must be ≥ 0, got {k}")
    blocks = list(dict.fromkeys(blocks))
    abstract = list(subsumed)
    covers = {a: set(subsumed[a]) for a in abstract}
    stray = sorted(set().union(*covers.values()) - set(blocks)) if covers else []
    if stray:
        raise ValidationError(f"subsumed blocks not in the block list: {stray[:5]}")
    used = {a: Int(f"AB.used[{a}]", 0, 1) for a in abstract}
    cov = {b: Int(f"BB.covered[{b}]", 0, 1) for b in blocks}
    covered_by: dict[str, list[str]] = {b: [] for b in blocks}
    for a in abstract:
        for b in covers[a]:
            covered_by[b].append(a)
    p = Problem(name="coverage ILP")
    p.add(Sum(used.values()) <= k, name="at most k")
    for b in blocks:
        p.add(Sum(used[a] for a in covered_by[b]) >= cov[b], name=f"cover[{b}]")
    p.maximize(Sum(cov.values()))

    def decode(answer: object) -> tuple[list[str], list[str]]:
        model = model_of(answer)
        return ([a for a in abstract if model[used[a].name] == 1],
                [b for b in blocks if model[cov[b].name] == 1])

    return Encoding(p, None, decode, {"used": used, "covered": cov})


def best_coverage(subsumed: Mapping[str, Iterable[str]], blocks: Iterable[str], k: int,
                  backend: str | None = None) -> tuple[list[str], list[str]]:
    """(chosen abstract blocks, covered basic blocks) of an optimal solution."""
    enc = build_coverage(subsumed, blocks, k)
    res = solve(enc.problem, backend)
    if not res.feasible:
        raise ValidationError(f"coverage ILP has no optimal solution ({res})")
    return enc.decode(res)
