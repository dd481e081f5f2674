"""The IR: construction, normal form, printing, exact evaluation, refusals."""

from fractions import Fraction as F

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pmsolve.errors import ValidationError
from pmsolve.symbolic import (
    And, Bool, Iff, Implies, Int, Not, Or, Problem, Real, Sum, evaluate, ite, violations,
)

x, y = Real("x", 0, 10), Real("y")
n = Int("n", -3, 3)
b, c = Bool("b"), Bool("c")


def test_linear_terms_are_normalised():
    t = 2 * x + y - x + F(1, 2) - y
    assert str(t) == "x + 1/2"
    assert (x - x + 0).is_constant
    assert str(3 * (x + 2 * n) / 6 - 1) == "n + 1/2*x - 1"


def test_printing_is_infix_and_readable():
    f = Implies(b & (x <= 3), Or(n.ne(2), Not(c)))
    assert str(f) == "(b ∧ (x ≤ 3)) → ((n ≠ 2) ∨ ¬c)"
    assert str(ite(b, x, 0) + 1 >= y) == "ite(b, x, 0) + 1 ≥ y"
    assert str(Iff(b, x.eq(F(1, 3)))) == "b ↔ (x = 1/3)"
    p = Problem(name="demo").add(x + y <= 1, name="cap")
    p.minimize(x)
    assert str(p).splitlines() == [
        "; demo", "x: Real in [0, 10]", "y: Real in [-∞, ∞]", "[cap] x + y ≤ 1", "minimise x"]


def test_sorts_follow_coefficients():
    assert (2 * n + 1).sort.value == "Int"
    assert (n / 2).sort.value == "Real"
    assert (n + x).sort.value == "Real"
    assert ite(b, n, 1).sort.value == "Int"


@given(st.fractions(), st.fractions(), st.integers(-3, 3), st.booleans(), st.booleans())
def test_evaluate_matches_python_semantics(vx, vy, vn, vb, vc):
    env = {"x": vx, "y": vy, "n": vn, "b": vb, "c": vc}
    t = 3 * x - F(1, 2) * y + ite(b, n, 2 * x) - 7
    expect = 3 * vx - vy / 2 + (vn if vb else 2 * vx) - 7
    assert evaluate(t, env) == expect
    f = Implies(b, (x < y) | c) & Iff(c, n.ne(0))
    assert evaluate(f, env) == (((not vb) or vx < vy or vc) and (vc == (vn != 0)))


def test_floats_and_nonlinear_products_are_refused():
    with pytest.raises(ValidationError, match="float"):
        x + 0.5
    with pytest.raises(ValidationError, match="linear"):
        x * y
    with pytest.raises(ValidationError, match="empty bounds"):
        Real("z", 2, 1)


def test_two_variables_with_one_name_are_refused():
    p = Problem().add(Real("v", 0, 1) <= 1).add(Int("v") >= 0)
    with pytest.raises(ValidationError, match="two different variables"):
        p.variables()


def test_violations_reports_bounds_integrality_and_constraints():
    p = Problem().add(x + n <= 2, name="cap")
    assert violations(p, {"x": F(1), "n": 1}) == []
    assert violations(p, {"x": F(1), "n": 2}) == ["violated cap: n + x ≤ 2"]
    assert "not an integer" in violations(p, {"x": F(0), "n": F(1, 2)})[0]
    assert "above its upper bound" in violations(p, {"x": F(11), "n": 0})[0]


def test_and_or_simplify_constants_and_flatten():
    assert str(And(b, True, And(c, b))) == "b ∧ c ∧ b"
    assert str(Or(b, True)) == "true"
    assert str(And()) == "true" and str(Or()) == "false"
    assert Not(Not(b)) == b
    assert str(Sum([])) == "0"
