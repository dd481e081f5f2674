"""An AnICA campaign (Alg. 8.1): sample, judge, minimise, check subsumption, generalise, filter.

Blocks are sampled in batches from the unconstrained abstract block of a random length ≤
``block_size`` and predicted together (parallel predictor calls). Each interesting block is
minimised; unless a discovery already subsumes it (Def. 8.7, SAT), it is generalised with
``orders`` random expansion orders, and every result no discovery subsumes becomes one. At the
end, discoveries subsumed by another one are filtered out (line 11).

Randomness is derived from (seed, batch, position), and the state (discoveries with their
trees, counters, elapsed time) is written crash-safely after every interesting block, so a
killed campaign resumes exactly where it stopped and reproduces the same result.

The time budget counts everything the campaign does, the check of every instruction form alone
included (minutes with OSACA on a fresh campaign): it is checked between predictor calls, and an
interesting block whose minimisation or generalisation the budget cuts short is left for a rerun
with a larger budget (its predictions are cached, so nothing is asked twice).
"""

from __future__ import annotations

import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from pmsolve.anica.config import Config
from pmsolve.anica.domain import AbstractBlock, Concrete, Form, Universe, beta
from pmsolve.anica.generalize import BudgetSpent, Generalizer, GeneralizeSettings
from pmsolve.anica.interesting import Criterion, PredictorPair
from pmsolve.anica.sampler import Sampler, to_block
from pmsolve.anica.subsume import subsumes
from pmsolve.anica.uops import uop_counts
from pmsolve.errors import FormatError, PmsolveError, ValidationError
from pmsolve.fileio import atomic_write_text, digest, refuse_other_run
from pmsolve.formats import parse_json_text, read_text_file
from pmsolve.isa import load_catalogue
from pmsolve.predictors.base import Predictor

STATE = "state.json"
#: forms checked alone per predictor call (the time budget is looked at between them)
FORMS_PER_CALL = 200


def build_universe(cfg: Config) -> Universe:
    cat = load_catalogue()
    offered = {s.name for s in cat.offered()}
    schemes = [s for s in cat.filter(cfg.isa_filter) if s.name in offered]
    if not schemes:
        raise ValidationError(f"ISA filter {cfg.isa_filter!r} leaves no offered scheme")
    forms = [Form(s) for s in schemes]
    if cfg.lock_variants:
        forms += [Form(s, True) for s in schemes if s.lock and s.memory == "load+store"]
    return Universe(forms, uop_counts(schemes, cfg.uops))


def supported_universe(full: Universe, unsupported: Iterable[str]) -> Universe:
    """``full`` without the forms a predictor fails on alone (every form keeps its µop count)."""
    bad = set(unsupported)
    return Universe([f for f in full.forms if f.key not in bad],
                    {f.scheme.name: full.feats[k]["uops"] for k, f in enumerate(full.forms)})


@dataclass
class Discovery:
    id: int
    block: AbstractBlock
    tree: list[dict[str, Any]]
    score: float
    origin: list[str]
    minimal: dict[str, Any]
    batch: int
    order: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "block": self.block.to_json(), "tree": self.tree,
                "score": None if self.score == float("inf") else self.score, "crash": self.score == float("inf"),
                "origin": self.origin, "minimal": self.minimal, "batch": self.batch, "order": self.order}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Discovery":
        return cls(d["id"], AbstractBlock.from_json(d["block"]), d["tree"],
                   float("inf") if d.get("crash") else float(d["score"]), d["origin"], d["minimal"],
                   d["batch"], d["order"])


@dataclass
class State:
    config: Config
    batch: int = 0
    pos: int = 0
    sampled: int = 0
    interesting: int = 0
    subsumed: int = 0
    since_new: int = 0
    elapsed: float = 0.0
    unsupported: list[str] | None = None
    discoveries: list[Discovery] = field(default_factory=list)
    finished: bool = False
    kept: list[int] | None = None
    predicted: int = 0
    fingerprint: dict[str, Any] | None = None  # what the campaign's results depend on (see Campaign)

    def to_json(self) -> dict[str, Any]:
        return {"config": self.config.to_json(), "fingerprint": self.fingerprint, "batch": self.batch, "pos": self.pos, "sampled": self.sampled,
                "interesting": self.interesting, "subsumed": self.subsumed, "since_new": self.since_new,
                "elapsed": self.elapsed, "unsupported": self.unsupported, "finished": self.finished,
                "kept": self.kept, "predicted": self.predicted,
                "discoveries": [d.to_json() for d in self.discoveries]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "State":
        try:
            return cls(Config.from_json(d["config"]), d["batch"], d["pos"], d["sampled"], d["interesting"],
                       d["subsumed"], d["since_new"], d["elapsed"], d.get("unsupported"),
                       [Discovery.from_json(x) for x in d["discoveries"]], d.get("finished", False),
                       d.get("kept"), d.get("predicted", 0), d.get("fingerprint"))
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"campaign state is malformed: {exc}") from None

    def final(self) -> list[Discovery]:
        keep = set(self.kept) if self.kept is not None else None
        return [d for d in self.discoveries if keep is None or d.id in keep]


def _identity(cfg: Config) -> dict[str, Any]:
    """What a campaign's results depend on (budgets and workers may change on resume)."""
    d = cfg.to_json()
    for k in ("max_discoveries", "max_seconds", "max_samples", "patience", "workers"):
        d.pop(k)
    return d


def load_state(folder: str | Path) -> State:
    path = Path(folder) / STATE
    if not path.exists():
        raise FormatError(f"no campaign state at {path} (run `pmsolve anica discover ... -o {folder}` first)")
    doc = parse_json_text(read_text_file(path, "campaign state"), str(path))
    try:
        return State.from_json(doc)
    except PmsolveError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FormatError(f"campaign state {path} is malformed ({type(exc).__name__}: {exc})") from None


class Campaign:
    def __init__(self, cfg: Config, folder: str | Path, a: Predictor, b: Predictor,
                 universe: Universe | None = None, progress: Callable[[str], None] | None = None,
                 executor: Any = None):
        """``executor`` (:mod:`pmsolve.executor`): where predictor calls run; results do not depend on it."""
        self.folder = Path(folder)
        self.a, self.b = a, b
        self.progress = progress or (lambda msg: print(f"[anica] {msg}", file=sys.stderr, flush=True))
        path = self.folder / STATE
        full = universe or build_universe(cfg)
        # what the results depend on: the configuration (budgets and workers may change on resume),
        # both predictors (their names include everything their answers depend on) and the universe
        fingerprint = {"config": _identity(cfg), "predictors": [a.name, b.name],
                       "universe": digest("|".join(f.key for f in full.forms))}
        if path.exists():
            self.state = load_state(self.folder)
            stored = self.state.fingerprint or {"config": _identity(self.state.config)}  # an older state file
            refuse_other_run(path, "AnICA campaign", stored, {k: fingerprint.get(k) for k in stored})
            self.state.config = cfg
            self.progress(f"resuming at batch {self.state.batch}, {len(self.state.discoveries)} discoveries")
        else:
            self.state = State(cfg)
        self.state.fingerprint = fingerprint
        self.cfg = cfg
        self.state.finished = self.state.finished and self._done() is not None
        self.pair = PredictorPair(a, b, Criterion(cfg.mode, cfg.threshold), cfg.workers, executor=executor)
        self._predicted0 = self.state.predicted
        if self.state.unsupported is None:
            t0 = time.monotonic()
            self.state.unsupported = self._unsupported(full) if cfg.filter_unsupported else []
            self.state.elapsed += time.monotonic() - t0
            self.save()
        self.universe = supported_universe(full, self.state.unsupported or [])
        self.sampler = Sampler(self.universe)
        self.generalizer = Generalizer(self.universe, self.sampler, self.pair,
                               GeneralizeSettings(cfg.samples, cfg.chunk, cfg.witnesses))

    def _deadline(self) -> float | None:
        """time.monotonic() at which the time budget runs out (None: no time budget)."""
        c = self.cfg
        return time.monotonic() + c.max_seconds - self.state.elapsed if c.max_seconds else None

    def _unsupported(self, u: Universe) -> list[str] | None:
        """Forms a predictor fails on (or predicts ≤ 0 for) alone (sec. 8.2.2, footnote 20);
        None when the time budget runs out first (the predictions made are cached)."""
        self.progress(f"checking {len(u)} instruction forms alone with both predictors")
        deadline, t0, shown = self._deadline(), time.monotonic(), time.monotonic()
        blocks, smp = [], Sampler(u)
        for k in range(len(u)):
            c = smp.sample(AbstractBlock((u.beta_insn(u.forms[k].key),)), random.Random(k))
            blocks.append(to_block(u, c) if c is not None and c.forms[0] == u.forms[k].key else None)
        valid = [b for b in blocks if b is not None]
        preds: list = []
        for start in range(0, len(valid), FORMS_PER_CALL):
            if deadline is not None and time.monotonic() > deadline:
                self.progress(f"time budget spent after {len(preds)} of {len(valid)} forms")
                return None
            preds += self.pair.predict(valid[start:start + FORMS_PER_CALL])
            if time.monotonic() - shown > 5:
                shown = time.monotonic()
                self.progress(f"  {len(preds)} of {len(valid)} forms checked, {shown - t0:.0f} s")
        answers = iter(preds)
        out = []
        for form, blk in zip(u.forms, blocks):
            if blk is None:
                out.append(form.key)
                continue
            x, y = next(answers)
            if not (x.ok and y.ok and x.cycles > 0 and y.cycles > 0):
                out.append(form.key)
        self.progress(f"{len(out)} of {len(u)} forms unsupported by a predictor; excluded")
        return out

    def save(self) -> None:
        self.state.predicted = self._predicted0 + self.pair.predicted
        atomic_write_text(self.folder / STATE, json.dumps(self.state.to_json(), indent=1))

    def _done(self) -> str | None:
        s, c = self.state, self.cfg
        if c.max_discoveries and len(s.discoveries) >= c.max_discoveries:
            return f"{len(s.discoveries)} discoveries"
        if c.max_seconds and s.elapsed >= c.max_seconds:
            return f"time budget {c.max_seconds:g} s"
        if c.max_samples and s.sampled >= c.max_samples:
            return f"{s.sampled} samples"
        if c.patience and s.since_new >= c.patience:
            return f"{s.since_new} samples without a new discovery"
        return None

    def batch_blocks(self, batch: int) -> list[Concrete]:
        rng = random.Random(f"{self.cfg.seed}:batch:{batch}")
        out = []
        while len(out) < self.cfg.batch:
            n = rng.randint(1, self.cfg.block_size)
            c = self.sampler.sample(AbstractBlock.top(n), rng)
            if c is not None:
                out.append(c)
        return out

    def subsumed_by_any(self, ab: AbstractBlock) -> bool:
        return any(subsumes(self.universe, d.block, ab) for d in self.state.discoveries)

    def run(self) -> State:
        s = self.state
        t0 = time.monotonic() - s.elapsed
        last = 0.0
        if s.finished:
            return s
        if s.unsupported is None:   # the time budget ran out while checking the forms
            self.progress(f"stopping: time budget {self.cfg.max_seconds:g} s spent while checking the instruction "
                          f"forms; their predictions are cached: rerun with a larger budget to go on")
            return s
        self.generalizer.deadline = self._deadline()
        while (why := self._done()) is None:
            cands = self.batch_blocks(s.batch)
            texts = [to_block(self.universe, c) for c in cands]
            scores = self.pair.scores(texts)
            saved = self._counters()   # as the state file has them: blocks s.pos.. count again on a rerun
            for pos in range(s.pos, len(cands)):
                s.sampled += 1
                s.since_new += 1
                if scores[pos] <= self.cfg.threshold:
                    continue
                s.interesting += 1
                rng = random.Random(f"{self.cfg.seed}:{s.batch}:{pos}")
                try:
                    self._handle(cands[pos], texts[pos].lines, rng, s.batch)
                except BudgetSpent:   # this block is left for a rerun: undo what the batch counted since
                    self._counters(saved)
                    s.elapsed = time.monotonic() - t0
                    break
                s.pos = pos + 1
                s.elapsed = time.monotonic() - t0
                self.save()
                saved = self._counters()
                if self._done():
                    break
            else:
                s.batch, s.pos = s.batch + 1, 0
            s.elapsed = time.monotonic() - t0
            if s.elapsed - last > 5 or self._done():
                last = s.elapsed
                self.progress(f"batch {s.batch}: {s.sampled} sampled, {s.interesting} interesting, "
                              f"{s.subsumed} already subsumed, {len(s.discoveries)} discoveries, "
                              f"{self.pair.predicted} predictions, {s.elapsed:.0f} s")
            self.save()
        self.progress(f"stopping: {why}; filtering subsumed discoveries")
        s.kept = self.filter_subsumed()
        s.finished = True
        self.save()
        self.progress(f"{len(s.kept)} of {len(s.discoveries)} discoveries kept")
        return s

    def _counters(self, restore: tuple | None = None) -> tuple:
        """The counters and the number of discoveries; with ``restore``, set them back to it."""
        s = self.state
        if restore is not None:
            s.sampled, s.since_new, s.interesting, s.subsumed, n = restore
            del s.discoveries[n:]
        return s.sampled, s.since_new, s.interesting, s.subsumed, len(s.discoveries)

    def _handle(self, cand: Concrete, origin: list[str], rng: random.Random, batch: int) -> None:
        s = self.state
        small = self.generalizer.minimize(cand, rng)

        if self.subsumed_by_any(beta(self.universe, small)):
            s.subsumed += 1
            return
        for order in range(self.cfg.orders):
            if self._done():  # the budget counts discoveries, not interesting blocks
                break
            ab, tree, score = self.generalizer.generalize(small, rng)
            if self.subsumed_by_any(ab):
                continue
            s.discoveries.append(Discovery(len(s.discoveries), ab, [n.to_json() for n in tree], score, origin,
                                           {"concrete": small.to_json(), "asm": to_block(self.universe, small).lines},
                                           batch, order))
            s.since_new = 0

    def filter_subsumed(self) -> list[int]:
        """Line 11: drop a discovery when another kept one subsumes it."""
        ds = self.state.discoveries
        dropped: set[int] = set()
        for i, d in enumerate(ds):
            for j, e in enumerate(ds):
                if i != j and j not in dropped and subsumes(self.universe, e.block, d.block):
                    dropped.add(i)
                    break
        return [d.id for k, d in enumerate(ds) if k not in dropped]

