"""Ranking discoveries (sec. 8.1.7): by interestingness, by generality, by the coverage ILP."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from pmsolve.anica.domain import AbstractBlock, Concrete, Universe
from pmsolve.anica.subsume import Coverage
from pmsolve.encodings.coverage import best_coverage


def generality(u: Universe, ab: AbstractBlock) -> int:
    """The fewest instruction forms any abstract instruction of the block represents."""
    return int(min(np.count_nonzero(u.gamma(x)) for x in ab.insns))


def by_interestingness(scores: Sequence[float]) -> list[int]:
    """Indexes, most interesting first (a crash scores ∞)."""
    return sorted(range(len(scores)), key=lambda k: (-scores[k], k))


def by_generality(u: Universe, blocks: Sequence[AbstractBlock]) -> list[int]:
    gen = [generality(u, b) for b in blocks]
    return sorted(range(len(blocks)), key=lambda k: (-gen[k], k))


def coverage_table(u: Universe, blocks: Sequence[AbstractBlock], concrete: Iterable[Concrete]) -> list[list[int]]:
    """For each concrete block, the discoveries that subsume it (Def. 8.7)."""
    cov = Coverage(u, blocks)
    return [cov.covered_by(c) for c in concrete]


def top_k(table: Sequence[Sequence[int]], n_discoveries: int, k: int,
          backend: str | None = None) -> tuple[list[int], int]:
    """The coverage ILP: ≤ k discoveries subsuming the most blocks; (chosen, blocks covered)."""
    subsumed = {f"d{d}": [] for d in range(n_discoveries)}
    for j, ds in enumerate(table):
        for d in ds:
            subsumed[f"d{d}"].append(f"b{j}")
    blocks = [f"b{j}" for j, ds in enumerate(table) if ds]
    if not blocks or k == 0:
        return [], 0
    chosen, covered = best_coverage(subsumed, blocks, k, backend)
    return sorted(int(a[1:]) for a in chosen), len(covered)
