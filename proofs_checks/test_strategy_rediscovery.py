"""The strategy checker rediscovers the dissertation's App. E examples on its own."""

from fractions import Fraction

from pmsolve.model import Experiment, PortMapping
from pmsolve.strategy import check_strategy, facile_value, shortcut_gap, smallest_counterexample
from pmsolve.throughput import inverse_throughput


def test_app_e1_uopsinfo_paper_k_too_small_on_three_ports():
    v = check_strategy("uopsinfo:k=paper", 1, 3, levels=3, max_uops=3, max_exp_len=6)
    assert v.status == "counterexample"
    cx = v.counterexample
    assert len(cx.m1.ports) == 3
    assert inverse_throughput(cx.m1, cx.experiment) != inverse_throughput(cx.m2, cx.experiment)
    # with Constraint 6.1's k the same class is determined
    assert check_strategy("uopsinfo:k=uops", 1, 3, levels=3, max_uops=3, max_exp_len=6).status == "sufficient"


def test_app_e2_facile_shortcut_is_not_exact():
    assert shortcut_gap(3, 3, max_exp_len=3).status == "exact"
    v = shortcut_gap(3, 4, max_exp_len=3)
    assert v.status == "gap"
    assert v.shortcut_value < v.exact
    # the dissertation's instance: a={1,2}, b={2,3}, c={2,4}
    m = PortMapping.two_level("1234", {"a": "12", "b": "23", "c": "24"})
    e = Experiment({"a": 1, "b": 1, "c": 1})
    assert (facile_value(m, e), inverse_throughput(m, e)) == (Fraction(2, 3), Fraction(3, 4))


def test_pmevo_three_level_smallest_counterexample():
    v, tried = smallest_counterexample("ratio-pairs", levels=3, max_uops=2, max_insns=2, max_ports=2,
                                       max_exp_len=4)
    assert v is not None and v.status == "counterexample"
    assert (len(v.cls.instructions), len(v.cls.ports)) == (2, 2)
    assert all(t.status == "sufficient" for t in tried[:-1])


def test_pmevo_two_level_smallest_counterexample():
    from pmsolve.strategy.exhaustive import check_strategy_exhaustive

    # every smaller class (fewer instructions, or as many with fewer ports) is determined —
    # checked by enumeration, independently of the solver
    for n in range(1, 4):
        for k in range(1, 5):
            if (n, k) < (3, 4):
                assert check_strategy_exhaustive("ratio-pairs", n, k, max_exp_len=3).status == "sufficient", (n, k)
    v = check_strategy("ratio-pairs", 3, 4, max_exp_len=3, shortest=False)
    assert v.status == "counterexample"
    cx = v.counterexample
    assert cx.experiment.size == 3 and all(len(u.ports) == 2 for us in cx.m1.uops.values() for u in us)


def test_app_e1_the_dissertations_instance():
    # I = 1×{P1} + 1×{P0,P1} + 4×{P0,P2}: with k = 3 ports × latency 2 = 6 blocking instructions, the
    # strategy cannot tell I from the wrong conclusion of App. E.1 (a {P1,P2} µop instead of {P0,P1})
    i_true = PortMapping(["0", "1", "2"], {"i1": [(["1"], 1), (["0", "1"], 1), (["0", "2"], 4)]})
    v = check_strategy("uopsinfo:k=paper", 1, 3, levels=3, max_uops=6, max_exp_len=8, given=i_true,
                       shortest=False)
    assert v.status == "counterexample"
    cx = v.counterexample
    assert cx.m1.uops_of("i1") == i_true.uops_of("i1")
    alternatives = [{"1": 1, "12": 1, "02": 4}, {"1": 1, "012": 1, "02": 4}]
    assert {"".join(sorted(u.ports)): u.count for u in cx.m2.uops_of("i1")} in alternatives
    assert any(dict(e.items()) == {"B12": 6, "i1": 1} for e, _ in cx.agreed)
