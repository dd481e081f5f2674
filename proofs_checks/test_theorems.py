"""Every theorem check holds on its bounded domain, and every mutant of it is caught.

A check that also passed its mutants would be vacuous; these tests make that impossible.
Mutants named ``code:...`` swap a known-wrong variant into pmsolve's own code (not into the
check's reference side), so a check that only compared its reference with itself, or ran the
project's code only where the wrong variants agree, fails here.
The checks themselves live in pmsolve.proofs so that `pmsolve prove` works from an install.
"""

import pytest

from pmsolve.proofs import CHECKS, PENDING, run

STATEMENTS = sorted(CHECKS)
MUTANTS = sorted((name, mutant) for name, check in CHECKS.items() for mutant in check.mutants)


def test_every_issue_statement_has_a_check():
    assert {"thm-3.7", "remark-3.13", "thm-3.14", "thm-4.4", "thm-5.2", "thm-6.3"} <= set(CHECKS)
    assert "anica-domain" in PENDING or "anica-domain" in CHECKS


def test_every_check_has_mutants():
    assert all(len(c.mutants) >= 1 for c in CHECKS.values())


#: remark-3.13 relates two LPs the check writes itself; no pmsolve code decides it
WITHOUT_CODE = {"remark-3.13"}


def test_checks_exercise_pmsolve_code_with_code_mutants():
    for name, check in CHECKS.items():
        code = [m for m in check.mutants if m.startswith("code:")]
        assert set(code) == set(check.patches), name
        assert code or name in WITHOUT_CODE, f"{name} has no mutant of pmsolve's code"


def test_each_part_of_thm_6_3_catches_a_code_mutant():
    exhaustive = run("thm-6.3", "code:bottleneck-intersecting")
    symbolic = run("thm-6.3", "code:encoding-intersecting")
    assert not exhaustive.holds and "6 ports" not in exhaustive.counterexample
    assert not symbolic.holds and "on 6 ports" in symbolic.counterexample   # the SMT part, reached


def test_code_mutants_are_undone_after_the_run():
    import types

    from pmsolve.proofs import Check, Violation
    from pmsolve.proofs.base import patched

    code = types.SimpleNamespace(f=lambda: "right")

    def body(mutant, tally):
        tally.cases += 1
        if code.f() != "right":
            raise Violation(f"got {code.f()}")
        if mutant == "raise":
            raise RuntimeError("boom")

    check = Check("t", "t", "s", "b", "m", body, {"code:wrong": "f is wrong", "raise": "body fails"},
                  {"code:wrong": lambda: patched(code, "f", lambda: "wrong")})
    assert check.run().holds
    verdict = check.run("code:wrong")
    assert not verdict.holds and verdict.counterexample == "got wrong" and code.f() == "right"
    with pytest.raises(RuntimeError):
        check.run("raise")
    assert code.f() == "right"


@pytest.mark.parametrize("name", STATEMENTS)
def test_statement_holds(name):
    v = run(name)
    assert v.holds, v.render()
    assert v.cases > 0


@pytest.mark.parametrize("name,mutant", MUTANTS, ids=[f"{n}:{m}" for n, m in MUTANTS])
def test_mutant_is_caught(name, mutant):
    v = run(name, mutant)
    assert not v.holds, f"mutant {mutant} of {name} passed: the check is vacuous for it\n{v.render()}"
    assert v.counterexample
