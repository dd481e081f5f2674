"""Oracles: the simulated one agrees with the exact formula, its noise is reproducible, the
recorded one replays and refuses what it never saw, and spec strings fail clearly."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings

from pmsolve.errors import PmsolveError, UnknownNameError, ValidationError
from pmsolve.formats import save_experiments, save_mapping
from pmsolve.harness import Oracle, RecordedOracle, SimulatedOracle, open_oracle
from pmsolve.model import Experiment, Measurement, PortMapping
from pmsolve.throughput import inverse_throughput
from pmsolve.testing import mapping_and_experiment

TRUTH = PortMapping(["0", "1", "2"], {"add": [(["0", "1"], 1)], "mul": [(["2"], 1)],
                                      "load": [(["0", "1", "2"], 2)]})
EXPS = [Experiment({"add": 2}), Experiment({"add": 1, "mul": 3}), Experiment({"load": 1, "add": 4})]


@settings(max_examples=60, deadline=None)
@given(mapping_and_experiment())
def test_simulated_matches_exact_formula(pair):
    mapping, experiment = pair
    got = SimulatedOracle(mapping).measure([experiment])[0]
    assert got == pytest.approx(float(inverse_throughput(mapping, experiment)), rel=1e-12)


def test_simulated_r_max_and_uop_counter():
    oracle = SimulatedOracle(TRUTH, r_max=2, uop_counter=True)
    assert isinstance(oracle, Oracle)
    assert oracle.measure([Experiment({"add": 4})]) == [2.0]  # 4 instructions at 2 per cycle
    assert oracle.uop_counts(EXPS) == [2.0, 4.0, 6.0]
    with pytest.raises(ValidationError, match="µop counter"):
        SimulatedOracle(TRUTH).uop_counts(EXPS)


def test_noise_is_seeded_and_order_free():
    a = SimulatedOracle(TRUTH, noise=0.05, seed=7)
    b = SimulatedOracle(TRUTH, noise=0.05, seed=7)
    c = SimulatedOracle(TRUTH, noise=0.05, seed=8)
    forward = a.measure(EXPS)
    assert b.measure(EXPS[::-1]) == forward[::-1]
    assert c.measure(EXPS) != forward
    exact = SimulatedOracle(TRUTH).measure(EXPS)
    assert forward != exact and all(abs(f / e - 1) < 0.3 for f, e in zip(forward, exact))


def test_recorded_replays_median_and_refuses_unknown(tmp_path):
    path = tmp_path / "m.json"
    save_experiments([Measurement(EXPS[0], 1.0), Measurement(EXPS[0], 3.0), Measurement(EXPS[0], 1.2),
                      Measurement(EXPS[1], 3.0)], path)
    with pytest.warns(UserWarning, match=r"1 experiment\(s\) recorded more than once .* median"):
        oracle = open_oracle(f"recorded:{path}")
    assert isinstance(oracle, RecordedOracle)
    assert oracle.measure([EXPS[1], EXPS[0]]) == [3.0, 1.2]
    assert oracle.instructions == ("add", "mul")
    with pytest.raises(UnknownNameError, match="never recorded"):
        oracle.measure([EXPS[2]])
    assert not oracle.has_uop_counter


def test_simulated_spec_with_options(tmp_path):
    path = tmp_path / "truth.json"
    save_mapping(TRUTH, path)
    oracle = open_oracle(f"simulated:{path}?r_max=2&noise=0.01&seed=3&uops=1")
    assert oracle.has_uop_counter and oracle.r_max == 2 and oracle.seed == 3
    assert oracle.measure([Experiment({"mul": 1})])[0] == pytest.approx(1.0, rel=0.1)
    assert Fraction(open_oracle(f"simulated:{path}").measure([EXPS[2]])[0]).limit_denominator() == Fraction(2)


@pytest.mark.parametrize("spec, message", [
    ("nonsense", "expected KIND:PATH"),
    ("bogus:x", "unknown oracle kind"),
    ("simulated:", "expected KIND:PATH"),
    ("simulated:/nonexistent/m.json", "cannot read"),
    ("simulated:m.json?bogus=1", "unknown option"),
    ("simulated:m.json?noise=abc", "bad option value"),
    ("recorded:/nonexistent.json", "cannot read"),
    ("recorded:f.json?x=1", "take no options"),
])
def test_bad_specs_fail_clearly(spec, message):
    with pytest.raises(PmsolveError, match=message):
        open_oracle(spec)


def test_recorded_needs_measurements(tmp_path):
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"format": "pmsolve.experiments", "version": 1,
                                "experiments": [{"counts": {"add": 1}}]}))
    with pytest.raises(PmsolveError, match="no measured cycles"):
        open_oracle(f"recorded:{path}")


@pytest.mark.parametrize("kwargs", [{"noise": float("nan")}, {"noise": -0.01}, {"noise": 1.0},
                                    {"r_max": float("nan")}, {"r_max": float("inf")}, {"r_max": 0}])
def test_simulated_oracle_refuses_nonsense_numbers(kwargs):
    """NaN slips through `< 0` checks; the Python API refuses it like the command line does."""
    with pytest.raises(ValidationError):
        SimulatedOracle(PortMapping(("0",), {"a": [({"0"}, 1)]}), **kwargs)


def test_duplicate_records_are_combined_and_the_user_is_told(tmp_path, capsys):
    """`a:1` recorded at 1.0 and 2.0 made CEGIS report "a:1 = 1.5", a value not in the file,
    without a word: the note says that the median of the records is used, and which."""
    from pmsolve.cli import main

    path = tmp_path / "dup.json"
    save_experiments([Measurement(Experiment({"a": 1}), 1.0), Measurement(Experiment({"a": 1}), 2.0),
                      Measurement(Experiment({"b": 1}), 1.0), Measurement(Experiment({"b": 1}), 1.0)], path)
    main(["infer", "cegis", "--oracle", f"recorded:{path}", "--ports", "2", "--quiet"])
    err = capsys.readouterr().err
    assert err.startswith("pmsolve: note: ") and "1 experiment(s) recorded more than once" in err
    assert "a:1 at 1, 2" in err and "median of its records (a:1: 1.5)" in err
