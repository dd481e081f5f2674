"""Shared resources (pmsolve/infer/explain/shared.py, Shared in pmsolve/modelled.py): schemes that
hold a resource beside the ports for a measured time per copy, adding up, and more beside a
"full" member (Ice Lake-SP's load path beside zmm loads, its divider at 256-bit width)."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from explain_fixtures import OneGlitch
from pmsolve.errors import FormatError
from pmsolve.harness.simulated import SimulatedOracle
from pmsolve.infer.explain import ExplainOptions, infer
from pmsolve.model import Experiment, PortMapping
from pmsolve.modelled import ModelledMapping, SchemeModel, Shared
from pmsolve.throughput import batch_inverse_throughput

F = Fraction


def _s(*p):
    return frozenset(str(x) for x in p)


#: a load path: two "zmm" loads 0.9 each (full members), beside one a "ymm" load 0.6 and a plain
#: load 0.45 (nothing alone: two load ports); a divider: dw 6 and dw2 4 cycles (full), dn 3
#: alone and 4.5 beside a full member (the divider at the wider width)
PATHS = (Shared("load", {"ldz": F(9, 10), "ldz2": F(9, 10)}, {"ldy": F(3, 5), "ld": F(9, 20)},
                frozenset({"ldz", "ldz2"})),
         Shared("div", {"dw": F(6), "dw2": F(4), "dn": F(3)}, {"dn": F(9, 2)}, frozenset({"dw", "dw2"})),
         Shared("microcode", {"mc": F(2)}))
TRUTH = PortMapping(["0", "1", "2", "3", "5", "6"], {
    "a0": [(_s(0), 1)], "a1": [(_s(1), 1)], "a01": [(_s(0, 1), 1)], "a5": [(_s(5), 1)], "a56": [(_s(5, 6), 1)],
    "a0156": [(_s(0, 1, 5, 6), 1)], "ld": [(_s(2, 3), 1)], "ldy": [(_s(2, 3), 1)],
    "ldz": [(_s(2, 3), 1)], "ldz2": [(_s(2, 3), 1), (_s(0, 1), 1)],
    "dw": [(_s(0), 1)], "dw2": [(_s(0), 1)], "dn": [(_s(0), 1)], "x": [(_s(0, 1), 1), (_s(5, 6), 1)],
    "mc": [(_s(1), 1)], "ms": [(_s(0, 1), 1)]})


class _WithPaths(SimulatedOracle):
    """The port truth, and no faster than any of ``PATHS`` (noise on the result); ``ms`` is
    microcode (Ice Lake-SP's ``btc m64, r64``): 4 cycles per copy in which the front end delivers
    nothing else, the other instructions delivered between its copies, 5 a cycle in whole cycles,
    while the back end runs on."""

    def measure(self, experiments):
        exps = list(experiments)
        self.queries += len(exps)
        rest = [Experiment({i: n for i, n in e.items() if i != "ms"}) if len(e.counts) > 1 else e for e in exps]
        base = batch_inverse_throughput([(self.mapping, e) for e in rest], self.r_max)
        vals = [max(float(b), *(float(p.time(e)) for p in PATHS)) for b, e in zip(base, rest)]
        vals = [max(v, 4 * (k := e["ms"]) + k * math.ceil((e.size - k) / (k * self.r_max))) if "ms" in e and len(e.counts) > 1
                else max(v, 4 * e["ms"]) if "ms" in e else v for v, e in zip(vals, exps)]
        return [v * self._factor(e) for v, e in zip(vals, exps)] if self.noise else vals


def test_shared_time_adds_holds_and_switches_to_beside_in_context():
    load = PATHS[0]
    assert load.time(Experiment({"ldz": 2})) == F(9, 5)
    assert load.time(Experiment({"ldy": 3, "ld": 1})) == 0                  # no full member: nothing
    assert load.time(Experiment({"ldz": 1, "ldy": 2, "ld": 1})) == F(9, 10) + F(6, 5) + F(9, 20)
    div = PATHS[1]
    assert div.time(Experiment({"dn": 2})) == 6 and div.time(Experiment({"dn": 1, "dw2": 1})) == F(17, 2)


def _model(holds):
    names = ["p", "q", "r"]
    mapping = PortMapping(["0", "1"], {"p": [(_s(0), 1)], "q": [(_s(0, 1), 1)], "r": [(_s(1), 1)]})
    return ModelledMapping(mapping, {i: SchemeModel("mapped") for i in names},
                           shared=(Shared("s", {i: F(h) for i, h in zip(names, holds) if h},
                                          {"q": F(holds[1] + 1)} if holds[1] else {}, frozenset({"p"})),))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=3, max_size=3),
       st.lists(st.tuples(st.sampled_from("pqr"), st.integers(1, 3)), min_size=1, max_size=3))
def test_bottleneck_evaluate_many_and_json_agree_on_shared_resources(holds, counts):
    """The exact route, the vectorised one and the file form give one answer, and that answer is
    the port bound or the resource's Σ n·hold, whichever is longer."""
    model = _model(holds)
    e = Experiment(dict(counts))
    exact = model.inverse_throughput(e)
    assert exact == max(model.shared[0].time(e), batch_inverse_throughput([(model.mapping, e)], None)[0])
    assert float(exact) == pytest.approx(model.evaluate_many([e])[0])
    again = ModelledMapping.from_json(json.loads(json.dumps(model.to_json())))
    assert again.inverse_throughput(e) == exact
    if model.shared[0].time(e) > batch_inverse_throughput([(model.mapping, e)], None)[0]:
        assert model.bottleneck(e).describe() == "shared resource s"


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=3, max_size=3), st.integers(1, 3),
       st.lists(st.tuples(st.sampled_from("pqrm"), st.integers(1, 6)), min_size=1, max_size=4),
       st.sampled_from([None, 2, 4]))
def test_microcode_holds_the_front_end_by_every_route(holds, time, counts, r_max):
    """A serial scheme ``m`` (``time`` cycles alone) beside the rest: the exact route, the
    vectorised one and the file form agree, on the longer of the rest of the model and m's copies'
    time plus the rest's slots between them in whole cycles (without R_max: m's time, then the rest)."""
    base = _model(holds)
    models = {**base.schemes, "m": SchemeModel("cost", cost=F(time), alone=F(time))}
    model = ModelledMapping(base.mapping, models, shared=base.shared, serial=frozenset({"m"}))
    plain = ModelledMapping(base.mapping, models, shared=base.shared)
    e = Experiment(dict(counts))
    exact = model.inverse_throughput(e, r_max)
    if "m" in e and len(e.counts) > 1:
        rest = Experiment({i: n for i, n in e.items() if i != "m"})
        k = e["m"]
        held = k * time + (plain.inverse_throughput(rest, r_max) if r_max is None else k * math.ceil(F(rest.size, k * r_max)))
        assert exact == max(held, plain.inverse_throughput(e, r_max))
    else:
        assert exact == plain.inverse_throughput(e, r_max)
    assert float(exact) == pytest.approx(model.evaluate_many([e], r_max)[0])
    assert ModelledMapping.from_json(json.loads(json.dumps(model.to_json()))).inverse_throughput(e, r_max) == exact


@pytest.mark.parametrize("bad", [[{"name": "s", "hold": {"nope": 1}}], [{"name": "s", "hold": {"p": "x"}}],
                                 [{"hold": {}}], {"name": "s"}, [{"name": "s", "hold": {"p": -1}}]])
def test_malformed_shared_resources_are_format_errors(bad):
    doc = _model([1, 1, 0]).to_json()
    doc["shared"] = bad
    with pytest.raises(FormatError):
        ModelledMapping.from_json(doc, "m.json")


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_a_load_path_and_a_divider_are_found_and_mixes_with_them_predicted(noise):
    """Before the shared stage each slow scheme was a cost of its own: {ldz, ldz2} came out 0.9
    for 1.8, {dw2, dn} 4 for 8.5, and the plain loads beside a zmm load were free. The microcode
    ``ms`` holds the front end: beside the divider it takes the divider's time, beside one
    ``a0156`` a whole cycle more than alone (5, its parts 4.25: certified outside the model)."""
    oracle = _WithPaths(TRUTH, r_max=5, noise=noise, seed=7)
    res = infer(oracle, ExplainOptions(epsilon=0.03))
    found = {r["first"]: r for r in res.summary["shared"]["resources"]}
    assert set(found) == {"dw", "ldz"} or set(found) == {"dw", "ldz2"}, res.summary["shared"]
    div = found["dw"]
    assert set(div["hold"]) == {"dw", "dw2", "dn"} and set(div["beside"]) - {"ms"} == {"dn"}
    assert div["beside"]["dn"] == pytest.approx(4.5, rel=0.05)
    load = next(r for f, r in found.items() if f != "dw")
    assert set(load["hold"]) == {"ldz", "ldz2"} and set(load["beside"]) == {"ldy", "ld"}
    assert load["beside"]["ldy"] == pytest.approx(0.6, rel=0.05)
    assert res.model.serial == {"ms"} and "ms" in res.summary["certified"]
    assert res.model.schemes["ms"].confidence > 0.85, res.model.schemes["ms"].evidence   # as a cost of its own: 10 of 41
    # measured parameters are kept to simple fractions or to 0.01 cycles (pmsolve.modelled.resolved)
    params = [*(t for r in res.model.shared for t in [*r.hold.values(), *r.beside.values()]),
              *(x for m in res.model.schemes.values() for x in (m.cost, m.alone) if x is not None)]
    assert params and all(t.denominator <= 12 or 100 % t.denominator == 0 for t in params), params
    rng = random.Random(11)
    names = sorted(res.model.schemes)
    mixes = [Experiment({i: rng.randint(1, 3) for i in rng.sample(names, rng.randint(2, 4))}) for _ in range(300)]
    truth = _WithPaths(TRUTH, r_max=5).measure(mixes)
    pred = res.model.evaluate_many(mixes, 5)
    worst = max(abs(p - t) / t for p, t in zip(pred, truth))
    assert worst < 0.05, worst
    again = ModelledMapping.from_json(res.to_json())
    assert list(again.evaluate_many(mixes[:50], 5)) == pytest.approx(list(pred[:50]))


class _OneGlitch(OneGlitch, _WithPaths):
    """The paths' truth; the first measurement of ``pair`` reads ``cycles``, once."""

    def __init__(self, pair: dict[str, int], cycles: float, **kw):
        super().__init__(TRUTH, pair, cycles, **kw)


def test_a_member_placed_by_one_wrong_pair_is_left_out_by_its_check():
    """A pair that reads the sum by accident puts a scheme on the divider; two copies of the first
    beside it (12 where sharing gives 14) take it off again."""
    res = infer(_OneGlitch({"dw": 1, "mc": 1}, 8.0, r_max=5), ExplainOptions())   # the sum, where 6
    div = next(r for r in res.summary["shared"]["resources"] if r["first"] == "dw")
    assert "mc" not in div["hold"] and set(div["hold"]) == {"dw", "dw2", "dn"}
    assert [x for x, _ in res.summary["shared"]["left_out"]] == ["mc"]
    assert all("mc" not in r.schemes for r in res.model.shared)


def test_a_microcoded_scheme_that_serialises_is_kept_out_of_every_resource():
    """Ice Lake-SP's ``btc m64, r64`` (5 cycles, a cost of its own) takes the sum with anything
    beside it, so its pair with the divider's first reads the sum; it is no divider. Beside the
    filler it takes the sum too, where a resource of its own gives the longer: it serialises."""
    from pmsolve.infer.explain.options import ExplainOptions as O
    from pmsolve.infer.explain.shared import find

    blocking = PortMapping(TRUTH.ports, {i: TRUTH.uops[i] for i in ("a0", "a1", "a5", "a56", "a0156", "ld")})
    oracle = _WithPaths(TRUTH, r_max=5)
    slow = {"ms": F(4), "dw": F(6), "dw2": F(4)}
    model = ModelledMapping(blocking, {i: SchemeModel("ports + cost", cost=t, alone=t, uops=((("0",), 1),))
                                       for i, t in slow.items()})
    alone = {i: oracle.measure([Experiment({i: 1})])[0] for i in model.schemes}
    found = find(oracle.measure, model, alone, 5, O().resolved(False), blocking=blocking)
    assert [i for i, *_ in found["serial"]] == ["ms"]
    assert [sorted(r["hold"]) for r in found["resources"]] == [["dw", "dw2"]]
    # and the model runs it alone, then the rest: as the machine does
    serial = ModelledMapping(model.mapping, model.schemes, serial=frozenset(i for i, *_ in found["serial"]))
    mixes = [Experiment({"ms": 1, "a0156": 5, "ld": 2}), Experiment({"ms": 2, "dw": 1}), Experiment({"ms": 1, "a1": 3})]
    assert [float(serial.inverse_throughput(e, 5)) for e in mixes] == pytest.approx(oracle.measure(mixes))
    assert list(serial.evaluate_many(mixes, 5)) == pytest.approx(oracle.measure(mixes))
    assert serial.bottleneck(mixes[0], 5).describe() == "ms holds the front end (its time alone, the rest delivered between copies)"
    again = ModelledMapping.from_json(json.loads(json.dumps(serial.to_json())))
    assert again.serial == {"ms"} and again.inverse_throughput(mixes[1], 5) == serial.inverse_throughput(mixes[1], 5)
    with pytest.raises(FormatError):
        ModelledMapping.from_json({**serial.to_json(), "serial": ["a0"]})      # mapped: no time of its own


class _Fractional(_WithPaths):
    """As :class:`_WithPaths`, and ``mz`` 4 cycles alone whose front end delivers the rest at
    R_max a cycle *within* its cycles (the Zen 4's microcoded ``shrd r16, r16, i8``: 1.5 alone,
    2.0 beside three instructions), not in whole cycles between its copies."""

    def measure(self, experiments):
        exps = list(experiments)
        plain = super().measure([Experiment({i: n for i, n in e.items() if i != "mz"}) if len(e.counts) > 1 else e
                                 for e in exps])
        return [float(max(v, 4 * e["mz"] + F(e.size - e["mz"], self.r_max))) if "mz" in e else v
                for v, e in zip(plain, exps)]


def test_microcode_whose_uops_explain_its_time_alone_is_found_serial_too():
    """The Zen 5's ``shld m32, r32, imm8`` takes 1.1 cycles alone, as the µops the
    characterisation found say, so it was no slow scheme and never tried beside the filler; it
    takes 2.0 beside any one instruction and 3.0 beside the filler (the ports: 2.0), as microcode
    does. Every scheme of a cost is tried."""
    from pmsolve.infer.explain.options import ExplainOptions as O
    from pmsolve.infer.explain.shared import find, slow_schemes

    blocking = PortMapping(TRUTH.ports, {i: TRUTH.uops[i] for i in ("a0", "a1", "a5", "a56", "a0156", "ld")})
    oracle = _WithPaths(TRUTH, r_max=5)
    model = ModelledMapping(blocking, {**{b: SchemeModel("mapped") for b in blocking.uops},
                                       "ms": SchemeModel("ports + cost", cost=F(4), alone=F(4), uops=((("0", "1"), 8),))})
    alone = {i: oracle.measure([Experiment({i: 1})])[0] for i in model.schemes}
    o = O().resolved(False)
    assert slow_schemes(model, alone, 5, o) == []
    found = find(oracle.measure, model, alone, 5, o, blocking=blocking)
    assert [i for i, *_ in found["serial"]] == ["ms"]


def test_a_scheme_that_takes_the_sum_beside_the_filler_but_no_whole_cycle_beside_one_is_not_serial():
    """The serial rule charges a whole cycle for the rest between copies (Ice Lake-SP's btc m64:
    5 alone, 6.0 beside one instruction). A scheme that takes the sum beside the filler but a
    fraction of a cycle more beside one instruction is no such microcode: named serial, the
    Zen 4's short microcoded forms came out 25 % slow in a10's held-out mixes (2.5 for 2.0)."""
    from pmsolve.infer.explain.options import ExplainOptions as O
    from pmsolve.infer.explain.shared import find

    truth = PortMapping(TRUTH.ports, {**TRUTH.uops, "mz": [(_s(0, 1), 1)]})
    blocking = PortMapping(TRUTH.ports, {i: TRUTH.uops[i] for i in ("a0", "a1", "a5", "a56", "a0156", "ld")})
    oracle = _Fractional(truth, r_max=5)
    slow = {"ms": F(4), "mz": F(4)}
    model = ModelledMapping(blocking, {i: SchemeModel("ports + cost", cost=t, alone=t, uops=((("0",), 1),))
                                       for i, t in slow.items()})
    alone = {i: oracle.measure([Experiment({i: 1})])[0] for i in model.schemes}
    assert oracle.measure([Experiment({"mz": 1, "a0156": 10})])[0] == pytest.approx(6)   # the sum beside the filler, as ms
    found = find(oracle.measure, model, alone, 5, O().resolved(False), blocking=blocking)
    assert [i for i, *_ in found["serial"]] == ["ms"]
    mixes = [Experiment({"mz": 1, "a0": 1, "a5": 1}), Experiment({"mz": 2, "a1": 3})]
    plain = ModelledMapping(model.mapping, model.schemes)
    assert [float(plain.inverse_throughput(e, 5)) for e in mixes] == pytest.approx(oracle.measure(mixes), rel=0.1)


def test_a_slow_scheme_on_a_unit_is_not_named_serial():
    """A unit's scheme has no time of its own (its unit explains its time alone), so the model
    cannot run it as serialising microcode: the shared stage must leave it to its unit. The Zen 4's
    ``vcompresspd [m128]{k}`` (42 cycles, on unit U5 beside ``vhaddpd``) read the sum beside the
    filler, and the stage named it serial: building the model failed and ended ``--all``."""
    from pmsolve.infer.explain.options import ExplainOptions as O
    from pmsolve.infer.explain.shared import find

    blocking = {i: TRUTH.uops[i] for i in ("a0", "a1", "a5", "a56", "a0156", "ld")}
    mapping = PortMapping([*TRUTH.ports, "U"], {**blocking, "ms": [(_s(1), 1), (_s("U"), 4)]})
    oracle = _WithPaths(TRUTH, r_max=5)
    slow = {"dw": F(6), "dw2": F(4)}
    model = ModelledMapping(mapping, {"ms": SchemeModel("unit"), **{
        i: SchemeModel("ports + cost", cost=t, alone=t, uops=((("0",), 1),)) for i, t in slow.items()}})
    alone = {i: oracle.measure([Experiment({i: 1})])[0] for i in model.schemes}
    assert alone["ms"] == 4
    found = find(oracle.measure, model, alone, 5, O().resolved(False),
                 blocking=PortMapping(TRUTH.ports, blocking))
    assert found["serial"] == []


def _found(oracle, slow):
    """The shared stage on schemes modelled by a cost of their own (``slow``), measured by ``oracle``."""
    from pmsolve.infer.explain.options import ExplainOptions as O
    from pmsolve.infer.explain.shared import find

    model = ModelledMapping(None, {i: SchemeModel("cost", cost=t, alone=t) for i, t in slow.items()})
    alone = {i: oracle.measure([Experiment({i: 1})])[0] for i in model.schemes}
    return find(oracle.measure, model, alone, 5, O().resolved(False))


def test_a_full_member_that_one_slow_pair_made_narrow_stays_full_by_its_check():
    """Ice Lake-SP's ``vfmadd231ps zmm, m32bcst`` read 1.915 beside the load path's first (sum
    1.778) and 2.665 beside two copies (full: 2.667): the check fits it full, so it stays."""
    found = _found(_OneGlitch({"dw": 1, "dw2": 1}, 11.5, r_max=5), {"dw": F(6), "dw2": F(4), "dn": F(3)})  # the divider takes 10
    div, = found["resources"]
    assert div["hold"] == {"dw": 6, "dw2": 4, "dn": 3} and set(div["beside"]) == {"dn"}, div
    assert found["left_out"] == []


def test_a_pair_nearer_the_sum_than_apart_shows_the_resource():
    """Ice Lake-SP's zmm loads read 1.78 in pairs (0.89 each alone), but now and then 1.64: a
    pair had to read the sum, so one such reading kept ``vmovaps zmm, m512`` off the load path, a
    resource of its own, and every mix with the other zmm loads took the longer of the two (17.9 %
    off on 40 fresh mixes, 7.4 % with it on the path). Nearer the sum than the two apart is
    shared; its check (2.7, full) keeps it full."""
    found = _found(_OneGlitch({"ldz": 1, "ldz2": 1}, 1.64, r_max=5), {"ldz": F(9, 10), "ldz2": F(9, 10), "dw": F(6)})
    load, = (r for r in found["resources"] if r["first"] != "dw")
    assert load["hold"] == pytest.approx({"ldz": 0.9, "ldz2": 0.9}) and load["beside"] == {}, load


def test_a_member_its_check_takes_off_may_join_a_later_resource():
    """A burst makes ``ldz2``'s pair with the divider's first read the sum; its check takes it off
    the divider, and it goes on to the load path (it was lost for every later resource)."""
    found = _found(_OneGlitch({"dw": 1, "ldz2": 1}, 6.9, r_max=5), {"dw": F(6), "dw2": F(4), "ldz": F(9, 10),
                                                                   "ldz2": F(9, 10)})
    assert [sorted(r["hold"]) for r in found["resources"]] == [["dw", "dw2"], ["ldz", "ldz2"]], found
    assert found["left_out"] == []


class _StoresOnThePath(SimulatedOracle):
    """Ice Lake-SP's load path by its catalogue names: zmm loads hold it 0.9 cycles each, and a
    store, with no µop on the load ports, 0.3 beside one."""

    PATH = Shared("load", {"vmovaps_zmm_m512": F(9, 10), "vmovups_zmm_m512": F(9, 10)}, {"mov_m64_r64": F(3, 10)},
                  frozenset({"vmovaps_zmm_m512", "vmovups_zmm_m512"}))

    def measure(self, experiments):
        exps = list(experiments)
        base = batch_inverse_throughput([(self.mapping, e) for e in exps], self.r_max)
        return [max(float(b), float(self.PATH.time(e))) for b, e in zip(base, exps)]


def test_stores_are_tried_beside_a_path_of_loads():
    """The load path's context members were the schemes with a µop on the load ports, so a store
    was never tried: on Ice Lake-SP ``mov m64, r64`` holds 0.31 beside a zmm load, and mixes of
    stores with zmm loads came out 19 % short (100 fresh held-out mixes: 4.5 % → 3.8 %). Where
    every full member accesses memory, so is every scheme that does; a register scheme is not."""
    from pmsolve.infer.explain.options import ExplainOptions as O
    from pmsolve.infer.explain.shared import find

    load, store, alu = _s(7, 8), _s(5, 6), _s(0, 1)
    truth = PortMapping(["0", "1", "5", "6", "7", "8"], {
        "vmovaps_zmm_m512": [(load, 1)], "vmovups_zmm_m512": [(load, 1)], "mov_m64_r64": [(store, 1)],
        "vpaddd_xmm_xmm_xmm": [(alu, 1)]})
    oracle = _StoresOnThePath(truth, r_max=5)
    zmm = {i: SchemeModel("ports + cost", cost=F(9, 10), alone=F(9, 10), uops=((("7", "8"), 1),))
           for i in ("vmovaps_zmm_m512", "vmovups_zmm_m512")}
    model = ModelledMapping(PortMapping(truth.ports, {i: truth.uops[i] for i in ("mov_m64_r64", "vpaddd_xmm_xmm_xmm")}),
                            zmm)
    alone = {i: oracle.measure([Experiment({i: 1})])[0] for i in model.schemes}
    found = find(oracle.measure, model, alone, 5, O().resolved(False))
    path, = found["resources"]
    assert set(path["hold"]) == set(zmm) and path["beside"] == pytest.approx({"mov_m64_r64": 0.3}), path
    assert found["left_out"] == []


@pytest.mark.parametrize("any_zmm", [True, False])
def test_whether_every_zmm_scheme_is_context_is_measured(any_zmm):
    """Ice Lake-SP's ymm loads cost 0.60 beside any 512-bit scheme (``vpaddd zmm`` too), not only
    beside a zmm load: the mode's triggers are then the load path's context. Where only the zmm
    loads are, they are not."""
    from pmsolve.infer.explain.options import ExplainOptions as O
    from pmsolve.infer.explain.shared import find, resources
    from pmsolve.modelled import Mode

    zmm = ("vpaddd_zmm_zmm_zmm", "vmovaps_zmm_m512", "vbroadcastss_zmm_m32")
    path = Shared("load", {"vmovaps_zmm_m512": F(9, 10), "vbroadcastss_zmm_m32": F(9, 10)},
                  {"vmovdqu_ymm_m256": F(3, 5)}, frozenset(zmm if any_zmm else zmm[1:]))
    truth = PortMapping(["0", "1", "2", "3"], {"vpaddd_zmm_zmm_zmm": [(_s(0), 1)], "vpaddd_xmm_xmm_xmm": [(_s(0, 1), 1)],
                                               "vmovdqu_ymm_m256": [(_s(2, 3), 1)], "vmovaps_zmm_m512": [(_s(2, 3), 1)],
                                               "vbroadcastss_zmm_m32": [(_s(2, 3), 1)]})

    class Machine(SimulatedOracle):
        def measure(self, experiments):
            return [max(t, float(path.time(e))) for t, e in zip(super().measure(experiments), experiments)]

    oracle = Machine(truth, r_max=4)
    mapped = {i: truth.uops[i] for i in ("vpaddd_zmm_zmm_zmm", "vpaddd_xmm_xmm_xmm", "vmovdqu_ymm_m256")}
    models = {i: SchemeModel("ports + cost", cost=F(9, 10), alone=F(9, 10), uops=((("2", "3"), 1),)) for i in zmm[1:]}
    mode = Mode("1", frozenset({_s(0, 1)}), frozenset(zmm), frozenset({"vpaddd_xmm_xmm_xmm"}))
    model = ModelledMapping(PortMapping(truth.ports, mapped), models, mode)
    alone = {i: oracle.measure([Experiment({i: 1})])[0] for i in model.schemes}
    found = find(oracle.measure, model, alone, 4, O().resolved(False), trigger="vpaddd_zmm_zmm_zmm")
    res, = found["resources"]
    assert res["mode_context"] is any_zmm and set(res["beside"]) == {"vmovdqu_ymm_m256"}
    with_path = ModelledMapping(model.mapping, model.schemes, mode, resources(found, model))
    e = Experiment({"vpaddd_zmm_zmm_zmm": 1, "vmovdqu_ymm_m256": 6})
    assert float(with_path.inverse_throughput(e, 4)) == pytest.approx(oracle.measure([e])[0])



def test_non_temporal_stores_are_not_slow_schemes_of_a_shared_resource():
    """A non-temporal store's time is the write-combining buffers' and the memory's: on the Zen 4
    ``vmovntpd m256, ymm`` (32.8 cycles alone) came first as the slowest scheme and took the
    dividers into its "resource". It keeps its own cost; a divider of a cost stays a slow scheme."""
    from pmsolve.infer.explain.options import ExplainOptions as O
    from pmsolve.infer.explain.shared import slow_schemes

    alone = {"vmovntpd_m256_ymm": 32.8, "vmovntdq_m128_xmm": 16.0, "vdivpd_ymm_ymm_ymm": 5.0}
    model = ModelledMapping(None, {i: SchemeModel("cost", cost=F(t).limit_denominator(100), alone=F(t).limit_denominator(100))
                                   for i, t in alone.items()})
    assert slow_schemes(model, alone, 6, O().resolved(False)) == ["vdivpd_ymm_ymm_ymm"]


class _Divider(SimulatedOracle):
    """The Zen 5's divider as measured (EPYC 9005, 2026-12-06, RESULTS §1.31): ``vdivpd`` 4.0
    cycles alone, ``vdivps`` 2.5; two vdivps 5.0, two vdivpd 8.0, one of each 8.0, and two
    vdivpd beside one vdivps 11.5 (the narrow divide holds 4.0 beside one wide one, 3.5 beside
    two): no port shows it."""

    def measure(self, experiments):
        exps = list(experiments)
        self.queries += len(exps)
        base = batch_inverse_throughput([(self.mapping, e) for e in exps], self.r_max)
        out = []
        for b, e in zip(base, exps):
            wide = sum(n for i, n in e.items() if i.startswith("pd"))
            narrow = sum(n for i, n in e.items() if i.startswith("ps"))
            each = 2.5 if not wide else 4.0 if wide <= narrow else 3.5
            out.append(max(float(b), 4.0 * wide + each * narrow))
        return out


def test_a_narrow_divide_that_holds_more_beside_a_wide_one_shares_its_divider():
    """A member whose check misses what the resource says, but by far less than the model without
    it, stays: the Zen 5's ``vdivps`` beside two ``vdivpd`` takes 3.5 of the divider where the
    resource says 4.0 (12.0 for 11.5). Refuted, it formed a resource of its own with the other
    narrow divides, and every mix of a wide and a narrow divide came out 4.0 for 8.0."""
    from pmsolve.infer.explain.options import ExplainOptions as O
    from pmsolve.infer.explain.shared import find, resources

    uops = {i: [(_s(0, 1), 1)] for i in ("pd", "pd2", "ps", "ps2")}
    truth = PortMapping(["0", "1", "5"], {"a01": [(_s(0, 1), 1)], "a5": [(_s(5), 1)], **uops})
    blocking = PortMapping(truth.ports, {i: truth.uops[i] for i in ("a01", "a5")})
    oracle = _Divider(truth, r_max=4)
    slow = {"pd": F(4), "pd2": F(4), "ps": F(5, 2), "ps2": F(5, 2)}
    model = ModelledMapping(blocking, {i: SchemeModel("ports + cost", cost=t, alone=t, uops=((("0", "1"), 1),))
                                       for i, t in slow.items()})
    alone = {i: oracle.measure([Experiment({i: 1})])[0] for i in model.schemes}
    found = find(oracle.measure, model, alone, 4, O().resolved(False), blocking=blocking)
    assert [sorted(r["hold"]) for r in found["resources"]] == [["pd", "pd2", "ps", "ps2"]]
    shared = ModelledMapping(model.mapping, model.schemes, shared=resources(found, model))
    mixes = [Experiment({"pd": 1, "ps": 1}), Experiment({"ps": 1, "ps2": 1}), Experiment({"pd2": 1, "pd": 1}),
             Experiment({"pd": 2, "ps2": 1})]
    assert [float(shared.inverse_throughput(e, 4)) for e in mixes] == pytest.approx(oracle.measure(mixes), rel=0.05)


class _Microcode(SimulatedOracle):
    """Two microcoded schemes of 2.0 cycles each on the Zen 5 (EPYC 9005, 2026-12-07): alone
    and beside ports they take their 2.0, together the sum (``vreducepd zmm, m512`` with
    ``vreduceps zmm, m32bcst`` 4.0): a sequencer they both hold."""

    def measure(self, experiments):
        exps = list(experiments)
        self.queries += len(exps)
        base = batch_inverse_throughput([(self.mapping, e) for e in exps], self.r_max)
        return [max(float(b), 2.0 * (e["mc"] + e["mc2"])) for b, e in zip(base, exps)]


def test_a_mapped_scheme_slow_alone_is_paired_too():
    """The complement search places the Zen 5's ``vreduceps zmm, m32bcst`` as 2×[3] (2.0 cycles
    alone), a port no blocking instruction isolates; ``vreducepd zmm, m512`` holds the microcoded
    schemes' resource, and the two take 4.0 together, which the ports said 2.0. No pipelined µop
    takes 1.5 cycles or more, so such a mapped scheme is paired with the slow ones too."""
    from pmsolve.infer.explain.options import ExplainOptions as O
    from pmsolve.infer.explain.shared import find, resources, slow_schemes

    truth = PortMapping(["0", "1", "3"], {"a01": [(_s(0, 1), 1)], "a3": [(_s(3), 1)],
                                          "mc": [(_s(0, 1), 1)], "mc2": [(_s(0, 1), 1)],
                                          "w": [(_s(0, 1), 2)]})
    blocking = PortMapping(truth.ports, {i: truth.uops[i] for i in ("a01", "a3")})
    oracle = _Microcode(truth, r_max=4)
    mapping = PortMapping(truth.ports, {**blocking.uops, "mc2": [(_s(3), 2)], "w": [(_s(0, 1), 2)]})
    model = ModelledMapping(mapping, {"a01": SchemeModel("mapped"), "a3": SchemeModel("mapped"),
                                      "mc": SchemeModel("ports + cost", cost=F(2), alone=F(2), uops=((("0", "1"), 1),)),
                                      "mc2": SchemeModel("mapped"), "w": SchemeModel("mapped")})
    alone = {i: oracle.measure([Experiment({i: 1})])[0] for i in model.schemes}
    o = O().resolved(False)
    # w takes its 1.0 cycle alone on two ports, a3 on one: no such schemes
    assert slow_schemes(model, alone, 4, o) == ["mc", "mc2"]
    found = find(oracle.measure, model, alone, 4, o, blocking=blocking)
    assert [sorted(r["hold"]) for r in found["resources"]] == [["mc", "mc2"]]
    shared = ModelledMapping(model.mapping, model.schemes, shared=resources(found, model))
    e = Experiment({"mc": 1, "mc2": 1})
    assert float(shared.inverse_throughput(e, 4)) == pytest.approx(oracle.measure([e])[0], rel=0.05)


class _Sequencer(SimulatedOracle):
    """Three microcoded schemes that hold one sequencer for 2, 3 and 2 cycles: any two take the
    sum (the Zen 5's ``vphsubsw ymm``, ``vdpps xmm, m128`` and ``vphsubw xmm, m128``)."""

    def measure(self, experiments):
        exps = list(experiments)
        self.queries += len(exps)
        base = batch_inverse_throughput([(self.mapping, e) for e in exps], self.r_max)
        return [max(float(b), 2.0 * e["mc"] + 3.0 * e["m1"] + 2.0 * e["m2"]) for b, e in zip(base, exps)]


def test_a_mapped_scheme_leads_no_round_of_the_shared_stage():
    """The Zen 5's ``vdpps xmm, m128`` (6 cycles alone) came out 12×[6,9] and ``vphsubw xmm,
    m128`` 4×[6,9]: beside each other their ports already say the sum, so with ``vdpps`` leading
    the round ``vphsubw`` never joined the resource both share with ``vphsubsw ymm`` (a unit's
    scheme). The round is led by a scheme that is not mapped, where there is one."""
    from pmsolve.infer.explain.options import ExplainOptions as O
    from pmsolve.infer.explain.shared import find

    one = [(_s(0, 1), 1)]
    truth = PortMapping(["0", "1", "3"], {"a01": one, "a3": [(_s(3), 1)], "mc": one, "m1": one, "m2": one})
    blocking = PortMapping(truth.ports, {i: truth.uops[i] for i in ("a01", "a3")})
    oracle = _Sequencer(truth, r_max=4)
    mapping = PortMapping(truth.ports, {**blocking.uops, "m1": [(_s(0, 1), 6)], "m2": [(_s(0, 1), 4)]})
    model = ModelledMapping(mapping, {"a01": SchemeModel("mapped"), "a3": SchemeModel("mapped"),
                                      "mc": SchemeModel("ports + cost", cost=F(2), alone=F(2), uops=((("0", "1"), 1),)),
                                      "m1": SchemeModel("mapped"), "m2": SchemeModel("mapped")})
    alone = {i: oracle.measure([Experiment({i: 1})])[0] for i in model.schemes}
    found = find(oracle.measure, model, alone, 4, O().resolved(False), blocking=blocking)
    assert [sorted(r["hold"]) for r in found["resources"]] == [["m1", "m2", "mc"]]
