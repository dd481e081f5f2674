"""AnICA (sec. 8.1): domain, sampler, subsumption, generalisation, campaign, CLI.

The predictors are genuine small port-mapping predictors (tests/anica_helpers.py) with a
planted difference (bit scans), so the discoveries have a known right answer.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import anica_helpers as H
from pmsolve.predictors.block import Block
from pmsolve.anica.campaign import Campaign, load_state
from pmsolve.anica.config import Config, parse
from pmsolve.anica.domain import (AbstractBlock, Concrete, Universe, alias_facts, beta, contains,
                                  expansions)
from pmsolve.anica.features import EditDistance, LogSizes, SubsetOrNone, levenshtein
from pmsolve.anica.interesting import Criterion, PredictorPair
from pmsolve.predictors.base import Prediction
from pmsolve.anica.rank import by_interestingness, top_k
from pmsolve.anica.sampler import Sampler, to_block
from pmsolve.anica.subsume import Coverage, sat_only, subsumes
from pmsolve.errors import FormatError, ValidationError

@pytest.fixture(scope="module")
def universe() -> Universe:
    return H.make_universe()


def _block(u: Universe, forms: list[str], regs: list[tuple]) -> Concrete:
    return Concrete(tuple(forms), tuple(tuple(r) for r in regs))


# --------------------------------------------------------------------------- features

def _ref_lev(a: str, b: str) -> int:
    if not a or not b:
        return len(a) + len(b)
    return min(_ref_lev(a[1:], b) + 1, _ref_lev(a, b[1:]) + 1, _ref_lev(a[1:], b[1:]) + (a[0] != b[0]))


@given(st.text("abc", max_size=5), st.text("abc", max_size=5), st.integers(0, 4))
def test_levenshtein_matches_reference_and_bound(a, b, bound):
    d = _ref_lev(a, b)
    assert levenshtein(a, b) == d
    assert (levenshtein(a, b, bound) <= bound) == (d <= bound)


@given(st.one_of(st.none(), st.integers(0, 200)))
def test_log_sizes_beta_is_sound_and_tight(n):
    dom = LogSizes(5)
    av = dom.beta(n)
    assert dom.admits(av, n)
    if av not in (None, 0):  # tight: the next smaller value would exclude n
        assert not dom.admits(av - 1, n)


@given(st.frozensets(st.sampled_from(["R", "W", "Size:64", "Size:32"])))
def test_subset_expansions_ascend_and_keep_gamma(v):
    dom = SubsetOrNone()
    av = dom.beta(v)
    assert dom.admits(av, v)
    for nxt in dom.succ(av):
        assert dom.leq(av, nxt) and nxt != av and dom.admits(nxt, v)


def test_edit_distance_groups_vaddpd_family():
    dom = EditDistance(3)
    assert dom.admits(("vaddpd", 1), "vaddps") and dom.admits(("vaddpd", 2), "vaddss")
    assert not dom.admits(("vaddpd", 0), "vaddps")
    assert dom.succ(("vaddpd", 3)) == [None]


# --------------------------------------------------------------------------- domain + sampler

def test_alias_facts_registers_and_memory(universe):
    c = _block(universe, ["add_r64_r64", "add_r64_r64", "mov_m64_r64", "mov_r64_m64"],
               [("rax", "rbx"), ("rcx", "eax"[1:] and "rax"), ("96(%r14)", "rdx"), ("rsi", "96(%r14)")])
    f = alias_facts(universe, c)
    assert f[((0, 0), (1, 1))] == "must"        # rax written, then read
    assert f[((0, 1), (1, 0))] == "mustnot"
    assert f[((2, 0), (3, 1))] == "must"        # same memory slot
    assert ((0, 0), (2, 0)) not in f            # register vs memory: no match
    blk = to_block(universe, c)
    assert blk.lines[2] == "movq %rdx, 96(%r14)"


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10 ** 6), st.integers(1, 4), st.integers(0, 12))
def test_sampler_respects_its_abstract_block_and_beta_is_sound(universe, seed, n, steps):
    """b ∈ γ(β(b)); samples of an expanded block satisfy its constraints (γ̂(a) ⊆ γ(a))."""
    rng = random.Random(seed)
    smp = Sampler(universe)
    c = smp.sample(AbstractBlock.top(n), rng)
    assert c is not None
    ab = beta(universe, c)
    assert contains(universe, ab, c)
    for _ in range(steps):
        exps = expansions(ab)
        if not exps:
            break
        nxt = exps[rng.randrange(len(exps))].apply(ab)
        assert ab.leq(nxt) and not nxt.leq(ab)
        ab = nxt
        s = smp.sample(ab, rng)
        if s is not None:
            assert contains(universe, ab, s)
    assert AbstractBlock.from_json(json.loads(json.dumps(ab.to_json()))) == ab


def test_sampler_gives_up_on_contradictory_fixed_registers(universe):
    """Two variable shifts whose cl operands must not alias cannot be sampled (sec. 8.1.5)."""
    shl = universe.beta_insn("shl_r64_cl")
    ab = AbstractBlock.make([shl, shl], {((0, 1), (1, 1)): "mustnot"})
    assert Sampler(universe, attempts=3).sample(ab, random.Random(0)) is None


# --------------------------------------------------------------------------- subsumption

def test_subsumption_allows_rotation_and_extra_instructions(universe):
    """AB1 of Example 8.1 subsumes its rotation and the version with an extra instruction."""
    load, rmw = "mov_r64_m64", "add_m64_r64"
    c = _block(universe, [load, rmw], [("rbx", "32(%r14)"), ("96(%r14)", "rbx")])
    ab1 = beta(universe, c)
    rot = _block(universe, [rmw, load], [("96(%r14)", "rbx"), ("rbx", "32(%r14)")])
    extra = _block(universe, [load, "add_r64_r64", rmw], [("rbx", "32(%r14)"), ("rsi", "rdi"), ("96(%r14)", "rbx")])
    other = _block(universe, [load, rmw], [("rbx", "32(%r14)"), ("96(%r14)", "rcx")])
    for c2, want in ((rot, True), (extra, True), (other, False)):
        assert subsumes(universe, ab1, beta(universe, c2)) is want
        assert Coverage(universe, [ab1]).covers(0, c2) is want


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10 ** 6), st.sampled_from(H.PERTURBATIONS))
def test_coverage_and_subsumption_agree_with_brute_force_on_concrete_blocks(universe, seed, perturb):
    """Def. 8.7 against a concrete block: the fast coverage search and subsumes() (search + SAT)
    both equal the literal enumeration of anica_helpers.brute_subsumes."""
    c2, a1, _ = H.subsumption_pair(universe, random.Random(seed), perturb, expand_a2=False)
    want = H.brute_subsumes(universe, a1, beta(universe, c2))
    assert Coverage(universe, [a1]).covers(0, c2) is want
    assert subsumes(universe, a1, beta(universe, c2)) is want


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10 ** 6), st.sampled_from(H.PERTURBATIONS))
def test_subsumption_agrees_with_brute_force_on_abstract_blocks(universe, seed, perturb):
    """Def. 8.7 between abstract blocks, both ways round: search + SAT and SAT alone equal the
    literal enumeration."""
    _, a1, a2 = H.subsumption_pair(universe, random.Random(seed), perturb, expand_a2=True)
    for x, y in ((a1, a2), (a2, a1)):
        want = H.brute_subsumes(universe, x, y)
        assert subsumes(universe, x, y) is want and sat_only(universe, x, y) is want


def test_subsumption_pairs_exercise_every_condition(universe):
    """The pairs the two tests above draw: about half subsume, and C2 (narrowed instruction), C3
    (contradicted or added aliasing) and C4 (reordered instructions) each decide many of the rest."""
    decided: Counter = Counter()
    for seed in range(300):
        perturb = H.PERTURBATIONS[seed % len(H.PERTURBATIONS)]
        _, a1, a2 = H.subsumption_pair(universe, random.Random(seed), perturb, expand_a2=seed % 2 == 0)
        yes = H.brute_subsumes(universe, a1, a2)
        decided["subsume"] += yes
        if not yes:
            decided["C4" if H.brute_subsumes(universe, a1, a2, rotation=False) else perturb] += 1
    assert 100 <= decided["subsume"] <= 200, decided
    assert decided["C4"] >= 30 and decided["narrow"] >= 30, decided
    assert decided["flip-alias"] + decided["add-alias"] >= 30, decided


# --------------------------------------------------------------------------- interestingness

def test_interestingness_relative_absolute_and_crash():
    rel, ab = Criterion("relative", 0.5), Criterion("absolute", 0.5)
    assert rel.score(Prediction(1.0), Prediction(2.0)) == pytest.approx(2 / 3)
    assert rel.interesting(Prediction(1.0), Prediction(2.0))
    assert not rel.interesting(Prediction(10.0), Prediction(14.0))
    assert ab.interesting(Prediction(10.0), Prediction(14.0))
    crash = Prediction(None, "crash: boom")
    assert math.isinf(rel.score(crash, Prediction(1.0))) and rel.interesting(crash, Prediction(1.0))
    with pytest.raises(ValidationError):
        Criterion("ratio", 0.5)


def test_evaluator_survives_a_raising_predictor():
    class Boom:
        name = "boom"

        def predict(self, blocks):
            raise RuntimeError("segfault-ish")

    ev = PredictorPair(H.base(), Boom(), Criterion(), workers=2)
    blk = Block.of([("add_r64_r64", "addq %rax, %rbx")])
    (x, y), = ev.predict([blk])
    assert x.ok and not y.ok and "segfault-ish" in y.error
    ev.close()


# --------------------------------------------------------------------------- campaign

def _cfg(**kw) -> Config:
    base = dict(a="factory:anica_helpers:base", b="factory:anica_helpers:slow_bsf", uops="none",
                samples=12, chunk=6, orders=2, batch=10, block_size=3, max_discoveries=3,
                max_seconds=120, patience=30, seed=5, workers=2)
    base.update(kw)
    return Config(**base)


def _run(cfg: Config, folder, universe, a=None, b=None):
    camp = Campaign(cfg, folder, a or H.base(), b or H.slow_bsf(), universe=universe, progress=lambda m: None)
    try:
        return camp, camp.run()
    finally:
        camp.pair.close()


def test_campaign_finds_the_planted_bit_scan_difference(universe, tmp_path):
    camp, st_ = _run(_cfg(), tmp_path, universe)
    final = st_.final()
    assert final and st_.since_new >= 30  # stopped by patience: nothing new to find
    bits = universe.gamma(universe.beta_insn("bsf_r64_r64"))
    for d in final:
        # pertinent: the minimal witness has a bit scan, and every discovery requires one
        assert any(line.startswith(("bsf", "bsr")) for line in d.minimal["asm"])
        scans = [i for i, ai in enumerate(d.block.insns)
                 if all(universe.forms[k].scheme.mnemonic in ("bsf", "bsr")
                        for k in np.flatnonzero(universe.gamma(ai)))]
        assert scans, d.block.describe()
        assert d.tree[0]["expansion"] == "β(block)" and d.tree[0]["accepted"]
    assert bits.any()
    # filterSubsumed: no kept discovery is subsumed by another kept one
    for d in final:
        assert not any(e.id != d.id and subsumes(camp.universe, e.block, d.block) for e in final)


def test_campaign_resume_reproduces_an_uninterrupted_run(universe, tmp_path):
    _, whole = _run(_cfg(max_samples=25, patience=0), tmp_path / "whole", universe)
    _run(_cfg(max_samples=12, patience=0), tmp_path / "parts", universe)
    _, resumed = _run(_cfg(max_samples=25, patience=0), tmp_path / "parts", universe)
    assert whole.discoveries and whole.sampled == resumed.sampled
    assert [d.to_json() for d in resumed.discoveries] == [d.to_json() for d in whole.discoveries]
    assert load_state(tmp_path / "parts").finished


def test_campaign_refuses_another_run_on_resume(universe, tmp_path):
    """The state file's fingerprint names what differs: the configuration, or a predictor."""
    _run(_cfg(max_samples=5), tmp_path, universe)
    with pytest.raises(ValidationError, match=r"another run \(config\.threshold"):
        Campaign(_cfg(threshold=0.9), tmp_path, H.base(), H.slow_bsf(), universe=universe, progress=lambda m: None)
    with pytest.raises(ValidationError, match=r"another run \(predictors"):
        Campaign(_cfg(max_samples=5), tmp_path, H.base(), H.crashy(), universe=universe, progress=lambda m: None)


def test_crashes_are_interesting_and_recorded(universe, tmp_path):
    _, st_ = _run(_cfg(b="factory:anica_helpers:crashy", filter_unsupported=False),
                  tmp_path, universe, b=H.crashy())
    assert st_.discoveries
    d = st_.discoveries[0]
    assert math.isinf(d.score) and any("imul" in line for line in d.minimal["asm"])
    errs = [w["error"] for n in d.tree for w in n["witnesses"] if w["error"]]
    assert errs and "<script>" in errs[0]


# --------------------------------------------------------------------------- ranking

def test_top_k_matches_brute_force():
    rng = random.Random(3)
    table = [[d for d in range(6) if rng.random() < 0.3] for _ in range(40)]
    chosen, covered = top_k(table, 6, 2)
    from itertools import combinations

    best = max(sum(1 for ds in table if set(ds) & set(pair)) for pair in combinations(range(6), 2))
    assert covered == best and len(chosen) <= 2
    assert covered == sum(1 for ds in table if set(ds) & set(chosen))
    assert by_interestingness([1.0, math.inf, 2.0]) == [1, 2, 0]


# --------------------------------------------------------------------------- config + CLI

def test_config_parsing_names_bad_keys(tmp_path):
    cfg = parse({"seed": 4, "predictors": {"a": "x", "b": "y"}, "budget": {"discoveries": 7}})
    assert (cfg.seed, cfg.a, cfg.max_discoveries) == (4, "x", 7)
    with pytest.raises(FormatError, match="budget.minutes"):
        parse({"budget": {"minutes": 3}})
    with pytest.raises(FormatError, match="threshold"):
        parse({"interestingness": {"threshold": "high"}})


def test_cli_discover_report_generalize(tmp_path, capsys):
    from pmsolve.cli import main

    cfg = tmp_path / "c.toml"
    cfg.write_text('seed = 2\nworkers = 1\n[predictors]\na = "factory:anica_helpers:base"\n'
                   'b = "factory:anica_helpers:slow_bsf"\n[isa]\nuops = "none"\nfilter = "category=bit"\n'
                   '[generalization]\nsamples = 8\norders = 1\n[budget]\ndiscoveries = 1\n')
    out = tmp_path / "camp"
    assert main(["anica", "discover", str(cfg), "-o", str(out), "--quiet", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["discoveries"] >= 1 and (out / "report.html").exists()
    assert main(["anica", "report", str(out), "--json"]) == 0
    doc = json.loads((out / "report.json").read_text())
    assert doc["discoveries"][0]["tree"]
    capsys.readouterr()
    assert main(["anica", "generalize", str(cfg), "--schemes", "bsf_r64_r64", "--quiet", "--json"]) == 0
    gen = json.loads(capsys.readouterr().out)
    assert gen["results"][0]["describe"][0].startswith("1. mnemonic: bs")
    # --concrete takes the JSON text its help shows (report.json's minimal block), or a file holding it
    concrete = json.dumps(doc["discoveries"][0]["minimal"]["concrete"])
    (tmp_path / "c.json").write_text(concrete)
    for given in (concrete, str(tmp_path / "c.json")):
        assert main(["anica", "generalize", str(cfg), "--concrete", given, "--quiet", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["results"]
    assert main(["anica", "discover", str(tmp_path / "missing.toml"), "-o", str(out)]) == 2


# --------------------------------------------------------------------------- kill -9

PREDICTOR = "anica_helpers:MappingPredictor.predict"
class _Clock:
    """A fake time.monotonic that only predictor ``a``'s calls advance (1 s each): a time budget
    then becomes a number of predictor calls, the same in every run."""

    def __init__(self):
        self.start = self.now = 1000.0
        self.starts: list[float] = []

    def __call__(self) -> float:
        return self.now

    def timed(self, predictor):
        real = predictor.predict

        def predict(blocks):
            self.starts.append(self.now - self.start)
            self.now += 1.0
            return real(blocks)

        predictor.predict = predict
        return predictor


@pytest.mark.parametrize("budget, filter_unsupported", [(8, False), (44, False), (2, True)],
                         ids=["first-block", "later-block", "form-check"])
def test_the_time_budget_stops_predicting_when_it_is_spent(universe, tmp_path, monkeypatch, budget,
                                                           filter_unsupported):
    """`--seconds 5` ran past 60 s: the check of every form alone and the generalisation of an
    interesting block did not look at the budget. Now no predictor call starts after it is spent,
    a block cut short is not counted, and a form check cut short is redone by a rerun."""
    import time

    from pmsolve.anica import campaign

    clock = _Clock()
    monkeypatch.setattr(time, "monotonic", clock)
    monkeypatch.setattr(campaign, "FORMS_PER_CALL", 4, raising=False)
    cfg = _cfg(max_seconds=budget, max_discoveries=0, patience=0, workers=1, filter_unsupported=filter_unsupported)
    camp = Campaign(cfg, tmp_path, clock.timed(H.base()), H.slow_bsf(), universe=universe, progress=lambda m: None)
    try:
        st_ = camp.run()
    finally:
        camp.pair.close()
    assert clock.starts and max(clock.starts) <= budget <= clock.now - clock.start   # spent, nothing after
    assert st_.elapsed >= budget
    kept = load_state(tmp_path)
    if filter_unsupported:
        assert kept.unsupported is None and not kept.discoveries   # the forms check did not end
    else:
        assert kept.unsupported == [] and kept.sampled == st_.sampled and kept.interesting >= len(kept.discoveries)


#: two planted differences (bit scans predicted slower by a, imul crashing b), so the campaign
#: finds several discoveries; ended by a sample budget (deterministic, unlike a time budget)
KILL_CONFIG = ('seed = 2\nworkers = 1\n[predictors]\na = "factory:anica_helpers:slow_bsf"\n'
               'b = "factory:anica_helpers:crashy"\n[isa]\nuops = "none"\nfilter = "name=*_r64_r64"\n'
               'filter_unsupported = false\n[generalization]\nsamples = 8\norders = 1\n[budget]\nsamples = 80\n')


def _outcome(folder) -> dict:
    """A campaign's state without what depends on timing or on cached predictions."""
    doc = json.loads((folder / "state.json").read_text())
    for key in ("elapsed", "predicted"):
        doc.pop(key)
    return doc


@pytest.mark.parametrize("kill_at", [30, 120, 289])   # after 1 discovery, after 3, in the last batch
def test_sigkill_then_resume_gives_the_uninterrupted_discoveries(tmp_path, monkeypatch, capsys, kill_at):
    """`pmsolve anica discover` SIGKILLed inside its kill_at-th predictor call (answers computed, not
    handed back), then rerun: the same discoveries, trees, counters and report as a campaign that
    was never interrupted."""
    import sigkill
    from pmsolve.cli import main

    cfg = tmp_path / "c.toml"
    cfg.write_text(KILL_CONFIG)
    whole, out = tmp_path / "whole", tmp_path / "out"
    assert main(["anica", "discover", str(cfg), "-o", str(whole), "--quiet", "--json"]) == 0
    reference = _outcome(whole)
    assert len(reference["discoveries"]) >= 3 and reference["finished"]
    sigkill.run_killed(PREDICTOR, kill_at, tmp_path / "log.txt", ["anica", "discover", str(cfg), "-o", str(out),
                                                                  "--quiet", "--json"])
    killed = load_state(out)
    assert not killed.finished and killed.discoveries and not (out / "report.json").exists()
    assert len(killed.discoveries) <= len(reference["discoveries"])
    capsys.readouterr()
    assert main(["anica", "discover", str(cfg), "-o", str(out), "--quiet", "--json"]) == 0
    assert _outcome(out) == reference
    report = json.loads((out / "report.json").read_text())
    assert report["discoveries"] == json.loads((whole / "report.json").read_text())["discoveries"]
