"""Minimisation and generalisation (Alg. 8.2) with a recorded generalisation tree.

An abstract block counts as interesting when ``samples`` blocks drawn by γ̂ are all interesting
(the dissertation's approximation of "every represented block"); samples are judged in chunks
so a rejection usually costs one chunk. An instruction expansion that leaves γ_in unchanged on
the universe cannot change interestingness, so it is accepted without sampling. Every decision
is kept as a tree node with its witnesses: the blocks that justified it (for a rejection, the
first non-interesting one), which the report shows as the dissertation's decision tree.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pmsolve.anica.domain import AbstractBlock, Concrete, Expansion, Universe, beta, expansions
from pmsolve.anica.interesting import PredictorPair
from pmsolve.anica.sampler import Sampler, to_block


@dataclass(frozen=True)
class JudgedBlock:
    """One evaluated block: its text, both predictions (or errors) and the score."""

    asm: tuple[str, ...]
    a: float | None
    b: float | None
    error: str | None
    score: float

    def to_json(self) -> dict[str, Any]:
        return {"asm": list(self.asm), "a": self.a, "b": self.b, "error": self.error,
                "score": None if math.isinf(self.score) else self.score}


@dataclass
class TreeNode:
    """A generalisation-tree node: the block after ``expansion`` and whether it was kept."""

    block: AbstractBlock
    expansion: str
    accepted: bool
    note: str
    witnesses: list[JudgedBlock] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"expansion": self.expansion, "accepted": self.accepted, "note": self.note,
                "block": self.block.to_json(), "describe": self.block.describe(),
                "witnesses": [w.to_json() for w in self.witnesses]}


@dataclass(frozen=True)
class GeneralizeSettings:
    """Blocks sampled per interestingness check, judged ``chunk`` at a time; judged blocks kept per tree node."""

    samples: int = 30
    chunk: int = 10
    keep_witnesses: int = 3


class BudgetSpent(Exception):
    """The campaign's time budget ran out in the middle of minimising or generalising a block."""


class Generalizer:
    def __init__(self, universe: Universe, sampler: Sampler, pair: PredictorPair,
                 settings: GeneralizeSettings = GeneralizeSettings()):
        self.universe, self.sampler, self.pair, self.settings = universe, sampler, pair, settings
        self.checks = 0
        #: time.monotonic() after which no more predictions are asked for (:class:`BudgetSpent`)
        self.deadline: float | None = None

    def witnesses(self, blocks: list[Concrete]) -> list[JudgedBlock]:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise BudgetSpent
        texts = [to_block(self.universe, c) for c in blocks]
        out = []
        for blk, (x, y) in zip(texts, self.pair.predict(texts)):
            err = "; ".join(f"{n}: {p.error}" for n, p in (("A", x), ("B", y)) if not p.ok) or None
            out.append(JudgedBlock(tuple(blk.lines), x.cycles, y.cycles, err, self.pair.criterion.score(x, y)))
        return out

    def interesting_concrete(self, c: Concrete) -> bool:
        return self.witnesses([c])[0].score > self.pair.criterion.threshold

    def check(self, ab: AbstractBlock, rng: random.Random) -> tuple[bool, list[JudgedBlock], str]:
        """(all samples interesting?, the samples judged, why not)."""
        self.checks += 1
        judged: list[JudgedBlock] = []
        todo = self.settings.samples
        while todo > 0:
            n = min(self.settings.chunk, todo)
            drawn = [self.sampler.sample(ab, rng) for _ in range(n)]
            if any(c is None for c in drawn):
                return False, judged, "sampling failed (conflicting constraints)"
            ws = self.witnesses(drawn)
            judged += ws
            bad = [w for w in ws if w.score <= self.pair.criterion.threshold]
            if bad:
                return False, judged, "a sample is not interesting"
            todo -= n
        return True, judged, f"all {len(judged)} samples interesting"

    def minimize(self, c: Concrete, rng: random.Random) -> Concrete:
        """Greedily drop instructions (random order) while the block stays interesting."""
        keep = list(range(len(c.forms)))
        order = keep[:]
        rng.shuffle(order)
        for k in order:
            if len(keep) == 1:
                break
            trial = [j for j in keep if j != k]
            if self.interesting_concrete(_pick(c, trial)):
                keep = trial
        return _pick(c, keep)

    def generalize(self, c: Concrete, rng: random.Random) -> tuple[AbstractBlock, list[TreeNode], float]:
        """Alg. 8.2 with a random expansion order; returns (result, tree, mean sample score)."""
        ab = beta(self.universe, c)
        ok, ws, why = self.check(ab, rng)
        tree = [TreeNode(ab, "β(block)", ok, why, ws[: self.settings.keep_witnesses] if ok else ws[-1:])]
        last = ws
        if not ok:
            return ab, tree, _mean(ws)
        rejected: set[Expansion] = set()
        while True:
            avail = [e for e in expansions(ab) if e not in rejected]
            if not avail:
                return ab, tree, _mean(last)
            exp = avail[rng.randrange(len(avail))]
            t = exp.apply(ab)
            u = self.universe
            if exp.where == "insn" and np.array_equal(u.gamma(ab.insns[exp.index]), u.gamma(t.insns[exp.index])):
                ab = t
                tree.append(TreeNode(t, exp.describe(), True, "same instruction set on this universe"))
                continue
            ok, ws, why = self.check(t, rng)
            if ok:
                ab, last = t, ws
                tree.append(TreeNode(t, exp.describe(), True, why, ws[: self.settings.keep_witnesses]))
            else:
                rejected.add(exp)
                tree.append(TreeNode(t, exp.describe(), False, why, ws[-1:]))


def _pick(c: Concrete, idx: list[int]) -> Concrete:
    return Concrete(tuple(c.forms[j] for j in idx), tuple(c.values[j] for j in idx))


def _mean(ws: list[JudgedBlock]) -> float:
    if not ws:
        return 0.0
    return sum(w.score for w in ws) / len(ws)
