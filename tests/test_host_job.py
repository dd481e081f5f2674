"""The main job's parts: held-out experiments, the llvm-mca and OSACA adapters, the simulated run."""

from __future__ import annotations

import json
import shutil

import pytest

from pmsolve.cli import main
from pmsolve.jobs.host import (DEFAULT_SCHEMES, _block, held_out_experiments, llvm_mca_predict,
                                      osaca_predict)
from pmsolve.isa import load_catalogue

CAT = load_catalogue(host=False)


def test_default_schemes_are_offered():
    assert 40 <= len(DEFAULT_SCHEMES) <= 60 and len(set(DEFAULT_SCHEMES)) == len(DEFAULT_SCHEMES)
    assert all(CAT.status(CAT[s]) == "offered" for s in DEFAULT_SCHEMES)


def test_held_out_experiments():
    a = held_out_experiments(DEFAULT_SCHEMES, 40, seed=3)
    assert a == held_out_experiments(DEFAULT_SCHEMES, 40, seed=3) != held_out_experiments(DEFAULT_SCHEMES, 40, 4)
    assert len(set(a)) == 40 and all(e.size in (4, 5) and len(e.counts) >= 3 for e in a)


@pytest.mark.skipif(not (shutil.which("llvm-mca") or shutil.which("llvm-mca-14")), reason="llvm-mca missing")
def test_llvm_mca_many_blocks_in_one_call():
    from pmsolve.model import Experiment

    blocks = [_block(CAT, Experiment({"add_r64_r64": 1})), _block(CAT, Experiment({"imul_r64_r64": 1})),
              _block(CAT, Experiment({"vaddpd_ymm_ymm_ymm": 2}))]
    add, imul, vadd = llvm_mca_predict(blocks, "znver3")
    assert add == pytest.approx(0.25, rel=0.05) and imul == pytest.approx(1.0, rel=0.05)
    assert vadd == pytest.approx(1.0, rel=0.05)            # two vaddpd per copy, 0.5 each


def test_osaca_adapter():
    pytest.importorskip("osaca")
    from pmsolve.model import Experiment

    preds, errors = osaca_predict([_block(CAT, Experiment({"vaddpd_ymm_ymm_ymm": 1})),
                                   _block(CAT, Experiment({"imul_r64_r64": 1}))], "ZEN3")
    assert preds[0] == pytest.approx(0.5, rel=0.05) and preds[1] == pytest.approx(1.0, rel=0.05)
    assert errors == []


def test_main_job_simulated(capsys):
    pytest.importorskip("deap")
    assert main(["infer", "--simulated", "--held-out", "12", "--population", "40", "--generations", "3",
                 "--quiet", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["machine"] == "simulated Zen+ example" and len(out["held_out"]) == 12
    assert set(out["accuracy"]) == {"pmsolve (PMEvo)", "ground truth"}
    assert 4.5 < out["peak_ipc"] < 5.5                       # R_max 5 with 1 % noise
    rows = out["held_out"]
    for name, acc in out["accuracy"].items():                # the reported figures are the rows' figures
        mape = sum(abs(r[name] - r["measured"]) / r["measured"] for r in rows) / len(rows)
        assert acc["n"] == len(rows) and acc["mape"] == pytest.approx(mape, rel=1e-9), name
    # the truth row is the simulator's own mapping: only the 1 % noise separates it from "measured"
    assert out["accuracy"]["ground truth"]["mape"] < 0.02
    assert all(abs(r["ground truth"] - r["measured"]) <= 0.05 * r["ground truth"] for r in rows)
    # a short evolution (40 × 3) is rough but informative: a constant guess or the front-end
    # limit alone (|e| / peak IPC) is off by about 37 % on these rows, the inferred mapping by 15 %
    assert 0 < out["accuracy"]["pmsolve (PMEvo)"]["mape"] < 0.25
    assert out["accuracy"]["pmsolve (PMEvo)"]["pearson"] > 0.7
