"""The encodings: Thm 4.4 on every backend, LPs, findMapping/findOtherMapping, AnICA encodings."""

from fractions import Fraction as F
from itertools import combinations, permutations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmsolve.backends import capabilities as C
from pmsolve.backends import get, names, solve
from pmsolve.encodings import (
    Space, best_coverage, build_find_other_mapping, find_mapping, find_other_mapping, throughput_lp,
    fixed_experiment, fixed_mapping, free_experiment, matches, relate_throughput, subsumes,
    two_level_mapping,
)
from pmsolve.model import Experiment, PortMapping
from pmsolve.symbolic import Problem
from pmsolve.throughput import inverse_throughput
from pmsolve.testing import mapping_and_experiment

INSTALLED = [n for n in names() if get(n).installed]
SMT_CAPABLE = [b for b in INSTALLED if get(b).capabilities & {C.SMT, C.MILP}]
LP_CAPABLE = [b for b in INSTALLED if get(b).capabilities & {C.LP} or
              {C.SMT, C.OPTIMIZE} <= get(b).capabilities]
SMALL = dict(max_ports=3, max_insns=3, max_uops=2, max_count=2)
FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def relate_problem(mapping, experiment, *, r_max=None, faithful=False):
    insns = tuple(mapping.instructions)
    exp = fixed_experiment(experiment, insns)
    rel = relate_throughput(fixed_mapping(mapping), exp, "r.", r_max=r_max, faithful=faithful)
    return Problem(name="relate").add(rel.constraints), rel


@pytest.mark.parametrize("backend", SMT_CAPABLE)
@FAST
@given(pair=mapping_and_experiment(**SMALL), other=st.fractions(0, 20, max_denominator=12))
def test_thm_4_4_relate_throughput_pins_t_to_the_lp_optimum(backend, pair, other):
    mapping, experiment = pair
    opt = inverse_throughput(mapping, experiment)
    problem, rel = relate_problem(mapping, experiment)
    free = solve(problem, backend)
    assert free.status == "sat" and free.model["r.t"] == opt
    fixed = Problem(constraints=list(problem.constraints)).add(rel.t == opt)
    assert solve(fixed, backend).status == "sat"
    if other != opt:
        wrong = Problem(constraints=list(problem.constraints)).add(rel.t == other)
        assert solve(wrong, backend).status == "unsat"


@pytest.mark.parametrize("backend", [b for b in ("z3", "cvc5") if b in INSTALLED])
@FAST
@given(pair=mapping_and_experiment(**SMALL))
def test_thm_4_4_with_the_dissertations_iff_in_g(backend, pair):
    mapping, experiment = pair
    problem, rel = relate_problem(mapping, experiment, faithful=True)
    res = solve(problem, backend)
    assert res.model["r.t"] == inverse_throughput(mapping, experiment)
    below = Problem(constraints=list(problem.constraints)).add(rel.t < res.model["r.t"])
    assert solve(below, backend).status == "unsat"


@pytest.mark.parametrize("backend", [b for b in ("z3", "highs") if b in INSTALLED])
@FAST
@given(pair=mapping_and_experiment(**SMALL), r_max=st.integers(1, 4))
def test_relate_throughput_with_r_max(backend, pair, r_max):
    mapping, experiment = pair
    problem, rel = relate_problem(mapping, experiment, r_max=r_max)
    res = solve(problem, backend)
    expect = inverse_throughput(mapping, experiment, r_max=r_max)
    assert res.status == "sat" and res.model["r.t_rmax"] == expect


@pytest.mark.parametrize("backend", LP_CAPABLE)
@FAST
@given(pair=mapping_and_experiment(max_ports=4, max_insns=4, max_uops=3, max_count=3))
def test_throughput_lp_optimum_is_the_bottleneck_value(backend, pair):
    mapping, experiment = pair
    res = solve(throughput_lp(mapping, experiment).problem, backend)
    assert res.status == "sat"
    assert res.objective == inverse_throughput(mapping, experiment)


def test_noise_accepts_only_close_throughputs():
    m = PortMapping.two_level(["p1", "p2"], {"a": ["p1", "p2"]})
    e = Experiment({"a": 2})  # tp⁻¹ = 1, |e| = 2
    for measured, eps, ok in ((F(11, 10), F(1, 10), True), (F(13, 10), F(1, 10), False)):
        exp = fixed_experiment(e, ("a",))
        rel = relate_throughput(fixed_mapping(m), exp, "r.")
        p = Problem().add(rel.constraints).add(matches(rel.t, measured, exp, eps))
        assert solve(p, "z3").feasible is ok


# ----------------------------------------------------------------- findMapping / findOtherMapping

EX41 = Space(("iA", "iB"), ("p1", "p2"))
EX41_OBS = [(Experiment({"iA": 1}), F(1)), (Experiment({"iB": 1}), F(1))]


@pytest.mark.parametrize("backend", SMT_CAPABLE)
def test_example_4_1_on_every_backend(backend):
    m1 = find_mapping(EX41, EX41_OBS, backend)
    assert all(len(m1.uops_of(i)[0].ports) == 1 for i in ("iA", "iB"))
    m2, e = find_other_mapping(EX41, m1, EX41_OBS, backend, bound=2)
    assert e == Experiment({"iA": 1, "iB": 1})
    assert inverse_throughput(m1, e) != inverse_throughput(m2, e)
    obs = EX41_OBS + [(e, inverse_throughput(m1, e))]
    assert find_other_mapping(EX41, m1, obs, backend, bound=3) is None


def _singletons_and_pairs(mapping):
    insns = mapping.instructions
    exps = [Experiment({i: 1}) for i in insns]
    exps += [Experiment({a: 1, b: 1}) for a, b in combinations(insns, 2)]
    return [(e, inverse_throughput(mapping, e)) for e in exps]


@pytest.mark.parametrize("backend", [b for b in ("z3", "cvc5", "highs") if b in INSTALLED])
@settings(max_examples=6, deadline=None)
@given(pair=mapping_and_experiment(max_ports=3, max_insns=3, levels=3, max_uops=2, max_count=2))
def test_find_mapping_three_level_fixed_counts(backend, pair):
    truth, _ = pair
    counts = {i: sum(u.count for u in truth.uops_of(i)) for i in truth.instructions}
    space = Space(truth.instructions, truth.ports, "fixed-counts", uops_per_insn=counts)
    obs = _singletons_and_pairs(truth)
    found = find_mapping(space, obs, backend)  # validated against obs inside
    assert found is not None
    assert all(sum(u.count for u in found.uops_of(i)) == counts[i] for i in truth.instructions)


@pytest.mark.parametrize("backend", [b for b in ("z3", "highs") if b in INSTALLED])
def test_find_mapping_power_set(backend):
    truth = PortMapping(["p1", "p2"], {"a": [(["p1"], 2)], "b": [(["p1", "p2"], 1), (["p2"], 1)]})
    space = Space(("a", "b"), ("p1", "p2"), "power-set", max_count=2)
    obs = _singletons_and_pairs(truth)
    found = find_mapping(space, obs, backend)
    assert found is not None
    impossible = [(Experiment({"a": 1}), F(3, 2)), (Experiment({"a": 2}), F(1, 2))]
    assert find_mapping(space, impossible, backend) is None  # linear in |e|: contradiction


@pytest.mark.parametrize("backend", [b for b in ("z3", "cvc5", "highs") if b in INSTALLED])
def test_find_other_mapping_power_set_free_experiment(backend):
    """Both mapping and experiment free: the µop mass products go through binary expansion."""
    m1 = PortMapping(["p1", "p2"], {"a": [(["p1"], 1)], "b": [(["p2"], 1)]})
    space = Space(("a", "b"), ("p1", "p2"), "power-set", max_count=2)
    obs = [(Experiment({"a": 1}), F(1)), (Experiment({"b": 1}), F(1))]
    m2, e = find_other_mapping(space, m1, obs, backend, bound=2)
    assert inverse_throughput(m1, e) != inverse_throughput(m2, e)


def test_find_other_mapping_routes_agree_on_none():
    m1 = PortMapping.two_level(["p1", "p2"], {"a": ["p1", "p2"]})
    obs = [(Experiment({"a": 1}), F(1, 2))]
    space = Space(("a",), ("p1", "p2"))
    for backend in SMT_CAPABLE:
        # with one instruction only {p1,p2} gives 1/2; a single port gives 1 -> unique answer
        assert find_other_mapping(space, m1, obs, backend, bound=3) is None, backend


def test_find_other_mapping_problem_exports_a_margin_for_milp():
    p = build_find_other_mapping(EX41, PortMapping.two_level(["p1", "p2"], {"iA": ["p1"], "iB": ["p1"]}),
                                 EX41_OBS, bound=2).problem
    assert p.strict_margin == F(1, 4)


# ----------------------------------------------------------------- the Encoding shape and handles


@FAST
@given(pair=mapping_and_experiment(**SMALL))
def test_encoders_take_plain_objects_and_answer_through_t_and_decode(pair):
    mapping, experiment = pair
    for enc in (relate_throughput(mapping, experiment), throughput_lp(mapping, experiment)):
        res = solve(enc.problem, "z3")
        assert res[enc.t] == enc.decode(res) == inverse_throughput(mapping, experiment)


def test_variables_are_reached_by_handle_and_unknown_names_refused():
    from pmsolve.encodings import build_find_mapping
    from pmsolve.errors import UnknownNameError

    enc = build_find_mapping(EX41, EX41_OBS)
    v = enc.port("iA", "p1")
    assert enc.problem.var(v.name) is v
    with pytest.raises(UnknownNameError, match="no variable named 'mapping\\[iA,p1\\]'.*did you mean M.mapping"):
        enc.problem.var("mapping[iA,p1]")  # the prefix every encoder adds differs; handles don't
    with pytest.raises(UnknownNameError, match="unknown port 'p9'"):
        enc.port("iA", "p9")
    with pytest.raises(UnknownNameError, match="no variables 'q'"):
        enc.var("q", "p1")
    res = solve(enc.problem.add(enc.port("iA", "p2")), "z3")
    assert res[enc.port("iA", "p2")] is True and "p2" in next(iter(enc.decode(res).uops_of("iA"))).ports


# ----------------------------------------------------------------- AnICA subsumption and coverage


def brute_subsumes(n1, n2, comp, al1, al2):
    def alias(t, a, b):
        return t.get((a, b), t.get((b, a), "top"))

    for m in permutations(range(n2), n1):
        if not all(comp[i][m[i]] for i in range(n1)):
            continue
        if any(x != "top" and alias(al2, (m[i], o1), (m[k], o2)) != x
               for ((i, o1), (k, o2)), x in al1.items()):
            continue
        descents = sum(m[(i + 1) % n1] < m[i] for i in range(n1))
        if n1 >= 2 and descents != 1:
            continue
        return True
    return False


@st.composite
def subsumption_instances(draw):
    n1, n2 = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    comp = [[draw(st.booleans()) for _ in range(n2)] for _ in range(n1)]
    ops = ("r", "w")
    pair = lambda n: st.tuples(st.tuples(st.integers(0, n - 1), st.sampled_from(ops)),  # noqa: E731
                               st.tuples(st.integers(0, n - 1), st.sampled_from(ops)))
    val = st.sampled_from(["must", "mustnot", "top"])
    al1 = draw(st.dictionaries(pair(n1), val, max_size=2))
    al2 = draw(st.dictionaries(pair(n2), val, max_size=4))
    return n1, n2, comp, al1, al2


@pytest.mark.parametrize("backend", [b for b in ("sat", "z3", "highs") if b in INSTALLED])
@settings(max_examples=40, deadline=None)
@given(inst=subsumption_instances())
def test_subsumption_matches_brute_force(backend, inst):
    n1, n2, comp, al1, al2 = inst
    witness = subsumes(n1, n2, comp, al1, al2, backend=backend)
    assert (witness is not None) == brute_subsumes(n1, n2, comp, al1, al2)
    if witness is not None:
        assert len(set(witness)) == n1 and all(comp[i][witness[i]] for i in range(n1))


def test_subsumption_rotation_example():
    # block 1 = (mov, add); block 2 = (add, nop, mov): a rotation with a gap is subsumed
    comp = [[False, False, True], [True, False, False]]
    assert subsumes(2, 3, comp) == [2, 0]
    # three instructions in reversed cyclic order are not a rotation
    comp3 = [[i == 2 - j for j in range(3)] for i in range(3)]
    assert subsumes(3, 3, comp3) is None


@pytest.mark.parametrize("backend", [b for b in ("highs", "scipy", "z3") if b in INSTALLED])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_coverage_ilp_matches_brute_force(backend, data):
    blocks = [f"b{j}" for j in range(data.draw(st.integers(1, 6)))]
    abstract = {f"A{i}": data.draw(st.sets(st.sampled_from(blocks)))
                for i in range(data.draw(st.integers(1, 4)))}
    k = data.draw(st.integers(0, 3))
    chosen, covered = best_coverage(abstract, blocks, k, backend=backend)
    best = max(len(set().union(set(), *(abstract[a] for a in combo)))
               for r in range(min(k, len(abstract)) + 1) for combo in combinations(abstract, r))
    assert len(chosen) <= k and len(covered) == best
    assert set(covered) <= set().union(set(), *(abstract[a] for a in chosen))


def test_encodings_carry_bounds_for_big_m():
    exp = free_experiment(("a", "b"), 3, "E.")
    rel = relate_throughput(two_level_mapping(("a", "b"), ("p1", "p2"), "M."), exp, "r.")
    p = Problem().add(rel.constraints).add(exp.constraints)
    for v in p.variables():
        if hasattr(v, "lo"):
            assert v.lo is not None and v.hi is not None, v.name


@pytest.mark.parametrize("backend", [b for b in ("z3", "cvc5") if b in INSTALLED])
def test_incremental_observations_and_cores(backend):
    from pmsolve.backends import open_session
    from pmsolve.encodings import observation

    m_free = two_level_mapping(("a", "b"), ("p1", "p2"), "M.")
    with open_session(backend, core=True, incremental=True) as s:
        s.add(m_free.constraints)
        measured = [(Experiment({"a": 1}), F(1)), (Experiment({"b": 1}), F(1, 2)),
                    (Experiment({"a": 2}), F(1))]
        for n, (e, t) in enumerate(measured):
            cs, match = observation(m_free, e, t, f"o{n}")
            s.add(cs)
            s.push()
            s.add(match, name=f"obs{n}")
            res = s.check(core=True)
            if n < 2:
                assert res.status == "sat"
                s.pop()
                s.add(match)
        assert res.status == "unsat" and set(res.core) == {"obs2"}
        # a:1 -> 1 says one port, a:2 -> 1 says two: the core blames the new measurement


def test_benchmark_instances_are_deterministic_and_consistent():
    from pmsolve.encodings.instances import cegis_instance, find_other_mapping_instance

    space, truth, m1, obs = cegis_instance(4, 3, seed=7)
    assert cegis_instance(4, 3, seed=7)[1] == truth
    assert all(inverse_throughput(m1, e) == t for e, t in obs)
    assert str(find_other_mapping_instance(3, 2, seed=1)) == str(find_other_mapping_instance(3, 2, seed=1))

