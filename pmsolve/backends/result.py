"""What a backend returns: status, a validated exact model, objective value, unsat core."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Union

Value = Union[bool, int, Fraction]

SAT, UNSAT, UNKNOWN, OPTIMAL, INFEASIBLE, UNBOUNDED = (
    "sat", "unsat", "unknown", "optimal", "infeasible", "unbounded",
)
STATUSES = (SAT, UNSAT, UNKNOWN, OPTIMAL, INFEASIBLE, UNBOUNDED)


@dataclass(frozen=True)
class Result:
    """Outcome of one check.

    Satisfiability problems end `sat`/`unsat`, optimisation problems `optimal`/`infeasible`/
    `unbounded`; `unknown` (timeout, solver gave up) carries a `reason`. `model` maps variable
    names to bool / int / Fraction and has been checked against every constraint with the IR
    evaluator. `exact` is False only when a floating-point solver's real values could not be
    rationalised to an exactly satisfying model and were accepted within `tolerance` instead.
    `objective` is the exact value of the returned model; exact solvers (z3) prove it optimal,
    floating ones (HiGHS, scipy) certify optimality only up to their own tolerances.
    """

    status: str
    backend: str
    model: dict[str, Value] = field(default_factory=dict)
    objective: Fraction | None = None
    core: tuple[str, ...] = ()
    exact: bool = True
    reason: str = ""

    @property
    def feasible(self) -> bool:
        """True when a (validated) model exists."""
        return self.status in (SAT, OPTIMAL)

    @property
    def infeasible(self) -> bool:
        return self.status in (UNSAT, INFEASIBLE)

    def __getitem__(self, name: str) -> Value:
        return self.model[name]

    def __str__(self) -> str:
        parts = [f"{self.status} ({self.backend})"]
        if self.objective is not None:
            parts.append(f"objective {self.objective}")
        if self.core:
            parts.append("core " + ", ".join(self.core))
        if self.reason:
            parts.append(self.reason)
        return "; ".join(parts)
