"""Big-M linearisation: random formulas get the same answer via MILP (HiGHS, scipy) and SMT (z3)."""

from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmsolve.backends import get, solve
from pmsolve.backends.linearize import linearize
from pmsolve.errors import SolverError
from pmsolve.symbolic import (
    And, Bool, Iff, Implies, Int, Not, Or, Problem, Real, Sum, evaluate, ite,
)

X, Y = Int("x", -3, 3), Int("y", 0, 4)
R = Real("r", 0, 2)
BOOLS = [Bool("a"), Bool("b")]
MILP = [b for b in ("highs", "scipy") if get(b).installed]


def int_terms():
    base = st.sampled_from([X.lin(), Y.lin(), X + Y, X - 2 * Y, 3 * X + 1])
    return st.recursive(base, lambda inner: st.builds(ite, formulas(1), inner, inner), max_leaves=3)


def formulas(depth=3):
    atom = st.one_of(
        st.sampled_from(BOOLS),
        st.builds(lambda t, op, c: {"=": t.eq, "!=": t.ne, "<=": t.__le__, "<": t.__lt__,
                                    ">=": t.__ge__, ">": t.__gt__}[op](c),
                  st.sampled_from([X.lin(), Y.lin(), X + Y, 2 * X - Y]),
                  st.sampled_from(["=", "!=", "<=", "<", ">=", ">"]), st.integers(-4, 4)),
    )
    if depth == 0:
        return atom
    sub = formulas(depth - 1)
    return st.one_of(
        atom, st.builds(Not, sub), st.builds(lambda a, b: And(a, b), sub, sub),
        st.builds(lambda a, b: Or(a, b), sub, sub), st.builds(Implies, sub, sub),
        st.builds(Iff, sub, sub),
    )


@st.composite
def problems(draw):
    p = Problem()
    p.add(draw(formulas()))
    if draw(st.booleans()):
        p.add(draw(formulas(2)))
    if draw(st.booleans()):  # a real constraint in positive position, through ite
        t = draw(int_terms())
        p.add(R * 2 + ite(draw(formulas(1)), t, R) <= draw(st.integers(-2, 6)))
    if draw(st.booleans()):
        p.minimize(draw(int_terms()) + R)
    return p


@pytest.mark.skipif(not MILP or not get("z3").installed, reason="needs z3 and a MILP backend")
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems())
def test_milp_route_agrees_with_smt(problem):
    smt = solve(problem, "z3")
    for backend in MILP:
        milp = solve(problem, backend)
        assert milp.status == smt.status, (backend, str(problem))
        assert milp.objective == smt.objective, (backend, str(problem))


def test_linearised_literal_of_an_equality_is_exact_both_ways():
    """(x = 1) ↔ b with integer x: b must be true exactly when x = 1."""
    b = Bool("b")
    for value, expect in ((1, True), (0, False), (3, False)):
        p = Problem().add(Iff(X == 1, b)).add(X == value)
        for backend in MILP:
            assert solve(p, backend).model["b"] is expect


def test_columns_for_ite_have_bounds_from_branches():
    m = linearize(Problem().add(ite(BOOLS[0], X, 2 * Y + 1) <= 5))
    aux = [c for c in m.columns if c.name.startswith("_ite")]
    assert len(aux) == 1 and (aux[0].lo, aux[0].hi) == (F(-3), F(9)) and aux[0].integer


def test_unbounded_ite_branch_is_refused_with_the_variable_named():
    free = Real("free")
    with pytest.raises(SolverError, match="bounds .*: free"):
        linearize(Problem().add(ite(BOOLS[0], free, 0) <= 1))


def test_evaluator_agrees_with_validated_models():
    p = Problem().add(Or(X > 1, Y == 0)).add(Sum([X, Y]) <= 2)
    for backend in MILP + ["z3"]:
        r = solve(p, backend)
        assert all(evaluate(c.formula, r.model) for c in p.constraints)


@pytest.mark.skipif(not get("z3").installed, reason="needs z3")
def test_z3_optimum_is_proved_not_taken_from_optimize():
    """z3 5.4's Optimize reports 1 - ε (model worth 1/2) here; the attained optimum is 0."""
    p = Problem()
    p.add(2 * X - Y >= -1)
    p.minimize(R + Y)
    r = solve(p, "z3")
    assert r.status == "sat" and r.objective == 0
    q = Problem()     # an optimum that is not attained stays unknown, never a wrong number
    q.add(R > 0)
    q.minimize(R.lin())
    assert solve(q, "z3").status == "unknown"


@pytest.mark.skipif(not get("z3").installed, reason="needs z3")
def test_z3_reaches_an_optimum_whose_objective_mixes_int_and_real():
    # drawn by CI's hypothesis run: z3.Optimize reported -ε, and improving a real variable a
    # little at a time did not reach the optimum -1 in 100 steps
    p = Problem()
    p.add(Not((X + Y).eq(0)))
    p.add(2 * X - Y >= -3)
    p.minimize(R + X + Y)
    got = solve(p, "z3")
    assert got.status == "sat" and got.objective == -1
    for backend in MILP:
        assert solve(p, backend).objective == -1
