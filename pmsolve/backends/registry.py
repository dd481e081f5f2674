"""The backend registry: lookup by name, `auto` selection, capability checks, `describe()`.

Selection order: explicit `backend=` argument, else the PMSOLVE_BACKEND environment variable,
else "auto". `auto` takes the first installed backend in AUTO_ORDER[kind] that has every needed
capability. A named backend that is missing or lacks a capability is refused with one
SolverError line saying what is missing and which installed backends would do.

Names are read in any case, and a family's name means its default solver (`ALIASES`: "pysmt"
is pysmt:z3, "smtlib" and "SMT-LIB2" are smtlib:z3, "python-sat" is sat); an unknown name is
refused with the list of names that exist.
"""

from __future__ import annotations

import os
from typing import Callable, Iterable

from pmsolve.backends import capabilities as C
from pmsolve.backends.base import Backend
from pmsolve.errors import SolverError

ENV_VAR = "PMSOLVE_BACKEND"
AUTO = "auto"

_FACTORIES: dict[str, Callable[[], Backend]] = {}
_INSTANCES: dict[str, Backend] = {}

#: other spellings users meet in the documentation (keys lower-case): a family means its default solver
ALIASES = {"pysmt": "pysmt:z3", "smtlib": "smtlib:z3", "smtlib2": "smtlib:z3", "smt-lib": "smtlib:z3",
           "smt-lib2": "smtlib:z3", "python-sat": "sat", "pysat": "sat", "highspy": "highs"}

# preference per problem kind: exact solvers first where the problem is logical, HiGHS for LPs
AUTO_ORDER = {
    C.SAT: ("sat", "z3", "cvc5", "pysmt:z3", "pysmt:cvc5", "highs", "scipy"),
    C.LP: ("highs", "scipy", "z3", "cvc5", "pysmt:z3", "pysmt:cvc5"),
    C.MILP: ("highs", "scipy", "z3", "cvc5", "pysmt:z3", "pysmt:cvc5"),
    C.SMT: ("z3", "cvc5", "pysmt:z3", "pysmt:cvc5", "highs", "scipy"),
}


def register(name: str, factory: Callable[[], Backend]) -> None:
    """Add (or replace) a backend; the factory must not import the solver (that happens lazily).
    Names are kept lower-case (they are looked up in any case)."""
    name = name.strip().lower()
    _FACTORIES[name] = factory
    _INSTANCES.pop(name, None)


def unregister(name: str) -> None:
    name = name.strip().lower()
    _FACTORIES.pop(name, None)
    _INSTANCES.pop(name, None)


def names() -> list[str]:
    return list(_FACTORIES)


def known_names() -> str:
    """The names a user may give, for messages: each backend with its other spellings, and auto."""
    also: dict[str, list[str]] = {}
    for alias, target in ALIASES.items():
        also.setdefault(target, []).append(alias)
    shown = [f"{n} (or {', '.join(also[n])})" if n in also else n for n in _FACTORIES]
    return ", ".join(shown + [AUTO]) + "; any case"


def canonical(name: str, where: str = "") -> str:
    """The registered name (or auto) a spelling means: any case, `ALIASES` resolved; an unknown
    name is refused with the names that exist (`where` says where the name came from)."""
    key = str(name).strip().lower()
    key = ALIASES.get(key, key)
    if key != AUTO and key not in _FACTORIES:
        raise SolverError(f"unknown backend {name!r}{where}; known: {known_names()}")
    return key


def get(name: str) -> Backend:
    """The backend object for a name in any spelling (installed or not); unknown names are refused."""
    name = canonical(name)
    if name == AUTO:
        raise SolverError("'auto' is no backend of its own: it picks one per problem (select)")
    if name not in _INSTANCES:
        try:
            _INSTANCES[name] = _FACTORIES[name]()
        except Exception as exc:  # a broken backend module must not break the registry
            _INSTANCES[name] = BrokenBackend(name, f"{type(exc).__name__}: {exc}")
    return _INSTANCES[name]


class BrokenBackend(Backend):
    """Stands in for a registered backend whose module failed to import."""

    def __init__(self, name: str, error: str) -> None:
        super().__init__()
        self.name = name
        self.summary = "failed to load"
        self._checked = True
        self._import_error = f"its module failed to load ({error})"


def requested_name(backend: str | None) -> str:
    """The backend name in force, as registered: the argument, else $PMSOLVE_BACKEND, else 'auto'."""
    if backend:
        return canonical(backend)
    env = os.environ.get(ENV_VAR, "").strip()
    return canonical(env, f" (from ${ENV_VAR})") if env else AUTO


def _fits(b: Backend, kind: str | None, needs: set[str]) -> bool:
    return (kind is None or C.kind_accepted_by(kind, b.capabilities)) and needs <= b.capabilities


def select(backend: str | None, kind: str | None, needs: Iterable[str]) -> Backend:
    """Resolve a name (or auto) to an installed backend able to take `kind` with `needs`.

    `kind` None means "not known yet" (a session opened without a problem): any kind goes, and
    auto prefers the SMT backends.
    """
    needs = set(needs)
    name = requested_name(backend)
    if name == AUTO:
        for cand in AUTO_ORDER[kind or C.SMT] + tuple(_FACTORIES):
            if cand not in _FACTORIES:
                continue
            b = get(cand)
            if b.installed and _fits(b, kind, needs):
                return b
        want = ", ".join(sorted(needs | {kind or C.SMT}))
        raise SolverError(f"no installed backend can solve a {kind} problem needing {want}; "
                          f"installed: {', '.join(n for n in _FACTORIES if get(n).installed) or 'none'}")
    b = get(name)
    err = b.import_error()
    if err is not None:
        raise SolverError(f"backend {name} is not installed: {err}; install with "
                          f"`pip install {' '.join(b.pip)}` or choose another backend")
    missing = sorted(needs - b.capabilities)
    if kind is not None and not C.kind_accepted_by(kind, b.capabilities):
        missing.insert(0, f"{kind} problems")
    if missing:
        alts = [n for n in _FACTORIES if get(n).installed and _fits(get(n), kind, needs)]
        raise SolverError(f"backend {name} cannot do what this problem needs: "
                          f"{', '.join(missing)} (it has: {', '.join(sorted(b.capabilities))}); "
                          f"installed backends that can: {', '.join(alts) or 'none'}")
    return b


def describe() -> list[dict[str, object]]:
    """One row per registered backend: name, installed, capabilities, pip packages, note."""
    rows = []
    for name in _FACTORIES:
        b = get(name)
        err = b.import_error()
        rows.append({"name": name, "installed": err is None,
                     "capabilities": sorted(b.capabilities), "summary": b.summary,
                     "pip": list(b.pip), "note": err or ""})
    return rows


def format_table(rows: list[dict[str, object]] | None = None) -> str:
    """`describe()` as a fixed-width text table (what `pmsolve backends` prints)."""
    rows = describe() if rows is None else rows
    caps = list(C.ALL)
    header = ["backend", "installed"] + caps + ["route"]
    table = [header]
    for r in rows:
        have = set(r["capabilities"])  # type: ignore[call-overload]
        table.append([str(r["name"]), "yes" if r["installed"] else "no"]
                     + ["x" if c in have else "-" for c in caps] + [str(r["summary"])])
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"{r['name']}: {r['note']} (pip install {' '.join(r['pip'])})"  # type: ignore[arg-type]
             for r in rows if not r["installed"]]
    if notes:
        lines.append("")
        lines.extend(notes)
    return "\n".join(lines)
