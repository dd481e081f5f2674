"""Leaderboard: Palmed's conjunctive model, its names on the bridge, scoring with coverage in
cycles and IPC, and the real Zen+ measurements (skipped without ../shared)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pmsolve.cli import main
from pmsolve.errors import FormatError, ValidationError
from pmsolve.formats import save_experiments, save_mapping
from pmsolve.generate import random_experiment, random_mapping
from pmsolve.isa.bridge import scheme_key
from pmsolve.leaderboard import (bridge_translator, mapping_predictor, palmed_from_json, palmed_key,
                                 parse_mapping_spec, recorded_predictor, score)
from pmsolve.model import Experiment, Measurement, PortMapping
from pmsolve.throughput import evaluate_many

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"
ZEN = REFERENCE / "pmevo" / "ZEN"
needs_reference = pytest.mark.skipif(not (ZEN / "exps_eval_small_annotated.json").exists(),
                                     reason="../shared/reference not present")


def test_palmed_model_is_max_over_resources_of_summed_load():
    """Dissertation Fig. 7.1 (b): {mul: 1, add: 2, store: 1} loads R1 with 2, R12 with 2.5, R3 with 1."""
    model = palmed_from_json({
        "instr_to_class": {"mul": "M", "add": "A", "store": "S", "nop": "N"},
        "class_to_resources": {"M": {"resource_use": [[1.0, "R1"], [0.5, "R12"], [0.0, "R3"]]},
                               "A": {"resource_use": [[0.5, "R1"], [1.0, "R12"]]},
                               "S": {"resource_use": [[1.0, "R3"]]},
                               "N": {"resource_use": [[0.0, "R1"]]}}})
    assert model.inverse_throughput(Experiment({"mul": 1, "add": 2, "store": 1})) == 2.5
    assert model.inverse_throughput(Experiment({"mul": 2})) == 2.0
    assert model.inverse_throughput(Experiment({"store": 3, "mul": 1})) == 3.0
    assert "nop" not in model.usage  # no load anywhere: the model says nothing about it


@pytest.mark.parametrize("data, msg", [
    ({"instr_to_class": {}}, "not a Palmed model"),
    ({"instr_to_class": {"a": "X"}, "class_to_resources": {}}, "unknown class"),
    ({"instr_to_class": {}, "class_to_resources": {"X": {"resource_use": [[-1, "R0"]]}}}, "bad resource"),
])
def test_bad_palmed_files_are_refused(data, msg):
    with pytest.raises(FormatError, match=msg):
        palmed_from_json(data, "p.json")


@pytest.mark.parametrize("palmed, key", [
    ("ADC_GPR16i16_IMMi8", "adc r16,i8"),
    ("MOV_MEM64u8_GPR8NOREXi8", "mov m8,r8"),
    ("PINSRD_VR128i32x4_MEM64i32_IMMu8", "pinsrd xmm,m32,i8"),
    ("VANDNPS_VR256i32x8_VR256i32x8_MEM64i32x8", "vandnps ymm,ymm,m256"),
    ("SHL_GPR16i16_ONE", "shl r16,1"),
    ("CMOVB_GPR64i64_GPR64i64", "cmovc r64,r64"),
    ("CMP_EAXi32_IMMi32", "cmp eax,i32"),
    ("LAHF", "lahf"),
])
def test_palmed_names_to_bridge_keys(palmed, key):
    assert palmed_key(palmed) == key


def test_palmed_names_meet_pmevo_names_on_the_bridge():
    pmevo = ["ADD_((REG:RW:G:64)),_((IMM:32))", "VPADDQ_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))",
             "OR_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))", "FYL2X_((ST0))"]
    palmed = ["ADD_GPR64i64_IMMi32", "VPADDQ_VR256i64x4_VR256i64x4_VR256i64x4", "OR_MEM64i64_GPR64i64",
              "FADD_ST0OTHER"]
    tr = bridge_translator(palmed, "pmevo", target_key=palmed_key)
    assert [tr(n) for n in pmevo] == palmed[:3] + [None]
    assert all(scheme_key(a, "pmevo") == palmed_key(b) for a, b in zip(pmevo[:3], palmed))


def test_mapping_specs():
    assert parse_mapping_spec("m.json") == ("m.json", None, None)
    assert parse_mapping_spec("dir/m.json:r_max=5:name=explainable") == ("dir/m.json", "explainable", 5.0)
    assert parse_mapping_spec("m.json:name=x:r_max=4.5") == ("m.json", "x", 4.5)
    with pytest.raises(ValidationError, match="r_max"):
        parse_mapping_spec("m.json:r_max=fast")


def _synthetic(seed: int = 1, n: int = 150):
    rng = np.random.default_rng(seed)
    truth = random_mapping(rng, 5, 10, max_uops=3, max_ports_per_uop=3)
    exps = [random_experiment(rng, truth.instructions, 4) for _ in range(n)]
    cycles = evaluate_many(truth, exps)
    meas = [Measurement(e, float(c), {"half": float(c) / 2} if k % 3 else {}) for k, (e, c) in
            enumerate(zip(exps, cycles))]
    return truth, exps, meas


def test_scores_coverage_cycles_and_ipc():
    truth, exps, meas = _synthetic()
    names = list(truth.instructions)
    partial = PortMapping(truth.ports, {i: truth.uops[i] for i in names[:7]})
    ident = lambda n: n  # noqa: E731
    preds = [mapping_predictor("truth", truth, ident, None, names),
             mapping_predictor("partial", partial, ident, None, names),
             recorded_predictor("half", meas)]
    board = score(meas, preds)
    by = {s.name: s for s in board.scores}
    assert by["truth"].covered == len(meas) and by["truth"].cycles.mape == 0 and by["truth"].ipc.mape == 0
    inside = [all(i in partial.uops for i in e) for e in exps]
    assert by["partial"].covered == sum(inside) < len(meas) and by["partial"].known == 7
    assert by["partial"].cycles.mape == 0
    has_half = [bool(m.others) for m in meas]
    assert by["half"].covered == sum(has_half)
    # cycles predicted at half: MAPE 50 %; IPC then doubles: IPC-MAPE 100 %
    assert by["half"].cycles.mape == pytest.approx(0.5) and by["half"].ipc.mape == pytest.approx(1.0)
    assert board.common == sum(a and b for a, b in zip(inside, has_half))
    assert by["truth"].common_cycles.n == board.common
    assert "IPC-MAPE" in board.table() and f"{sum(inside)}/{len(meas)}" in board.table()
    with pytest.raises(ValidationError, match="distinct"):
        score(meas, preds + [recorded_predictor("half", meas)])


def test_cli_evaluate_with_palmed_and_heat_maps(tmp_path, capsys):
    truth, exps, meas = _synthetic(2, 80)
    save_mapping(truth, tmp_path / "truth.json")
    save_experiments(meas, tmp_path / "meas.json")
    palmed = {"instr_to_class": {i: i for i in truth.instructions},
              "class_to_resources": {i: {"resource_use": [[1.0, "R0"]]} for i in truth.instructions}}
    (tmp_path / "palmed.json").write_text(json.dumps(palmed))
    rc = main(["evaluate", "-m", f"{tmp_path / 'truth.json'}:name=truth", "--palmed", str(tmp_path / "palmed.json"),
               "--others", "--measurements", str(tmp_path / "meas.json"), "--json",
               "--heatmap", str(tmp_path / "c.png"), "--heatmap-ipc", str(tmp_path / "i.png")])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and set(data) == {"truth", "Palmed", "half"}
    assert data["truth"]["mape"] == 0 and data["truth"]["ipc"]["mape"] == 0
    # Palmed here: one resource, load 1 per instruction -> |e| cycles, i.e. IPC 1
    want = np.mean([abs(e.size - m.cycles) / m.cycles for e, m in zip(exps, meas)])
    assert data["Palmed"]["mape"] == pytest.approx(want)
    for png in ("c.png", "i.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["evaluate", "--measurements", str(tmp_path / "meas.json")]) == 2


@needs_reference
def test_zen_leaderboard_on_real_measurements(capsys):
    """The published figures on the 2,000 real Zen+ experiments, and each predictor's coverage."""
    rc = main(["evaluate", "--measurements", str(ZEN / "exps_eval_small_annotated.json"), "--others", "--json",
               "-m", f"{ZEN / 'mapping_pmevo.json'}:name=PMEvo",
               "-m", f"{REFERENCE / 'zenplus' / 'explainable_port_mapping.json'}:r_max=5:name=explainable",
               "--palmed", str(REFERENCE / "zenplus" / "palmed_zen_mapping.json")])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert data["PMEvo"]["covered"] == 2000 and round(100 * data["PMEvo"]["mape"], 1) == 13.7
    assert round(100 * data["llvm-mca"]["mape"], 1) == 127.5
    assert data["explainable"]["known_schemes"] >= 260 and data["explainable"]["covered"] >= 900
    assert data["explainable"]["ipc"]["mape"] < data["PMEvo"]["ipc"]["mape"] < data["Palmed"]["ipc"]["mape"]
    assert data["Palmed"]["known_schemes"] >= 300 and data["Palmed"]["covered"] >= 1700
