"""Stage 7 (sec. 6.1, 6.2.2, 6.3.5): every other scheme against the blocking suite.

For a blocking instruction B of port set Q (in topological order) and k copies of it
(the uops.info ``k`` rule), the µops of scheme i that cannot evade Q each add 1/|Q| cycles:

    non-evading(i, Q) = (tp⁻¹({B↦k, i↦1}) − tp⁻¹({B↦k})) · |Q|

Those are the µops whose port set lies inside Q; subtracting the µops already found on proper
subsets of Q leaves the µops that use exactly Q (Alg. 6.1, lines 6-11). The found µops are then
checked against the µop counter and the final mapping must reproduce every measured experiment
of the scheme; otherwise the scheme is a misfit with the experiments that show why.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from pmsolve.infer.explain.options import ExplainOptions
from pmsolve.infer.explain.witnesses import Explanation, Misfit, Witness, uop_key
from pmsolve.model import Experiment, PortMapping, sort_ports
from pmsolve.strategy import k_rule
from pmsolve.throughput import batch_inverse_throughput

Progress = Callable[[str], None]


def plan(insns: list[str], suite: list[tuple[str, frozenset[str]]], single: dict[str, Any],
         o: ExplainOptions, run: int) -> dict[str, list[tuple[str, frozenset[str], int]]]:
    """(blocking instruction, Q, k) per scheme; run r adds r copies (independent samples)."""
    rule = k_rule(o.k_rule)
    out = {}
    for i in insns:
        tp = Fraction(single[i]["tp"]).limit_denominator(1000)
        n = max(1, round(single[i]["uops"]))
        out[i] = [(b, q, rule(len(q), o.ports, tp, n) + run) for b, q in suite]
    return out


def characterise(oracle: Any, insns: list[str], blocking: PortMapping, suite: list[tuple[str, frozenset[str]]],
                 single: dict[str, Any], r_max: float | None, o: ExplainOptions, run: int,
                 progress: Progress, chunk: int = 200, on_chunk: Callable[[], None] | None = None
                 ) -> dict[str, Explanation]:
    """One run of the characterisation over ``insns``; measurements in batches of ``chunk``
    schemes (``on_chunk`` is called after each, to checkpoint)."""
    plans = plan(insns, suite, single, o, run)
    out: dict[str, Explanation] = {}
    for lo in range(0, len(insns), chunk):
        part = insns[lo:lo + chunk]
        exps = [e for i in part for b, _, k in plans[i] for e in (Experiment({b: k, i: 1}), Experiment({b: k}))]
        oracle.measure(exps)  # one batch; the values are read back from the cache below
        for i in part:
            out[i] = _one(oracle, i, plans[i], blocking, single[i], r_max, o)
        if on_chunk:
            on_chunk()
        progress(f"  run {run + 1}: {min(lo + chunk, len(insns))}/{len(insns)} schemes characterised")
    return out


def _one(oracle: Any, i: str, steps: list[tuple[str, frozenset[str], int]], blocking: PortMapping,
         single: dict[str, Any], r_max: float | None, o: ExplainOptions) -> Explanation:
    counted = round(single["uops"])
    found: dict[frozenset[str], int] = {}
    raw: list[tuple[Experiment, Experiment, float, float, frozenset[str], float]] = []
    problem: Misfit | None = None
    for b, q, k in steps:
        e, base = Experiment({b: k, i: 1}), Experiment({b: k})
        t, t0 = oracle.measure([e, base])
        x = (t - t0) * len(q)
        raw.append((e, base, t, t0, q, x))
        n = round(x)
        if problem is None and abs(x - n) > o.integrality:
            problem = Misfit("outside the model", f"{x:.3g} µops cannot evade [{','.join(sort_ports(q))}]: "
                             "not a whole number", ((e, t), (base, t0)))
        surplus = n - sum(m for p, m in found.items() if p < q)
        if surplus < 0 and problem is None:
            problem = Misfit("outside the model", f"fewer µops stay on [{','.join(sort_ports(q))}] ({n}) than on "
                             f"its subsets ({n - surplus})", ((e, t), (base, t0)))
        if surplus > 0:
            found[q] = surplus
    total = sum(found.values())
    singleton = Experiment({i: 1})
    if problem is None and total > counted:
        problem = Misfit("micro-coded", f"{total} µops on blocked ports but the counter reports {counted}",
                         tuple((e, t) for e, _, t, _, q, _ in raw if q in found))
    if problem is None and total < counted:
        problem = Misfit("outside the model", f"the counter reports {counted} µops but only {total} stay on "
                         "the ports of a blocking instruction: the others evade every one",
                         ((singleton, single["tp"]),))
    if problem is not None:
        return Explanation(misfit=problem, counted=counted, others=tuple(_witness(r, None, None) for r in raw))
    # the final mapping of this scheme must reproduce everything measured about it
    uops = [(q, n) for q, n in found.items()]
    m = PortMapping(blocking.ports, {**{b: blocking.uops[b] for b, _, _ in steps}, i: uops})
    exps = [singleton] + [x for r in raw for x in (r[0], r[1])]
    modelled = batch_inverse_throughput([(m, e) for e in exps], r_max)
    measured = [single["tp"]] + [x for r in raw for x in (r[2], r[3])]
    bad = [(e, t) for e, t, mt in zip(exps, measured, modelled)
           if abs(t - mt) > max(o.epsilon * e.size, o.tolerance * t)]
    if bad:
        return Explanation(misfit=Misfit("unsatisfiable", f"the µops {_fmt(uops)} found with the blocking "
                                         f"instructions do not reproduce {len(bad)} measured experiment(s)",
                                         tuple(bad)), counted=counted)
    mod = dict(zip(exps, map(float, np.asarray(modelled))))
    witnesses = {uop_key(q): (_witness(r, mod[r[0]], mod[r[1]]),) for r in raw for q in [r[4]] if q in found}
    sw = Witness("singleton", singleton, single["tp"], mod[singleton])
    witnesses = {k: (sw,) + v for k, v in witnesses.items()}
    others = tuple(_witness(r, mod[r[0]], mod[r[1]]) for r in raw if r[4] not in found)
    canon = tuple(sorted(((tuple(sort_ports(q)), n) for q, n in found.items()), key=lambda x: (len(x[0]), x[0])))
    return Explanation(canon, witnesses, others, None, counted, "characterised")


def _witness(r: tuple, mod: float | None, mod0: float | None) -> Witness:
    e, base, t, t0, q, x = r
    return Witness("blocking", e, t, mod, base, t0, mod0, tuple(sort_ports(q)), round(x, 4))


def _fmt(uops: list[tuple[frozenset[str], int]]) -> str:
    return " + ".join(f"{n}×[{','.join(sort_ports(q))}]" for q, n in uops) or "(none)"
