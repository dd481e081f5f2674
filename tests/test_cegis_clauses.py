"""The "clauses" encoding of CEGIS (issue 42): counters, the lower half of a measurement, the lazy
Hall cuts, the exact overload check, the compiled validation, and that symmetry breaking over
port renaming keeps every class of mappings. Small instances: the file runs in seconds."""

from __future__ import annotations

import random
from fractions import Fraction
from itertools import combinations, permutations, product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmsolve.backends import solve
from pmsolve.encodings.cardinality import Counter, between
from pmsolve.encodings.mappings import fixed_count_mapping, two_level_mapping
from pmsolve.formula import bottleneck
from pmsolve.harness.simulated import SimulatedOracle
from pmsolve.infer.cegis import Cegis, CegisOptions, infer
from pmsolve.infer.cegis.encode import hall_cut, observation_clauses, singleton_width
from pmsolve.infer.cegis.screen import overloaded
from pmsolve.model import Experiment, PortMapping, Uop
from pmsolve.symbolic import And, Bool, Formula, Iff, Implies, Not, Or, Problem
from pmsolve.symbolic.evaluate import ModelEvaluator, _compile_boolean
from pmsolve.throughput import inverse_throughput
from test_cegis import ListOracle

PORTS = ("p0", "p1", "p2", "p3")


def mapping_2l(ports, sets: list[list[str]]) -> PortMapping:
    return PortMapping.two_level(list(ports), {f"i{j}": s for j, s in enumerate(sets)})


port_sets = st.lists(st.sampled_from(PORTS), min_size=1, max_size=4, unique=True)
mappings = st.lists(port_sets, min_size=2, max_size=4).map(lambda sets: mapping_2l(PORTS, sets))


def experiment_of(m: PortMapping):
    return st.lists(st.integers(0, 3), min_size=len(m.instructions), max_size=len(m.instructions)).map(
        lambda cs: Experiment({i: c for i, c in zip(m.instructions, cs) if c} or {m.instructions[0]: 1}))


def fixed(enc, m: PortMapping) -> list[Formula]:
    """Pin a two-level mapping encoding to the mapping m."""
    return [enc.port(i, k) if k in m.uops_of(i)[0].ports else Not(enc.port(i, k))
            for i in m.instructions for k in enc.ports]


def holds(*formulas) -> bool:
    return solve(Problem().add(list(formulas)), "sat").feasible


# --------------------------------------------------------------------------- counters

@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=0, max_size=7), st.lists(st.booleans(), min_size=5, max_size=5),
       st.integers(0, 8))
def test_counter_counts_with_repeats(picks, values, c):
    xs = [Bool(f"x{j}") for j in range(5)]
    inputs = [xs[j] for j in picks]  # repeats count as often as they appear
    true = sum(values[j] for j in picks)
    ctr = Counter(inputs, max(c, 1), "t.")
    pin = [x if v else Not(x) for x, v in zip(xs, values)]
    assert holds(*ctr.definitions, *pin, ctr.at_least(c)) == (true >= c)
    assert holds(*ctr.definitions, *pin, Not(ctr.at_least(c))) == (true < c)
    if c + 1 <= max(c, 1) or c + 1 > len(inputs):
        assert holds(*ctr.definitions, *pin, ctr.at_most(c)) == (true <= c)


def test_between_is_an_exact_range():
    xs = [Bool(f"x{j}") for j in range(4)]
    for values in product((False, True), repeat=4):
        pin = [x if v else Not(x) for x, v in zip(xs, values)]
        assert holds(between(xs, 1, 2, "b."), *pin) == (1 <= sum(values) <= 2)


# --------------------------------------------------------------------------- a measurement's two halves

@settings(max_examples=60, deadline=None)
@given(mappings.flatmap(lambda m: st.tuples(st.just(m), experiment_of(m))), st.sampled_from([None, Fraction(1, 50)]))
def test_lower_half_holds_exactly_down_to_the_measurement(case, eps):
    """observation_clauses with the mapping pinned: true when the measurement is its tp⁻¹ (or
    within ε·|e|), false when the measurement is slower than the mapping can be."""
    m, e = case
    enc = two_level_mapping(m.instructions, PORTS)
    t = inverse_throughput(m, e)
    assert holds(observation_clauses(enc, e, t, "o.", epsilon=eps), *fixed(enc, m))
    slower = t + Fraction(1, 13) + (2 * eps * e.size if eps else 0)
    assert not holds(observation_clauses(enc, e, slower, "o.", epsilon=eps), *fixed(enc, m))


@settings(max_examples=80, deadline=None)
@given(mappings.flatmap(lambda m: st.tuples(st.just(m), mappings, experiment_of(m))),
       st.sampled_from([None, Fraction(1, 50)]))
def test_hall_cut_removes_the_candidate_and_keeps_the_truth(case, eps):
    """A measurement of the truth; a candidate that predicts it too slow gets a cut that it
    violates and that the truth (like every mapping explaining the measurement) keeps."""
    truth, cand, e = case
    if set(cand.instructions) != set(truth.instructions):
        cand = mapping_2l(PORTS, [list(cand.uops_of(cand.instructions[j % len(cand.instructions)])[0].ports)
                                  for j in range(len(truth.instructions))])
    enc = two_level_mapping(truth.instructions, PORTS)
    t = inverse_throughput(truth, e)
    model = {enc.port(i, k).name: k in cand.uops_of(i)[0].ports for i in cand.instructions for k in PORTS}
    cut = hall_cut(enc, e, t, model, "h.", epsilon=eps)
    hi = t + eps * e.size if eps else t
    slow = inverse_throughput(cand, e)
    assert (cut is not None) == (slow >= hi if eps else slow > hi)
    if cut is not None:
        assert not holds(cut, *fixed(enc, cand))
        assert holds(cut, *fixed(enc, truth))


def test_hall_cut_rounds_the_port_count_up():
    """3 µops measured at 3/4 cycle: two of them need ⌈2 / (3/4)⌉ = 3 ports, not 2."""
    truth = mapping_2l(PORTS, [["p0", "p1"], ["p2", "p3"], list(PORTS)])
    cand = mapping_2l(PORTS, [["p0", "p1"], ["p0", "p1"], ["p2"]])
    enc = two_level_mapping(truth.instructions, PORTS)
    e = Experiment({"i0": 1, "i1": 1, "i2": 1})
    assert inverse_throughput(truth, e) == Fraction(3, 4)
    model = {enc.port(i, k).name: k in cand.uops_of(i)[0].ports for i in cand.instructions for k in PORTS}
    cut = hall_cut(enc, e, Fraction(3, 4), model, "h.")
    assert not holds(cut, *fixed(enc, cand)) and holds(cut, *fixed(enc, truth))


def test_hall_cut_on_fixed_counts():
    enc = fixed_count_mapping({"a": 2, "b": 1}, PORTS)
    truth = PortMapping(list(PORTS), {"a": [Uop(frozenset({"p0"}), 1), Uop(frozenset({"p1", "p2"}), 1)],
                                      "b": [Uop(frozenset({"p1", "p2", "p3"}), 1)]})
    e = Experiment({"a": 2, "b": 3})
    t = inverse_throughput(truth, e)
    model = {v.name: False for v in enc.port_vars.values()}
    for r in (1, 2):  # both µops of a and b's µop on p0: 7 µops on one port
        model[enc.port("a", "p0", r).name] = True
    model[enc.port("b", "p0").name] = True
    cut = hall_cut(enc, e, t, model, "h.")
    assert cut is not None
    pin = [enc.port(i, k, r) if model[enc.port(i, k, r).name] else Not(enc.port(i, k, r))
           for (i, r, k) in enc.port_vars]
    assert not holds(cut, *pin)
    truth_pin = [enc.port("a", "p0", 1), enc.port("a", "p1", 2), enc.port("a", "p2", 2), enc.port("b", "p1"),
                 enc.port("b", "p2"), enc.port("b", "p3")]
    pinned = {v.ident for v in truth_pin}     # nodes have no truth value: `in` would compare with ==
    others = [Not(v) for (i, r, k), v in enc.port_vars.items() if v.ident not in pinned]
    assert holds(cut, *truth_pin, *others)


def test_singleton_width_is_the_port_set_size():
    enc = two_level_mapping(("a",), PORTS)
    xs = [enc.port("a", k) for k in PORTS]
    f = singleton_width(enc, Experiment({"a": 2}), Fraction(2, 3))  # 2 copies on 3 ports
    for values in product((False, True), repeat=4):
        pin = [x if v else Not(x) for x, v in zip(xs, values)]
        assert holds(f, *pin) == (sum(values) == 3)
    capped = singleton_width(enc, Experiment({"a": 2}), Fraction(1), r_max=Fraction(2))  # front end: ≥ 2 ports
    for values in product((False, True), repeat=4):
        pin = [x if v else Not(x) for x, v in zip(xs, values)]
        assert holds(capped, *pin) == (sum(values) >= 2)


# --------------------------------------------------------------------------- exact overload check

@settings(max_examples=80, deadline=None)
@given(mappings.flatmap(lambda m: st.tuples(st.just(m), st.lists(experiment_of(m), min_size=1, max_size=6),
                                             st.lists(st.fractions(Fraction(1, 4), Fraction(4), max_denominator=12),
                                                      min_size=6, max_size=6))),
       st.sampled_from([None, Fraction(1, 50)]))
def test_overloaded_matches_the_exact_formula(case, eps):
    m, exps, values = case
    obs = [(e, t) for e, t in zip(exps, values)] + [(e, inverse_throughput(m, e)) for e in exps]
    want = [n for n, (e, t) in enumerate(obs)
            if (bottleneck(m, e).inverse_throughput >= t + eps * e.size if eps else bottleneck(m, e).inverse_throughput > t)]
    assert overloaded(m, m.instructions, PORTS, obs, eps) == want


# --------------------------------------------------------------------------- compiled validation

def formulas(depth: int):
    leaf = st.sampled_from([Bool("a"), Bool("b"), Bool("c"), Not(Bool("a"))])
    if depth == 0:
        return leaf
    sub = formulas(depth - 1)
    return st.one_of(leaf, st.lists(sub, min_size=1, max_size=3).map(lambda xs: And(*xs)),
                     st.lists(sub, min_size=1, max_size=3).map(lambda xs: Or(*xs)),
                     sub.map(Not), st.tuples(sub, sub).map(lambda p: Implies(*p)),
                     st.tuples(sub, sub).map(lambda p: Iff(*p)))


@settings(max_examples=200, deadline=None)
@given(formulas(3), st.tuples(st.booleans(), st.booleans(), st.booleans()))
def test_compiled_boolean_check_agrees_with_the_evaluator(f, values):
    assignment = dict(zip("abc", values))
    fast = _compile_boolean(f)
    assert fast is not None
    assert fast(assignment) == ModelEvaluator(assignment).visit(f)


def test_compiled_check_leaves_arithmetic_to_the_evaluator():
    from pmsolve.symbolic import Int
    assert _compile_boolean(Or(Bool("a"), Int("x", 0, 3) >= 2)) is None


# --------------------------------------------------------------------------- symmetry breaking is complete

def renaming_classes(ms: list[PortMapping], ports: tuple[str, ...]) -> set[tuple]:
    def canon(m: PortMapping) -> tuple:
        return min(tuple(sorted((i, tuple(sorted((tuple(sorted(dict(zip(ports, perm))[p] for p in u.ports)), u.count)
                                                  for u in m.uops_of(i)))) for i in m.instructions))
                   for perm in permutations(ports))
    return {canon(m) for m in ms}


def enumerate_found(truth: PortMapping, experiments: list[Experiment], **kw) -> list[PortMapping]:
    """Every mapping the CEGIS session finds for these measurements, blocking each in turn."""
    opts = CegisOptions(ports=list(truth.ports), initial="none", extra_initial=tuple(experiments),
                        check_experiments=0, **kw)
    c = Cegis(SimulatedOracle(truth), opts)
    c.start()
    out = []
    while (found := c.find_mapping()) is not None:
        out.append(found[0])
        c.session.add(c._block(found[1]))
        assert len(out) < 2000
    c.session.close()
    return out


@pytest.mark.parametrize("seed", range(4))
def test_symmetry_breaking_keeps_every_renaming_class(seed):
    """Brute force: all two-level mappings on 3 ports explaining a few measurements, up to
    renaming; the symmetry-broken search must meet each class exactly once (no class lost)."""
    rng = random.Random(seed)
    ports = ("p0", "p1", "p2")
    truth = mapping_2l(ports, [rng.sample(ports, rng.randint(1, 2)) for _ in range(4)])
    insns = truth.instructions
    exps = [Experiment({i: 1}) for i in insns] + [Experiment({insns[0]: 1, insns[j]: 1}) for j in (1, 2)]
    obs = [(e, inverse_throughput(truth, e)) for e in exps]
    subsets = [list(s) for r in (1, 2, 3) for s in combinations(ports, r)]
    every = [m for sets in product(subsets, repeat=len(insns)) for m in [mapping_2l(ports, list(sets))]
             if all(inverse_throughput(m, e) == t for e, t in obs)]
    want = renaming_classes(every, ports)
    found = enumerate_found(truth, exps)
    assert renaming_classes(found, ports) == want
    assert len(found) == len(want)  # one member per class: the symmetry is broken
    assert len(renaming_classes(enumerate_found(truth, exps, symmetry=False), ports)) == len(want)


def test_fixed_counts_row_symmetry_keeps_every_class():
    ports = ("p0", "p1", "p2")
    truth = PortMapping(list(ports), {"a": [Uop(frozenset({"p0"}), 1), Uop(frozenset({"p1", "p2"}), 1)],
                                      "b": [Uop(frozenset({"p1"}), 1)]})
    exps = [Experiment({"a": 1}), Experiment({"b": 1}), Experiment({"a": 1, "b": 1})]
    obs = [(e, inverse_throughput(truth, e)) for e in exps]
    subsets = [frozenset(s) for r in (1, 2, 3) for s in combinations(ports, r)]
    every = [m for a1, a2, b in product(subsets, subsets, subsets)
             for m in [PortMapping(list(ports), {"a": [Uop(a1, 1), Uop(a2, 1)], "b": [Uop(b, 1)]})]
             if all(inverse_throughput(m, e) == t for e, t in obs)]
    found = enumerate_found(truth, exps, kind="fixed-counts", uops_per_insn={"a": 2, "b": 1})
    assert renaming_classes(found, ports) == renaming_classes(every, ports)


# --------------------------------------------------------------------------- end to end, both encodings

@pytest.mark.parametrize("encoding", ["clauses", "bounds"])
@pytest.mark.parametrize("kw", [{}, {"noise_epsilon": 0.02}, {"r_max": 3}])
def test_encodings_infer_the_same_exact_mapping(encoding, kw):
    rng = random.Random(3)
    ports = [f"p{k}" for k in range(4)]
    truth = mapping_2l(ports, [rng.sample(ports, rng.randint(1, 3)) for _ in range(5)])
    res = infer(SimulatedOracle(truth, r_max=kw.get("r_max")), CegisOptions(ports=4, encoding=encoding, **kw))
    assert res.status == "inferred"  # unique, or (R_max) unique up to the equivalents no experiment tells apart
    exps = [Experiment([rng.choice(truth.instructions) for _ in range(rng.randint(1, 6))]) for _ in range(300)]
    r = kw.get("r_max")
    assert all(inverse_throughput(res.mapping, e, r_max=r) == inverse_throughput(truth, e, r_max=r) for e in exps)
    assert (res.stats["backend"] == "sat") == (encoding == "clauses")


@pytest.mark.parametrize("encoding", ["clauses", "bounds"])
def test_conflict_core_is_the_contradiction(encoding):
    """a shares b's port and c's port, but b and c share none: no 2-port mapping; d is innocent
    (the example of test_cegis, on both encodings: the clauses one finds its core in SAT sessions)."""
    ab, ac, bc = Experiment({"a": 1, "b": 1}), Experiment({"a": 1, "c": 1}), Experiment({"b": 1, "c": 1})
    values = {Experiment({"a": 1}): 1.0, Experiment({"b": 1}): 1.0, Experiment({"c": 1}): 1.0, Experiment({"d": 1}): 0.5,
              Experiment({"a": 1, "d": 1}): 1.0, ab: 2.0, ac: 2.0, bc: 1.0}
    res = infer(ListOracle(values), CegisOptions(ports=2, encoding=encoding,
                                                 extra_initial=tuple(e for e in values if e.size == 2)))
    assert res.status == "inconsistent"
    assert {e for e, _ in res.conflict.experiments} == {ab, ac, bc}


def test_sat_session_reads_back_only_the_given_variables_and_names_cores():
    from pmsolve.backends import open_session

    a, b, c = Bool("a"), Bool("b"), Bool("c")
    with open_session("sat") as s:
        s.add(Or(a, b))
        s.add(Implies(a, c))
        s.add(Not(b), name="not b")
        r = s.check(values=[a])
        assert r.feasible and r.model == {"a": True}
        s.add(Not(c), name="not c")
        r = s.check(core=True, values=[a])
        assert r.infeasible and set(r.core) == {"not b", "not c"}
