"""Scheduling queues (pmsolve/queues.py, pmsolve/infer/explain/queues.py): µops placed into one of
two queues as they are renamed, which a port mapping cannot state (the Zen 4's vector pipes)."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from pmsolve.errors import FormatError
from pmsolve.infer.explain import queues as stage
from pmsolve.model import Experiment, PortMapping
from pmsolve.modelled import ModelledMapping
from pmsolve.queues import Queues, simulate


def _s(*p):
    return frozenset(str(x) for x in p)


#: four vector pipes 0-3 and a GPR port 4; s* shuffles on the two pipes {0,2}, f on all four,
#: m on {0,1}, a on {2,3}
TRUTH = PortMapping(["0", "1", "2", "3", "4"], {
    "s": [(_s(0, 2), 1)], "s2": [(_s(0, 2), 1)], "f": [(_s(0, 1, 2, 3), 1)], "f2": [(_s(0, 1, 2, 3), 1)],
    "m": [(_s(0, 1), 1)], "a": [(_s(2, 3), 1)], "g": [(_s(4), 1)], "sg": [(_s(0, 2), 1), (_s(4), 1)]})
SPLIT = (_s(0, 2), _s(1, 3))


def test_a_shuffle_beside_a_flexible_uop_takes_two_thirds_of_a_cycle():
    """The steady state by hand: the shuffles' queue stays full; each cycle its two pipes free two
    entries, and renaming (in order f, s, f, s, ...) puts f into it with probability 1/2 while it
    has room. From a stall on s: s takes one entry; f goes in (1/2: two µops renamed, then s
    stalls) or to the other queue (1/2: then s, and f to the other queue as the first is full: four
    µops). 1.5 copies a cycle: 2/3 cycles per copy, where the port bound is 1/2 (RESULTS §1.18
    measured 0.666 on the Zen 4). Placing f in the emptier queue instead, or letting any pipe run
    any queue's µops, gives 1/2."""
    one = simulate([_s(0, 1, 2, 3), _s(0, 2)], SPLIT, 6, 32, 20_000)
    assert one == pytest.approx(2 / 3, rel=0.01)
    two = simulate([_s(0, 1, 2, 3), _s(0, 2)] * 2, SPLIT, 6, 32, 20_000)
    assert two == pytest.approx(4 / 3, rel=0.01)


def test_queues_keep_the_port_bound_where_every_uop_fits_one_queue_or_any():
    q = Queues(SPLIT)
    for e in ({"s": 2, "s2": 1}, {"f": 3, "f2": 1}, {"g": 4}, {"f": 1, "m": 1, "a": 2}):
        assert q.time(TRUTH, Experiment(e)) is None, e
    assert q.time(TRUTH, Experiment({"s": 1, "f": 1})) is not None
    # µops off the queues' ports take no part: sg's GPR µop is not in the stream
    assert q.stream(TRUTH, Experiment({"sg": 1, "f": 2})) == [_s(0, 1, 2, 3), _s(0, 2), _s(0, 1, 2, 3)]
    assert simulate([_s(0, 2)] * 3, SPLIT, 6, 32, 2000) == pytest.approx(1.5)    # s alone: its two pipes


def test_a_modelled_mapping_with_queues_predicts_the_longer_of_ports_and_queues_on_every_route():
    model = ModelledMapping(TRUTH, queues=Queues(SPLIT))
    exps = [Experiment(e) for e in ({"s": 1, "f": 1}, {"s": 1, "f": 1, "g": 5}, {"s": 1, "m": 1}, {"f": 1},
                                    {"s": 2, "f": 2, "m": 1, "a": 1}, {"g": 3, "sg": 1, "f": 1})]
    exact = [model.inverse_throughput(e) for e in exps]
    assert np.allclose(model.evaluate_many(exps), [float(x) for x in exact])
    plain = ModelledMapping(TRUTH)
    for e, t in zip(exps, exact):
        assert t >= plain.inverse_throughput(e)
    assert exact[0] == pytest.approx(Fraction(2, 3), rel=0.01)
    assert "scheduling queues" in model.bottleneck(exps[0]).describe()
    assert exact[1] == 5    # the GPR port's five cycles are longer than the queues' 2/3
    back = ModelledMapping.from_json(json.loads(json.dumps(model.to_json())))
    assert back.queues == model.queues and back.inverse_throughput(exps[0]) == exact[0]


def test_queues_must_be_disjoint_ports_of_the_mapping():
    with pytest.raises(FormatError, match="disjoint"):
        Queues((_s(0, 1), _s(1, 2)))
    with pytest.raises(FormatError, match="not ports of the mapping"):
        ModelledMapping(TRUTH, queues=Queues((_s(0, 2), _s(1, 7))))
    with pytest.raises(FormatError, match="'queues' must be"):
        ModelledMapping.from_json({**ModelledMapping(TRUTH).to_json(), "queues": {"queues": 3}})


def _mixes() -> list[Experiment]:
    names = list(TRUTH.uops)
    out = [Experiment({i: 1}) for i in names]
    out += [Experiment({i: a, j: b}) for i in names for j in names if i < j for a in (1, 2) for b in (1, 2)]
    return out


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_the_stage_finds_the_split_that_slowed_the_measurements_and_none_where_nothing_did(noise):
    """Measurements from a machine with queues choose its split (not the other two); measurements
    of the port mapping alone, exact or with ±1 % noise, choose none."""
    rng = np.random.default_rng(3)
    queued = ModelledMapping(TRUTH, queues=Queues(SPLIT))
    plain = ModelledMapping(TRUTH)
    for truth, want in ((queued, [["0", "2"], ["1", "3"]]), (plain, None)):
        measured = {e: float(truth.inverse_throughput(e, 4)) * (1 + noise * rng.standard_normal()) for e in _mixes()}
        found = stage.find(plain, measured, 4, lambda _: None)
        assert (found["chosen"] or {}).get("queues") == want, found["tried"]
        model = stage.with_queues(plain, found)
        assert (model.queues is not None) == (want is not None)


@pytest.mark.parametrize("before, after, better, worse, kept", [
    (0.05, 0.04, 4, 3, True), (0.05, 0.04, 3, 3, False), (0.05, 0.04, 2, 0, False), (0.05, 0.04, 3, 0, True),
    (0.05, 0.05, 10, 1, False), (0.05, 0.06, 10, 1, False), (0.05, None, 0, None, False)])
def test_a_split_is_kept_only_when_it_lowers_the_error_and_helps_more_than_it_hurts(before, after, better,
                                                                                   worse, kept):
    assert stage.keeps({"mape_before": before, "mape_after": after, "better": better, "worse": worse}) is kept


def test_the_stages_own_mixes_find_the_split_when_the_store_holds_no_mix():
    """Characterisation-like measurements (singles) cannot show the queues; the stage's own random
    mixes, each with a confined and a flexible scheme beside others, do."""
    truth = PortMapping([str(p) for p in range(8)], {
        "s": [(_s(0, 2), 1)], "f": [(_s(0, 1, 2, 3), 1)], "m": [(_s(0, 1), 1)], "a": [(_s(2, 3), 1)],
        "g1": [(_s(4, 5, 6, 7), 1)], "g2": [(_s(4, 5, 6, 7), 1)], "g3": [(_s(4, 5), 1)], "ld": [(_s(6, 7), 1)]})
    queued = ModelledMapping(truth, queues=Queues(SPLIT, 8))
    singles = {Experiment({i: 1}): float(queued.inverse_throughput(Experiment({i: 1}), 8)) for i in truth.uops}
    plain = ModelledMapping(truth)
    assert stage.find(plain, singles, 8, lambda _: None)["chosen"] is None
    asked: list[Experiment] = []

    def measure(exps):
        asked.extend(exps)
        return [float(queued.inverse_throughput(e, 8)) for e in exps]

    found = stage.find(plain, singles, 8, lambda _: None, measure)
    assert found["chosen"]["queues"] == [["0", "2"], ["1", "3"]], found["tried"]
    mine = stage.mixes(plain, SPLIT)
    assert mine and set(mine) <= set(asked)
    q = Queues(SPLIT)
    assert all(q.matters(q.stream(truth, e)) for e in mine)


def test_the_report_shows_every_split_tried_and_the_kept_one():
    from pmsolve.jobs.report import queues_text, render_html
    queued = ModelledMapping(TRUTH, queues=Queues(SPLIT))
    measured = {e: float(queued.inverse_throughput(e, 4)) for e in _mixes()}
    found = stage.find(ModelledMapping(TRUTH), measured, 4, lambda _: None)
    page = render_html({"queues": found})
    assert "<table id='queues'>" in page and page.count("<tr class='best'><td>[0,2] [1,3]</td>") == 1
    assert queues_text(found).startswith("; scheduling queues [0,2] [1,3] (")
    assert queues_text({"chosen": None, "tried": found["tried"]}) == ""
