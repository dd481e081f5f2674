"""Every theorem check holds on its bounded domain, and every mutant of it is caught.

A check that also passed its mutants would be vacuous; these tests make that impossible.
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
