"""A leaner observation encoding for measured (fixed) experiments.

relateThroughput (Def. 4.5) pins a throughput *variable* t to tp⁻¹ with t = p_k equalities on the
bottleneck ports and ite-sums. When the experiment is fixed and only "tp⁻¹ lies in the
measured interval" matters, the two halves of Thm 5.2 say it directly:

* upper bound, tp⁻¹ ≤ U: the µop masses can be spread over their ports (flow x) so that no port
  carries more than U (the LP of Thm 3.7/3.12 with t fixed);
* lower bound, tp⁻¹ ≥ L: some non-empty port set Q (booleans q_k) holds µops whose port sets lie
  inside it (j_u → (port k allowed → q_k)) with mass ≥ L·|Q| (the bottleneck formula).

Exact measurements use U = L = measured; noise ε uses the open interval measured ± ε·|e|
(strict comparisons); R_max caps tp⁻¹ at |e|/R_max from below, which is a constant here.
"""

from __future__ import annotations

from fractions import Fraction

from pmsolve.encodings.experiments import fixed_experiment
from pmsolve.encodings.mappings import MappingEnc
from pmsolve.model import Experiment
from pmsolve.symbolic import (
    FALSE,
    TRUE,
    And,
    Bool,
    Formula,
    Implies,
    Not,
    Or,
    Real,
    Sum,
    ite,
    same,
)


def observation_bounds(m_free: MappingEnc, e: Experiment, measured: Fraction, tag: str, *,
                       epsilon: Fraction | None = None, r_max: Fraction | None = None) -> Formula:
    """One formula: tp⁻¹_M(e) (capped by R_max) matches `measured` (exactly or within ε·|e|)."""
    exp = fixed_experiment(e, m_free.instructions)
    uops, side = m_free.uops(exp, tag)
    uops = [u for u in uops if not (u.mass.is_constant and u.mass.const == 0)]
    size = Fraction(e.size)
    if epsilon:
        lo, hi, strict = measured - epsilon * size, measured + epsilon * size, True
    else:
        lo, hi, strict = measured, measured, False
    parts: list[Formula] = list(side)
    front = size / r_max if r_max is not None else Fraction(0)
    # upper bound: max(tp, front) ≤ hi (or <)
    if (front >= hi) if strict else (front > hi):
        return FALSE
    loads: dict[str, list] = {k: [] for k in m_free.ports}
    for u in uops:
        xs = []
        for k in m_free.ports:
            can = u.on_port[k]
            if same(can, FALSE):
                continue
            x = Real(f"{tag}x[{u.name},{k}]", 0, u.mass_hi)
            if not same(can, TRUE):
                parts.append(Implies(Not(can), x.eq(0)))
            xs.append(x)
            loads[k].append(x.lin())
        parts.append(Sum(xs).eq(u.mass) if xs else u.mass.eq(0))
    if strict:
        cap = Real(f"{tag}cap", 0, max(hi, Fraction(0)))
        parts.append(cap < hi)
        parts += [Sum(ls) <= cap for ls in loads.values() if ls]
    else:
        parts += [Sum(ls) <= hi for ls in loads.values() if ls]
    # lower bound: max(tp, front) ≥ lo (or >), trivially true when the front end reaches it
    if not ((front > lo) if strict else (front >= lo)) and lo > 0:
        q = {k: Bool(f"{tag}q[{k}]") for k in m_free.ports}
        parts.append(Or(*q.values()))
        held = []
        for u in uops:
            j = Bool(f"{tag}j[{u.name}]")
            for k in m_free.ports:
                can = u.on_port[k]
                if same(can, FALSE):
                    continue
                parts.append(Implies(j, q[k]) if same(can, TRUE) else Implies(And(j, can), q[k]))
            held.append(ite(j, u.mass, 0))
        width = Sum(ite(qk, 1, 0) for qk in q.values())
        parts.append(Sum(held) > width * lo if strict else Sum(held) >= width * lo)
    return And(*parts)
