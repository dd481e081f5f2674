"""The reads stage (pmsolve/infer/explain/reads.py): transfers out of the vector registers and
three-source forms that slow each other where the ports do not (the Zen 5's stores beside
merge-masked forms, benchmarks/RESULTS.md §1.34), found by measurement on a simulated truth."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from pmsolve.errors import FormatError
from pmsolve.harness.simulated import SimulatedOracle
from pmsolve.infer.explain import ExplainOptions
from pmsolve.infer.explain.reads import candidates, find, resource
from pmsolve.model import Experiment, PortMapping
from pmsolve.modelled import ModelledMapping, SchemeModel, Shared
from pmsolve.throughput import batch_inverse_throughput

F = Fraction


def _s(*p):
    return frozenset(str(x) for x in p)


#: four vector pipes 0-3, two store-data ports 4-5; st/st2/mv move data out (one µop each), cv is
#: a store with a µop of its own before it; k4, k2 read three vector registers, fk too and is a
#: transfer as well (the Zen 5's merge-masked FMA132 and vblendv): beside it and no other
#: transfer, k4 and k2 add at most what it adds (capped); a4, a2 read two
TRUTH = PortMapping(["0", "1", "2", "3", "4", "5"], {
    "st": [(_s(4, 5), 1)], "st2": [(_s(4, 5), 1)], "mv": [(_s(4, 5), 1)], "cv": [(_s(0, 2), 1), (_s(4, 5), 1)],
    "k4": [(_s(0, 1, 2, 3), 1)], "k2": [(_s(2, 3), 1)], "fk": [(_s(0, 1), 1)],
    "a4": [(_s(0, 1, 2, 3), 1)], "a2": [(_s(0, 1), 1)]})
READS = Shared("reads", {"st": F(1, 2), "st2": F(1, 2), "mv": F(1, 2)}, {"k4": F(1, 2), "k2": F(1, 2), "fk": F(1, 2)},
               frozenset({"st", "st2", "mv", "fk"}), capped=True)
CANDS = {"transfers": ["st", "st2"], "three_source": ["k4", "k2", "fk"], "vector": sorted(TRUTH.uops)}
O = ExplainOptions().resolved(counter=False)


class _Reads(SimulatedOracle):
    """The port truth, and no faster than ``paths``; ``unless``: experiments that run at their
    port bound whatever the paths say."""

    def __init__(self, *a, paths=(READS,), unless=lambda e: False, pairs=None, **kw):
        super().__init__(*a, **kw)
        self.paths, self.unless, self.pairs = paths, unless, pairs or {}

    def measure(self, experiments):
        exps = list(experiments)
        self.queries += len(exps)
        base = batch_inverse_throughput([(self.mapping, e) for e in exps], self.r_max)
        return [self.pairs.get(e) or (float(b) if self.unless(e) else max([float(b), *(float(p.time(e)) for p in self.paths)]))
                for b, e in zip(base, exps)]


def _model(truth=TRUTH):
    return ModelledMapping(truth, {i: SchemeModel("mapped") for i in truth.uops})


def _alone(oracle, truth=TRUTH):
    names = sorted(truth.uops)
    return dict(zip(names, oracle.measure([Experiment({i: 1}) for i in names])))


def test_finds_the_transfers_and_the_three_source_forms_and_predicts_mixes():
    oracle = _Reads(TRUTH, r_max=8)
    found = find(oracle.measure, _model(), _alone(oracle), 8, O, CANDS)
    assert (found["transfer"], found["three_source"]) == ("st", "k4")
    assert {i: round(t, 6) for i, t in found["hold"].items()} == {"st": 0.5, "st2": 0.5, "mv": 0.5}
    assert {i: round(t, 6) for i, t in found["beside"].items()} == {"k4": 0.5, "k2": 0.5, "fk": 0.5}
    assert set(found["context"]) == {"st", "st2", "mv", "fk"} and not found["left_out"]
    model = ModelledMapping(TRUTH, _model().schemes, shared=(resource(found),))
    rng = random.Random(3)
    names = sorted(TRUTH.uops)
    mixes = [Experiment({i: rng.randint(1, 3) for i in rng.sample(names, rng.randint(2, 5))}) for _ in range(300)]
    assert [float(model.inverse_throughput(e, 8)) for e in mixes] == oracle.measure(mixes)


def test_no_resource_where_the_reference_pair_runs_at_its_ports():
    oracle = _Reads(TRUTH, r_max=8, paths=())
    found = find(oracle.measure, _model(), _alone(oracle), 8, O, CANDS)
    assert resource(found) is None and "no such resource" in found["why"]
    assert oracle.queries == len(TRUTH.uops) + 1      # the singles, then the one reference pair


def test_a_member_its_check_refutes_leaves():
    # k2 is slow beside one store, but two stores beside it run at the ports: no shared resource
    oracle = _Reads(TRUTH, r_max=8, unless=lambda e: e["k2"] == 1 and e["st"] == 2)
    found = find(oracle.measure, _model(), _alone(oracle), 8, O, CANDS)
    assert "k2" not in found["beside"] and [x for x, _ in found["left_out"]] == ["k2"]
    assert {"k4", "fk"} <= set(found["beside"])


def test_a_member_of_both_kinds_its_check_refutes_stays_as_a_transfer_where_that_holds():
    # wz: a 512-bit store, two store-data µops, holding the reads of two transfers; beside one
    # store it runs 2.0 where ports and reads say 1.5 (the Zen 5's, RESULTS §1.37), so it is
    # slow beside both references, and beside two stores it runs 2.5 where its hold beside the
    # store (at most its 1.0 alone) says 2.0; beside two three-source forms it adds up as a transfer
    truth = PortMapping(TRUTH.ports, {**TRUTH.uops, "wz": [(_s(4, 5), 2)]})
    reads = Shared("reads", {**READS.hold, "wz": F(1)}, READS.beside, READS.context | {"wz"})
    oracle = _Reads(truth, r_max=8, paths=(reads,), pairs={Experiment({"wz": 1, "st": 1}): 2.0,
                                                            Experiment({"wz": 1, "st": 2}): 2.5})
    found = find(oracle.measure, _model(truth), _alone(oracle, truth), 8, O, {**CANDS, "vector": sorted(truth.uops)})
    assert "wz" in found["context"] and "wz" not in found["beside"] and not found["left_out"]
    assert round(found["hold"]["wz"], 6) == 1.0
    e = Experiment({"wz": 1, "k4": 2})
    assert oracle.measure([e]) == [float(resource(found).time(e))]


def test_a_transfer_holds_no_more_than_its_time_alone():
    # cz: like a28's vcvtps2ph m256, zmm (RESULTS §1.38): 1.0 alone, 2.0 beside a store and beside
    # one three-source form, 2.5 beside two; a hold of what it adds beside one (1.5) would
    # predict it 1.5 alone. sz: one µop, slow beside the three-source form only, likewise; tz:
    # as cz, but 2.5 beside two stores, so that it is checked again as a transfer
    truth = PortMapping(TRUTH.ports, {**TRUTH.uops, "cz": [(_s(4, 5), 2)], "sz": [(_s(4, 5), 1)],
                                      "tz": [(_s(4, 5), 2)]})
    pairs = {Experiment({"cz": 1, "st": 1}): 2.0, Experiment({"cz": 1, "k4": 1}): 2.0,
             Experiment({"cz": 1, "k4": 2}): 2.5, Experiment({"cz": 1, "st": 2}): 2.0,
             Experiment({"sz": 1, "k4": 1}): 1.5, Experiment({"sz": 1, "k4": 2}): 2.0,
             Experiment({"tz": 1, "st": 1}): 2.0, Experiment({"tz": 1, "k4": 1}): 2.0,
             Experiment({"tz": 1, "k4": 2}): 2.5, Experiment({"tz": 1, "st": 2}): 2.5}
    oracle = _Reads(truth, r_max=8, pairs=pairs)
    alone = _alone(oracle, truth)
    found = find(oracle.measure, _model(truth), alone, 8, O, {**CANDS, "vector": sorted(truth.uops)})
    assert "tz" in found["hold"] and "tz" not in found["beside"]
    for x in ("cz", "sz", "tz"):
        assert x in found["context"] and float(resource(found).time(Experiment({x: 1}))) == alone[x], x


def test_catalogue_candidates():
    c = candidates(["vmovdqu32_m128_xmm", "vpaddd_zmm_zmm_zmm_k", "vfmadd231pd_ymm_ymm_ymm", "vmovd_r32_xmm",
                    "vfmadd231pd_ymm_ymm_m256", "vmovntdq_m128_xmm", "add_r64_r64", "no_such_scheme"])
    assert c["transfers"] == ["vmovdqu32_m128_xmm"]
    assert c["three_source"] == ["vpaddd_zmm_zmm_zmm_k", "vfmadd231pd_ymm_ymm_ymm"]    # no memory source
    assert c["vector"] == ["vmovdqu32_m128_xmm", "vpaddd_zmm_zmm_zmm_k", "vfmadd231pd_ymm_ymm_ymm",
                           "vmovd_r32_xmm", "vfmadd231pd_ymm_ymm_m256"]                  # no non-temporal store


def test_a_scheme_of_more_uops_slow_beside_a_three_source_form_only_is_no_transfer():
    # the Zen 5's vpmovqw m64, ymm{k}: 1.0 beside one three-source form, nothing more in mixes
    oracle = _Reads(TRUTH, r_max=8, pairs={Experiment({"cv": 1, "k4": 1}): 1.0})
    found = find(oracle.measure, _model(), _alone(oracle), 8, O, CANDS)
    assert "cv" not in found["context"] and "cv" not in found["hold"]
    assert [x for x, why in found["left_out"] if "more than one µop" in why] == ["cv"]
    assert set(found["context"]) == {"st", "st2", "mv", "fk"}


def test_measured_holds_are_kept_to_what_a_measurement_resolves():
    """0.4987 and 0.5012 cycles are both 1/2: the digits below would order predictions by noise."""
    r = resource({"hold": {"st": 0.4987, "mv": 0.5012}, "beside": {"k4": 0.263, "k2": 0.5004}, "context": ["st", "mv"]})
    assert r.hold == {"st": F(1, 2), "mv": F(1, 2)} and r.beside == {"k4": F(26, 100), "k2": F(1, 2)}


def test_beside_members_of_both_kinds_only_three_source_forms_add_at_most_what_those_add(tmp_path):
    # the Zen 5, hand-written probes (RESULTS §1.39): fk ~ vfnmadd132ps xmm{k} (both kinds),
    # k4/k2 ~ vpaddd/vpsubd zmm{k}, st ~ vmovdqu32 m128, xmm (a transfer of one kind)
    def t(r, **e):
        return r.time(Experiment(e))
    assert t(READS, fk=1, k4=1) == 1 and t(READS, fk=1, k4=2) == 1 and t(READS, fk=1, k4=1, k2=1) == 1
    assert t(READS, fk=2, k4=1) == F(3, 2) and t(READS, fk=2, k4=2) == 2 and t(READS, fk=1) == F(1, 2)
    # a transfer of one kind in the experiment: every member adds its hold, as without the cap
    assert t(READS, fk=1, k4=1, st=1) == F(3, 2) and t(READS, st=1, k4=2) == F(3, 2)
    assert t(READS, st=1, k4=1, k2=1, fk=1) == 2
    plain = Shared("reads", READS.hold, READS.beside, READS.context)
    assert t(plain, fk=1, k4=2) == F(3, 2)
    # the file keeps it; a file without it (before 2026-12-07) reads uncapped; a non-bool is refused
    model = ModelledMapping(TRUTH, _model().schemes, shared=(READS,))
    again = ModelledMapping.from_json(model.to_json())
    assert again.shared[0].capped and again.inverse_throughput(Experiment({"fk": 1, "k4": 2})) == 1
    doc = model.to_json()
    del doc["shared"][0]["capped"]
    assert not ModelledMapping.from_json(doc).shared[0].capped
    doc["shared"][0]["capped"] = "yes"
    with pytest.raises(FormatError, match="capped"):
        ModelledMapping.from_json(doc)
