"""Round trips through every mapping format and clear errors for malformed files."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings

from pmsolve.errors import FormatError, PmsolveError, UnknownNameError
from pmsolve.formats import (MAPPING_FORMATS, load_experiments, load_mapping, load_measurements, mapping_from_json,
                             mapping_to_json, parse_port_string, port_string, save_experiments, save_mapping)
from pmsolve.model import Experiment, Measurement, PortMapping
from pmsolve.testing import mappings

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"


@settings(max_examples=80, deadline=None)
@given(mappings(max_ports=10))
def test_round_trip_all_formats(m):
    for fmt in MAPPING_FORMATS:
        if fmt == "uopsinfo":
            continue  # needs one-character port names: tested below
        assert mapping_from_json(json.loads(json.dumps(mapping_to_json(m, fmt)))) == m, fmt


@settings(max_examples=40, deadline=None)
@given(mappings(max_ports=10))
def test_round_trip_uopsinfo(m):
    short = m.rename_ports({p: p[1:] for p in m.ports})  # p0..p9 -> 0..9
    back = mapping_from_json(mapping_to_json(short, "uopsinfo"))
    assert back.uops == short.uops  # the port list shrinks to the ports in use: strings name no others


def test_port_strings():
    assert parse_port_string("1*p0156+2*p23") == [(["0", "1", "5", "6"], 1), (["2", "3"], 2)]
    assert parse_port_string("p06") == [(["0", "6"], 1)]
    m = PortMapping(list("0123"), {"x": [(["0", "1"], 1), (["2", "3"], 2)]})
    assert port_string(m.uops_of("x")) == "1*p01+2*p23"
    with pytest.raises(FormatError, match="bad uops.info port term"):
        parse_port_string("1*q0")
    with pytest.raises(FormatError, match="one-character"):
        port_string(PortMapping(["10"], {"x": [(["10"], 1)]}).uops_of("x"))


def test_pmevo_mapping3_repeats_uops():
    data = {"kind": "Mapping3", "arch": {"kind": "Architecture", "insns": ["x"], "ports": ["0", "1"]},
            "assignment": {"x": [["0"], ["0"], ["0", "1"]]}}
    m = mapping_from_json(data)
    assert [(sorted(u.ports), u.count) for u in m.uops_of("x")] == [(["0"], 2), (["0", "1"], 1)]
    assert mapping_to_json(m, "pmevo")["assignment"]["x"] == [["0"], ["0"], ["0", "1"]]
    two = PortMapping.two_level(["0", "1"], {"x": ["1"]})
    assert mapping_to_json(two, "pmevo")["kind"] == "Mapping2"


@pytest.mark.parametrize("text, msg", [
    ("{not json", "malformed JSON at line 1"),
    ('{"kind": "Mapping3", "arch": {"ports": ["0"]}, "assignment": {"x": [[]]}}', "empty port set"),
    ('{"kind": "Mapping3", "arch": {"ports": ["0"]}, "assignment": {"x": [["9"]]}}', "unknown ports"),
    ('{"kind": "Mapping3", "arch": {}}', "malformed pmevo mapping"),
    ('[1, 2]', "not a port mapping"),
    ('{"format": "pmsolve.mapping", "ports": ["0"], "instructions": {"x": [{"ports": ["0"], "count": -2}]}}', "≥ 1"),
])
def test_malformed_mapping_files_name_the_file(tmp_path, text, msg):
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(PmsolveError, match=msg) as info:
        load_mapping(path)
    assert str(path) in str(info.value)


def test_unknown_port_error_type(tmp_path):
    path = tmp_path / "m.json"
    path.write_text('{"kind": "Mapping2", "arch": {"ports": ["0"]}, "assignment": {"x": ["9"]}}')
    with pytest.raises(UnknownNameError):
        load_mapping(path)


def test_missing_file():
    with pytest.raises(FormatError, match="cannot read file"):
        load_mapping("/nonexistent/m.json")


def test_experiment_lists_round_trip(tmp_path):
    items = [Measurement(Experiment({"a": 2, "b": 1}), 1.25, {"llvm-mca": 1.5}), Experiment({"b": 3})]
    save_experiments(items, tmp_path / "e.json")
    back = load_experiments(tmp_path / "e.json")
    assert back[0] == items[0] and back[0].others == {"llvm-mca": 1.5} and back[1] == items[1]
    with pytest.raises(FormatError, match="experiment 2 has no measured cycles"):
        load_measurements(tmp_path / "e.json")
    (tmp_path / "bad.json").write_text('{"format": "pmsolve.experiments", "experiments": [{"counts": {"a": -1}}]}')
    with pytest.raises(PmsolveError, match="experiment 1: .*≥ 0"):
        load_experiments(tmp_path / "bad.json")


def test_save_and_load_file(tmp_path):
    m = PortMapping(["0", "1"], {"x": [(["0"], 2)], "y": [(["0", "1"], 1)]})
    for fmt in MAPPING_FORMATS:
        save_mapping(m, tmp_path / f"{fmt}.json", fmt)
        assert load_mapping(tmp_path / f"{fmt}.json") == m


@pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/reference not present")
def test_reads_reference_files():
    with pytest.warns(UserWarning, match="119 schemes without port usage"):
        zen = load_mapping(REFERENCE / "zenplus" / "explainable_port_mapping.json")
    assert len(zen.instructions) == 1819 - 119 and len(zen.ports) == 10
    pm = load_mapping(REFERENCE / "pmevo" / "SKL" / "mapping_pmevo.json")
    assert pm.levels == 3
    exps = load_measurements(REFERENCE / "pmevo" / "ZEN" / "exps_eval_small_annotated.json")
    assert len(exps) == 2000 and all(e.experiment.size in (4, 5) for e in exps)
