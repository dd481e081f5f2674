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

The same two halves without arithmetic (:func:`observation_clauses`, :func:`hall_cut`; two-level
and fixed µop counts, whose µop masses are constants): the lower bound with counters over the
q_k and the held mass, and the upper bound by Hall's theorem — the flow exists iff every set X
of µops may use at least mass(X)/U ports — of which only the sets X some candidate overloads are
asserted, lazily (CEGAR inside CEGIS: each such cut removes that candidate and no mapping that
explains the measurement). The problem stays pure boolean, a SAT solver's home ground: a
two-level truth of 16 instructions on 10 ports takes seconds instead of minutes (issue 42;
benchmarks/cegis.py --ladder).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from math import ceil, floor
from typing import Any

from pmsolve.encodings.cardinality import Counter, between
from pmsolve.encodings.experiments import fixed_experiment
from pmsolve.encodings.mappings import MappingEnc
from pmsolve.errors import ValidationError
from pmsolve.model import Experiment, bottleneck_of
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
    eval_formula,
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


def _interval(measured: Fraction, size: Fraction, epsilon: Fraction | None) -> tuple[Fraction, Fraction, bool]:
    if epsilon:
        return measured - epsilon * size, measured + epsilon * size, True
    return measured, measured, False



def observation_clauses(m_free: MappingEnc, e: Experiment, measured: Fraction, tag: str, *,
                        epsilon: Fraction | None = None, r_max: Fraction | None = None) -> Formula:
    """The lower half of :func:`observation_bounds` without arithmetic (two-level and fixed
    µop counts, whose µop masses are constants): some non-empty port set Q (q_k) holds µops
    (j_u, each with its port set inside Q) whose mass reaches the measured value times |Q|,
    i.e. for some width w: at most w of the q_k and mass ≥ lo·w, both by counters
    (:mod:`pmsolve.encodings.cardinality`). The front end's part of the upper half is a
    constant; the ports' part is left to :func:`hall_cut`s, added for the port sets a
    candidate overloads."""
    exp = fixed_experiment(e, m_free.instructions)
    uops, side = m_free.uops(exp, tag)
    uops = [u for u in uops if not (u.mass.is_constant and u.mass.const == 0)]
    if side or not all(u.mass.is_constant for u in uops):
        raise ValidationError(f"the clauses encoding needs constant µop masses, not a {m_free.kind} space")
    size = Fraction(e.size)
    lo, hi, strict = _interval(measured, size, epsilon)
    front = size / r_max if r_max is not None else Fraction(0)
    if (front >= hi) if strict else (front > hi):
        return FALSE
    if ((front > lo) if strict else (front >= lo)) or lo <= 0:
        return TRUE
    q = {k: Bool(f"{tag}q[{k}]") for k in m_free.ports}
    parts: list[Formula] = [Or(*q.values())]
    held: list[Formula] = []
    for u in uops:
        j = Bool(f"{tag}j[{u.name}]")
        for k in m_free.ports:
            can = u.on_port[k]
            if not same(can, FALSE):
                parts.append(Implies(j, q[k]) if same(can, TRUE) else Implies(And(j, can), q[k]))
        held += [j] * int(u.mass.const)
    total = len(held)

    def need(w: int) -> int:  # the least mass that reaches lo·w (strictly: exceeds it)
        return floor(lo * w) + 1 if strict else ceil(lo * w)

    widths = [w for w in range(1, len(q) + 1) if need(w) <= total]
    if not widths:
        return FALSE
    width = Counter(list(q.values()), max(widths) + 1, f"{tag}w.")
    mass = Counter(held, need(max(widths)), f"{tag}m.")
    parts += width.definitions + mass.definitions
    parts.append(Or(*(And(width.at_most(w), mass.at_least(need(w))) for w in widths)))
    return And(*parts)


def hall_cut(m_free: MappingEnc, e: Experiment, measured: Fraction, model: Mapping[str, Any], tag: str, *,
             epsilon: Fraction | None = None) -> Formula | None:
    """The part of the upper half that the candidate `model` violates, or None if it keeps it.

    Under the candidate, the bottleneck port set Q holds µops X of more mass than the measured
    value times |Q| (Thm 5.2). A mapping explaining the measurement spreads X over the ports
    that X may use, so they number at least mass(X) / measured (Hall's theorem: exactly the
    flow of :func:`observation_bounds`, for this X). That counter constraint removes the
    candidate (X fits into Q) and no mapping that explains the measurement."""
    exp = fixed_experiment(e, m_free.instructions)
    uops, _ = m_free.uops(exp, "")
    placed = [(u, frozenset(k for k in m_free.ports if eval_formula(u.on_port[k], model)))
              for u in uops if u.mass.is_constant and u.mass.const > 0]
    masses: dict[frozenset[str], int] = {}
    for u, ps in placed:
        masses[ps] = masses.get(ps, 0) + int(u.mass.const)
    tp, q = bottleneck_of(masses)
    _, hi, strict = _interval(measured, Fraction(e.size), epsilon)
    if not (tp >= hi if strict else tp > hi):
        return None
    inside = [u for u, ps in placed if ps <= q]
    mass = sum(Fraction(u.mass.const) for u in inside)
    need = floor(mass / hi) + 1 if strict else ceil(mass / hi)
    used = [Or(*(u.on_port[k] for u in inside)) for k in m_free.ports]
    count = Counter(used, need, tag)
    return And(*count.definitions, count.at_least(need))

def singleton_width(m_free: MappingEnc, e: Experiment, measured: Fraction, *,
                    epsilon: Fraction | None = None, r_max: Fraction | None = None) -> Formula | None:
    """What a two-level singleton measurement says directly: tp⁻¹({i↦c}) = c/|S_i| (capped by
    the front end), so |S_i| lies in the range of sizes whose value matches. Implied by the
    observation (it removes no mapping that explains it), but solvers find it hard to derive
    from the flow and bottleneck form, and it prunes much of the search. None: not applicable."""
    if m_free.kind != "two-level" or len(e.items()) != 1:
        return None
    ((insn, c),) = e.items()
    size = Fraction(e.size)
    lo, hi, strict = _interval(measured, size, epsilon)
    front = size / r_max if r_max is not None else Fraction(0)
    ok = []
    for s in range(1, len(m_free.ports) + 1):
        tp = max(Fraction(c, s), front)
        if (lo < tp < hi) if strict else (lo <= tp <= hi):
            ok.append(s)
    if not ok:
        return FALSE
    return between([m_free.port(insn, k) for k in m_free.ports], min(ok), max(ok), f"w[{insn}].")
