"""Validation of mappings and experiments: bad input raises a PmsolveError saying what and where."""

import pytest

from pmsolve.errors import PmsolveError, UnknownNameError, ValidationError
from pmsolve.model import Experiment, Measurement, PortMapping, Uop


def test_experiment_is_an_order_free_multiset():
    a = Experiment({"add": 2, "mul": 1})
    b = Experiment(["mul", "add", "add"])
    assert a == b and hash(a) == hash(b)
    assert a.size == 3 and a["add"] == 2 and a["sub"] == 0
    assert str(a) == "add:2,mul:1"


def test_experiment_parse():
    assert Experiment.parse("add:2, mul") == Experiment({"add": 2, "mul": 1})
    names = ["add RW:GPR:32, R:GPR:32", "imul R:GPR:32"]
    e = Experiment.parse("add RW:GPR:32, R:GPR:32:4; imul R:GPR:32", known=names)
    assert e == Experiment({names[0]: 4, names[1]: 1})
    with pytest.raises(ValidationError):
        Experiment.parse(" , ")


@pytest.mark.parametrize("counts, msg", [({"add": -1}, "≥ 0"), ({"add": 1.5}, "integer"), ({"add": True}, "integer"),
                                         ({}, "empty"), ({"": 1}, "non-empty")])
def test_experiment_rejects_bad_counts(counts, msg):
    with pytest.raises(ValidationError, match=msg):
        Experiment(counts)


def test_mapping_merges_equal_uops_and_knows_its_levels():
    m = PortMapping(["0", "1"], {"x": [(["0"], 1), (["0"], 2), (["0", "1"], 1)], "y": [(["1"], 1)]})
    assert m.uops_of("x") == (Uop(frozenset({"0"}), 3), Uop(frozenset({"0", "1"}), 1))
    assert m.levels == 3 and not m.is_two_level
    assert m.restrict(["y"]).is_two_level
    assert m == PortMapping(["1", "0"], {"y": [(["1"], 1)], "x": [(["0", "1"], 1), (["0"], 3)]})


@pytest.mark.parametrize("ports, uops, exc, msg", [
    ([], {"x": [(["0"], 1)]}, ValidationError, "no ports"),
    (["0", "0"], {"x": [(["0"], 1)]}, ValidationError, "more than once"),
    (["0"], {"x": [([], 1)]}, ValidationError, "instruction 'x', µop 1: empty port set"),
    (["0"], {"x": [(["7"], 1)]}, UnknownNameError, "unknown ports"),
    (["0"], {"x": [(["0"], 0)]}, ValidationError, "≥ 1"),
    (["0"], {"x": [(["0"], 2.5)]}, ValidationError, "integer"),
    (["0"], {"x": [("0", 1)]}, ValidationError, "list of ports"),
    (["0"], {"x": []}, ValidationError, "no µops"),
    (["0"], {}, ValidationError, "no instructions"),
])
def test_mapping_validation(ports, uops, exc, msg):
    with pytest.raises(exc, match=msg):
        PortMapping(ports, uops)


def test_errors_are_pmsolve_errors_with_clean_messages():
    m = PortMapping.two_level(["0"], {"x": ["0"]})
    with pytest.raises(PmsolveError) as info:
        m.uops_of("y")
    assert str(info.value) == "unknown instruction 'y': the mapping does not cover it"


def test_rename_ports_requires_bijection():
    m = PortMapping.two_level(["0", "1"], {"x": ["0"]})
    assert m.rename_ports({"0": "1", "1": "0"}).uops_of("x")[0].ports == {"1"}
    with pytest.raises(ValidationError, match="bijection"):
        m.rename_ports({"0": "1", "1": "1"})


def test_measurement_needs_positive_cycles():
    with pytest.raises(ValidationError, match="positive"):
        Measurement(Experiment({"x": 1}), 0.0)


def test_distinguishing_experiment_finds_the_first_witness_or_none():
    a = PortMapping.two_level(["p0", "p1", "p2"], {"x": ["p0", "p1"], "y": ["p2"]})
    renamed = a.rename_ports({"p0": "q1", "p1": "q0", "p2": "q2"})
    assert a.distinguishing_experiment(renamed, max_len=3) is None  # Def. 3.16: port renaming
    # same singletons, and {x, y} is 1 either way; y sharing x's port shows only in {2x, y}
    b = PortMapping.two_level(["p0", "p1", "p2"], {"x": ["p0", "p1"], "y": ["p1"]})
    assert a.distinguishing_experiment(b, max_len=2) is None
    assert a.distinguishing_experiment(b, max_len=3) == Experiment({"x": 2, "y": 1})  # 1 vs 3/2
    three = PortMapping(["p0", "p1"], {"x": [(["p0"], 1), (["p1"], 1)], "y": [(["p1"], 1)]})
    two = PortMapping.two_level(["p0", "p1"], {"x": ["p0", "p1"], "y": ["p1"]})
    assert three.distinguishing_experiment(two, max_len=2) == Experiment({"x": 1})  # 1 vs 1/2
    with pytest.raises(ValidationError, match="different instructions"):
        a.distinguishing_experiment(PortMapping.two_level(["p0"], {"x": ["p0"]}))


def test_indistinguishable_is_a_predicate():
    """Issue 40: indistinguishable() returned None when the mappings were indistinguishable,
    so `if m.indistinguishable(o):` read backwards. It answers True or False."""
    a = PortMapping.two_level(["p0", "p1", "p2"], {"x": ["p0", "p1"], "y": ["p2"]})
    b = PortMapping.two_level(["p0", "p1", "p2"], {"x": ["p0", "p1"], "y": ["p1"]})
    assert a.indistinguishable(a.rename_ports({"p0": "q1", "p1": "q0", "p2": "q2"})) is True
    assert a.indistinguishable(b, max_len=2) is True
    assert a.indistinguishable(b, max_len=3) is False
