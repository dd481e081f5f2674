"""The registry of theorem checks: statement, bound, method, mutants, and the verdict type."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Iterator

from pmsolve.errors import ValidationError


class Violation(Exception):
    """Raised by a check body when the statement fails on a case (carries the case)."""


@dataclass
class Tally:
    """What a check body reports: how many cases it covered and how."""

    cases: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Verdict:
    name: str
    title: str
    statement: str
    bound: str
    method: str
    holds: bool
    cases: int
    seconds: float
    mutant: str | None = None
    counterexample: str = ""
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "statement": self.statement, "bound": self.bound,
                "method": self.method, "verdict": "holds" if self.holds else "violated", "cases": self.cases,
                "seconds": round(self.seconds, 3), "mutant": self.mutant, "counterexample": self.counterexample,
                "notes": list(self.notes)}

    def render(self) -> str:
        head = f"{self.name}: {self.title}" + (f"  [MUTANT {self.mutant}]" if self.mutant else "")
        lines = [head, f"  statement: {self.statement}", f"  bound:     {self.bound}",
                 f"  method:    {self.method}"]
        lines += [f"  note:      {n}" for n in self.notes]
        if self.holds:
            lines.append(f"  verdict:   HOLDS on all {self.cases} cases ({self.seconds:.1f} s)")
        else:
            lines.append(f"  verdict:   VIOLATED after {self.cases} cases ({self.seconds:.1f} s)")
            lines.append(f"  counterexample: {self.counterexample}")
        return "\n".join(lines)


Body = Callable[[str | None, Tally], None]
#: a code mutant: a context manager that swaps a deliberately wrong variant into pmsolve's code
Patch = Callable[[], ContextManager[None]]


@contextlib.contextmanager
def patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    """``owner.name = value`` for the duration of a mutant run (a module function, a method)."""
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


@dataclass(frozen=True)
class Check:
    """One theorem statement checked on a bounded domain.

    ``body(mutant, tally)`` raises :class:`Violation` when the statement (or, with a mutant
    name, the deliberately broken variant) fails; ``mutants`` maps each mutant's name to what it
    breaks. Every mutant must be caught, so that the check cannot pass vacuously.

    Two kinds of mutants: those of the check's own reference side (the body reads the mutant
    name), and **code mutants** (named ``code:...``), which break pmsolve's implementation:
    ``patches`` maps each to a context manager that swaps a known-wrong variant into the
    project's code (e.g. ``pmsolve.throughput.bottleneck`` with Facile's pairwise formula) while
    the unchanged body runs. A check earns its place by catching its code mutants: they show
    that it exercises the project's code on a domain where the wrong variants differ.
    """

    name: str
    title: str
    statement: str
    bound: str
    method: str
    body: Body
    mutants: dict[str, str]
    patches: dict[str, Patch] = field(default_factory=dict)

    def __post_init__(self) -> None:
        stray = set(self.patches) - set(self.mutants)
        if stray:
            raise ValidationError(f"check {self.name}: code mutants without a description: {sorted(stray)}")

    def run(self, mutant: str | None = None) -> Verdict:
        if mutant is not None and mutant not in self.mutants:
            raise ValidationError(f"check {self.name} has no mutant {mutant!r}; it has: {', '.join(self.mutants)}")
        tally = Tally()
        t0 = time.perf_counter()
        swap = self.patches.get(mutant or "", contextlib.nullcontext)
        try:
            with swap():
                self.body(mutant, tally)
        except Violation as exc:
            return Verdict(self.name, self.title, self.statement, self.bound, self.method, False, tally.cases,
                           time.perf_counter() - t0, mutant, str(exc), tuple(tally.notes))
        return Verdict(self.name, self.title, self.statement, self.bound, self.method, True, tally.cases,
                       time.perf_counter() - t0, mutant, "", tuple(tally.notes))


CHECKS: dict[str, Check] = {}
#: statements whose check is waiting for another part of pmsolve: name -> what it needs
PENDING: dict[str, str] = {}


def register(check: Check) -> Check:
    """Add a check (the hook for later issues, e.g. AnICA's Def. 8.2 domain conditions)."""
    CHECKS[check.name] = check
    PENDING.pop(check.name, None)
    return check


def get(name: str) -> Check:
    if name in CHECKS:
        return CHECKS[name]
    if name in PENDING:
        raise ValidationError(f"check {name} is not available yet: {PENDING[name]}")
    raise ValidationError(f"unknown check {name!r}; known: {', '.join(list(CHECKS) + list(PENDING))}")
