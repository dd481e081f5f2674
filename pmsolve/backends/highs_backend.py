"""HiGHS through highspy (pip: highspy, import: highspy): LPs and MILPs, incl. big-M linearised SMT."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from pmsolve.backends import result as R
from pmsolve.backends.base import RawResult
from pmsolve.backends.linearize import Milp
from pmsolve.backends.milp_common import Arrays, MilpBackend

TIGHT = {"primal_feasibility_tolerance": 1e-9, "mip_feasibility_tolerance": 1e-9,
         "dual_feasibility_tolerance": 1e-9}


class HighsBackend(MilpBackend):
    name = "highs"
    summary = "HiGHS via highspy (LP/MILP; SMT via big-M)"
    modules = ("highspy", "numpy")
    pip = ("highspy", "numpy")

    def run(self, m: Milp, a: Arrays, timeout: float | None, options: dict[str, Any]) -> RawResult:
        import highspy
        import numpy as np

        h = _new_highs(highspy)
        h.setOptionValue("output_flag", False)
        for k, v in {**TIGHT, **options}.items():
            h.setOptionValue(k, v)
        if timeout is not None:
            h.setOptionValue("time_limit", float(timeout))
        n = len(m.columns)
        inf = highspy.kHighsInf
        lb = np.where(np.isinf(a.lb), -inf, a.lb)
        ub = np.where(np.isinf(a.ub), inf, a.ub)
        h.addVars(n, lb, ub)
        idx = np.arange(n, dtype=np.int32)
        if a.integrality.any():
            kinds = np.array([highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                              for i in a.integrality])
            h.changeColsIntegrality(n, idx, kinds)
        if m.objective:
            h.changeColsCost(n, idx, a.cost)
            if m.sense == "max":
                h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        if len(a.row_lo):
            lo = np.where(np.isinf(a.row_lo), -inf, a.row_lo)
            hi = np.where(np.isinf(a.row_hi), inf, a.row_hi)
            h.addRows(len(lo), lo, hi, len(a.indices), a.starts, a.indices, a.values)
        _run(h)
        st = h.getModelStatus()
        S = highspy.HighsModelStatus
        if st == S.kOptimal:
            x = list(h.getSolution().col_value)
            return RawResult(R.SAT, m.decode(x), floating=True)
        if st == S.kInfeasible:
            return RawResult(R.UNSAT)
        if st in (S.kUnbounded, S.kUnboundedOrInfeasible):
            if not m.objective:
                return RawResult(R.UNSAT)
            return RawResult(R.UNBOUNDED if st == S.kUnbounded else R.UNKNOWN,
                             reason=h.modelStatusToString(st))
        return RawResult(R.UNKNOWN, reason=h.modelStatusToString(st))


def _run(h: Any) -> None:
    """``h.run()`` in HiGHS's own solver thread while this one waits, so that Ctrl-C cancels
    the solve at once and surfaces as KeyboardInterrupt (:mod:`pmsolve.interrupts`); a plain
    ``run()`` would go on to its end. Older highspy without ``startSolve``: a plain ``run()``."""
    if not hasattr(h, "startSolve"):
        h.run()
        return
    h.HandleUserInterrupt = True    # lets cancelSolve() stop the solve
    h.startSolve()
    try:
        while not h.wait(0.1)[0]:
            pass
    except KeyboardInterrupt:
        h.cancelSolve()
        while not h.wait(0.1)[0]:
            pass
        raise


_FIRST = threading.Lock()
_banner_shown = False


def _new_highs(highspy: Any) -> Any:
    """A Highs object. HiGHS prints its banner on standard output (from C++, on fd 1) when the
    process makes its first one, before any option can turn output off; a library call must
    print nothing, so that one is made with fd 1 on /dev/null."""
    global _banner_shown
    if _banner_shown:
        return highspy.Highs()
    with _FIRST:
        sys.stdout.flush()
        saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
            h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(null)
        _banner_shown = True
    return h
