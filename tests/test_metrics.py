"""Accuracy metrics and the evaluation report: MAPE is a fraction, displays show percent."""

import pytest
from hypothesis import assume, given, strategies as st

from pmsolve import Experiment, PortMapping, inverse_throughput, report
from pmsolve.errors import ValidationError
from pmsolve.metrics import accuracy, mape


def test_mape_is_a_fraction_and_displays_in_percent():
    acc = accuracy([1.1, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert acc.mape == pytest.approx(0.1 / 3) == mape([1.1, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert acc.mape_percent == pytest.approx(100 / 30)
    assert "MAPE=3.3 %" in str(acc)


def test_report_names_the_worst_experiments():
    truth = PortMapping.two_level(["p0", "p1"], {"a": ["p0", "p1"], "b": ["p0"]})
    guess = PortMapping.two_level(["p0", "p1"], {"a": ["p0", "p1"], "b": ["p0", "p1"]})
    exps = [Experiment({"a": 2}), Experiment({"b": 2}), Experiment({"a": 1, "b": 1}), Experiment({"b": 1})]
    measured = inverse_throughput(truth, exps, method="batch")
    r = report(exps, inverse_throughput(guess, exps, method="batch"), measured)
    assert [x.experiment for x in r.worst(2)] == [Experiment({"b": 2}), Experiment({"b": 1})]
    assert r.worst(1)[0].error == pytest.approx(0.5) and len(r.worst(10)) == 4
    assert r.accuracy.n == 4 and "b:2: predicted 1, measured 2 (-50.0 %)" in str(r)
    with pytest.raises(ValidationError, match="2 experiments for 4 predictions"):
        report(exps[:2], measured, measured)


def test_shortcuts_load_on_first_use():
    import pmsolve

    assert {"PortMapping", "inverse_throughput", "load_mapping", "solve", "report"} <= set(pmsolve.__all__)
    assert pmsolve.inverse_throughput is inverse_throughput and pmsolve.bottleneck(
        PortMapping.two_level(["p0"], {"a": ["p0"]}), Experiment({"a": 2})).inverse_throughput == 2
    with pytest.raises(AttributeError):
        pmsolve.no_such_name  # noqa: B018


def test_testing_helpers_import_without_hypothesis():
    import subprocess
    import sys

    code = ("import sys; sys.modules['hypothesis'] = None\n"
            "import pmsolve.testing as t\n"
            "try:\n    t.mappings()\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "PmsolveError pmsolve.testing needs hypothesis: pip install hypothesis"


def test_a_predictor_right_up_to_its_ties_reaches_the_tau_b_ceiling_and_no_more():
    from pmsolve.metrics import kendall_tau_b, tau_b_ceiling

    measured = [1.001, 1.003, 1.498, 1.502, 1.504, 2.0, 2.01]       # noise splits every tie
    steps = [1.0, 1.0, 1.5, 1.5, 1.5, 2.0, 2.0]                    # the port bound, exactly right
    assert kendall_tau_b(steps, measured) == pytest.approx(tau_b_ceiling(steps, measured))
    assert tau_b_ceiling(steps, measured) < 0.9                     # 5 of 21 pairs are tied
    assert kendall_tau_b(steps, measured, resolution=0.05) == pytest.approx(1.0)
    assert kendall_tau_b(steps, measured, resolution=0.001) == pytest.approx(kendall_tau_b(steps, measured))
    assert tau_b_ceiling(measured, measured) == 1.0


@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 40)), min_size=3, max_size=30))
def test_tau_b_never_exceeds_its_ceiling(pairs):
    from pmsolve.metrics import kendall_tau_b, tau_b_ceiling

    p, m = [a / 2 for a, _ in pairs], [b / 10 for _, b in pairs]
    tau, top = kendall_tau_b(p, m), tau_b_ceiling(p, m)
    assume(tau == tau and top == top)
    assert tau <= top + 1e-9 and top <= 1.0 + 1e-12
