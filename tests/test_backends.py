"""Backends: differential testing on a shared corpus, push/pop, cores, registry behaviour."""

import subprocess
import sys
from fractions import Fraction as F

import pytest

from pmsolve.backends import (
    canonical, capabilities as C, describe, format_table, get, names, open_session, register, solve,
    unregister,
)
from pmsolve.backends.base import Backend, RawResult, ReplayEngine
from pmsolve.errors import SolverError
from pmsolve.symbolic import Bool, Implies, Int, Not, Or, Problem, Real, Sum, ite

INSTALLED = [n for n in names() if get(n).installed]


def lp_appendix_b():
    x, y = Real("x"), Real("y", 0)
    return Problem(name="App. B LP").add(3 * x - 4 >= y).minimize(x + y), "sat", F(4, 3)


def ilp_appendix_b():
    x, y = Int("x", -10, 10), Int("y", 0, 10)
    return Problem(name="App. B ILP").add(3 * x - 4 >= y).minimize(x + y), "sat", F(2)


def infeasible_lp():
    x = Real("x")
    return Problem(name="infeasible LP").add(x >= 2).add(x <= 1).minimize(x), "unsat", None


def smt_appendix_b(extra: bool):
    x, y = Int("x", -10, 10), Int("y", -10, 11)
    p = Problem(name="App. B SMT").add(Implies(x >= 0, y == x + 1)).add(Implies(Not(x >= 0), y == 0))
    if extra:
        p.add(y <= x)
    return p, "unsat" if extra else "sat", None


def mixed_sat():
    b, c = Bool("b"), Bool("c")
    t, n = Real("t", 0, 4), Int("n", 0, 3)
    p = Problem(name="mixed").add(Sum([ite(b, t, 0), ite(c, n, 1)]) == F(7, 2))
    p.add(Or(b, c)).add(n != 2).add(Implies(c, t <= 2))
    return p, "sat", None


def mixed_unsat():
    p, _, _ = mixed_sat()
    p.add(Not(Bool("b")))  # then ite(c, n, 1) = 7/2 with integer n: impossible
    return p, "unsat", None


def pigeons(holes: int, birds: int):
    v = {(i, h): Bool(f"in[{i},{h}]") for i in range(birds) for h in range(holes)}
    p = Problem(name=f"php {birds}->{holes}")
    for i in range(birds):
        p.add(Or(v[i, h] for h in range(holes)))
    for h in range(holes):
        for i in range(birds):
            for j in range(i + 1, birds):
                p.add(Or(Not(v[i, h]), Not(v[j, h])))
    return p, "sat" if birds <= holes else "unsat", None


def knapsack():
    items = {"a": (3, 4), "b": (4, 5), "c": (2, 3), "d": (5, 8)}  # weight, value
    take = {k: Bool(f"take[{k}]") for k in items}
    p = Problem(name="knapsack")
    p.add(Sum(ite(take[k], w, 0) for k, (w, _) in items.items()) <= 9)
    p.maximize(Sum(ite(take[k], v, 0) for k, (_, v) in items.items()))
    return p, "sat", F(13)  # b + d = 13 (weight 9)


def strict_ints():
    n, m = Int("n", -5, 5), Int("m", -5, 5)
    p = Problem(name="strict ints").add(n < m).add(m < 1).add(n != -5).minimize(n + m)
    return p, "sat", F(-7)  # n = -4, m = -3


CORPUS = {
    "lp": lp_appendix_b, "ilp": ilp_appendix_b, "infeasible": infeasible_lp,
    "smt-sat": lambda: smt_appendix_b(False), "smt-unsat": lambda: smt_appendix_b(True),
    "mixed-sat": mixed_sat, "mixed-unsat": mixed_unsat, "php-sat": lambda: pigeons(3, 3),
    "php-unsat": lambda: pigeons(3, 4), "knapsack": knapsack, "strict-ints": strict_ints,
}


def accepts(backend: str, problem: Problem) -> bool:
    caps = get(backend).capabilities
    if problem.objective is not None and C.OPTIMIZE not in caps:
        return False
    return C.kind_accepted_by(C.problem_kind(problem), caps)


@pytest.mark.parametrize("backend", INSTALLED)
@pytest.mark.parametrize("case", sorted(CORPUS))
def test_corpus_answers_agree(backend, case):
    problem, status, objective = CORPUS[case]()
    if not accepts(backend, problem):
        with pytest.raises(SolverError, match=f"backend {backend} cannot do"):
            solve(problem, backend)
        return
    res = solve(problem, backend)
    assert res.status == status, res
    assert res.objective == objective
    assert res.backend == backend
    if res.feasible:
        assert res.exact


def test_every_corpus_problem_is_solved_by_at_least_three_backends():
    for case, make in CORPUS.items():
        p = make()[0]
        assert sum(accepts(b, p) for b in INSTALLED) >= 3, case


@pytest.mark.parametrize("backend", INSTALLED)
def test_push_pop(backend):
    """Native push/pop where the solver has it, replay elsewhere: same answers."""
    b = Bool("b")
    boolean_only = not (get(backend).capabilities & {C.SMT, C.MILP})
    x = Bool("x4") if boolean_only else Int("x", 0, 5)
    at_least_2, at_most_1, at_least_4 = ((x, Not(x), x) if boolean_only else (x >= 2, x <= 1, x >= 4))
    with open_session(backend) as s:
        s.add(at_least_2)
        s.add(Implies(b, Not(x) if boolean_only else x <= 3))
        s.push()
        s.add(at_most_1)
        assert s.check().status == "unsat"
        s.pop()
        s.push()
        s.add(b)
        assert s.check().status == ("unsat" if boolean_only else "sat")
        s.pop()
        s.add(at_least_4)
        r = s.check()
        assert r.status == "sat" and r.model["b"] is False
        assert r.model["x4"] is True if boolean_only else r.model["x"] >= 4
        with pytest.raises(SolverError, match="cannot pop"):
            s.pop()


@pytest.mark.parametrize("backend", [b for b in INSTALLED if C.UNSAT_CORE in get(b).capabilities])
def test_unsat_core_names_a_conflicting_subset(backend):
    a, b, c = Bool("a"), Bool("b"), Bool("c")
    p = Problem().add(Or(a, b), name="a|b").add(Not(a), name="!a").add(Not(b), name="!b")
    p.add(c, name="c")
    res = solve(p, backend, core=True)
    assert res.status == "unsat"
    assert set(res.core) == {"a|b", "!a", "!b"}


def test_core_request_refused_where_unsupported():
    p, _, _ = pigeons(2, 3)
    with pytest.raises(SolverError, match="backend highs cannot do .*unsat_core"):
        solve(p, "highs", core=True)


def test_capability_mismatch_messages_name_the_gap_and_alternatives():
    p, _, _ = knapsack()
    with pytest.raises(SolverError) as e:
        solve(p, "cvc5")
    msg = str(e.value)
    assert "backend cvc5 cannot do what this problem needs: optimize" in msg
    assert "z3" in msg and "\n" not in msg
    with pytest.raises(SolverError, match="backend sat cannot do .*smt problems"):
        solve(mixed_sat()[0], "sat")
    with pytest.raises(SolverError, match="unknown backend 'nope'"):
        solve(p, "nope")


def test_missing_bounds_and_strictness_refused_by_the_milp_route():
    x = Real("x")
    with pytest.raises(SolverError, match="finite .* bound .*give these variables bounds.*: x"):
        solve(Problem().add(Or(x >= 1, x <= -1)), "highs")
    with pytest.raises(SolverError, match="strict comparison over reals"):
        solve(Problem().add(Real("y", 0, 1) > 0), "scipy")
    r = solve(Problem(strict_margin=F(1, 100)).add(Real("y", 0, 1) > 0), "highs")
    assert r.status == "sat" and r.model["y"] > 0


class _NoSolver(Backend):
    name = "nosolver"
    summary = "a solver whose module is not installed"
    capabilities = frozenset({C.SMT})
    modules = ("pmsolve_test_no_such_solver_module",)
    pip = ("no-such-solver",)


def _broken_factory():
    import pmsolve_test_no_such_backend_module  # noqa: F401  (the import is what fails)


def test_missing_solver_is_reported_not_crashed():
    register("nosolver", _NoSolver)
    register("broken", _broken_factory)
    try:
        rows = {r["name"]: r for r in describe()}
        assert rows["nosolver"]["installed"] is False
        assert "pmsolve_test_no_such_solver_module" in rows["nosolver"]["note"]
        assert rows["broken"]["installed"] is False
        assert "nosolver" in format_table() and "pip install no-such-solver" in format_table()
        p, _, _ = smt_appendix_b(False)
        with pytest.raises(SolverError, match="backend nosolver is not installed: cannot import"):
            solve(p, "nosolver")
        with pytest.raises(SolverError, match="backend broken is not installed"):
            solve(p, "broken")
        assert solve(p).status == "sat"  # auto skips them
    finally:
        unregister("nosolver")
        unregister("broken")


class _LyingBackend(Backend):
    """A deliberately broken solver route: claims sat with a model that violates the problem."""

    name = "liar"
    capabilities = frozenset({C.SMT})

    def engine(self, timeout, options):
        return ReplayEngine(lambda problem, core: RawResult("sat", {"x": 7}))


def test_models_are_validated_before_use():
    register("liar", _LyingBackend)
    try:
        with pytest.raises(SolverError, match="liar returned a model that violates .*x ≤ 5"):
            solve(Problem().add(Int("x", 0, 10) <= 5), "liar")
    finally:
        unregister("liar")


class _LyingPartialEngine(ReplayEngine):
    """Lies only on the partial-read path that incremental CEGIS uses (check(values=…))."""

    def check_values(self, variables, core):
        return RawResult("sat", {v.name: 7 for v in variables})


class _LyingPartialBackend(_LyingBackend):
    name = "partial-liar"

    def engine(self, timeout, options):
        return _LyingPartialEngine(lambda problem, core: RawResult("unknown"))


def test_partial_reads_are_validated_too():
    register("partial-liar", _LyingPartialBackend)
    try:
        x, y = Int("x", 0, 10), Int("y", 0, 10)
        with open_session("partial-liar") as s:
            s.add(x + y <= 5)
            with pytest.raises(SolverError, match="partial-liar returned a model that violates .*x \\+ y ≤ 5"):
                s.check(values=[x])
    finally:
        unregister("partial-liar")


def test_results_are_indexed_by_variable_or_expression():
    x, b = Int("x", 0, 10), Bool("b")
    r = solve(Problem().add(x == 3).add(b), "z3")
    assert r[x] == 3 and r["x"] == 3 and r[b] is True
    assert r[2 * x + 1] == 7 and r[x >= 3] is True
    assert repr(r) == "<Result sat (z3) {b = True, x = 3}>"


def test_environment_variable_chooses_the_backend(monkeypatch):
    monkeypatch.setenv("PMSOLVE_BACKEND", "cvc5")
    p, _, _ = smt_appendix_b(False)
    assert solve(p).backend == "cvc5"


@pytest.mark.parametrize("spelling, name", [("Z3", "z3"), ("HiGHS", "highs"), ("pysmt", "pysmt:z3"),
                                            ("PySMT:CVC5", "pysmt:cvc5"), ("smtlib", "smtlib:z3"),
                                            ("SMT-LIB2", "smtlib:z3"), ("python-sat", "sat"), ("AUTO", "auto")])
def test_backend_names_are_read_in_any_case_and_families_mean_their_default_solver(spelling, name):
    """Issue 40: the README lists "pysmt" and "SMT-LIB2", but only pysmt:z3 and smtlib:z3 were
    accepted, and "Z3" was refused."""
    assert canonical(spelling) == name
    if name != "auto":
        assert get(spelling).name == name
    if name in INSTALLED and C.SMT in get(name).capabilities:
        assert solve(smt_appendix_b(False)[0], spelling).backend == name


def test_an_unknown_backend_name_is_refused_with_the_names_that_exist(monkeypatch):
    with pytest.raises(SolverError, match=r"unknown backend 'gurobi'; known: z3, cvc5, pysmt:z3 \(or pysmt\)"):
        solve(lp_appendix_b()[0], "gurobi")
    monkeypatch.setenv("PMSOLVE_BACKEND", "nope")
    with pytest.raises(SolverError, match=r"'nope' \(from \$PMSOLVE_BACKEND\).*smtlib:z3 \(or smtlib"):
        solve(lp_appendix_b()[0])
    monkeypatch.setenv("PMSOLVE_BACKEND", "Cvc5")
    p, _, _ = smt_appendix_b(False)
    assert solve(p).backend == "cvc5"


def test_auto_picks_by_problem_kind():
    assert solve(lp_appendix_b()[0]).backend == "highs"
    assert solve(pigeons(2, 2)[0]).backend == "sat"
    assert solve(mixed_sat()[0]).backend == "z3"


@pytest.mark.parametrize("backend", [b for b in ("z3", "sat", "cvc5", "pysmt:z3", "pysmt:cvc5", "smtlib:z3")
                                     if b in INSTALLED])
def test_timeout_gives_unknown(backend):
    import time

    p, _, _ = pigeons(10, 11)
    start = time.monotonic()
    res = solve(p, backend, timeout=0.2)
    assert res.status == "unknown"
    assert time.monotonic() - start < 10


def test_import_pmsolve_loads_no_solver():
    code = ("import sys, pmsolve, pmsolve.symbolic, pmsolve.backends, pmsolve.encodings; "
            "print(sorted(m for m in ('z3', 'cvc5', 'highspy', 'pysmt', 'pysat') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_describe_rows_and_table():
    rows = describe()
    assert {r["name"] for r in rows} >= {"z3", "cvc5", "pysmt:z3", "pysmt:cvc5", "highs",
                                         "scipy", "sat", "smtlib:z3"}
    table = format_table(rows)
    assert table.splitlines()[0].split()[:3] == ["backend", "installed", "lp"]
    assert all(r["name"] in table for r in rows)


def test_auto_degrades_when_a_solver_cannot_be_imported():
    """Block `import z3` in a fresh interpreter: pmsolve imports, lists z3 as missing, uses cvc5."""
    code = (
        "import sys; sys.modules['z3'] = None\n"
        "import pmsolve\n"
        "from pmsolve.backends import describe, solve\n"
        "from pmsolve.symbolic import Bool, Int, Implies, Problem\n"
        "rows = {r['name']: r for r in describe()}\n"
        "print(rows['z3']['installed'], rows['pysmt:z3']['installed'])\n"
        "x = Int('x', 0, 3)\n"
        "print(solve(Problem().add(Implies(Bool('b'), x > 2)).add(Bool('b'))).backend)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    assert lines[:2] == ["False", "False"]
    assert lines[2] == ("cvc5" if get("cvc5").installed else "highs")
