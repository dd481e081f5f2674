"""Shared parts of the floating-point MILP backends: arrays from a `Milp`, and the backend shape."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pmsolve.backends import capabilities as C
from pmsolve.backends import result as R
from pmsolve.backends.base import Backend, RawResult, ReplayEngine
from pmsolve.backends.linearize import Milp, linearize
from pmsolve.symbolic.problem import Problem


@dataclass
class Arrays:
    """Dense-enough numpy view of a Milp (CSR rows) for the float solvers."""

    lb: Any
    ub: Any
    integrality: Any
    cost: Any
    starts: Any
    indices: Any
    values: Any
    row_lo: Any
    row_hi: Any
    constant_infeasible: bool


def to_arrays(m: Milp) -> Arrays:
    import numpy as np

    inf = np.inf
    lb = np.array([-inf if c.lo is None else float(c.lo) for c in m.columns], dtype=float)
    ub = np.array([inf if c.hi is None else float(c.hi) for c in m.columns], dtype=float)
    integrality = np.array([1 if c.integer else 0 for c in m.columns], dtype=np.int32)
    cost = np.zeros(len(m.columns))
    for j, c in m.objective.items():
        cost[j] = float(c)
    starts: list[int] = []
    indices: list[int] = []
    values: list[float] = []
    lo: list[float] = []
    hi: list[float] = []
    bad = False
    for r in m.rows:
        if not r.coeffs:
            bad = True
            continue
        starts.append(len(indices))
        for j, c in sorted(r.coeffs.items()):
            indices.append(j)
            values.append(float(c))
        lo.append(-inf if r.lo is None else float(r.lo))
        hi.append(inf if r.hi is None else float(r.hi))
    return Arrays(lb, ub, integrality, cost, np.array(starts, dtype=np.int32),
                  np.array(indices, dtype=np.int32), np.array(values, dtype=float),
                  np.array(lo, dtype=float), np.array(hi, dtype=float), bad)


class MilpBackend(Backend):
    """A backend that linearises the IR (linearize.py) and solves the MILP in floating point."""

    capabilities = frozenset({C.LP, C.MILP, C.SAT, C.OPTIMIZE, C.TIMEOUT})

    def engine(self, timeout: float | None, options: dict[str, Any]) -> ReplayEngine:
        def once(problem: Problem, core: bool) -> RawResult:
            m = linearize(problem)
            arrays = to_arrays(m)
            if arrays.constant_infeasible:
                return RawResult(R.UNSAT)
            if not m.columns:
                return RawResult(R.SAT, {}, floating=False)
            return self.run(m, arrays, timeout, options)

        return ReplayEngine(once)

    def run(self, m: Milp, a: Arrays, timeout: float | None, options: dict[str, Any]) -> RawResult:
        raise NotImplementedError
