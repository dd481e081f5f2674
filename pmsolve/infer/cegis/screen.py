"""Vectorised screening of small experiments: which bounded experiment tells candidates apart?

All experiments with at most `bound` instruction instances are one integer matrix E (rows =
experiments, columns = instructions). For a mapping, A[i, Q] is the µop mass instruction i puts
entirely inside port set Q, so the bottleneck formula (Thm 5.2) for every experiment at once is
max_Q (E @ A)[:, Q] / |Q|. Values are floats here (they only rank and pre-select experiments);
every experiment that is used is re-checked with the exact formula in Fractions.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations_with_replacement
from math import comb
from typing import Any

import numpy as np

from pmsolve.model import Experiment, PortMapping


def count_experiments(n_insns: int, bound: int) -> int:
    """How many non-empty multisets of at most `bound` items from n_insns there are."""
    return sum(comb(n_insns + s - 1, s) for s in range(1, bound + 1))


def inside_masses(mapping: PortMapping, instructions: tuple[str, ...], ports: tuple[str, ...],
                  subsets: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The port sets that can be a bottleneck under `mapping` (unions of its µop port sets: any
    other set shrinks to the union of the µops inside it without losing mass, Thm 5.2) as bit
    masks, their sizes, and A[i, Q] = µops of instruction i whose ports lie inside Q (int64),
    so that tp⁻¹(e) = max_Q (e @ A)[Q] / |Q|. `subsets`: all non-empty port sets, if at hand."""
    bit = {p: 1 << j for j, p in enumerate(ports)}
    kinds = [(j, u.count, sum(bit[p] for p in u.ports)) for j, insn in enumerate(instructions)
             for u in mapping.uops_of(insn)]
    masks = {m for _, _, m in kinds}
    if subsets is not None or len(ports) <= 16:
        every = subsets if subsets is not None else np.arange(1, 1 << len(ports), dtype=np.int64)
        union = np.zeros(len(every), dtype=np.int64)
        for mask in masks:
            union |= np.where((every & mask) == mask, mask, 0)
        closed = every[union == every]
    else:  # many ports: close the µop port sets under union instead of trying every set
        found, frontier = set(masks), set(masks)
        while frontier:
            frontier = {q | m for q in frontier for m in masks} - found
            found |= frontier
        closed = np.array(sorted(found), dtype=np.int64)
    width = np.array([int(q).bit_count() for q in closed], dtype=np.int64)
    A = np.zeros((len(instructions), len(closed)), dtype=np.int64)
    for j, count, mask in kinds:
        A[j] += count * ((closed & mask) == mask)
    return closed, width, A


def overloaded(mapping: PortMapping, instructions: tuple[str, ...], ports: tuple[str, ...],
               observations: Sequence[tuple[Experiment, Fraction]], epsilon: Fraction | None = None) -> list[int]:
    """Indices of the observations (experiment, measured tp⁻¹) whose port bound under `mapping`
    exceeds the measured value (plus ε·|e|; with noise, reaching it counts too): exact, in
    integers (the bound is mass/|Q| and the measurements are fractions), all at once."""
    if not observations:
        return []
    col = {i: j for j, i in enumerate(instructions)}
    counts = np.zeros((len(observations), len(instructions)), dtype=np.int64)
    num, den = [], []
    for r, (e, t) in enumerate(observations):
        for i, c in e.items():
            counts[r, col[i]] = c
        hi = Fraction(t) + epsilon * e.size if epsilon else Fraction(t)
        num.append(hi.numerator)
        den.append(hi.denominator)
    _, width, inside = inside_masses(mapping, instructions, ports)
    load = counts @ inside
    big = max(den) * max(1, int(load.max())) >= 2**62 or max(abs(x) for x in num) * len(ports) >= 2**62
    kind: Any = object if big else np.int64  # Python integers where int64 could overflow
    lhs = load.astype(kind) * np.array(den, dtype=kind)[:, None]
    rhs = np.array(num, dtype=kind)[:, None] * width.astype(kind)[None, :]
    over = (lhs >= rhs) if epsilon else (lhs > rhs)
    return [int(r) for r in np.nonzero(over.any(axis=1))[0]]


class Screen:
    """All experiments over `instructions` with 1..bound instances, smallest first."""

    def __init__(self, instructions: tuple[str, ...], ports: tuple[str, ...], bound: int,
                 r_max: float | None = None):
        self.instructions = instructions
        self.ports = ports
        self.bound = bound
        self.r_max = r_max
        n = len(instructions)
        rows = []
        for s in range(1, bound + 1):
            for combo in combinations_with_replacement(range(n), s):
                row = np.zeros(n, dtype=np.int64)
                for j in combo:
                    row[j] += 1
                rows.append(row)
        self.E = np.array(rows, dtype=np.float64).reshape(len(rows), n)
        self.sizes = self.E.sum(axis=1)
        k = len(ports)
        self.subsets = np.arange(1, 1 << k, dtype=np.int64)
        self.subset_size = np.array([int(q).bit_count() for q in self.subsets], dtype=np.float64)
        self._cache: dict[PortMapping, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.E)

    def experiment(self, row: int) -> Experiment:
        return Experiment({self.instructions[j]: int(c) for j, c in enumerate(self.E[row]) if c})

    def predict(self, mapping: PortMapping) -> np.ndarray:
        """tp⁻¹ (float) of every screened experiment under `mapping`."""
        hit = self._cache.get(mapping)
        if hit is not None:
            return hit
        subsets, width, A = inside_masses(mapping, self.instructions, self.ports, self.subsets)
        A = A.astype(np.float64)
        width = width.astype(np.float64)
        out = np.empty(len(self.E))
        step = max(1, 4_000_000 // max(1, len(subsets)))
        for lo in range(0, len(self.E), step):
            out[lo:lo + step] = ((self.E[lo:lo + step] @ A) / width).max(axis=1)
        if self.r_max is not None:
            out = np.maximum(out, self.sizes / self.r_max)
        if len(self._cache) > 256:
            self._cache.clear()
        self._cache[mapping] = out
        return out

    def apart(self, a: np.ndarray, b: np.ndarray, epsilon: float) -> np.ndarray:
        """Which experiments separate two predictions: ≠, or CPI apart by more than 2ε."""
        gap = np.abs(a - b)
        if epsilon:
            return gap > 2 * epsilon * self.sizes + 1e-9
        return gap > 1e-9

    def best(self, m1: PortMapping, others: list[PortMapping], epsilon: float) -> int | None:
        """The smallest experiment telling m1 apart from at least one of `others`; among those of
        that size, the one separating the most pairs of candidates (then the most from m1)."""
        if not others:
            return None
        preds = [self.predict(m) for m in [m1] + others]
        vs_m1 = np.zeros(len(self.E), dtype=np.int64)
        for p in preds[1:]:
            vs_m1 += self.apart(preds[0], p, epsilon)
        useful = vs_m1 > 0
        if not useful.any():
            return None
        size = self.sizes[useful].min()
        pick = useful & (self.sizes == size)
        pairs = np.zeros(len(self.E), dtype=np.int64)
        for a in range(len(preds)):
            for b in range(a + 1, len(preds)):
                pairs += self.apart(preds[a], preds[b], epsilon)
        score = np.where(pick, pairs * (len(preds) + 1) + vs_m1, -1)
        return int(np.argmax(score))
