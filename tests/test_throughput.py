"""The theorems that tie the throughput routes together (dissertation ch. 3, sec. 5.1.4): the
bottleneck formula (exact and batch), the LP of Thm 3.7 / 3.12, and the schedule definition."""

import os
import subprocess
import sys
from fractions import Fraction
from math import ceil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmsolve.backends import solve
from pmsolve.formula import _evaluate_port_subsets
from pmsolve.encodings import throughput_lp
from pmsolve.errors import UnknownNameError, ValidationError
from pmsolve.model import Experiment, PortMapping
from pmsolve.throughput import (batch_inverse_throughput, bottleneck, evaluate_masks, evaluate_many,
                                inverse_throughput, optimal_schedule_length)
from pmsolve.testing import experiments, mapping_and_experiment, mappings

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
    for method, backend in (("lp", "highs"), ("lp", "scipy"), ("lp", "z3"), ("schedule", None)):
        assert inverse_throughput(FIG_3_1, EX_3_4, method=method, backend=backend) == Fraction(3, 2)
    assert inverse_throughput(FIG_3_1, EX_3_4, method="batch") == 1.5
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
    for method in ("lp", "schedule"):
        assert inverse_throughput(m, e, r_max=4, method=method) == 1
    for method in ("exact", "batch", "lp", "schedule"):
        with pytest.raises(ValidationError, match="r_max must be positive"):
            inverse_throughput(m, e, r_max=0, method=method)


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


@given(mapping_and_experiment(max_ports=8))
def test_peak_load_is_thm_5_2_in_floats(me):
    """The bit-mask float route of the characterisation's inner loop gives the same float as
    Thm 5.2 over every port subset."""
    from pmsolve.model import peak_load
    m, e = me
    assert peak_load(m.uop_masses(e)) == float(brute_force(m, e))


@given(st.lists(st.tuples(st.frozensets(st.sampled_from([str(p) for p in range(10)]), min_size=1), st.integers(1, 9)),
                min_size=1, max_size=14))
def test_peak_load_with_few_and_many_distinct_sets(items):
    """Both of peak_load's routes (subsets of up to eight distinct sets, unions beyond) give
    the float of Thm 5.2 (bottleneck_of, exact)."""
    from pmsolve.model import bottleneck_of, peak_load
    mass: dict = {}
    for q, m in items:
        mass[q] = mass.get(q, 0) + m
    assert peak_load(mass) == float(bottleneck_of(mass)[0])


@settings(max_examples=120, deadline=None)
@given(mapping_and_experiment(max_ports=12), st.sampled_from(["highs", "scipy"]))
def test_thm_5_2_formula_equals_lp(me, solver):
    """The LP reads the µops from `mapping.uops` itself (one flow per µop of each instruction),
    the formula from the merged µop masses: a bug in either reading turns this red."""
    m, e = me
    exact = inverse_throughput(m, e)
    res = solve(throughput_lp(m, e).problem, solver)
    assert res.status == "sat" and float(res.objective) == pytest.approx(float(exact), rel=1e-9, abs=1e-9)


@settings(max_examples=120, deadline=None)
@given(mapping_and_experiment(max_ports=12))
def test_thm_3_14_bottleneck_ports_fully_loaded(me):
    m, e = me
    b = bottleneck(m, e)
    assert b.ports, "a bottleneck port set exists"
    mass = m.uop_masses(e)
    assert Fraction(sum(x for ps, x in mass.items() if ps <= b.ports), len(b.ports)) == b.inverse_throughput
    lp = throughput_lp(m, e)
    res = solve(lp.problem, "highs")
    for p in b.ports:
        assert float(res[lp.var("load", p)]) == pytest.approx(float(b.inverse_throughput), rel=1e-9, abs=1e-9)


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
    assert inverse_throughput(m, e, method="schedule") == tp


@settings(max_examples=40, deadline=None)
@given(mapping_and_experiment(max_ports=6, max_insns=4), st.sampled_from([None, 2, Fraction(7, 2)]))
def test_front_door_methods_agree(me, r_max):
    m, e = me
    exact = inverse_throughput(m, e, r_max=r_max)
    assert inverse_throughput(m, e, r_max=r_max, method="schedule") == exact
    assert inverse_throughput(m, e, r_max=r_max, method="lp", backend="highs") == exact
    assert inverse_throughput(m, [e, e], r_max=r_max, method="batch").tolist() == [float(exact)] * 2
    assert inverse_throughput(m, [e], r_max=r_max) == [exact]


def test_front_door_refuses_unknown_methods_and_stray_backends():
    with pytest.raises(ValidationError, match="unknown throughput method 'simplex'"):
        inverse_throughput(FIG_3_1, EX_3_4, method="simplex")
    with pytest.raises(ValidationError, match="backend= applies to method='lp'"):
        inverse_throughput(FIG_3_1, EX_3_4, backend="highs")


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


@settings(max_examples=100, deadline=None)
@given(mapping_and_experiment(max_ports=10), st.data())
def test_subadditive_and_monotone_in_parts(me, data):
    """tp⁻¹(a), tp⁻¹(b) ≤ tp⁻¹(a + b) ≤ tp⁻¹(a) + tp⁻¹(b) for every mapping, with or without a
    front-end cap: what lets the held-out misses call a core slower than the sum of its
    measured parts evidence against every port mapping (pmsolve.jobs.misses)."""
    m, a = me
    b = data.draw(experiments(m))
    r_max = data.draw(st.sampled_from([None, 2, 3.5]))
    both = Experiment(list(a.items()) + list(b.items()))
    ta, tb, tab = (inverse_throughput(m, e, r_max=r_max) for e in (a, b, both))
    assert max(ta, tb) <= tab <= ta + tb


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_batch_equals_exact_bit_for_bit(data):
    pairs = []
    for _ in range(data.draw(st.integers(1, 6))):
        m = data.draw(mappings(max_ports=12))
        pairs += [(m, data.draw(experiments(m))) for _ in range(data.draw(st.integers(1, 5)))]
    r_max = data.draw(st.sampled_from([None, 2, 3.5, 5]))
    got = batch_inverse_throughput(pairs, r_max)
    want = np.array([float(inverse_throughput(m, e, r_max=r_max)) for m, e in pairs])
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


def test_batch_refuses_counts_it_cannot_code_exactly():
    m = PortMapping.two_level(["p0"], {"a": ["p0"]})
    assert evaluate_many(m, [Experiment({"a": (1 << 24) - 1})])[0] == (1 << 24) - 1
    with pytest.raises(ValidationError, match="batch evaluator takes counts below"):
        evaluate_many(m, [Experiment({"a": 1 << 24})])


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_batch_pairs_in_any_order_and_many_mappings(data):
    """Pairs of interleaved mappings (grouped internally and put back in order) and the
    small-group padding of the kernel give the exact values."""
    ms = [data.draw(mappings(max_ports=6)) for _ in range(data.draw(st.integers(2, 4)))]
    pairs = [(m, data.draw(experiments(m))) for m in ms for _ in range(data.draw(st.integers(1, 8)))]
    order = data.draw(st.permutations(range(len(pairs))))
    pairs = [pairs[i] for i in order]
    want = [float(inverse_throughput(m, e)) for m, e in pairs]
    assert batch_inverse_throughput(pairs).tolist() == want


# ----------------------------------------------------------------- the front door as a new user meets it

def test_a_plain_dict_is_an_experiment_at_every_entry_of_the_front_door():
    """Issue 40: `inverse_throughput(m, {"add": 2})` raised "unknown instruction(s) ['a', 'd', 'd']":
    the dict's key was read as an experiment, letter by letter."""
    e = {"add": 2, "mul": 1, "store": 1}
    assert inverse_throughput(FIG_3_1, e) == Fraction(3, 2)
    for method in ("lp", "schedule"):
        assert inverse_throughput(FIG_3_1, e, method=method) == Fraction(3, 2)
    assert inverse_throughput(FIG_3_1, e, method="batch") == 1.5
    assert inverse_throughput(FIG_3_1, [e, EX_3_4]) == [Fraction(3, 2)] * 2
    assert list(inverse_throughput(FIG_3_1, [e, {"add": 3}], method="batch")) == [1.5, 1.5]
    assert list(evaluate_many(FIG_3_1, [e, {"mul": 2}])) == [1.5, 2.0]
    assert list(batch_inverse_throughput([(FIG_3_1, e), (APP_E2, {"A": 1, "B": 1})])) == [1.5, 2 / 3]
    assert bottleneck(FIG_3_1, e).ports == {"p1", "p2"}
    assert optimal_schedule_length(FIG_3_1, e, 2) == 3


@pytest.mark.parametrize("call, says", [
    (lambda: inverse_throughput(FIG_3_1, "add:2"), r"pass Experiment.parse\('add:2'\) or a dict"),
    (lambda: inverse_throughput(FIG_3_1, ["add:2", "mul:1"]), r"pass Experiment.parse\('add:2'\)"),
    (lambda: inverse_throughput(FIG_3_1, 3), "pass an Experiment or a dict"),
    (lambda: inverse_throughput("mapping.json", {"add": 2}), r"pass a PortMapping \(load_mapping\(path\)"),
    (lambda: evaluate_many(FIG_3_1, {"add": 2}), "got one .*wrap it in a list"),
    (lambda: evaluate_many(FIG_3_1, EX_3_4), "got one .*wrap it in a list"),
    (lambda: batch_inverse_throughput((FIG_3_1, EX_3_4)), "got one pair: wrap it in a list"),
])
def test_what_is_no_experiment_is_refused_saying_what_to_pass(call, says):
    with pytest.raises(ValidationError, match=says):
        call()


@pytest.mark.parametrize("backend", [None, "highs"])
def test_library_calls_print_nothing(backend):
    """Issue 40: with the automatic backend, method="lp" printed the HiGHS banner on standard
    output (HiGHS prints it from C++ when a process makes its first solver object)."""
    code = ("from pmsolve import PortMapping, inverse_throughput\n"
            "m = PortMapping.two_level(['p1', 'p2'], {'add': ['p1', 'p2'], 'mul': ['p1']})\n"
            f"assert inverse_throughput(m, {{'add': 2, 'mul': 1}}, method='lp', backend={backend!r}) == 1.5\n")
    env = {k: v for k, v in os.environ.items() if k != "PMSOLVE_BACKEND"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert (p.stdout, p.stderr) == ("", "")
