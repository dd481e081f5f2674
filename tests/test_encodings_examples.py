"""The exported example files are current, and external solvers agree with their expected answers."""

import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

from pmsolve.backends import get
from pmsolve.backends.smtlib_backend import find_program, parse_sexprs
from pmsolve.encodings.examples import EXAMPLES, render

ROOT = Path(__file__).resolve().parent.parent / "encodings"
FILES = [(ex, fmt) for ex in EXAMPLES for fmt in ex.formats]


def _id(item):
    return f"{item[0].name}.{item[1]}"


@pytest.mark.parametrize("item", FILES, ids=_id)
def test_exported_file_is_current(item):
    ex, fmt = item
    path = ROOT / f"{ex.name}.{fmt}"
    assert path.exists(), f"{path} missing: run pmsolve.encodings.examples.export_examples('encodings')"
    assert path.read_text(encoding="utf-8") == render(ex, fmt), f"{path} is stale; re-export"


def test_no_stray_files():
    expected = {f"{ex.name}.{fmt}" for ex, fmt in FILES} | {"README.md"}
    assert {p.name for p in ROOT.iterdir()} == expected


@pytest.mark.skipif(not get("smtlib:z3").installed, reason="z3 binary not on PATH")
@pytest.mark.parametrize("item", [f for f in FILES if f[1] == "smt2"], ids=_id)
def test_z3_binary_reaches_expected_answer(item):
    ex, _ = item
    out = subprocess.run([find_program("z3"), str(ROOT / f"{ex.name}.smt2")], capture_output=True,
                         text=True)
    status = parse_sexprs(out.stdout)[0]
    assert status == ex.status, out.stdout[:300]


@pytest.mark.skipif(not get("cvc5").installed, reason="cvc5 not installed")
@pytest.mark.parametrize("item", [f for f in FILES if f[1] == "smt2" and f[0].objective is None],
                         ids=_id)
def test_cvc5_parser_reaches_expected_answer(item):
    import cvc5

    ex, _ = item
    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    sm = cvc5.SymbolManager(tm)
    parser = cvc5.InputParser(solver, sm)
    parser.setFileInput(cvc5.InputLanguage.SMT_LIB_2_6, str(ROOT / f"{ex.name}.smt2"))
    outputs = []
    while True:
        cmd = parser.nextCommand()
        if cmd.isNull():
            break
        outputs.append(cmd.invoke(solver, sm).strip())
    assert ex.status in outputs


@pytest.mark.skipif(not get("highs").installed, reason="highspy not installed")
@pytest.mark.parametrize("item", [f for f in FILES if f[1] == "lp"], ids=_id)
def test_highs_reads_lp_file_and_reaches_expected_answer(item):
    import highspy

    ex, _ = item
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(ROOT / f"{ex.name}.lp"))
    h.run()
    status = h.getModelStatus()
    if ex.status == "unsat":
        assert status == highspy.HighsModelStatus.kInfeasible
        return
    assert status == highspy.HighsModelStatus.kOptimal
    if ex.objective is not None:
        value = Fraction(h.getInfo().objective_function_value).limit_denominator(1000)
        assert value == ex.objective
