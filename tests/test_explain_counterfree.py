"""Explainable inference without a µop counter (issue 16): the simulation gate and the pieces it
rests on — flooding counts that are sound, the joint integer fit, pair screening with
multiplicities, components and inferred port counts, stand-ins for wrong representatives."""

from __future__ import annotations

import random
import re
from fractions import Fraction
from itertools import combinations

import pytest
from explain_fixtures import OneGlitch, hidden_union, readme_tour, small_hidden, synthetic, zen_like
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmsolve.cli import main
from pmsolve.harness.simulated import SimulatedOracle
from pmsolve.infer.explain import ExplainOptions, infer, modes
from pmsolve.infer.explain.witnesses import Explanation, Misfit
from pmsolve.infer.explain.characterise import Probe, fit_uops, flooding_copies, tight_copies
from pmsolve.infer.explain.compare import agreement
from pmsolve.infer.explain.structure import components, pair_consistent, port_lower_bound, screen, slow_schedules
from pmsolve.model import Experiment, PortMapping
from pmsolve.modelled import Mode, ModelledMapping, SchemeModel
from pmsolve.throughput import batch_inverse_throughput, inverse_throughput

# ----------------------------------------------------------------------------- the simulation gate


@pytest.mark.parametrize("make,seed,r_max", [(synthetic, 0, 4), (synthetic, 1, 4), (synthetic, 2, None),
                                             (zen_like, 0, 5), (zen_like, 1, 5), (zen_like, 2, 5)])
def test_gate_recovers_every_covered_scheme_with_noise_and_front_end(make, seed, r_max):
    """No µop counter, R_max, ±1 % noise: every scheme of a truth that has a single-µop blocking
    instruction for each port set it uses comes out exactly, up to port renaming, with the
    number of ports inferred. (benchmarks/explain_counterfree.py runs 30 such truths.)"""
    truth = make(seed)
    res = infer(SimulatedOracle(truth, r_max=r_max, noise=0.01, seed=seed), ExplainOptions(epsilon=0.03))
    assert res.summary["counter"] is False
    assert res.summary["ports"] == len(truth.ports)
    ag = agreement(truth, res.mapping)
    assert not ag.different and not ag.missing, (ag.different, {i: res.misfits[i].reason for i in ag.missing})
    for i in truth.instructions:   # every µop shows its witnesses; characterised schemes a confidence
        x = res.explanations[i]
        assert all(x.witnesses.get(",".join(p)) for p, _ in x.uops)
        if x.source == "characterised":
            assert 0.0 <= x.confidence <= 1.0


@pytest.mark.parametrize("noise,seed", [(0.0, 0), (0.01, 1), (0.01, 2), (0.01, 3)])
@pytest.mark.parametrize("make", [hidden_union, readme_tour])
def test_small_truths_map_no_scheme_wrong_and_the_readme_machine_in_full(make, noise, seed):
    """Issue 39's small truths (R_max 4): a µop on a set inside no blocked one (all four ports of
    a machine blocked at [0], [1], [0,1], [2,3]) is shown by a full check and placed, never left
    out of a mapped scheme (it was: ``{i00: 1, b03: 4}`` took 2.5 cycles where the mapping said
    2.0); ``b04`` at 1/R_max stays a misfit. The README's machine maps in full: the peak climb
    adds the one-port load to the three adds (4 per cycle, not 3), and its class takes ``load``,
    not ``addm`` (a load and an add), as the representative."""
    truth = make()
    res = infer(SimulatedOracle(truth, r_max=4, noise=noise, seed=seed), ExplainOptions())
    ag = agreement(truth, res.mapping)
    assert not ag.different, [(i, res.mapping.uops[i]) for i in ag.different]
    if make is readme_tour:
        assert not ag.missing
    else:
        assert set(ag.missing) == {"b04"} and res.summary["r_max"] == 4
        x = res.explanations["i00"]
        assert any(w.kind == "check" and w.experiment == Experiment({"i00": 1, "b03": 4}) for w in x.others)


@pytest.mark.parametrize("noise,extra", [(0.0, [80, 114]), (0.01, [25, 39, 42, 89])])
def test_generated_small_truths_map_no_scheme_wrong(noise, extra):
    """Twenty generated 4-8 port truths (``small_hidden``: µops on unions of port groups that no
    blocking instruction isolates, R_max near the port count), exact and with ±1 % noise: the
    port count is found and no mapped scheme differs from the truth unless it says so: its full
    check was out of the front end's reach (``unchecked``), or other placements fit its
    measurements as well (``alternatives``). Seed 5 lost two ports when a 1-cycle scheme
    posing as one port pushed out the true 2-port blocking instruction of the peak experiment;
    seed 15 (noisy) kept "2 µops on 4 ports" for a scheme with a µop confined to 3 of them, and
    put a µop on [0,1,2] that runs on [0,1,2,4]. Of seeds 20-119 (``extra``): 80 and 114 lost
    ports to impostors of larger classes or in an unsat core (the peak's members now go last
    when the ports found are fewer than the peak IPC); with noise, 25 and 39 took the widest of
    placements that fit equally (now listed as ``alternatives``), and 42 and 89 swapped a class
    representative for a multi-µop member that ran 3 % faster alone by chance (now confirmed on
    doubled samples)."""
    wrong = {}
    for seed in list(range(20)) + extra:
        truth, r_max = small_hidden(seed)
        res = infer(SimulatedOracle(truth, r_max=r_max, noise=noise, seed=seed),
                    ExplainOptions(epsilon=0.03 if noise else 0.02))
        if res.summary["ports"] != len(truth.ports):
            wrong[seed] = f"{res.summary['ports']} ports, not {len(truth.ports)}"
            continue
        bad = [i for i in agreement(truth, res.mapping).different
               if not res.explanations[i].unchecked and not res.explanations[i].alternatives]
        if bad:
            wrong[seed] = {i: (truth.uops[i], res.mapping.uops[i]) for i in bad}
    assert not wrong


def test_placements_the_measurements_cannot_tell_apart_are_listed_and_shown(tmp_path, capsys):
    """small_hidden(39) with 1 % noise: a µop on [0,1,2,3] of a scheme with three more on [4]
    also fits on all five ports within the noise; the mapping takes the widest and says so, in
    the saved file, the warnings and ``pmsolve explain``."""
    truth, r_max = small_hidden(39)
    res = infer(SimulatedOracle(truth, r_max=r_max, noise=0.01, seed=39), ExplainOptions(epsilon=0.03))
    ambiguous = {i: x for i, x in res.explanations.items() if x.alternatives}
    assert "x0" in ambiguous and any("alternatives" in w for w in res.warnings)
    x = ambiguous["x0"]
    assert all(len(alt) == len(x.uops) and alt != x.uops for alt in x.alternatives)
    assert Explanation.from_json(x.to_json()).alternatives == x.alternatives
    res.save(tmp_path / "m.json")
    capsys.readouterr()
    assert main(["explain", str(tmp_path / "m.json"), "x0"]) == 0
    shown = capsys.readouterr().out
    assert "fits the measurements as well" in shown and "×[" in shown.split("as well")[1]


def test_exact_oracle_gives_full_confidence_and_checks_held_out_experiments():
    truth = synthetic(3)
    res = infer(SimulatedOracle(truth, r_max=4), ExplainOptions())
    assert not agreement(truth, res.mapping).different
    chars = [x for x in res.explanations.values() if x.source == "characterised"]
    assert chars and all(x.confidence == pytest.approx(1.0) for x in chars)
    for x in chars:   # the experiments not used to derive the µops are listed and reproduced
        checks = [w for w in x.others if w.kind == "check"]
        assert len(checks) >= 1 and all(w.modelled == pytest.approx(w.measured) for w in checks)


# ----------------------------------------------------------------------------- flooding counts

PORTS = [str(p) for p in range(6)]
SETS = [frozenset(s) for s in (("0",), ("1",), ("0", "1"), ("2", "3"), ("1", "2", "3"), ("0", "1", "2", "3"),
                               ("4", "5"), ("3", "4"))]


@st.composite
def scheme_and_set(draw):
    uops = draw(st.dictionaries(st.sampled_from(SETS), st.integers(1, 3), min_size=1, max_size=3))
    q = draw(st.sampled_from(SETS))
    r_max = draw(st.sampled_from([None, 5, 6]))
    return uops, q, r_max


def _estimate(uops: dict, q: frozenset, k: int, r_max) -> float:
    m = PortMapping(PORTS, {"B": [(q, 1)], "i": list(uops.items())})
    t = inverse_throughput(m, Experiment({"B": k, "i": 1}), r_max=r_max)
    return float((t - inverse_throughput(m, Experiment({"B": k}), r_max=r_max)) * len(q))


@given(scheme_and_set())
@settings(max_examples=300, deadline=None)
def test_flooding_copies_make_the_estimate_exact(case):
    """Constraint 6.1 (k ≥ |Q|·µops) and the tighter count from the µops found both make the
    non-evading estimate equal the µops whose port set lies inside Q."""
    uops, q, r_max = case
    n = sum(uops.values())
    inside = sum(c for s, c in uops.items() if s <= q)
    tp = float(inverse_throughput(PortMapping(PORTS, {"i": list(uops.items())}), Experiment({"i": 1})))
    assert _estimate(uops, q, flooding_copies(len(q), n, 1, r_max), r_max) == pytest.approx(inside)
    assert _estimate(uops, q, tight_copies(q, uops, tp, 1, r_max), r_max) == pytest.approx(inside)


def test_too_few_copies_overestimate_and_tight_copies_are_fewer():
    # 3 µops on [1,2,3] with Q = [1]: one copy pushes them onto port 1 (estimate too high)
    uops, q = {frozenset({"1", "2", "3"}): 3}, frozenset({"1"})
    assert _estimate(uops, q, 1, None) > 0
    assert tight_copies(q, uops, 1.0, 1, None) < flooding_copies(1, 3, 1, None) * 4
    far = {frozenset({"4", "5"}): 3}                  # µops far from Q need no more than |Q|·tp⁻¹
    assert tight_copies(frozenset({"0", "1"}), far, 1.5, 1, None) == 3


# ----------------------------------------------------------------------------- the joint integer fit

def _probe(q: frozenset, x: float, k: int = 8, samples: int = 1) -> Probe:
    p = Probe("B", q)
    for j in range(samples):
        p.samples.append((Experiment({"B": k + j, "i": 1}), Experiment({"B": k + j}), (k + j + x) / len(q),
                          (k + j) / len(q)))
    return p


@given(st.dictionaries(st.sampled_from(SETS), st.integers(1, 3), min_size=1, max_size=3),
       st.lists(st.floats(-0.2, 0.2), min_size=len(SETS), max_size=len(SETS)))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_fit_recovers_counts_from_noisy_estimates(uops, noise):
    order = sorted(SETS, key=lambda s: (len(s), sorted(s)))   # subsets before supersets
    probes = [_probe(q, sum(c for s, c in uops.items() if s <= q) + e) for q, e in zip(order, noise)]
    assert fit_uops(probes) == uops


# ----------------------------------------------------------------------------- blocking structure

def _o(**kw) -> ExplainOptions:
    return ExplainOptions(**kw).resolved(False)


def test_pair_consistency_tells_overlaps_and_impostors():
    size = {"a": 2, "b": 2, "x": 1}
    two = {"a": frozenset({"0", "1"}), "b": frozenset({"1", "2"})}
    m = PortMapping(["0", "1", "2"], {k: [(v, 1)] for k, v in two.items()} | {"x": [(frozenset({"0", "1"}), 2)]})
    exps = [Experiment({"a": 1, "b": 1}), Experiment({"a": 2, "b": 2})]
    measured = [(e, float(inverse_throughput(m, e))) for e in exps]
    assert pair_consistent("a", "b", measured, size, {}, None, _o())          # overlap of one port
    imp = [(e, float(inverse_throughput(m, e))) for e in (Experiment({"a": 1, "x": 1}), Experiment({"a": 2, "x": 1}))]
    assert not pair_consistent("a", "x", imp, {"a": 2, "x": 1}, {}, None, _o())   # x is 2 µops on [0,1]
    assert pair_consistent("a", "x", imp, {"a": 2, "x": 2}, {"x": 2}, None, _o())  # ... and so explained


def test_screen_keeps_the_blocker_and_multiplies_the_impostor():
    m = PortMapping([str(p) for p in range(4)], {
        "alu": [(frozenset({"0", "1", "2", "3"}), 1)], "mul": [(frozenset({"0"}), 1)],
        "two": [(frozenset({"0", "1", "2", "3"}), 2)]})     # looks like one µop on two ports
    size = {"alu": 4, "mul": 1, "two": 2}
    from pmsolve.infer.explain.structure import pair_experiments
    exps = pair_experiments(sorted(size), size)
    values = {e: float(inverse_throughput(m, e)) for e in exps}
    active, mult, dropped, aside = screen(sorted(size), size, {k: 1 for k in size}, values, None, _o(), lambda s: None)
    assert set(active) == {"alu", "mul", "two"} and mult == {"two": 2} and not dropped and not aside


def test_components_and_port_lower_bound():
    inter = {frozenset({"a", "b"}), frozenset({"c", "d"})}
    assert components(["a", "b", "c", "d", "e"], inter) == [["a", "b"], ["c", "d"], ["e"]]
    size = {"a": 2, "b": 2, "c": 3}
    assert port_lower_bound(["a", "b", "c"], size, {}, {frozenset({"a", "b"})}) == 5   # b, c disjoint
    assert port_lower_bound(["a", "b"], size, {"a": 2}, set()) == 6                       # 2·2 + 2


def test_number_of_ports_is_inferred_and_unused_ports_do_not_count():
    ports = [str(p) for p in range(7)]
    table = {"a": [(("0", "1", "2"), 1)], "b": [(("0",), 1)], "c": [(("3", "4"), 1)], "d": [(("5",), 1)],
             "e": [(("6",), 1)], "ab": [(("0", "1", "2"), 1), (("5",), 2)], "cd": [(("3", "4"), 2), (("6",), 1)]}
    truth = PortMapping(ports, table)
    res = infer(SimulatedOracle(truth, r_max=5), ExplainOptions())
    assert res.summary["ports"] == 7 and not agreement(truth, res.mapping).different
    wider = PortMapping(ports + ["7", "8"], table)      # two ports nothing uses
    assert infer(SimulatedOracle(wider, r_max=5), ExplainOptions()).summary["ports"] == 7


def test_a_wrong_representative_gets_a_stand_in():
    """A load that also computes is additive with pure loads; as its class's representative it is
    dropped, and the next member (a pure load) blocks the load ports instead."""
    ports = [str(p) for p in range(6)]
    truth = PortMapping(ports, {
        "alu": [(("0", "1", "2", "3"), 1)], "ld": [(("4", "5"), 1)],
        "aaa_ld_op": [(("4", "5"), 1), (("0", "1", "2", "3"), 1)],   # sorts first: a bad representative
        "x": [(("4", "5"), 1), (("0",), 1)], "mul": [(("0",), 1)]})
    res = infer(SimulatedOracle(truth, r_max=5), ExplainOptions())
    suite = {b for b, _ in res.summary["blocking"]["suite"]}
    assert "ld" in suite and "aaa_ld_op" not in suite
    assert not agreement(truth, res.mapping).different and not res.misfits


class _SlowMaskWrites(SimulatedOracle):
    """Two schemes that write mask registers run 4.4 % slower together than one after the other
    (Zen 4: ``{kmovw k, m16: 1, vcmpps k, ymm: 1}`` = 1.044 where each alone takes 0.5)."""

    def measure(self, experiments):
        return [t * 1.044 if {"kmov", "vcmp"} <= set(dict(e.items())) else t
                for e, t in zip(experiments, super().measure(experiments))]


def test_members_slower_together_leave_the_class_and_keep_its_representative():
    """A member pair slower than additive is outside the model (tp⁻¹ is subadditive): it says
    nothing about the representative, which stays; before, the representative was rejected as
    if it were several µops and the broadcast pair [0,2] went unblocked."""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    truth = PortMapping([str(p) for p in range(6)], {
        "aes": [(s(0, 1), 1)], "bcast": [(s(0, 2), 1)], "cvt": [(s(2, 3), 1)], "vadd": [(s(0, 1, 2, 3), 1)],
        "ld": [(s(4, 5), 1)], "kmov": [(s(0, 2), 1)], "vcmp": [(s(0, 2), 1)],
        "shuf": [(s(0, 2), 2), (s(4, 5), 1)]})
    res = infer(_SlowMaskWrites(truth, r_max=6, noise=0.002, seed=1), ExplainOptions(epsilon=0.02, r_max=6))
    assert "bcast" in {b for b, _ in res.summary["blocking"]["suite"]}
    bcast = next(c for c in res.summary["blocking"]["classes"] if c["rep"] == "bcast")
    assert bcast["members"] == 1      # kmov and vcmp left it
    assert not agreement(truth, res.mapping).different


def test_representative_order_is_an_option():
    truth = synthetic(0)
    order = ("blk1_twin", "blk0_twin")
    res = infer(SimulatedOracle(truth, r_max=4), ExplainOptions(rep_order=order))
    reps = {c["rep"] for c in res.summary["blocking"]["classes"]}
    assert {"blk1_twin", "blk0_twin"} <= reps and not agreement(truth, res.mapping).different


# ----------------------------------------------------------------------------- complements

def _complement_truth() -> PortMapping:
    """Blocking instructions for [0,1], [0..3] and [4,5] only (like a Zen's set/branch pair and
    its four ALUs); the schemes below use sets no instruction blocks alone."""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    return PortMapping([str(p) for p in range(6)], {
        "pair01": [(s(0, 1), 1)], "alu": [(s(0, 1, 2, 3), 1)], "vec": [(s(4, 5), 1)],
        "shift": [(s(2, 3), 1)],                       # the complement [0..3] ∖ [0,1]
        "shift2": [(s(2, 3), 2), (s(4, 5), 1)],        # two of them, and a µop on a blocked set besides
        "hidden": [(s(2, 3), 1), (s(4, 5), 2)],        # alone like 1×[0..3] + 2×[4,5]: only "shift" tells
        "overlap": [(s(1, 2), 1)],                     # inside [0..3], of size 2, but not the complement
        "overlap2": [(s(0, 3), 1)],                    # the same up to naming, and disjoint from it
    })


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_a_complement_set_is_found_and_an_overlapping_set_is_not_mistaken_for_it(noise):
    """µops on Q ∖ R (R, Q blocked, R ⊂ Q) are placed there, with the singleton, the sets they
    cannot evade and the deciding check as witnesses; a µop on a set of that size across R and
    Q ∖ R is placed on one such set (which one is naming: the blocking instructions treat ports 0
    and 1 alike, and 2 and 3), and a second one on the set disjoint from the first, against the
    first as a derived blocking instruction; and a complement µop that another bottleneck hides
    is found against a scheme placed on it."""
    truth = _complement_truth()
    res = infer(SimulatedOracle(truth, r_max=6, noise=noise, seed=3),
                ExplainOptions(epsilon=0.03, r_max=6,
                               not_blocking=("shift", "shift2", "overlap", "overlap2", "hidden")))
    ag = agreement(truth, res.mapping)
    assert not ag.different, ag.different
    assert {"shift", "shift2", "hidden", "overlap", "overlap2"} <= set(res.mapping.uops), res.misfits
    x = res.explanations["shift"]
    (ports, n), = x.uops
    kinds = [w.kind for w in x.witnesses[",".join(ports)]]
    assert n == 1 and len(ports) == 2 and kinds[0] == "singleton" and "blocking" in kinds and "check" in kinds


class _OneSlowSchedule(SimulatedOracle):
    """A CPU whose scheduler settles into a slow schedule for one small mix (as a Zen 4 does for
    some pairs): that experiment measures 30 % slower than the ports allow; its double does not."""

    def __init__(self, truth, slow: Experiment, **kw):
        super().__init__(truth, **kw)
        self.slow = slow

    def measure(self, experiments):
        return [t * 1.3 if e == self.slow else t for e, t in zip(experiments, super().measure(experiments))]


@pytest.mark.parametrize("layouts, slow_pairs", [(1, 0), (2, 0), (1, 2)])
def test_a_blocking_instruction_survives_one_slow_schedule_by_another_layout_or_set_aside(layouts, slow_pairs):
    truth = _complement_truth()
    slow = Experiment({"pair01": 1, "vec": 1})
    res = infer(_OneSlowSchedule(truth, slow, r_max=6),
                ExplainOptions(epsilon=0.03, r_max=6, layouts=layouts, slow_pairs=slow_pairs,
                               not_blocking=("shift", "shift2", "overlap", "overlap2", "hidden")))
    suite = {b for b, _ in res.summary["blocking"]["suite"]}
    assert ({"pair01", "vec"} <= suite) == (layouts == 2 or slow_pairs > 0), res.summary["blocking"]["dropped"]
    aside = res.summary["blocking"]["slow_schedules"]
    if slow_pairs:   # the balanced pair {2, 2} fits disjoint sets; the slow {1, 1} is set aside and said
        assert [(Experiment(a["experiment"]), a["bound"]) for a in aside] == [(slow, 0.5)]
        assert any("slow schedule" in w for w in res.warnings) and not agreement(truth, res.mapping).different
    else:
        assert aside == []


class _SlowMixes(SimulatedOracle):
    """A simulated CPU that schedules some mixes 30 % slower than its ports allow (on a Zen 4:
    ``{imul: 2, mov r64, imm: 4, sete: 3}`` = 2.67 cycles where the ports allow 2.25)."""

    def __init__(self, truth, slow, **kw):
        super().__init__(truth, **kw)
        self.slow = set(slow)

    def measure(self, experiments):
        return [t * 1.3 if e in self.slow else t for e, t in zip(experiments, super().measure(experiments))]


@pytest.mark.parametrize("slow_pairs", [0, 2])
def test_a_slow_mix_in_a_component_is_set_aside_not_a_blocking_instruction_dropped(slow_pairs):
    from pmsolve.infer.explain.structure import random_mixes

    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    truth = PortMapping([str(p) for p in range(6)], {
        "alu": [(s(0, 1, 2, 3), 1)], "pair01": [(s(0, 1), 1)], "mul": [(s(0), 1)], "vec": [(s(4, 5), 1)]})
    comp = ["alu", "mul", "pair01"]
    slow = random_mixes(comp, {"alu": 4, "mul": 1, "pair01": 2}, 6, seed=len(comp))[:1]   # the first mix CEGIS sees
    res = infer(_SlowMixes(truth, slow, r_max=6), ExplainOptions(epsilon=0.03, r_max=6, slow_pairs=slow_pairs))
    suite = {b for b, _ in res.summary["blocking"]["suite"]}
    aside = [Experiment(a["experiment"]) for a in res.summary["blocking"]["slow_schedules"]]
    if slow_pairs:
        assert suite == set(truth.instructions) and aside == slow and not agreement(truth, res.mapping).different
    else:
        assert suite != set(truth.instructions) and aside == []


def test_slow_schedules_are_never_faster_than_the_bound_and_respect_the_budget():
    """A pair faster than every overlap allows is no slow schedule; a candidate slow with more
    partners than its budget is an impostor, and its partners keep their budget."""
    size = {"a": 2, "b": 2}
    o = _o(slow_pairs=1)
    fits_disjoint = [(Experiment({"a": 1, "b": 1}), 0.8), (Experiment({"a": 2, "b": 2}), 1.0)]
    assert slow_schedules("a", "b", fits_disjoint, size, {}, None, o) == [(Experiment({"a": 1, "b": 1}), 0.8, 0.5)]
    too_fast = [(Experiment({"a": 1, "b": 1}), 0.3), (Experiment({"a": 2, "b": 2}), 1.0)]
    assert slow_schedules("a", "b", too_fast, size, {}, None, o) == []
    # the Zen 5's GPR and vector loads (a30): {4, 1} within ε·5 of its bound 1.25 but 7 % over it
    # goes aside with the pair's other slow experiments, not left in as a fit
    size2 = {"m": 4, "v": 2}
    zen5 = [(Experiment({"m": 1, "v": 1}), 0.564), (Experiment({"m": 4, "v": 2}), 1.707),
            (Experiment({"m": 4, "v": 1}), 1.343), (Experiment({"m": 1, "v": 2}), 0.999)]
    assert [(dict(e.items()), b) for e, _, b in slow_schedules("m", "v", zen5, size2, {}, None, o)] == [
        ({"m": 1, "v": 1}, 0.5), ({"m": 4, "v": 2}, 1.5), ({"m": 4, "v": 1}, 1.25)]
    # alone, 7 % over its bound within ε·5 is a fit: nothing else of the pair is slow
    assert slow_schedules("m", "v", zen5[2:], size2, {}, None, o) == []
    # and it stays when it is the last experiment of the pair that fits
    assert [dict(e.items()) for e, _, _ in slow_schedules("m", "v", zen5[:1] + zen5[2:3], size2, {}, None, o)] == [
        {"m": 1, "v": 1}]
    # only flooding experiments go aside so, and never the last that fits: the Zen 5's shuffle and
    # add pipes (a stopped run of 2026-12-07), whose {1, 1} and {2, 2} run 5 % over 0.667 and 1.333
    size3 = {"s": 2, "a": 2}
    pipes = [(Experiment({"s": 1, "a": 1}), 0.702), (Experiment({"s": 2, "a": 2}), 1.405),
             (Experiment({"s": 2, "a": 1}), 1.126), (Experiment({"s": 1, "a": 2}), 1.124),
             (Experiment({"s": 1, "a": 4}), 2.0)]
    assert [dict(e.items()) for e, _, _ in slow_schedules("s", "a", pipes, size3, {}, None, o)] == [
        {"s": 2, "a": 1}, {"s": 1, "a": 2}]
    # "x" is slow with a, b and c; "d" only with c: d's pair is set aside, x is dropped
    size = {k: 2 for k in "abcdx"}
    values = {}
    for i, j in combinations(sorted(size), 2):
        slow_one = "x" in (i, j) or {i, j} == {"c", "d"}
        values[Experiment({i: 1, j: 1})] = 0.8 if slow_one else 0.5
        values[Experiment({i: 2, j: 2})] = 1.0
    active, mult, dropped, aside = screen(sorted(size), size, {k: 1 for k in size}, values, None, o, lambda s: None)
    assert [d["insn"] for d in dropped] == ["x"] and set(active) == set("abcd")
    assert [a["pair"] for a in aside] == [["c", "d"]]


def test_a_candidate_slow_with_every_partner_but_blocking_as_it_should_is_kept():
    """A Zen 3 GPR load beside an ALU operation takes 0.43 cycles where disjoint sets allow 0.33,
    and so with every integer candidate, while four ALU operations and one load take 1.0: the
    flooding experiments fit, only the overlap experiments are slow, and that spends no budget.
    A load whose flooding experiment is slow as well is an impostor past its budget."""
    from pmsolve.infer.explain.structure import flooding, pair_experiments
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    m = PortMapping([str(p) for p in range(7)], {"alu": [(s(0, 1, 2, 3), 1)], "set": [(s(0, 1), 1)],
                                                 "bt": [(s(2, 3), 1)], "ld": [(s(4, 5, 6), 1)]})
    size = {"alu": 4, "set": 2, "bt": 2, "ld": 3}
    exps = pair_experiments(sorted(size), size)
    assert Experiment({"alu": 4, "ld": 1}) in exps and Experiment({"alu": 1, "ld": 3}) in exps

    def measured(slow_floods: bool) -> dict:
        """The Zen 3's factors: {1, 1} 1.3 times the bound, the balanced pair 1.6 times."""
        def factor(e: Experiment) -> float:
            c = dict(e.items())
            if "ld" not in c or (flooding(e, size) and not slow_floods):
                return 1.0
            return 1.3 if set(c.values()) == {1} else 1.6
        return {e: float(inverse_throughput(m, e)) * factor(e) for e in exps}

    active, _, dropped, aside = screen(sorted(size), size, {k: 1 for k in size}, measured(False), None,
                                       _o(slow_pairs=2), lambda m: None)
    assert active == sorted(size) and not dropped
    assert {frozenset(a["pair"]) for a in aside} == {frozenset({"ld", x}) for x in ("alu", "set", "bt")}
    assert not any(flooding(Experiment(a["experiment"]), size) for a in aside)
    active, _, dropped, _ = screen(sorted(size), size, {k: 1 for k in size}, measured(True), None,
                                   _o(slow_pairs=2), lambda m: None)
    assert [d["insn"] for d in dropped] == ["ld"] and active == ["alu", "bt", "set"]


def test_a_candidate_dropped_before_the_impostor_it_clashed_with_comes_back():
    """The greedy screening drops "a" (slow with b and c, contradicted by z) before z, whose
    other contradiction (faster than z alone) drops it next; then only slow schedules within the
    budget speak against "a", and it comes back (a Zen 4 lost its GPR load so, to a zmm load)."""
    size = {"a": 3, "b": 2, "c": 2, "z": 1}
    t = {("a", "b"): (0.8, 1.0), ("a", "c"): (0.8, 1.0), ("a", "z"): (1.5, 2.0), ("b", "z"): (0.8, 0.9),
         ("c", "z"): (1.0, 1.0), ("b", "c"): (0.5, 1.0)}
    values = {}
    for (i, j), (one, balanced) in t.items():
        values[Experiment({i: 1, j: 1})] = one
        values[Experiment({i: size[i], j: size[j]})] = balanced
    weight = {"a": 2, "z": 2, "b": 5, "c": 5}
    said = []
    active, mult, dropped, aside = screen(sorted(size), size, weight, values, None, _o(slow_pairs=2), said.append)
    assert [d["insn"] for d in dropped] == ["z"] and active == ["a", "b", "c"], said
    assert sorted(a["pair"] for a in aside) == [["a", "b"], ["a", "c"]]
    assert any("dropping a" in m for m in said) and any("a is a blocking candidate again" in m for m in said)
    # with a budget of one slow schedule per candidate its two slow partners keep it out
    active, _, dropped, aside = screen(sorted(size), size, weight, values, None, _o(slow_pairs=1), lambda m: None)
    assert [d["insn"] for d in dropped] == ["a", "z"] and active == ["b", "c"] and aside == []


def test_layouts_that_disagree_beyond_the_noise_margin_vote():
    from pmsolve.harness.layouts import LayoutVote

    class ByCopies:   # tp⁻¹ by the number of instructions per iteration
        instructions, has_uop_counter = ("a", "b"), False

        def __init__(self, v):
            self.v = v

        def measure(self, es):
            return [self.v[e.size] for e in es]

    e = Experiment({"a": 1, "b": 1})
    slow_first = ByCopies({2: 0.66, 4: 1.09, 6: 1.635})
    assert LayoutVote(slow_first, 2).measure([e]) == [pytest.approx(0.545)]                    # a slow schedule
    assert LayoutVote(ByCopies({2: 1.0, 4: 1.946}), 2).measure([e]) == [1.0]                   # noise
    assert LayoutVote(ByCopies({2: 1.0, 4: 2.08}), 2).measure([e]) == [1.0]                    # noise, slower
    assert LayoutVote(ByCopies({2: float("nan"), 4: 1.0, 6: 1.5}), 2).measure([e]) == [0.5]   # a failed layout
    assert LayoutVote(ByCopies({2: 0.5, 4: 0.8, 6: 1.5}), 2).measure([e]) == [0.5]            # a too-fast glitch
    assert LayoutVote(ByCopies({2: 0.45, 4: 1.0, 6: 1.5}), 2).measure([e]) == [0.5]           # ... in the first layout
    assert LayoutVote(ByCopies({2: 0.5, 4: 1.2, 6: 1.5}), 2).measure([e]) == [0.5]            # a slow schedule, doubled
    assert LayoutVote(slow_first, 1).measure([e]) == [0.66]


@pytest.mark.parametrize("seconds", [None, 0.0])
def test_past_the_structure_budget_a_contradicted_candidate_is_dropped_without_trials(seconds):
    """A slow balanced pair contradicts ``alu`` inside its component: with time left, 2 and 3
    µops are tried (each a port search); past ``structure_seconds`` it is dropped at once."""
    said: list[str] = []
    res = infer(_OneSlowSchedule(_complement_truth(), Experiment({"alu": 4, "vec": 2}), r_max=6),
                ExplainOptions(epsilon=0.03, r_max=6, structure_seconds=seconds,
                               not_blocking=("shift", "shift2", "overlap", "overlap2", "hidden")),
                progress=lambda ev: said.append(ev.message))
    tried = [m for m in said if "trying alu" in m]
    assert bool(tried) == (seconds is None) and any("budget" in m for m in said) == (seconds == 0.0)
    assert "alu" in {d["insn"] for d in res.summary["blocking"]["dropped"]}


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)).filter(lambda e: e[0] != e[1]), max_size=12),
       st.lists(st.integers(1, 20), min_size=7, max_size=7))
@settings(max_examples=200, deadline=None)
def test_lightest_cover_meets_every_pair_at_the_least_weight(edges, weights):
    """Against brute force over every subset of the 7 candidates."""
    from itertools import combinations

    from pmsolve.infer.explain.structure import lightest_cover

    names = [f"c{k}" for k in range(7)]
    pairs = [frozenset((names[a], names[b])) for a, b in edges]
    w = dict(zip(names, weights))
    cover = lightest_cover(pairs, w)
    assert all(p & cover for p in pairs)
    least = min(sum(w[x] for x in sub) for r in range(8) for sub in combinations(names, r)
                if all(p & set(sub) for p in pairs))
    assert sum(w[x] for x in cover) == least


def test_screening_keeps_the_heavy_class_a_greedy_drop_would_lose():
    """A hub contradicts three light candidates: greedy drops the hub (most contradictions);
    when the hub's class stands for more schemes than the three together, the three go."""
    from pmsolve.infer.explain.structure import lightest_cover

    pairs = [frozenset(("hub", x)) for x in ("a", "b", "c")]
    assert lightest_cover(pairs, {"hub": 10, "a": 1, "b": 1, "c": 1}) == {"a", "b", "c"}
    assert lightest_cover(pairs, {"hub": 2, "a": 1, "b": 1, "c": 1}) == {"hub"}


# ----------------------------------------------------------------------------- stand-ins for checks

class _SteeringMachine(SimulatedOracle):
    """A CPU whose scheduler misplaces µops at one ratio (on a Zen 4 ``{vaesdec ×2, vbroadcastss
    ymm}``, [0,1] ×2 and [0,2] ×1, takes 1.2 cycles where the ports allow 1): whenever the µops
    on [0,1] are exactly twice those on [0,2], 20 % slower with ``ports`` (a property of the port
    sets, whichever instruction carries the µops), 20 % slower with the scheme ``shuf`` only
    (``scheme``), or 20 % slower but only 10 % with ``shuf`` (``both``; on the Zen 4 the masked
    ``vpalignr xmm`` takes 1.11 cycles there), or 4 % slower, within the tolerance, and 8 %
    with ``shuf`` (``near``: a stand-in that does not miss cannot excuse a miss)."""

    def __init__(self, truth, mode: str, **kw):
        super().__init__(truth, **kw)
        self.mode = mode

    def _factor(self, e: Experiment) -> float:
        m = self.mapping.uop_masses(e)
        a, b = m.get(frozenset({"0", "1"}), 0), m.get(frozenset({"0", "2"}), 0)
        if not (b > 0 and a == 2 * b):
            return 1.0
        mine = "shuf" in dict(e.items())
        return {"ports": 1.2, "scheme": 1.2 if mine else 1.0, "both": 1.1 if mine else 1.2,
                "near": 1.08 if mine else 1.04}[self.mode]

    def measure(self, experiments):
        return [t * self._factor(e) for e, t in zip(experiments, super().measure(experiments))]


def _blocked_machine(ports: int, blockers: dict[str, frozenset[str]], schemes: dict[str, list]
                     ) -> tuple[PortMapping, PortMapping, list[tuple[str, frozenset[str]]]]:
    """A truth whose blocking instructions are one µop each on their sets, plus ``schemes``; the
    blocking mapping alone; and the suite, smallest sets first, as the pipeline orders it."""
    truth = PortMapping([str(p) for p in range(ports)], {**{b: [(q, 1)] for b, q in blockers.items()}, **schemes})
    blocking = PortMapping(truth.ports, {b: [(q, 1)] for b, q in blockers.items()})
    return truth, blocking, sorted(blockers.items(), key=lambda bq: (len(bq[1]), sorted(bq[1])))


@pytest.mark.parametrize("mode", ["ports", "scheme", "both", "near"])
def test_a_check_the_blocking_instructions_miss_alike_is_kept_with_its_stand_in(mode):
    """A scheme whose µops are exactly a blocking instruction's shares its slow schedules: the
    check it misses is measured with the blocking instruction in its place, and when that
    misses alike the µops stand, with the stand-in as witness. A scheme slow where its blocking
    instruction is not, or slow in another way, stays a misfit."""
    from pmsolve.infer.explain.characterise import characterise

    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    blockers = {"b01": s(0, 1), "b02": s(0, 2), "b23": s(2, 3), "alu": s(0, 1, 2, 3), "ld": s(4, 5)}
    truth, blocking, suite = _blocked_machine(6, blockers, {"shuf": [(s(0, 2), 1)]})
    orc = _SteeringMachine(truth, mode, r_max=6)
    single = {"shuf": {"tp": orc.measure([Experiment({"shuf": 1})])[0], "uops": None}}
    x = characterise(orc, ["shuf"], blocking, suite, single, 6, ExplainOptions(r_max=6).resolved(False), 0,
                     lambda m: None)["shuf"]
    if mode != "ports":
        assert x.misfit is not None and x.misfit.category == "unsatisfiable"
    else:
        assert x.misfit is None and x.uops == ((("0", "2"), 1),)
        stand = [w for w in x.others if w.kind == "stand-in"]
        assert stand and all(w.measured == pytest.approx(1.2 * w.modelled) and
                             w.measured_baseline == pytest.approx(w.measured) and "shuf" not in dict(w.baseline.items())
                             for w in stand)


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_a_three_port_set_no_instruction_blocks_is_told_apart_from_its_neighbours(noise):
    """Zen 4's shuffles run on three of the four vector pipes, a set no instruction blocks: every
    3-port set inside [0..3] evades the pairs [0,1], [0,2], [2,3] alike, and each pair beside the
    scheme tells them apart ({0,1,2} contains [0,1] and [0,2], {1,2,3} only [2,3], …). (Only a
    scheme slower alone than its µops on [0..3] explain is searched for such a set.)"""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    schemes = {"shuf012": [(s(0, 1, 2), 1)], "shuf123": [(s(1, 2, 3), 1)], "shuf023": [(s(0, 2, 3), 1)],
               "ld_shuf013": [(s(0, 1, 3), 2), (s(4, 5), 1)]}
    truth = PortMapping([str(p) for p in range(6)], {
        "aes": [(s(0, 1), 1)], "bcast": [(s(0, 2), 1)], "cvt": [(s(2, 3), 1)], "vadd": [(s(0, 1, 2, 3), 1)],
        "ld": [(s(4, 5), 1)], **schemes})
    res = infer(SimulatedOracle(truth, r_max=6, noise=noise, seed=5),
                ExplainOptions(epsilon=0.03, r_max=6, not_blocking=tuple(schemes)))
    assert {b for b, _ in res.summary["blocking"]["suite"]} == {"aes", "bcast", "cvt", "vadd", "ld"}
    ag = agreement(truth, res.mapping)
    assert not ag.different and set(schemes) <= set(res.mapping.uops), \
        (ag.different, {i: res.misfits[i].reason for i in schemes if i in res.misfits})
    x = res.explanations["shuf123"]
    assert [w.kind for w in x.witnesses["1,2,3"]][0] == "singleton" and any(w.kind == "check" for w in x.others)


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_a_port_of_two_no_blocked_set_tells_apart_is_named_once_and_kept_apart_from_the_other(noise):
    """Zen 4's imul runs on one of the two ALUs the shifts use, and no instruction blocks either
    alone: [0] and [1] are the same answer up to naming, so the first is kept (both were dropped
    as ambiguous), and a scheme on the other one is told apart by the first as a derived blocking
    instruction."""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    schemes = {"imul": [(s(0), 1)], "imul32": [(s(0), 1)], "mulhi": [(s(1), 1)],
               "imul_ld": [(s(0), 1), (s(4, 5), 1)], "shl_imul": [(s(0, 1), 1), (s(0), 1)]}
    truth = PortMapping([str(p) for p in range(6)], {
        "alu": [(s(0, 1, 2, 3), 1)], "shl": [(s(0, 1), 1)], "setcc": [(s(2, 3), 1)], "ld": [(s(4, 5), 1)],
        **schemes})
    res = infer(SimulatedOracle(truth, r_max=6, noise=noise, seed=5),
                ExplainOptions(epsilon=0.03, r_max=6, not_blocking=tuple(schemes)))
    assert {b for b, _ in res.summary["blocking"]["suite"]} == {"alu", "shl", "setcc", "ld"}
    ag = agreement(truth, res.mapping)
    assert not ag.different and set(schemes) <= set(res.mapping.uops), \
        (ag.different, {i: res.misfits[i].reason for i in schemes if i in res.misfits})


class _SlowInARow(SimulatedOracle):
    """Zen 4's masked shuffle ``vshufpd xmm{k}``: placed on three of the four vector pipes from
    experiments with one copy of it, it runs 25 % slower when copies of it make most of a loop
    (16 alone take 6.33 cycles where three ports allow 5.33)."""

    def measure(self, experiments):
        return [t * 1.25 if (n := dict(e.items()).get("ashuf", 0)) >= 6 and n >= 0.8 * e.size else t
                for e, t in zip(experiments, super().measure(experiments))]


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_a_derived_blocking_instruction_runs_at_its_port_rate(noise):
    """Of two schemes placed on the same unblocked set, the one slow in a row is turned down as
    its blocking instruction (a misfit with the experiments it misses) and the other one blocks
    it; the µop another bottleneck hides there is found against it. Six copies of the slow one
    alone run slower than with another scheme beside them, which no port mapping allows: its
    misfit carries that certificate."""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    schemes = {"ashuf": [(s(0, 1, 2), 1)], "shuf": [(s(0, 1, 2), 1)], "hid": [(s(0, 1, 2), 1), (s(4, 5), 2)]}
    truth = PortMapping([str(p) for p in range(6)], {
        "aes": [(s(0, 1), 1)], "bcast": [(s(0, 2), 1)], "cvt": [(s(2, 3), 1)], "vadd": [(s(0, 1, 2, 3), 1)],
        "ld": [(s(4, 5), 1)], **schemes})
    res = infer(_SlowInARow(truth, r_max=6, noise=noise, seed=5),
                ExplainOptions(epsilon=0.03, r_max=6, not_blocking=tuple(schemes)))
    assert res.explanations["shuf"].source == "derived blocking"
    bad = res.misfits["ashuf"]
    assert bad.category == "outside the model" and all(dict(e.items())["ashuf"] >= 6 for e, _ in bad.experiments)
    (e, t), _, _, (b, tb) = bad.certificate
    assert set(b) == {"ashuf"} and b["ashuf"] >= 6 and t * 1.05 < tb
    ag = agreement(truth, res.mapping)
    assert not ag.different and {"shuf", "hid"} <= set(res.mapping.uops), \
        (ag.different, {i: res.misfits[i].reason for i in schemes if i in res.misfits})


def test_a_derived_blocking_candidate_that_hides_a_load_is_turned_down():
    """Zen 4's ``vpminud xmm, m128`` was placed as one µop on two of the four vector pipes (its
    load went unseen, and its singleton, bound by the loads at 0.5, fitted two ports): alone
    and beside the ALUs its copies run as that placement says, beside the loads they do not."""
    from pmsolve.infer.explain.characterise import at_port_rate

    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    blockers = {"vadd": s(0, 1, 2, 3), "aes": s(0, 1), "cvt": s(2, 3), "aload": s(4, 5), "alu": s(6, 7)}
    truth, blocking, suite = _blocked_machine(8, blockers, {"vmin_m": [(s(0, 1, 2, 3), 1), (s(4, 5), 1)],
                                                            "vmin": [(s(1, 3), 1)]})
    chosen, wrong = at_port_rate(SimulatedOracle(truth, r_max=6), {s(1, 3): ["vmin_m", "vmin"]}, suite, blocking,
                                 6, ExplainOptions(r_max=6).resolved(False), lambda m: None)
    assert chosen == [("vmin", s(1, 3))]
    assert set(wrong) == {"vmin_m"} and all("aload" in dict(e.items()) for e, _ in wrong["vmin_m"].experiments)


class _OnceOff(SimulatedOracle):
    """Measures ``wrong`` 7 % fast the first time it is asked (Zen 4's ``imul r64`` beside two
    loads once read 1.86 cycles where it takes 2.0), correctly after that."""

    def __init__(self, truth, wrong, **kw):
        super().__init__(truth, **kw)
        self.wrong = set(wrong)

    def measure(self, experiments):
        vals = super().measure(experiments)
        out = [0.93 * t if e in self.wrong else t for e, t in zip(experiments, vals)]
        self.wrong -= set(experiments)
        return out


def test_a_derived_blocking_candidate_is_not_turned_down_by_one_bad_measurement():
    from pmsolve.infer.explain.characterise import at_port_rate

    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    blockers = {"alu": s(0, 1, 2, 3), "bt": s(2, 3), "load": s(4, 5)}
    truth, blocking, suite = _blocked_machine(6, blockers, {"imul": [(s(3), 1)]})
    once = _OnceOff(truth, [Experiment({"imul": 2, "load": 2})], r_max=6)
    chosen, wrong = at_port_rate(once, {s(3): ["imul"]}, suite, blocking, 6,
                                 ExplainOptions(r_max=6).resolved(False), lambda m: None)
    assert not once.wrong, "the outlier was never measured"
    assert chosen == [("imul", s(3))] and not wrong


def test_a_baseline_has_no_stand_in():
    """A blocking instruction's baseline misses the model only for a derived blocking instruction
    (second pass; the --all run stopped there with a KeyError): there is no scheme to replace."""
    from pmsolve.infer.explain.characterise import stand_in

    s = frozenset
    found, stand = {s({"0", "1"}): 2}, {s({"0", "1"}): "aes"}
    assert stand_in(Experiment({"imul": 3}), "kmov", found, stand) is None
    assert stand_in(Experiment({"kmov": 1, "cvt": 2}), "kmov", found, stand) == Experiment({"aes": 2, "cvt": 2})


class _SlowUnit(SimulatedOracle):
    """A port machine with an unpipelined scheme: ``sqrt`` (one µop on [2,3]) takes 6 cycles
    alone and 6.5 per copy in any mix (Zen 4's ``vsqrtpd ymm``: 8.4 and 9.0)."""

    def measure(self, experiments):
        self.queries += len(experiments)
        out = []
        for e, t in zip(experiments, batch_inverse_throughput([(self.mapping, e) for e in experiments], self.r_max)):
            n = dict(e.items()).get("sqrt", 0)
            out.append(max(float(t), n * (6.0 if e.size == n else 6.5)) * self._factor(e))
        return out


@pytest.mark.parametrize("seed", range(3))
def test_blocking_copies_outlast_a_slow_scheme(seed):
    """Blocking copies for the µops found (|Q|·µops) do not outlast a scheme whose own unit sets
    its pace; the scheme's bottleneck then hides the blocked ports (the Zen 4 run measured
    ``vsqrtpd ymm`` beside 14 to 30 copies of ``bt r64, i8``, estimates falling from 4 to 0).
    With copies that outlast it, its one µop is found and it is a misfit for its slow unit."""
    from pmsolve.infer.explain.characterise import characterise

    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    blockers = {"aes": s(0, 1), "bcast": s(0, 2), "cvt": s(2, 3), "vadd": s(0, 1, 2, 3), "ld": s(4, 5)}
    truth, blocking, suite = _blocked_machine(6, blockers, {"sqrt": [(s(2, 3), 1)]})
    orc = _SlowUnit(truth, r_max=6, noise=0.01, seed=seed)
    single = {"sqrt": {"tp": orc.measure([Experiment({"sqrt": 1})])[0], "uops": None}}
    x = characterise(orc, ["sqrt"], blocking, suite, single, 6, ExplainOptions(r_max=6).resolved(False), 0,
                     lambda m: None)["sqrt"]
    assert x.misfit is not None and "slower than its µops explain" in x.misfit.reason
    assert "hold 1×[2,3] (modelled" in x.misfit.reason, x.misfit.reason


def test_a_probe_clearly_at_a_whole_number_is_not_measured_again():
    """A probe whose samples clearly agree on 3 µops where the fit puts 2 is decided: the
    scheme's probes disagree, and more samples of this one do not mend that (on a Zen 4 such
    probes took sixteen samples each). A probe between two numbers, with samples that might
    still settle, is measured again."""
    clear = Probe("aes", frozenset({"0", "1"}), [(Experiment({"aes": k, "rmw": 1}), Experiment({"aes": k}),
                                                  k / 2 + 1.5 + d, k / 2) for k, d in ((4, 0.004), (6, -0.003), (8, 0.0))])
    assert not clear.settled(2, 0.25, 0.01) and clear.settled(3, 0.25, 0.01)
    assert not clear.undecided(0.25, 0.01)
    vague = Probe("aes", frozenset({"0", "1"}), [(Experiment({"aes": k, "rmw": 1}), Experiment({"aes": k}),
                                                  k / 2 + 1.25 + d, k / 2) for k, d in ((4, 0.1), (6, -0.1))])
    assert vague.undecided(0.25, 0.01)


class _Unsettled(SimulatedOracle):
    """A port machine whose samples of ``x`` beside ``from_k`` or more copies of ``ld`` come out
    ``off`` µops high, as a scheme's phase against a blocking instruction can on a real CPU; it
    logs what it measures."""

    def __init__(self, *args, off=0.4, from_k=1, **kw):
        super().__init__(*args, **kw)
        self.off, self.from_k, self.log = off, from_k, []

    def measure(self, experiments):
        experiments = list(experiments)
        self.log += experiments
        out = super().measure(experiments)
        for j, e in enumerate(experiments):
            counts = dict(e.items())
            if counts.get("x") == 1 and counts.get("ld", 0) >= self.from_k:
                out[j] += self.off / len(self.mapping.uops["ld"][0].ports)
        return out


def _characterise_x(orc, blocking, suite, **options):
    from pmsolve.infer.explain.characterise import characterise

    single = {"x": {"tp": orc.measure([Experiment({"x": 1})])[0], "uops": None}}
    return characterise(orc, ["x"], blocking, suite, single, None, ExplainOptions(**options).resolved(False), 0,
                        lambda m: None)["x"]


def _probe_copies(log, b):
    """The copies of ``b`` in each sample ``{x: 1, b: k}`` of ``log``, in the order measured, up to
    the first check (two copies of x beside a blocking instruction: the checks come after the probes)."""
    first_check = next((n for n, e in enumerate(log) if dict(e.items()).get("x") == 2 and len(e.counts) == 2),
                       len(log))
    return [k for e in log[:first_check]
            if (k := dict(e.items()).get(b)) and dict(e.items()).get("x") == 1 and e.size == k + 1]


def test_a_probe_settled_with_flooded_copies_is_not_measured_again_with_tight_ones():
    """Tight copies only lower an estimate's noise: a probe already clear with the flooded ones
    keeps its samples, and only the unsettled probes of the scheme are measured again (a Zen 4
    ``--all`` run, a12, measured 11,575 probes twice)."""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    truth, blocking, suite = _blocked_machine(4, {"aes": s(0, 1), "ld": s(2, 3)},
                                              {"x": [(s(0, 1), 1), (s(2, 3), 1)]})
    orc = _Unsettled(truth, from_k=4)      # flooded for 2 µops: 4 copies, 0.4 µops high; tight: 2, exact
    x = _characterise_x(orc, blocking, suite)
    assert x.misfit is None and x.uops == ((("0", "1"), 1), (("2", "3"), 1))
    aes, ld = _probe_copies(orc.log, "aes"), _probe_copies(orc.log, "ld")
    assert ld == [2, 4, 2] and aes == [2, 4]   # guessed 1 µop, flooded for 2, then tight only where unsettled


def test_a_floor_on_the_first_guess_spares_the_second_pass_and_maps_the_same():
    """A load-op form running at two per cycle has tp⁻¹ 0.5, so the guess from it is one µop;
    with two found, every set is measured again with copies for two. ``min_uops`` (the host job
    gives memory forms one µop per access) starts it there; an overestimate only adds copies."""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    truth, blocking, suite = _blocked_machine(4, {"aes": s(0, 1), "ld": s(2, 3)},
                                              {"x": [(s(0, 1), 1), (s(2, 3), 1)]})
    runs = {}
    for floor in (1, 2, 3):
        orc = _Unsettled(truth, off=0)
        x = _characterise_x(orc, blocking, suite, min_uops=(("x", floor),))
        assert x.misfit is None and x.uops == ((("0", "1"), 1), (("2", "3"), 1))
        runs[floor] = (_probe_copies(orc.log, "aes"), _probe_copies(orc.log, "ld"))
    assert runs[1] == ([2, 4], [2, 4])      # guessed 1 µop, then flooded for the 2 found
    assert runs[2] == ([4], [4])            # flooded for 2 from the start
    assert runs[3] == ([6], [6])            # more copies, no second pass either


@pytest.mark.parametrize("seed", [0, 1, 3])     # seeds where it takes many: 49, 31, 36 (seed 2: 13)
def test_a_scheme_stops_measuring_at_its_budget(seed):
    """Past its budget of samples beyond the first pass (per set it was measured against) a
    scheme is judged on what it has: with 8 % noise, a scheme of four probes took 13 to 49
    samples unbounded (on a Zen 4, misfits took 18 samples each where mapped schemes took 9, and
    41 compress-stores 195). A restart begun within the budget measures all its sets, so it may
    end up to one restart (four probes) over."""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    blockers = {"aes": s(0, 1), "cvt": s(2, 3), "vadd": s(0, 1, 2, 3), "ld": s(4, 5)}
    truth, blocking, suite = _blocked_machine(6, blockers, {"x": [(s(0, 1), 2), (s(0, 1, 2, 3), 1), (s(4, 5), 1)]})

    def samples(budget):
        orc = _Unsettled(truth, off=0, noise=0.08, seed=seed)
        _characterise_x(orc, blocking, suite, budget=budget)
        return sum(len(_probe_copies(orc.log, b)) for b in blockers)

    first = samples(0)
    assert first == 4                    # one sample beside each blocking instruction
    for budget in (0.5, 1.25):          # 2 and 5 samples for the four sets
        assert first + 4 * budget <= samples(budget) <= first + 4 * budget + 4
    assert samples(100) > first + 5 + 4


def test_misses_are_measured_again_a_few_at_a_time_until_one_stands():
    """Wrong µops miss many checks; the worst :data:`RECHECK` are measured again first, and one
    that stands rejects the µops without measuring the rest again (a Zen 4 ``--all`` run measured
    thousands of misfits' misses again in vain)."""
    from pmsolve.infer.explain.characterise import RECHECK, _checking, run_checks

    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    blockers = {"aes": s(0, 1), "cvt": s(2, 3), "vadd": s(0, 1, 2, 3)}
    truth, blocking, _ = _blocked_machine(4, blockers, {"x": [(s(0, 1, 2, 3), 2)]})
    orc = SimulatedOracle(truth)
    held = [Experiment({"x": 1, "aes": k}) for k in range(1, 11)]
    o = ExplainOptions().resolved(False)
    stand = {q: b for b, q in blockers.items()}
    wrong = {s(0, 1): 1, s(2, 3): 1}        # alone as fast as the truth, beside aes slower
    before = orc.queries
    x = run_checks({"x": _checking("x", wrong, [], blocking, {"tp": 0.5}, None, o,
                                   list(zip(held, orc.measure(held))), None, stand)}, orc)["x"]
    assert x.misfit is not None and 1 <= len(x.misfit.experiments) <= RECHECK
    assert orc.queries - before - len(held) == 2 * RECHECK     # doubled, and their stand-ins
    # the truth passes every check: nothing is measured again
    before = orc.queries
    x = run_checks({"x": _checking("x", {s(0, 1, 2, 3): 2}, [], blocking, {"tp": 0.5}, None, o,
                                   list(zip(held, orc.measure(held))), None, stand)}, orc)["x"]
    assert x.misfit is None and orc.queries - before == len(held)


class _FaultingKernels(SimulatedOracle):
    """A harness whose worker faults on every mix with ``bad`` (a kernel that reaches outside
    its memory): only the scheme alone runs."""

    def measure(self, experiments):
        from pmsolve.errors import MeasurementError

        if any("bad" in dict(e.items()) and e.size > 1 for e in experiments):
            raise MeasurementError("the kernel crashed the worker with SIGSEGV")
        return super().measure(experiments)


def test_a_scheme_whose_kernels_fault_is_an_unmeasurable_misfit_and_the_run_goes_on():
    truth = synthetic(0)
    truth = PortMapping(truth.ports, {**truth.uops, "bad": [(("3", "4"), 3)]})
    res = infer(_FaultingKernels(truth, r_max=4), ExplainOptions(not_blocking=("bad",)))
    assert res.misfits["bad"].category == "unmeasurable" and "SIGSEGV" in res.misfits["bad"].reason
    ag = agreement(truth, res.mapping)
    assert not ag.different and ag.missing == ("bad",)


class _FaultingCandidate(SimulatedOracle):
    """A blocking candidate whose kernels fault the worker in every mix; alone it runs."""

    def __init__(self, truth, bad, **kw):
        super().__init__(truth, **kw)
        self.bad = bad

    def measure(self, experiments):
        from pmsolve.errors import MeasurementError

        if any(self.bad in dict(e.items()) and e.size > 1 for e in experiments):
            raise MeasurementError("the kernel crashed the worker with SIGSEGV")
        return super().measure(experiments)


@pytest.mark.parametrize("bad", ["a_bad", "zz_bad"])
def test_a_blocking_candidate_whose_kernels_fault_is_left_out_and_the_run_goes_on(bad):
    """``a_bad`` is among the peak's probes, ``zz_bad`` only in its class's pair experiments:
    either way it stops being a candidate, the stages run again, and it is characterised (and
    found unmeasurable) like any other scheme."""
    truth = synthetic(0)
    truth = PortMapping(truth.ports, {**truth.uops, bad: [(("3", "4"), 1)]})
    res = infer(_FaultingCandidate(truth, bad, r_max=4), ExplainOptions())
    assert res.misfits[bad].category == "unmeasurable"
    assert any("1 blocking candidate(s) left out" in w and bad in w for w in res.warnings)
    ag = agreement(truth, res.mapping)
    assert not ag.different and ag.missing == (bad,)


class _SlowRatio(SimulatedOracle):
    """Slow schedules at a ratio (as on the Zen 4): 25 % slower whenever the µops on [0,2] are at
    least twice those on [0,1] in a mix of three or more schemes; random mixes of a component hit
    it now and then (pairs are left alone: the budget under test is that of the mixes)."""

    def measure(self, experiments):
        s = frozenset
        out = []
        for e, t in zip(experiments, super().measure(experiments)):
            m = self.mapping.uop_masses(e)
            a, b = m.get(s({"0", "1"}), 0), m.get(s({"0", "2"}), 0)
            out.append(t * 1.25 if a > 0 and b >= 2 * a and len(dict(e.items())) > 2 else t)
        return out


@pytest.mark.parametrize("budget", [1, 2])
def test_the_slow_mix_budget_counts_the_mixes_set_aside_not_those_left_out_on_the_way(budget):
    """Unsat cores name several random mixes at once, most of which the mapping found reproduces;
    only the two it predicts faster than measured spend the budget: two fit into 2, not into 1."""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    truth = PortMapping([str(p) for p in range(6)], {
        "aes": [(s(0, 1), 1)], "bcast": [(s(0, 2), 1)], "vadd": [(s(0, 1, 2, 3), 1)], "ld": [(s(3, 4), 1)],
        "st": [(s(5), 1)], "ldst": [(s(4, 5), 1)]})
    res = infer(_SlowRatio(truth, r_max=6), ExplainOptions(epsilon=0.03, r_max=6, slow_pairs=budget))
    kept = {b for b, _ in res.summary["blocking"]["suite"]}
    if budget == 2:
        assert kept == set(truth.instructions) and len(res.summary["blocking"]["slow_schedules"]) == 2
        assert not agreement(truth, res.mapping).different
    else:
        assert kept != set(truth.instructions) and res.summary["blocking"]["slow_schedules"] == []


class _Chained(SimulatedOracle):
    """``chain`` takes 2 cycles per iteration however many copies run (a dependency through
    them, not a unit): alone it looks like 2 unit cycles, two copies do not take 4."""

    def measure(self, experiments):
        return [max(t, 2.0 * self._factor(e)) if "chain" in set(e) else t
                for e, t in zip(experiments, super().measure(experiments))]


@pytest.mark.parametrize("seed", range(3))
def test_schemes_slow_alone_by_whole_cycles_get_units_and_which_share_one_is_measured(seed):
    """A truth with two units no blocking instruction uses: a divider held 3 cycles by ``div``
    and 5 by ``sqrt``, and a one-per-cycle unit of two read-modify-write forms (Zen 4's
    ``vdivps`` / ``vsqrtps`` and ``add m32, r32``). The inference finds the truth up to
    renaming, units included, with the pairs that tell the units apart as witnesses. Without
    ``slow`` (3.5 cycles alone, on a two-port unit X, Y) units are one port each; with it every
    unit is two ports at half-cycle resolution, and ``slow`` gets one of its own."""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    units = {"div": [(s(0, 1), 1), (s("D"), 3)], "sqrt": [(s(0, 1), 1), (s("D"), 5)],
             "rmw": [(s(4, 5), 1), (s(6, 7), 1), (s("M"), 1)], "rmw2": [(s(4, 5), 1), (s(6, 7), 1), (s("M"), 1)]}
    truth = PortMapping([str(p) for p in range(8)] + ["D", "M"], {
        "aes": [(s(0, 1), 1)], "bcast": [(s(0, 2), 1)], "cvt": [(s(2, 3), 1)], "vadd": [(s(0, 1, 2, 3), 1)],
        "ld": [(s(4, 5), 1)], "alu": [(s(6, 7), 1)], "plain": [(s(2, 3), 1), (s(6, 7), 1)], **units})
    machine = PortMapping(truth.ports + ("X", "Y"), {**truth.uops, "slow": [(s(0, 1), 1), (s("X", "Y"), 7)],
                                                      "chain": [(s(2, 3), 1)]})
    for half in (False, True):
        m = machine if half else PortMapping(truth.ports, {**truth.uops, "chain": [(s(2, 3), 1)]})
        res = infer(_Chained(m, r_max=6, noise=0.01, seed=seed),
                    ExplainOptions(epsilon=0.03, r_max=6, not_blocking=tuple(units) + ("plain", "slow", "chain")))
        assert {u["first"]: len(u["members"]) for u in res.summary["units"]} == {"rmw": 2, "div": 2,
                                                                                 **({"slow": 1} if half else {})}
        assert "chain" in res.misfits and "do not reproduce" in res.misfits["chain"].reason
        want = truth if not half else PortMapping(      # D and M as two ports each, µops doubled
            truth.ports[:8] + ("D", "D'", "M", "M'", "X", "Y"),
            {**{i: [(ps, n) if ps <= s(*range(8)) else (ps | {p + "'" for p in ps}, 2 * n) for ps, n in u]
                for i, u in ((i, [(q.ports, q.count) for q in truth.uops[i]]) for i in truth.uops)},
             "slow": machine.uops["slow"]})
        ag = agreement(want, res.mapping)
        assert not ag.different and not ag.missing, (half, ag.different, ag.missing, res.misfits)
    x = res.explanations["sqrt"]
    [unit] = [ps for ps, _ in x.uops if ps[0].startswith("U")]
    kinds = [w.kind for w in x.witnesses[",".join(unit)]]
    assert x.source == "unit" and kinds[0] == "singleton" and "unit" in kinds and "check" in kinds


def test_unit_cycles_are_whole_or_half_numbers_within_the_tolerance():
    from pmsolve.infer.explain.units import Slow

    o = ExplainOptions(epsilon=0.03, r_max=6).resolved(False)
    assert [Slow("x", (), t).cycles(o) for t in (0.98, 2.97, 5.02, 3.5, 4.48, 0.66, 1.2, 1.27)] == [
        1, 3, 5, Fraction(7, 2), Fraction(9, 2), None, None, None]


class _StoresWait(SimulatedOracle):
    """``rmw`` and ``rmx`` take turns on a unit, and ``rmw`` also with the stores ``st`` on
    something no port model has: their copies add up."""

    def measure(self, experiments):
        out = []
        for e, t in zip(experiments, super().measure(experiments)):
            n = dict(e.items())
            rmw, rmx, st = (n.get(k, 0) for k in ("rmw", "rmx", "st"))
            out.append(max(t, rmw + rmx, rmw + st if rmw else 0))
        return out


def test_a_unit_must_hold_in_mixes_with_blocking_instructions():
    """Zen 4's read-modify-write forms: 1 cycle alone where the ports allow 0.5, two copies 2,
    but beside one store 2 cycles, where a unit of their own gives 1. Only the mixes with
    blocking instructions show it: ``rmw`` stays a misfit with such a mix as its experiment,
    and ``rmx``, which shares its unit (their pair takes 2) but not its wait, keeps the unit.
    The misfit still names the unit: their pair showed it, and a prediction adds them up on it."""
    from pmsolve.infer.explain.units import place

    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    blockers = {"st": s(0, 1), "aes": s(2, 3), "ld": s(4, 5), "alu": s(6, 7)}
    truth, blocking, _ = _blocked_machine(8, blockers, {"rmw": [(s(4, 5), 1)], "rmx": [(s(6, 7), 1)]})
    slow = {i: Explanation(misfit=Misfit("outside the model", "alone it runs at 1 cycles, slower than its µops explain",
                                         ((Experiment({i: 1}), 1.0),), ((q, 1),)))
            for i, q in (("rmw", ("4", "5")), ("rmx", ("6", "7")))}
    units, out = place(_StoresWait(truth, r_max=6), slow, blocking, 6,
                       ExplainOptions(r_max=6).resolved(False), lambda m: None)
    assert units == [{"port": "U1", "ports": ["U1"], "first": "rmw", "members": ["rmx"]}]
    assert out["rmw"].misfit is not None and out["rmx"].uops == ((("6", "7"), 1), (("U1",), 1))
    assert out["rmw"].misfit.unit == ("U1",)
    assert any("st" in set(e) and len(e.counts) == 4 for e, _ in out["rmw"].misfit.experiments)


class _WaitsForLoads(SimulatedOracle):
    """``rmw`` waits for every load before it: alone 1 cycle where its µops allow 0.5, and with
    k copies of ``ld`` 1 + k/2 cycles more than the ports give, the copies adding up, as Zen 4's
    read-modify-write forms do beside a store."""

    def measure(self, experiments):
        out = []
        for e, t in zip(experiments, super().measure(experiments)):
            n = dict(e.items())
            out.append(max(t, (n["rmw"] + n.get("ld", 0)) * self._factor(e)) if "rmw" in n else t)
        return out


@pytest.mark.parametrize("seed", range(2))
def test_a_misfit_whose_experiments_contradict_every_port_mapping_is_certified(seed, tmp_path, capsys):
    """``rmw`` beside one load takes 2 cycles, where it takes 1 alone and the load 0.5: slower
    than the sum of its parts, which no port mapping allows, so its misfit carries that
    certificate (measured twice). ``slow`` (3.25 cycles on four ports of its own) fits some port
    mapping, just not this one with units of whole or half cycles, and gets none."""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    machine = PortMapping([str(p) for p in range(8)] + ["W", "X", "Y", "Z"], {
        "aes": [(s(0, 1), 1)], "bcast": [(s(0, 2), 1)], "cvt": [(s(2, 3), 1)], "vadd": [(s(0, 1, 2, 3), 1)],
        "ld": [(s(4, 5), 1)], "alu": [(s(6, 7), 1)], "plain": [(s(2, 3), 1), (s(6, 7), 1)],
        "rmw": [(s(4, 5), 1), (s(6, 7), 1)], "slow": [(s(0, 1), 1), (s("W", "X", "Y", "Z"), 13)]})
    res = infer(_WaitsForLoads(machine, r_max=6, noise=0.01, seed=seed),
                ExplainOptions(epsilon=0.03, r_max=6, not_blocking=("plain", "rmw", "slow")))
    assert set(res.misfits) == {"rmw", "slow"} and res.summary["certified"] == ["rmw"]
    m = res.misfits["rmw"]
    (e, t), (e2, t2), (a, ta), (b, tb) = m.certificate
    assert m.category == "outside the model" and m.reason.startswith("no port mapping fits its measurements")
    assert e2 == Experiment({n: 2 * k for n, k in e.items()}) and min(t, t2 / 2) > 1.05 * (ta + tb)
    assert {a, b} == {Experiment({"rmw": 1}), Experiment({n: k for n, k in e.items() if n != "rmw"})}
    assert Misfit.from_json(m.to_json()) == m and res.misfits["slow"].certificate == ()
    res.save(tmp_path / "m.json")
    assert main(["explain", str(tmp_path / "m.json")]) == 0
    assert "1 misfit(s) whose measurements no port mapping fits: rmw" in capsys.readouterr().out
    assert main(["explain", str(tmp_path / "m.json"), "rmw"]) == 0
    assert f"no port mapping fits: {e} = {t:.4g} cycles, doubled {e2} = {t2:.4g}; parts: {a} = {ta:.4g}" \
        in capsys.readouterr().out


def _resumable():
    """A machine with a certified misfit (``rmw``), and the options its resume tests run with."""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    machine = PortMapping([str(p) for p in range(8)], {
        "aes": [(s(0, 1), 1)], "bcast": [(s(0, 2), 1)], "cvt": [(s(2, 3), 1)], "vadd": [(s(0, 1, 2, 3), 1)],
        "ld": [(s(4, 5), 1)], "alu": [(s(6, 7), 1)], "plain": [(s(2, 3), 1), (s(6, 7), 1)],
        "rmw": [(s(4, 5), 1), (s(6, 7), 1)]})
    return machine, ExplainOptions(epsilon=0.03, r_max=6, not_blocking=("plain", "rmw"))


def test_a_resumed_run_certifies_what_the_uninterrupted_run_certified(tmp_path, monkeypatch):
    """Certification judges every experiment known when it runs; resumed after the later stages
    had measured (their pairs of slow schemes, their probes), it judged those too and certified
    2,088 misfits where the Zen 4's uninterrupted ``--all`` had 488. It is a stage of its own:
    a resumed run takes its result from the state and does not run it again."""
    import pmsolve.infer.explain.pipeline as pipeline
    machine, options = _resumable()
    whole = infer(_WaitsForLoads(machine, r_max=6, noise=0.01, seed=0), options, state=tmp_path / "s.json")
    assert whole.summary["certified"] == ["rmw"]

    def certify(*_):
        raise AssertionError("certified again on resume")
    monkeypatch.setattr(pipeline, "certify", certify)
    again = infer(_WaitsForLoads(machine, r_max=6, noise=0.01, seed=0), options, state=tmp_path / "s.json")
    assert again.summary["certified"] == ["rmw"] and again.misfits["rmw"] == whole.misfits["rmw"]


def test_a_resumed_run_completes_the_misfits_as_the_uninterrupted_run_did(tmp_path, monkeypatch):
    """``complete`` judges each misfit on every experiment known when it runs; resumed after the
    later stages had measured, it judged theirs too, and a26's ``--all`` state gave other µops
    and another ``reads`` resource (RESULTS §1.37). It is a stage: a resumed run takes its models
    from the state."""
    import pmsolve.infer.explain.pipeline as pipeline
    machine, options = _resumable()
    whole = infer(_WaitsForLoads(machine, r_max=6, noise=0.01, seed=0), options, state=tmp_path / "s.json")
    assert whole.model.schemes["rmw"].kind != "mapped"

    def complete(*_):
        raise AssertionError("completed again on resume")
    monkeypatch.setattr(pipeline, "complete", complete)
    again = infer(_WaitsForLoads(machine, r_max=6, noise=0.01, seed=0), options, state=tmp_path / "s.json")
    assert again.model.schemes == whole.model.schemes and again.model.to_json() == whole.model.to_json()


class _Table:
    def __init__(self, table):
        self.table = {Experiment({n: int(c) for n, c in (p.split(":") for p in k.split(","))}): v
                      for k, v in table.items()}

    def measure(self, experiments):
        return [self.table[e] for e in experiments]


@pytest.mark.parametrize("doubled, certified", [(4.0, True), (3.0, False), (2.1, False), (0.9, False)])
def test_a_certificate_needs_the_doubled_experiment_to_contradict_the_parts_as_well(doubled, certified):
    """{x, y} = 2.0 where x takes 1.0 and y 0.5 contradicts every port mapping, unless the doubled
    experiment, a second measurement, fits one (1.5 or 1.05 per copy, at most the parts' sum,
    at least the slower one) or contradicts the other way (0.45 per copy: faster than x)."""
    from pmsolve.infer.explain.certify import certify

    e = Experiment({"x": 1, "y": 1})
    oracle = _Table({"x:1": 1.0, "y:1": 0.5, "x:1,y:1": 2.0, "x:2,y:2": doubled})
    miss = Explanation(misfit=Misfit("unsatisfiable", "does not reproduce", ((e, 2.0),)))
    got = certify(oracle, [Experiment({"x": 1}), Experiment({"y": 1}), e], {"x": miss}, lambda m: None)
    assert ("x" in got) == certified
    if certified:
        assert got["x"].misfit.certificate == ((e, 2.0), (Experiment({"x": 2, "y": 2}), 4.0),
                                               (Experiment({"y": 1}), 0.5), (Experiment({"x": 1}), 1.0))


def test_a_large_component_is_split_at_the_candidate_that_links_its_parts():
    """Two cliques of four joined through ``x`` (x–a1, x–b1): ``a1`` also splits the component,
    but leaves a part of five; ``x`` leaves two of four. Within the limit nothing goes."""
    from pmsolve.infer.explain.structure import split_large

    a, b = [f"a{k}" for k in range(1, 5)], [f"b{k}" for k in range(1, 5)]
    edges = {frozenset(p) for g in (a, b) for p in combinations(g, 2)} | {frozenset(("x", "a1")), frozenset(("x", "b1"))}
    comp = sorted(a + b + ["x"])
    assert split_large(comp, edges, {}, 8) == ([a, b], ["x"])
    assert split_large(comp, edges, {}, 9) == ([comp], [])
    clique = {frozenset(p) for p in combinations(a + b, 2)}
    assert split_large(sorted(a + b), clique, {}, 4) == ([sorted(a + b)], [])   # no candidate splits it


@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)).filter(lambda e: e[0] != e[1]), max_size=20),
       st.integers(2, 6))
@settings(max_examples=200, deadline=None)
def test_split_large_leaves_the_components_of_what_remains_each_within_the_limit_or_unsplittable(edges, limit):
    from pmsolve.infer.explain.structure import split_large

    names = [f"c{k}" for k in range(10)]
    graph = {frozenset((names[i], names[j])) for i, j in edges}
    for comp in components(names, graph):
        parts, gone = split_large(comp, graph, {}, limit)
        left = sorted(x for p in parts for x in p)
        assert sorted(left + gone) == comp and not set(left) & set(gone)
        assert sorted(map(sorted, parts)) == sorted(components(left, {e for e in graph if e <= set(left)}))
        for p in parts:   # too large only when no single candidate splits it
            assert len(p) <= limit or all(
                len(components([y for y in p if y != x], {e for e in graph if e <= set(p) - {x}})) == 1 for x in p)


@pytest.mark.parametrize("seconds", [None, 0.0])
def test_past_the_structure_budget_a_redundant_candidate_gets_no_second_round(seconds):
    """``w`` is two µops on the ALU's four ports: redundant beside ``alu``. With time left its
    class member ``w2`` stands in and the structure is inferred again (a second round of pairs
    and port searches: minutes on a real CPU); past the budget it is not. Both map the truth."""
    q = frozenset("0123")
    truth = PortMapping([str(k) for k in range(6)], {"alu": [(q, 1)], "w": [(q, 2)], "w2": [(q, 2)],
                                                     "v": [(frozenset("45"), 1)]})
    said: list[str] = []
    res = infer(SimulatedOracle(truth, r_max=None, noise=0.0, seed=0),
                ExplainOptions(epsilon=0.03, structure_seconds=seconds), progress=lambda ev: said.append(ev.message))
    assert any("w2 stands in for w" in m for m in said) == (seconds is None)
    assert any("no second round" in m for m in said) == (seconds == 0.0)
    assert agreement(truth, res.mapping).rate() == 1.0, res.mapping


@pytest.mark.parametrize("limit", [None, 4])
def test_a_component_over_max_component_loses_its_link_which_is_then_characterised(limit):
    """``x`` on [3,4] links the integer pair (alu, sub) with the vector pair (vec, vsub) into one
    component of five. Over a limit of four it is dropped with the pair experiments that link
    it, the two parts are solved alone and map the truth, and ``x`` is characterised (its µop lies
    in no blocked set, so it is a misfit); without a limit it stays a blocking instruction."""
    f = frozenset
    truth = PortMapping([str(k) for k in range(8)], {"alu": [(f("0123"), 1)], "sub": [(f("01"), 1)],
                                                     "x": [(f("34"), 1)], "vec": [(f("4567"), 1)],
                                                     "vsub": [(f("45"), 1)]})
    res = infer(SimulatedOracle(truth, r_max=None, noise=0.0, seed=0), ExplainOptions(epsilon=0.03, max_component=limit))
    dropped = {d["insn"]: d for d in res.summary["blocking"]["dropped"]}
    assert ("x" in dropped) == (limit is not None)
    if limit is None:
        assert "x" in res.mapping.uops and res.explanations["x"].source != "characterised"
        return
    assert "links" in dropped["x"]["reason"] and dropped["x"]["experiments"]
    assert all("x" in e["experiment"] for e in dropped["x"]["experiments"])
    assert agreement(truth, res.mapping, ["alu", "sub", "vec", "vsub"]).rate() == 1.0, res.mapping
    assert res.explanations["x"].misfit is not None


def test_a_resumed_characterisation_paces_itself_on_the_chunks_it_measures(monkeypatch):
    """A resumed run answers its first chunks from the store in no time; its "left at this
    pace" must come from the chunks that measured (a resumed Zen 3 run said "1 min left" for
    870 schemes at 4 experiments a second). A clock that only measuring advances pins it."""
    from pmsolve.harness.cache import CachingOracle
    from pmsolve.infer.explain import characterise as ch

    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    schemes = {f"x{i}": [(s(i % 3, 3), 1)] for i in range(8)}
    truth, blocking, suite = _blocked_machine(4, {"b0": s(0), "b1": s(1), "b2": s(2), "b3": s(3)}, schemes)
    clock = [0.0]

    class Slow(SimulatedOracle):
        def measure(self, experiments):
            clock[0] += 60.0
            return super().measure(experiments)

    monkeypatch.setattr(ch.time, "monotonic", lambda: clock[0])
    orc = CachingOracle(Slow(truth, r_max=4))
    names = sorted(schemes)
    single = {i: {"tp": orc.measure([Experiment({i: 1})])[0], "uops": None} for i in names}
    o = ExplainOptions(r_max=4).resolved(False)
    ch.characterise(orc, names[:4], blocking, suite, single, 4, o, 0, lambda m: None, chunk=2)  # the store
    lines: list[str] = []
    ch.characterise(orc, names, blocking, suite, single, 4, o, 0, lines.append, chunk=2)
    at6 = next(m for m in lines if "6/8" in m)
    spent = re.search(r"\((\d+) min so far, about (\d+) min left", at6)
    assert spent and spent.group(1) == spent.group(2), at6   # one chunk measured, one left
    assert "(" not in next(m for m in lines if "4/8" in m).split("characterised")[1], lines


# ----------------------------------------------------------------------------- the AVX-512 mode

def _icelake_like(mode: bool, load_trigger: bool = False) -> PortMapping:
    """Ice Lake-SP's vector ports in miniature, with catalogue names (the mode stage reads their
    operands): beside a zmm scheme, vector integer µops on {0,1,5} lose port 1 (``mode``);
    on {0,1} floating point moves to {0,5}, a vector shift loses port 1 and ``vpmulld`` keeps it,
    and ``vpord xmm`` on {0,1,5} keeps it too (schemes of one set that differ, on the set the mode
    probes find and on another, blocking instructions among them). With ``load_trigger`` a third
    load port and a zmm scheme that only loads, the fastest zmm scheme alone (as `vpbroadcastd
    zmm, m32` on the Emerald Rapids)."""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    vint = s(0, 5) if mode else s(0, 1, 5)
    loads = s(2, 3, 4) if load_trigger else s(2, 3)
    extra = {"vpbroadcastd_zmm_m32": [(loads, 1)]} if load_trigger else {}
    return PortMapping(["0", "1", "2", "3", "5", "6"] + (["4"] if load_trigger else []), {**extra,
        "popcnt_r64_r64": [(s(1), 1)], "korw_k_k_k": [(s(0), 1)], "vbroadcastss_xmm_xmm": [(s(5), 1)],
        "vcvtdq2ps_xmm_xmm": [(s(0, 5) if mode else s(0, 1), 1)], "vpaddd_xmm_xmm_xmm": [(vint, 1)],
        "vmulps_xmm_xmm_xmm": [(s(0, 5) if mode else s(0, 1), 1)], "sete_r8": [(s(0, 6), 1)],
        "vpslld_xmm_xmm_i8": [(s(0) if mode else s(0, 1), 1)], "vpord_xmm_xmm_xmm": [(s(0, 1, 5), 1)],
        "mov_r64_i32": [(s(0, 1, 5, 6), 1)], "mov_r64_m64": [(loads, 1)],
        "vpaddd_ymm_ymm_ymm": [(vint, 1)], "vpmulld_ymm_ymm_ymm": [(s(0, 1), 2)],
        "vpaddd_zmm_zmm_zmm": [(s(0, 5), 1)], "vfmadd231ps_zmm_zmm_zmm": [(s(0, 5), 1)],
        "vpermd_zmm_zmm_zmm": [(s(5), 1)], "vpaddd_zmm_zmm_m512": [(s(0, 5), 1), (s(2, 3), 1)]})


class _ZmmMode(SimulatedOracle):
    """Experiments with a zmm scheme answer from the narrowed truth, the others from the plain one."""

    def __init__(self, r_max: float, noise: float = 0.0, seed: int = 0, load_trigger: bool = False):
        super().__init__(_icelake_like(False, load_trigger), r_max=r_max, noise=noise, seed=seed)
        self.in_mode = SimulatedOracle(_icelake_like(True, load_trigger), r_max=r_max, noise=noise, seed=seed + 1)

    def measure(self, experiments):
        out = super().measure(experiments)
        wide = [j for j, e in enumerate(experiments) if any("zmm" in i for i in e)]
        for j, t in zip(wide, self.in_mode.measure([experiments[j] for j in wide])):
            out[j] = t
        return out


@pytest.mark.parametrize("noise, load_trigger", [(0.0, False), (0.01, False), (0.0, True)])
def test_zmm_schemes_that_switch_a_port_off_are_mapped_and_mixes_with_them_predicted(noise, load_trigger):
    """Beside any zmm scheme the three-port vector adds lose port 1 (Intel's AVX-512 mode): before
    the mode stage every zmm scheme was a misfit ({vpaddd zmm:1, vpaddd xmm:6} = 3.5 where ports
    that hold both alone allow 2.33) and mixes with one were predicted too fast. The mode must be
    found on the right port, the zmm schemes mapped, and every mix predicted as the machine runs it.
    Also when the fastest zmm scheme alone only loads (the Emerald Rapids's `vpbroadcastd zmm, m32`,
    which took the blocking instructions' own probes with it: 82 misfits in run e4)."""
    oracle = _ZmmMode(r_max=5, noise=noise, seed=3, load_trigger=load_trigger)
    res = infer(oracle, ExplainOptions(epsilon=0.03))
    mode = res.model.mode
    assert mode is not None and res.summary["mode"]["port"] == mode.port
    assert {"vpaddd_zmm_zmm_zmm", "vfmadd231ps_zmm_zmm_zmm", "vpermd_zmm_zmm_zmm"} <= set(res.mapping.uops)
    # one set, two behaviours: each scheme's own probe decides (the set's blocking instruction speaks for one)
    q01 = frozenset({"0", "1"})
    q05 = res.mapping.uops["vfmadd231ps_zmm_zmm_zmm"][0].ports
    assert [mode.narrow(i, q01) for i in ("vpslld_xmm_xmm_i8", "vcvtdq2ps_xmm_xmm", "vmulps_xmm_xmm_xmm",
                                          "vpmulld_ymm_ymm_ymm")] == [frozenset({"0"}), q05, q05, q01], mode
    vint = res.mapping.uops["vpord_xmm_xmm_xmm"][0].ports
    assert re.search(r"by their own probes 2 scheme\(s\) move to other ports .* 1 lose port \d .* keep it",
                     res.summary["mode"]["why"]), res.summary["mode"]["why"]
    assert [mode.narrow(i, vint) for i in ("vpaddd_xmm_xmm_xmm", "vpord_xmm_xmm_xmm")] == [vint - {mode.port}, vint]
    names = sorted(res.model.schemes)
    rng = random.Random(5)
    mixes = [Experiment({i: rng.randint(1, 3) for i in rng.sample(names, rng.randint(2, 4))}) for _ in range(300)]
    exact = _ZmmMode(r_max=5, load_trigger=load_trigger)
    truth = exact.measure(mixes)
    pred = res.model.evaluate_many(mixes, 5)
    assert max(abs(p - t) / t for p, t in zip(pred, truth)) < 0.02
    assert [float(res.model.inverse_throughput(e, 5)) for e in mixes[:40]] == pytest.approx(list(pred[:40]))


def test_no_mode_is_claimed_where_zmm_schemes_switch_nothing_off():
    res = infer(SimulatedOracle(_icelake_like(False), r_max=5), ExplainOptions())
    assert res.model.mode is None and res.summary["mode"]["port"] is None
    assert not agreement(_icelake_like(False), res.mapping).different


def test_a_scheme_modelled_with_its_own_uops_is_probed_in_the_mode_on_a_port_neither_probe_scheme_uses():
    """On the Emerald Rapids the mode stage crashed ("vaddpd_xmm_xmm_m128, µop 1: unknown ports ['1']"):
    the scheme and the trigger were both ``ports + cost`` models, the probe's model cut down to them
    knew only their ports, and the place the µop may move to in the mode ({1,3}) names a port of the
    mode's set that neither uses. The probe must run and find the µop where the machine runs it."""
    f = frozenset
    vadd, trig = "vaddpd_xmm_xmm_xmm", "vpaddd_zmm_zmm_zmm"
    model = ModelledMapping(PortMapping(["0", "1", "3", "6"], {"sete_r8": [(f({"6"}), 1)]}), {
        vadd: SchemeModel("ports + cost", cost=Fraction(1, 2), uops=((("0", "3"), 1),)),
        trig: SchemeModel("ports + cost", cost=Fraction(1), uops=((("0",), 1),))},
        Mode("0", f({f({"0", "1", "3"})}), f({trig}), f({vadd, trig})))
    truth = PortMapping(["0", "1", "3"], {vadd: [(f({"1", "3"}), 1)], trig: [(f({"0"}), 1)]})
    found = modes.each(lambda es: [float(inverse_throughput(truth, e)) for e in es], model, trig, (), None)
    assert found["unclear"] == [] and [p["scheme"] for p in found["probes"]] == [vadd]
    assert modes.refined(model.mode, found).narrow(vadd, f({"0", "3"})) == f({"1", "3"})


# ----------------------------------------------------------------------------- one glitchy sample

class _OneFastSample(SimulatedOracle):
    """The first experiment with ``x`` beside the widest blocking set's copies reads as if ``x``
    were not there (once): a neighbour's burst made one sample too fast."""

    def __init__(self, truth, widest: str, **kw):
        super().__init__(truth, **kw)
        self.widest, self.glitched = widest, False

    def measure(self, experiments):
        out = super().measure(experiments)
        for j, e in enumerate(experiments):
            if not self.glitched and "x" in e and dict(e.items()).get(self.widest, 0) >= 4 and len(e.counts) == 2:
                self.glitched = True
                out[j] = super().measure([Experiment({self.widest: e[self.widest]})])[0]
        return out


def test_one_too_fast_sample_does_not_leave_a_scheme_that_takes_time_with_no_uops():
    """On the Ice Lake-SP one sample of `vaddpd xmm` beside five `mov r64, imm32` read 1.30 where
    every other read 1.51: the scheme came out with no µop at all, "outside the model", though it
    takes 0.5 cycles alone and the front end 0.2. A scheme that outlasts the front end and shows
    no µop gets a second sample of each probe."""
    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    truth = PortMapping(["0", "1", "2", "3", "5", "6"], {
        "a0": [(s(0), 1)], "a1": [(s(1), 1)], "a5": [(s(5), 1)], "a06": [(s(0, 6), 1)], "a01": [(s(0, 1), 1)],
        "a015": [(s(0, 1, 5), 1)], "a0156": [(s(0, 1, 5, 6), 1)], "ld": [(s(2, 3), 1)], "x": [(s(0, 1), 1)]})
    oracle = _OneFastSample(truth, "a0156", r_max=5)
    res = infer(oracle, ExplainOptions())
    assert oracle.glitched
    assert "x" in res.mapping.uops and not agreement(truth, res.mapping).different, res.explanations["x"]


def test_a_scheme_one_glitchy_pair_put_on_a_unit_is_taken_off_by_its_check():
    """``db`` (2 cycles on a unit D) and ``da`` (3 on a unit E of its own) take 3 together; once a
    burst made their pair read 5, the sum, and ``da`` kept D however its checks went (none set it
    beside D's first again: two copies of ``da`` take 6 on either unit). Two copies of the first
    beside it (4, where sharing gives 7) take it off, and no prediction adds it up with D."""
    from pmsolve.infer.explain.units import place

    s = lambda *p: frozenset(str(x) for x in p)  # noqa: E731
    blockers = {"b01": s(0, 1), "b23": s(2, 3), "ld": s(4, 5)}
    slow = {"db": [(s(0, 1), 1), (s("D"), 2)], "da": [(s(2, 3), 1), (s("E"), 3)]}
    truth, blocking, _ = _blocked_machine(6, blockers, {})
    truth = PortMapping(truth.ports + ("D", "E"), {**truth.uops, **slow})
    expl = {i: Explanation(misfit=Misfit("outside the model", f"alone it runs at {t} cycles, slower than its µops explain",
                                         ((Experiment({i: 1}), float(t)),), ((q, 1),)))
            for i, q, t in (("db", ("0", "1"), 2), ("da", ("2", "3"), 3))}
    for glitch in (None, 5.0):
        oracle = OneGlitch(truth, {"da": 1, "db": 1}, glitch or 3.0, r_max=6)
        units, out = place(oracle, expl, blocking, 6, ExplainOptions(r_max=6).resolved(False), lambda m: None)
        assert [u["members"] for u in units] == ([["db"], ["da"]] if glitch is None else [["db"]]), units
        assert out["db"].misfit is None
        if glitch is not None:
            assert out["da"].misfit is not None and out["da"].misfit.unit == ()
            assert "beside 2 copies of db" in out["da"].misfit.reason


@st.composite
def usage_and_twins(draw):
    ports = [str(p) for p in range(draw(st.integers(2, 9)))]
    sizes, rest = [], list(ports)
    while rest:
        k = draw(st.integers(1, min(4, len(rest))))
        sizes.append(rest[:k])
        rest = rest[k:]
    groups = [g for g in sizes if len(g) > 1]
    sets = draw(st.lists(st.sets(st.sampled_from(ports), min_size=1).map(frozenset), min_size=0, max_size=4,
                         unique=True))
    return {q: draw(st.integers(1, 3)) for q in sets}, groups, draw(st.randoms())


@given(usage_and_twins())
@settings(max_examples=300, deadline=None)
def test_canonical_is_the_least_form_over_every_renaming(case):
    """The shortcut over distinct column arrangements gives exactly the brute-force least form
    over all renamings within the twin groups, and a renamed usage the same form."""
    from itertools import permutations, product

    from pmsolve.infer.explain.characterise import canonical
    from pmsolve.model import sort_ports
    f, groups, rnd = case

    def form(g):
        return tuple(sorted((tuple(sort_ports(q)), n) for q, n in g.items()))

    renamings = [{a: b for g, pg in zip(groups, perm) for a, b in zip(g, pg)}
                 for perm in product(*(permutations(g) for g in groups))]
    brute = min(form({frozenset(r.get(x, x) for x in q): n for q, n in f.items()}) for r in renamings)
    assert canonical(f, groups) == brute
    r = rnd.choice(renamings)
    assert canonical({frozenset(r.get(x, x) for x in q): n for q, n in f.items()}, groups) == brute


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_placement_times_on_uop_masses_are_the_compiled_models_times(data):
    """characterise._time (Thm 5.2 on µop masses, a cache of the blocking instructions' part)
    against a PortMapping compiled per placement and the batch evaluator (the rule before)."""
    from pmsolve.infer.explain.characterise import _time
    ports = [str(p) for p in range(data.draw(st.integers(2, 7)))]
    port_sets = st.frozensets(st.sampled_from(ports), min_size=1)
    blockers = {f"b{k}": [(data.draw(port_sets), data.draw(st.integers(1, 2)))] for k in range(data.draw(st.integers(1, 4)))}
    blocking = PortMapping(ports, blockers)
    r_max = data.draw(st.sampled_from([None, 4, 5.5]))
    es = [Experiment({"i": data.draw(st.integers(1, 3)),
                      **{b: data.draw(st.integers(0, 9)) for b in data.draw(st.sets(st.sampled_from(sorted(blockers))))}})
          for _ in range(data.draw(st.integers(1, 6)))]
    rests: dict = {}
    for _ in range(3):   # several placements share the cache
        f = {data.draw(port_sets): data.draw(st.integers(1, 3)) for _ in range(data.draw(st.integers(1, 3)))}
        compiled = PortMapping(ports, {**blockers, "i": list(f.items())})
        assert [_time(blocking, "i", f, e, r_max, rests) for e in es] == [
            float(v) for v in batch_inverse_throughput([(compiled, e) for e in es], r_max)]
