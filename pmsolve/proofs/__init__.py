"""Theorem statements of the dissertation checked on bounded domains (``pmsolve prove``).

    from pmsolve.proofs import CHECKS, run
    verdict = run("thm-5.2")               # the statement itself: must hold
    broken = run("thm-5.2", mutant="facile-pairs")   # a deliberately broken variant: must fail
    code = run("thm-5.2", mutant="code:facile-pairs")  # pmsolve's bottleneck broken for the run: must fail

Each :class:`Check` carries its statement, the bounded domain, the method (exhaustive
enumeration with exact arithmetic, LPs through a backend, or SMT over symbolic mappings) and
mutants; ``proofs_checks/`` runs every check and every mutant. Later issues add checks with
:func:`register` (the AnICA domain conditions of Def. 8.2 live in ``anica_domain``).
"""

from pmsolve.proofs import checks as _checks  # noqa: F401  (registers the checks)
from pmsolve.proofs import anica_domain as _anica_domain  # noqa: F401  (Def. 8.2, registers 'anica-domain')
from pmsolve.proofs.base import CHECKS, PENDING, Check, Tally, Verdict, Violation, get, register


def run(name: str, mutant: str | None = None) -> Verdict:
    """Run one check (or one of its mutants) and return the verdict."""
    return get(name).run(mutant)


__all__ = ["CHECKS", "PENDING", "Check", "Tally", "Verdict", "Violation", "get", "register", "run"]
