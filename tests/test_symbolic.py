"""The IR: construction, normal form, printing, exact evaluation, refusals."""

from fractions import Fraction as F

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pmsolve.errors import ValidationError
from pmsolve.symbolic import (
    And, Bool, Iff, Implies, Int, Not, Or, Problem, Real, Sum, evaluate, ite, same, violations,
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
    f = Implies(b & (x <= 3), Or(n != 2, Not(c)))
    assert str(f) == "(b ∧ (x ≤ 3)) → ((n ≠ 2) ∨ ¬c)"
    assert str(ite(b, x, 0) + 1 >= y) == "ite(b, x, 0) + 1 ≥ y"
    assert str(Iff(b, x == F(1, 3))) == "b ↔ (x = 1/3)"
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
    f = Implies(b, (x < y) | c) & Iff(c, n != 0)
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
    assert same(Not(Not(b)), b)
    assert str(Sum([])) == "0"


# ----------------------------------------------------------------- no silent traps


def test_equality_builds_the_equation():
    p = Problem().add(n == 3).add(x != y)
    assert [str(c) for c in p.constraints] == ["n = 3", "x ≠ y"]
    assert evaluate(p.constraints[0].formula, {"n": 3}) is True
    assert str(Problem().add(b == c).constraints[0]) == "b ↔ c"


def test_comparisons_have_no_truth_value_so_chains_raise():
    with pytest.raises(ValidationError, match="chained comparisons"):
        2 <= x <= 4  # noqa: B015  (Python runs `(2 <= x) and (x <= 4)`)
    with pytest.raises(ValidationError, match="no Python truth value"):
        if x <= 3:
            pass
    with pytest.raises(ValidationError, match="no Python truth value"):
        bool(b & c)


COMPARISONS = {"==": lambda a, v: a == v, "!=": lambda a, v: a != v, "<=": lambda a, v: a <= v,
               "<": lambda a, v: a < v, ">=": lambda a, v: a >= v, ">": lambda a, v: a > v}


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("rhs", [3, "itself", "the same variable made again", "y"])
def test_no_comparison_has_a_truth_value(op, rhs):
    """Issue 40: `"taken" if x == 3 else "not taken"` gave 'not taken' silently, because the
    truth value of `==` was structural identity. Every comparison, on terms as on formulas,
    builds a formula and refuses to be a Python truth value, even where identity would be true."""
    v = Int("v", 0, 10)
    other = {3: 3, "itself": v, "the same variable made again": Int("v", 0, 10), "y": y}[rhs]
    f = COMPARISONS[op](v, other)
    assert str(f).startswith("v ")  # the comparison itself, not a Python bool
    with pytest.raises(ValidationError, match="no Python truth value"):
        "taken" if f else "not taken"  # noqa: B015
    with pytest.raises(ValidationError, match="no Python truth value"):
        bool(COMPARISONS[op](v + 1, other))


@pytest.mark.parametrize("op", ["==", "!="])
def test_formula_equations_have_no_truth_value(op):
    for other in (b, Bool("b"), c, True):
        f = COMPARISONS[op](b, other)
        with pytest.raises(ValidationError, match="no Python truth value"):
            bool(f)
    assert str(COMPARISONS[op](b, c)) == ("b ↔ c" if op == "==" else "¬(b ↔ c)")


def test_nodes_are_keyed_by_ident_and_compared_with_same():
    """`==` builds equations, so a dict of nodes would compare keys with it: nodes refuse to
    hash (one line naming the way out), and `node.ident` is the structural key."""
    again = Real("x", 0, 10)
    with pytest.raises(TypeError, match="node.ident"):
        {x: 1}  # noqa: B018
    with pytest.raises(TypeError, match="node.ident"):
        {b}  # noqa: B018
    assert again is not x and {x.ident: 1}[again.ident] == 1
    assert same(x, again) and not same(x, y) and same(b, Bool("b")) and not same(b, c)
    assert (x + 1).ident in {y.ident, (1 + x).ident}
    assert len({t.ident for t in (x + 1, 1 + x, x + 2)}) == 2


def test_floats_in_equations_are_refused():
    with pytest.raises(ValidationError, match="float"):
        x == 0.5  # noqa: B015


def test_problem_var_finds_variables_and_refuses_unknown_names():
    from pmsolve.errors import UnknownNameError

    p = Problem(name="demo").add(x + n <= 2)
    assert p.var("x") is x
    with pytest.raises(UnknownNameError, match="no variable named 'x2'.*did you mean x"):
        p.var("x2")


def test_sum_equals_chained_addition():
    vs = [Int(f"v{i}", 0, 1) for i in range(50)] + [x, 3, F(1, 2), 2 * x]
    chained = vs[0]
    for v in vs[1:]:
        chained = chained + v
    assert same(Sum(vs), chained)
    assert str(Sum([x, -1 * x, 2])) == "2"


def test_every_visitor_covers_every_node_kind():
    """A new node kind must be handled (or desugared) by every visitor: one place to add it."""
    import pmsolve.backends.linearize  # noqa: F401  (register the visitor classes)
    import pmsolve.backends.sat_backend  # noqa: F401
    import pmsolve.backends.smt_compile  # noqa: F401
    import pmsolve.backends.smtlib  # noqa: F401
    from pmsolve.symbolic.nodes import NODE_KINDS, Node
    from pmsolve.symbolic.visit import MemoVisitor, Visitor

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    visitors = [v for v in subclasses(Visitor) if v is not MemoVisitor]
    assert len(visitors) >= 7
    for v in visitors:
        for kind in (v.covers or NODE_KINDS):
            sugar = NODE_KINDS[kind].desugar is not Node.desugar
            assert kind in v._table or sugar, f"{v.__name__} cannot take {kind} nodes"


def test_desugared_kinds_are_visited_through_their_lowering():
    from pmsolve.symbolic.visit import Visitor, handles

    class Leaves(Visitor):  # knows no implication: it must see ¬b ∨ c
        @handles("or")
        def _or(self, f):
            return [self.visit(a) for a in f.args]

        @handles("not")
        def _not(self, f):
            return "¬" + self.visit(f.arg)

        @handles("bool_var")
        def _var(self, f):
            return f.name

    assert Leaves().visit(Implies(b, c)) == ["¬b", "c"]
    with pytest.raises(ValidationError, match="Leaves has no rule for IR nodes of kind 'and'"):
        Leaves().visit(b & c)
