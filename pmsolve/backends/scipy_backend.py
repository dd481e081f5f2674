"""scipy.optimize (pip: scipy, import: scipy): `linprog` for pure LPs, `milp` otherwise."""

from __future__ import annotations

import math
from typing import Any

from pmsolve.backends import result as R
from pmsolve.backends.base import RawResult
from pmsolve.backends.linearize import Milp
from pmsolve.backends.milp_common import Arrays, MilpBackend


class ScipyBackend(MilpBackend):
    name = "scipy"
    summary = "scipy.optimize linprog (LP) / milp (MILP; SMT via big-M)"
    modules = ("scipy.optimize", "scipy.sparse", "numpy")
    pip = ("scipy", "numpy")

    def run(self, m: Milp, a: Arrays, timeout: float | None, options: dict[str, Any]) -> RawResult:
        import numpy as np
        from scipy import optimize, sparse

        n = len(m.columns)
        sign = -1.0 if m.sense == "max" else 1.0
        c = sign * a.cost
        A = sparse.csr_matrix((a.values, a.indices, np.append(a.starts, len(a.indices))),
                              shape=(len(a.row_lo), n)) if len(a.row_lo) else None
        opts = dict(options)
        if timeout is not None:
            opts["time_limit"] = float(timeout)
        if not a.integrality.any():
            kw: dict[str, Any] = {}
            if A is not None:
                eq = a.row_lo == a.row_hi
                lo_fin = a.row_lo[~eq]
                hi_vals = a.row_hi[~eq]
                keep_hi = np.isfinite(hi_vals)
                keep_lo = np.isfinite(lo_fin)
                A_ub = sparse.vstack([A[~eq][keep_hi], -A[~eq][keep_lo]])
                b_ub = np.concatenate([hi_vals[keep_hi], -lo_fin[keep_lo]])
                if A_ub.shape[0]:
                    kw["A_ub"], kw["b_ub"] = A_ub, b_ub
                if eq.any():
                    kw["A_eq"], kw["b_eq"] = A[eq], a.row_lo[eq]
            res = optimize.linprog(c, bounds=list(zip(_none(a.lb), _none(a.ub))), method="highs",
                                   options={"primal_feasibility_tolerance": 1e-9, **opts}, **kw)
        else:
            cons = [optimize.LinearConstraint(A, a.row_lo, a.row_hi)] if A is not None else []
            res = optimize.milp(c, integrality=a.integrality, bounds=optimize.Bounds(a.lb, a.ub),
                                constraints=cons, options={"mip_rel_gap": 0, **opts})
        if res.status == 0:
            return RawResult(R.SAT, m.decode(list(res.x)), floating=True)
        if res.status == 2:
            return RawResult(R.UNSAT)
        if res.status == 3:
            if not m.objective:
                return RawResult(R.UNSAT)
            return RawResult(R.UNBOUNDED, reason=str(res.message))
        return RawResult(R.UNKNOWN, reason=str(res.message))


def _none(arr: Any) -> list[float | None]:
    return [None if math.isinf(v) else float(v) for v in arr]
