"""The coverage ILP of sec. 8.1.7: choose ≤ k abstract blocks covering most basic blocks.

    maximise Σ_j covered[j]   s.t.  Σ_i used[i] ≤ k,
                                    Σ_{i subsumes j} used[i] ≥ covered[j]  for every block j,
                                    used, covered ∈ {0, 1}
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

from pmsolve.errors import ValidationError
from pmsolve.symbolic import Int, Problem, Sum


def build_coverage(subsumed: Mapping[str, Iterable[str]], blocks: Iterable[str], k: int,
                   ) -> tuple[Problem, Callable[[dict], tuple[list[str], list[str]]]]:
    """`subsumed[a]` lists the basic blocks abstract block a subsumes."""
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
    p = Problem(name="coverage ILP")
    p.add(Sum(used.values()) <= k, name="at most k")
    for b in blocks:
        p.add(Sum(used[a] for a in abstract if b in covers[a]) >= cov[b], name=f"cover[{b}]")
    p.maximize(Sum(cov.values()))

    def decode(model: dict) -> tuple[list[str], list[str]]:
        return ([a for a in abstract if model[used[a].name] == 1],
                [b for b in blocks if model[cov[b].name] == 1])

    return p, decode


def best_coverage(subsumed: Mapping[str, Iterable[str]], blocks: Iterable[str], k: int,
                  backend: str | None = None) -> tuple[list[str], list[str]]:
    """(chosen abstract blocks, covered basic blocks) of an optimal solution."""
    from pmsolve.backends import solve

    p, decode = build_coverage(subsumed, blocks, k)
    res = solve(p, backend)
    if not res.feasible:
        raise ValidationError(f"coverage ILP has no optimal solution ({res})")
    return decode(res.model)
