"""`Problem`: variables, (optionally named) constraints and an optional linear objective."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterable

from pmsolve.errors import UnknownNameError, ValidationError
from pmsolve.symbolic import nodes as n
from pmsolve.symbolic.walk import Var, has_ite, iter_vars


@dataclass(frozen=True)
class Constraint:
    """A formula asserted by a problem; `name` makes it trackable in unsat cores."""

    formula: n.Formula
    name: str | None = None

    def __str__(self) -> str:
        return f"[{self.name}] {self.formula}" if self.name else str(self.formula)


@dataclass(frozen=True)
class Objective:
    sense: str  # "min" or "max"
    term: n.Lin

    def __post_init__(self) -> None:
        if self.sense not in ("min", "max"):
            raise ValidationError(f"objective sense must be 'min' or 'max', not {self.sense!r}")

    def __str__(self) -> str:
        return f"{'minimise' if self.sense == 'min' else 'maximise'} {self.term}"


@dataclass
class Problem:
    """A constraint system in the IR; encodings build it, backends compile it.

    `strict_margin`, when set, is a positive number the encoding guarantees to separate the two
    sides of every strict real comparison (`<`, `>`, `≠`) in any solution that matters; the MILP
    linearisation needs it because MILP solvers have no strict inequalities. SMT backends ignore it.
    Variables are handles: take them from the encoding that made them, or look one up by name
    with `var(name)`, which refuses names the problem does not use.
    """

    constraints: list[Constraint] = field(default_factory=list)
    objective: Objective | None = None
    declared: list[Var] = field(default_factory=list)
    strict_margin: Fraction | None = None
    name: str = "problem"

    def add(self, formula: object, name: str | None = None) -> "Problem":
        """Assert a formula (or an iterable of formulas); named ones can appear in unsat cores."""
        if not isinstance(formula, (n.Formula, bool)) and isinstance(formula, Iterable):
            for f in formula:
                self.add(f)
            return self
        f = n.as_formula(formula)
        names = self._names()
        if name is not None:
            if name in names:
                raise ValidationError(f"a constraint named {name!r} already exists")
            names.add(name)
        self.constraints.append(Constraint(f, name))
        self.__dict__["_name_cache"] = (id(self.constraints), len(self.constraints), names)
        return self

    def _names(self) -> set[str]:
        """Names of the constraints, cached while `constraints` (which callers may edit) keeps
        its identity and length, so adding n named constraints stays linear."""
        cache = self.__dict__.get("_name_cache")
        if cache is None or cache[:2] != (id(self.constraints), len(self.constraints)):
            names = {c.name for c in self.constraints if c.name is not None}
            cache = (id(self.constraints), len(self.constraints), names)
            self.__dict__["_name_cache"] = cache
        return cache[2]

    def declare(self, *variables: Var) -> "Problem":
        """Make variables part of the problem (and of every model) even if no constraint uses them."""
        self.declared.extend(variables)
        return self

    def minimize(self, term: object) -> "Problem":
        self.objective = Objective("min", n.as_term(term))
        return self

    def maximize(self, term: object) -> "Problem":
        self.objective = Objective("max", n.as_term(term))
        return self

    minimise, maximise = minimize, maximize

    def variables(self) -> list[Var]:
        """All variables, sorted by name; two different variables sharing a name are refused."""
        return collect_variables(self.roots())

    def var(self, name: str) -> Var:
        """The problem's variable called `name`; unknown names raise (with the closest ones)."""
        by_name = {v.name: v for v in self.variables()}
        if name not in by_name:
            close = difflib.get_close_matches(name, list(by_name), n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownNameError(f"problem {self.name!r} has no variable named {name!r}{hint}")
        return by_name[name]

    def roots(self) -> list[object]:
        out: list[object] = list(self.declared)
        out.extend(c.formula for c in self.constraints)
        if self.objective is not None:
            out.append(self.objective.term)
        return out

    def has_ite(self) -> bool:
        return any(has_ite(r) for r in self.roots())

    def __str__(self) -> str:
        lines = [f"; {self.name}"]
        for v in self.variables():
            lines.append(declaration_str(v))
        lines.extend(str(c) for c in self.constraints)
        if self.objective is not None:
            lines.append(str(self.objective))
        return "\n".join(lines)


def declaration_str(v: Var) -> str:
    if isinstance(v, n.BoolVar):
        return f"{v.name}: Bool"
    lo = "-∞" if v.lo is None else str(v.lo)
    hi = "∞" if v.hi is None else str(v.hi)
    return f"{v.name}: {v.sort.value} in [{lo}, {hi}]"


def collect_variables(roots: Iterable[object]) -> list[Var]:
    by_name: dict[str, Var] = {}
    for root in roots:
        for v in iter_vars(root):
            old = by_name.setdefault(v.name, v)
            if old is not v and (old.kind != v.kind or old.key != v.key):
                raise ValidationError(
                    f"two different variables are named {v.name!r}: {declaration_str(old)} and "
                    f"{declaration_str(v)}"
                )
    return [by_name[k] for k in sorted(by_name)]
