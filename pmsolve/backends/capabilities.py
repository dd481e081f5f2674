"""Capability names, and what a given problem needs from a backend."""

from __future__ import annotations

from pmsolve.symbolic import nodes as n
from pmsolve.symbolic.problem import Problem
from pmsolve.symbolic.walk import conjuncts

LP = "lp"  # linear programs over reals: conjunctions of non-strict comparisons
MILP = "milp"  # mixed-integer linear programs; richer problems via big-M linearisation
SMT = "smt"  # quantifier-free linear integer/real arithmetic with booleans (QF_LIRA)
SAT = "sat"  # purely boolean problems
INCREMENTAL = "incremental"  # native push/pop (others re-solve the whole stack)
UNSAT_CORE = "unsat_core"  # names of tracked constraints that are jointly unsatisfiable
OPTIMIZE = "optimize"  # a linear objective
TIMEOUT = "timeout"  # a time limit per check

ALL = (LP, MILP, SMT, SAT, INCREMENTAL, UNSAT_CORE, OPTIMIZE, TIMEOUT)
DESCRIPTIONS = {
    LP: "linear programs",
    MILP: "mixed-integer linear programs (and big-M linearised SMT)",
    SMT: "SMT over linear int/real arithmetic",
    SAT: "pure boolean satisfiability",
    INCREMENTAL: "native push/pop",
    UNSAT_CORE: "unsat cores of named constraints",
    OPTIMIZE: "minimise/maximise a linear objective",
    TIMEOUT: "time limit per check",
}


def problem_kind(problem: Problem) -> str:
    """The weakest class that holds the problem: "sat", "lp", "milp" or "smt".

    "milp" means: conjunction of comparisons over bounded-or-not Int/Real variables (no booleans,
    no ite, no strict or ≠); "smt" is everything else (still solvable by MILP backends through
    big-M linearisation when the bounds it needs are there).
    """
    vs = problem.variables()
    nums = [v for v in vs if isinstance(v, n.NumVar)]
    if not nums and problem.objective is None:
        return SAT
    if any(isinstance(v, n.BoolVar) for v in vs) or problem.has_ite():
        return SMT
    for c in problem.constraints:
        for atom in conjuncts(c.formula):
            if not isinstance(atom, n.Compare) or atom.op in ("<", ">", "!="):
                return SMT
    if any(v.sort is n.Sort.INT for v in nums):
        return MILP
    return LP


def requirements(problem: Problem, *, core: bool = False, incremental: bool = False,
                 timeout: bool = False) -> set[str]:
    """Capabilities a backend needs for this problem and these options (one of the kind alternatives)."""
    need = set()
    if problem.objective is not None:
        need.add(OPTIMIZE)
    if core:
        need.add(UNSAT_CORE)
    if incremental:
        need.add(INCREMENTAL)
    if timeout:
        need.add(TIMEOUT)
    return need


def kind_accepted_by(kind: str, caps: frozenset[str]) -> bool:
    """Whether a backend with `caps` can take a problem of `kind` (SMT/MILP backends take SAT too)."""
    if kind == SAT:
        return bool(caps & {SAT, SMT, MILP})
    if kind == LP:
        return bool(caps & {LP, MILP, SMT})
    if kind == MILP:
        return bool(caps & {MILP, SMT})
    return bool(caps & {SMT, MILP})  # MILP backends try big-M linearisation

