"""What a backend returns: status, a validated exact model, objective value, unsat core.

The status words are one set for every problem (as z3's Solver and Optimize use them):

* ``sat`` -- a model exists and is returned (for an objective: an optimal one);
* ``unsat`` -- no model exists (an LP/MILP solver's "infeasible");
* ``unknown`` -- the solver gave up (timeout, incompleteness); ``reason`` says why;
* ``unbounded`` -- the constraints hold but the objective has no finite optimum.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Union

from pmsolve.symbolic.evaluate import evaluate
from pmsolve.symbolic.nodes import BoolVar, Node, NumVar

Value = Union[bool, int, Fraction]

SAT, UNSAT, UNKNOWN, UNBOUNDED = "sat", "unsat", "unknown", "unbounded"
STATUSES = (SAT, UNSAT, UNKNOWN, UNBOUNDED)


@dataclass(frozen=True)
class Result:
    """Outcome of one check (status words: module doc).

    `model` maps variable names to bool / int / Fraction and has been checked against every
    constraint with the IR evaluator; index the result with a variable, a term or a formula
    (``r[x]``, ``r[enc.t]``, ``r[x + y <= 3]``) or a name. `exact` is False only when a
    floating-point solver's real values could not be rationalised to an exactly satisfying
    model and were accepted within `tolerance` instead. `objective` is the exact value of the
    returned model; exact solvers (z3) prove it optimal, floating ones (HiGHS, scipy) certify
    optimality only up to their own tolerances.
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
        """True when a (validated) model exists: status sat."""
        return self.status == SAT

    @property
    def infeasible(self) -> bool:
        """True when no model exists: status unsat."""
        return self.status == UNSAT

    def __getitem__(self, key: str | Node) -> Value:
        """The value of a variable (or its name), term or formula in the model."""
        if isinstance(key, str):
            return self.model[key]
        if isinstance(key, (NumVar, BoolVar)) and key.name in self.model:
            return self.model[key.name]
        return evaluate(key, self.model)

    def __str__(self) -> str:
        parts = [f"{self.status} ({self.backend})"]
        if self.objective is not None:
            parts.append(f"objective {self.objective}")
        if self.core:
            parts.append("core " + ", ".join(self.core))
        if self.reason:
            parts.append(self.reason)
        return "; ".join(parts)

    def __repr__(self) -> str:
        shown = list(self.model.items())[:MODEL_SHOWN]
        body = ", ".join(f"{k} = {_fmt(v)}" for k, v in shown)
        if len(self.model) > MODEL_SHOWN:
            body += f", … ({len(self.model) - MODEL_SHOWN} more)"
        model = f" {{{body}}}" if self.model else ""
        return f"<Result {self}{model}>"


MODEL_SHOWN = 20


def _fmt(v: Value) -> str:
    if isinstance(v, Fraction):
        return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"
    return str(v)
