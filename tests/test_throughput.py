"""The theorems that tie the throughput routes together (dissertation ch. 3, sec. 5.1.4)."""

from fractions import Fraction
from math import ceil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmsolve.errors import UnknownNameError, ValidationError
from pmsolve.model import Experiment, PortMapping
from pmsolve.throughput import (batch_inverse_throughput, bottleneck, evaluate_masks, evaluate_many,
                                inverse_throughput, lp_inverse_throughput, optimal_schedule_length, solve_lp)
from strategies import experiments, mapping_and_experiment, mappings

FIG_3_1 = PortMapping.two_level(["p1", "p2", "p3"], {"mul": ["p1"], "add": ["p1", "p2"], "sub": ["p1", "p2"],
                                                      "store": ["p3"]})
EX_3_4 = Experiment({"add": 2, "mul": 1, "store": 1})
# App. E.2: three µops on four ports where Facile's pairwise shortcut gives 2/3.
APP_E2 = PortMapping(["1", "2", "3", "4"], {"A": [(["1", "2"], 1)], "B": [(["2", "3"], 1)], "C": [(["2", "4"], 1)]})


def brute_force(mapping: PortMapping, experiment: Experiment) -> Fraction:
    """Thm 5.2 literally: the maximum over *all* non-empty port subsets."""
    mass = mapping.uop_masses(experiment)
    ports = mapping.ports
    best = Fraction(0)
    for bits in range(1, 1 << len(ports)):
        q = {p for j, p in enumerate(ports) if bits >> j & 1}
        best = max(best, Fraction(sum(m for ps, m in mass.items() if ps <= q), len(q)))
    return best


def test_example_3_4_and_3_8():
    assert inverse_throughput(FIG_3_1, EX_3_4) == Fraction(3, 2)
    assert bottleneck(FIG_3_1, EX_3_4).ports == {"p1", "p2"}
    assert lp_inverse_throughput(FIG_3_1, EX_3_4, solver="highs") == pytest.approx(1.5, abs=1e-9)
    assert lp_inverse_throughput(FIG_3_1, EX_3_4, solver="scipy") == pytest.approx(1.5, abs=1e-9)
    # Example 3.4: one iteration needs 2 cycles, two interleaved iterations only 3.
    assert optimal_schedule_length(FIG_3_1, EX_3_4, 1) == 2
    assert optimal_schedule_length(FIG_3_1, EX_3_4, 2) == 3


def test_appendix_e2_facile_counterexample():
    e = Experiment({"A": 1, "B": 1, "C": 1})
    assert inverse_throughput(APP_E2, e) == Fraction(3, 4)
    assert evaluate_many(APP_E2, [e])[0] == 0.75
    # the pairwise heuristic: only unions of two µops' port sets
    mass = APP_E2.uop_masses(e)
    pairwise = max(Fraction(sum(m for ps, m in mass.items() if ps <= a | b), len(a | b)) for a in mass for b in mass)
    assert pairwise == Fraction(2, 3)


def test_r_max_caps_rate():
    e = Experiment({"add": 4})
    m = PortMapping.two_level(["0", "1", "2", "3", "4", "5"], {"add": ["0", "1", "2", "3", "4", "5"]})
    assert inverse_throughput(m, e) == Fraction(2, 3)
    b = bottleneck(m, e, r_max=4)
    assert b.inverse_throughput == 1 and b.frontend_bound and not b.ports
    assert evaluate_many(m, [e], r_max=4)[0] == 1.0
    assert lp_inverse_throughput(m, e, r_max=4) == pytest.approx(1.0)
    with pytest.raises(ValidationError):
        inverse_throughput(m, e, r_max=0)


def test_unknown_instruction_is_reported():
    with pytest.raises(UnknownNameError, match="nope"):
        inverse_throughput(FIG_3_1, Experiment({"nope": 1}))
    with pytest.raises(UnknownNameError):
        evaluate_many(FIG_3_1, [Experiment({"nope": 1})])


@settings(max_examples=150, deadline=None)
@given(mapping_and_experiment(max_ports=8))
def test_union_closure_equals_all_subsets(me):
    """Enumerating unions of µop port sets finds the same maximum as all 2^|P| subsets."""
    m, e = me
    assert inverse_throughput(m, e) == brute_force(m, e)


@settings(max_examples=120, deadline=None)
@given(mapping_and_experiment(max_ports=12), st.sampled_from(["highs", "scipy"]))
def test_thm_5_2_formula_equals_lp(me, solver):
    m, e = me
    exact = inverse_throughput(m, e)
    assert lp_inverse_throughput(m, e, solver=solver) == pytest.approx(float(exact), rel=1e-9, abs=1e-9)


@settings(max_examples=120, deadline=None)
@given(mapping_and_experiment(max_ports=12))
def test_thm_3_14_bottleneck_ports_fully_loaded(me):
    m, e = me
    b = bottleneck(m, e)
    assert b.ports, "a bottleneck port set exists"
    mass = m.uop_masses(e)
    assert Fraction(sum(x for ps, x in mass.items() if ps <= b.ports), len(b.ports)) == b.inverse_throughput
    loads = solve_lp(m, e).port_loads
    for p in b.ports:
        assert loads[p] == pytest.approx(float(b.inverse_throughput), rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(mapping_and_experiment(max_ports=5, max_insns=4), st.integers(1, 12))
def test_thm_3_6_schedule_definition(me, n):
    """T(M,e,N)/N ≥ tp⁻¹, with equality when N is a multiple of the optimum's denominator;
    in fact T(M,e,N) = ⌈N·tp⁻¹⌉ (integral flows)."""
    m, e = me
    tp = inverse_throughput(m, e)
    t = optimal_schedule_length(m, e, n)
    assert Fraction(t, n) >= tp
    assert t == ceil(n * tp)
    d = tp.denominator
    assert Fraction(optimal_schedule_length(m, e, d), d) == tp


@settings(max_examples=100, deadline=None)
@given(mapping_and_experiment(max_ports=10, levels=3))
def test_remark_3_13_three_level_is_two_level_on_uops(me):
    m, e = me
    two = m.as_two_level_on_uops()
    names = {u.ports: "[" + ",".join(sorted(u.ports, key=lambda p: int(p[1:]))) + "]"
             for us in m.uops.values() for u in us}
    uop_exp = Experiment({names[ps]: k for ps, k in m.uop_masses(e).items()})
    assert two.is_two_level
    assert inverse_throughput(two, uop_exp) == inverse_throughput(m, e)


@settings(max_examples=100, deadline=None)
@given(mapping_and_experiment(max_ports=10), st.randoms(use_true_random=False))
def test_invariant_under_port_renaming(me, rnd):
    m, e = me
    new = list(m.ports)
    rnd.shuffle(new)
    renamed = m.rename_ports(dict(zip(m.ports, new)))
    assert inverse_throughput(renamed, e) == inverse_throughput(m, e)


@settings(max_examples=100, deadline=None)
@given(mapping_and_experiment(max_ports=10), st.data())
def test_monotone_in_counts(me, data):
    m, e = me
    extra = data.draw(st.sampled_from(m.instructions))
    bigger = Experiment(list(e.items()) + [(extra, data.draw(st.integers(1, 3)))])
    assert inverse_throughput(m, bigger) >= inverse_throughput(m, e)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_batch_equals_exact_bit_for_bit(data):
    pairs = []
    for _ in range(data.draw(st.integers(1, 6))):
        m = data.draw(mappings(max_ports=12))
        pairs += [(m, data.draw(experiments(m))) for _ in range(data.draw(st.integers(1, 5)))]
    r_max = data.draw(st.sampled_from([None, 2, 3.5, 5]))
    got = batch_inverse_throughput(pairs, r_max)
    want = np.array([float(inverse_throughput(m, e, r_max)) for m, e in pairs])
    assert np.array_equal(got, want)


def test_batch_falls_back_beyond_vector_width():
    ports = [str(j) for j in range(16)]
    m = PortMapping(ports, {f"i{j}": [([ports[j]], 1), ([ports[j], ports[(j + 1) % 16]], 2)] for j in range(16)})
    e = Experiment({f"i{j}": 1 + j % 3 for j in range(16)})  # 32 distinct µops
    assert batch_inverse_throughput([(m, e)])[0] == float(inverse_throughput(m, e))


def test_evaluate_masks_padding_and_empty():
    masks = np.array([[0b011, 0b110, 0], [0b001, 0, 0]], dtype=np.uint64)
    weights = np.array([[1, 1, 0], [3, 0, 0]], dtype=np.float64)
    assert list(evaluate_masks(masks, weights)) == [2 / 3, 3.0]
    assert evaluate_masks(np.zeros((0, 2), dtype=np.uint64), np.zeros((0, 2))).shape == (0,)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 8).flatmap(lambda p: st.tuples(
    st.just(p), st.lists(st.lists(st.tuples(st.integers(1, (1 << p) - 1), st.integers(1, 5)), min_size=1, max_size=9),
                         min_size=1, max_size=8))))
def test_union_enumeration_equals_port_subset_transform(data):
    """Both kernels of evaluate_masks (unions of µops; zeta transform over all port sets)."""
    from pmsolve.throughput import _evaluate_port_subsets

    n_ports, rows = data
    k = max(len(r) for r in rows)
    masks = np.array([[m for m, _ in r] + [0] * (k - len(r)) for r in rows], dtype=np.uint64)
    weights = np.array([[w for _, w in r] + [0] * (k - len(r)) for r in rows], dtype=np.float64)
    by_unions = evaluate_masks(masks, weights) if k <= n_ports + 2 else None
    by_ports = _evaluate_port_subsets(masks, weights, n_ports)
    exact = [max(Fraction(int(sum(w for m, w in r if m & ~q == 0)), q.bit_count()) for q in range(1, 1 << n_ports))
             for r in rows]
    assert list(by_ports) == [float(x) for x in exact]
    if by_unions is not None:
        assert list(by_unions) == [float(x) for x in exact]
