"""relateThroughput (Def. 4.5; Fig. 4.3 and 4.5 for three levels) with R_max and noise ε (sec. 4.3).

`relate_throughput(mapping, experiment, prefix)` returns an Encoding whose constraints hold iff
the value of its term `t` is the inverse throughput of the encoded experiment under the encoded
mapping (Thm 4.4). The mapping and experiment may each be fixed (a PortMapping / Experiment, or
constants) or free (variables), which is how findMapping / findOtherMapping reuse one definition.

Constraint G is encoded as `q_k → p_k = t` by default. The dissertation states `q_k ↔ p_k = t`;
the ⇐ half is not needed: (F)-(I) with the ⇒ half force t = mass(J)/|Q| ≤ the bottleneck value,
and (A)-(C) force t ≥ it, and the bottleneck set Q* of any optimal schedule satisfies both halves.
Dropping ⇐ avoids a strict real inequality (`¬q_k → p_k < t`), so the MILP route needs no
margin for it. `faithful=True` gives the dissertation's ↔; the Thm 4.4 tests check both.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from pmsolve.encodings.encoding import Encoding, model_of
from pmsolve.encodings.experiments import ExperimentEnc, fixed_experiment
from pmsolve.encodings.mappings import MappingEnc, fixed_mapping
from pmsolve.errors import ValidationError
from pmsolve.model import Experiment, PortMapping
from pmsolve.symbolic import (
    FALSE, TRUE, And, Bool, Formula, Iff, Implies, Lin, Not, Or, Problem, Real, Sum, as_term,
    eval_term, ite, same,
)


def relate_throughput(mapping: MappingEnc | PortMapping, exp: ExperimentEnc | Experiment,
                      prefix: str = "", *, r_max: Fraction | int | None = None,
                      faithful: bool = False) -> Encoding[Fraction]:
    """Constraints (A)-(I) for one (mapping, experiment) pair; aux variables carry `prefix`.

    With `r_max`, `t` is max(port-model value, |exp|/r_max) (sec. 4.3). `decode` gives the
    value of `t`; `vars` holds "mapping", "experiment", "t", and the families "x" (µop, port),
    "p" and "q" (port) and "j" (µop).
    """
    if isinstance(exp, Experiment):
        insns = mapping.instructions
        if isinstance(mapping, PortMapping):
            mapping.check(exp)
            insns = tuple(i for i in mapping.instructions if i in exp)
        exp = fixed_experiment(exp, tuple(insns))
    if isinstance(mapping, PortMapping):
        mapping = fixed_mapping(mapping, exp.instructions)
    uops, side = mapping.uops(exp, prefix)
    ports = mapping.ports
    hi_total = sum((u.mass_hi for u in uops), Fraction(0))
    hi_total = max(hi_total, Fraction(1))
    t_model = Real(f"{prefix}t", 0, hi_total)
    cs: list[Formula] = list(side)
    loads: dict[str, list[Lin]] = {k: [] for k in ports}
    flows: dict[tuple[str, str], Any] = {}
    for u in uops:
        xs = []
        for k in ports:
            can = u.on_port[k]
            if same(can, FALSE):
                continue  # (E) with a known absent edge: no variable at all
            x = Real(f"{prefix}x[{u.name},{k}]", 0, u.mass_hi)  # (D)
            flows[u.name, k] = x
            if not same(can, TRUE):
                cs.append(Implies(Not(can), x == 0))  # (E)
            xs.append(x)
            loads[k].append(x.lin())
        cs.append(Sum(xs) == u.mass if xs else u.mass == 0)  # (A)
    q = {k: Bool(f"{prefix}q[{k}]") for k in ports}
    j = {u.name: Bool(f"{prefix}j[{u.name}]") for u in uops}
    load = {k: Real(f"{prefix}p[{k}]", 0, hi_total) for k in ports}
    for k, p in load.items():
        cs.append(p == Sum(loads[k]))  # (B)
        cs.append(p <= t_model)  # (C)
        cs.append(Iff(q[k], p == t_model) if faithful else Implies(q[k], p == t_model))  # (G)
    cs.append(Or(q.values()))  # (F)
    for u in uops:
        for k in ports:
            can = u.on_port[k]
            if same(can, FALSE):
                continue
            h = Implies(j[u.name], q[k])
            cs.append(h if same(can, TRUE) else Implies(can, h))  # (H)
    lhs = Sum(ite(j[u.name], u.mass, 0) for u in uops)
    rhs = Sum(ite(q[k], t_model, 0) for k in ports)
    cs.append(lhs == rhs)  # (I)
    t = t_model
    if r_max is not None:
        r = Fraction(r_max)
        if r <= 0:
            raise ValidationError(f"r_max must be positive, got {r_max}")
        front = exp.size / r
        t = Real(f"{prefix}t_rmax", 0, max(hi_total, Fraction(exp.size_hi) / r))
        cs += [t >= t_model, t >= front, Or(t == t_model, t == front)]
    problem = Problem(name=f"relateThroughput (Def. 4.5){' of ' + prefix.rstrip('.') if prefix else ''}")
    problem.add(cs)
    term = t.lin()
    return Encoding(problem, term, lambda answer: eval_term(term, model_of(answer)),
                    {"mapping": mapping, "experiment": exp, "t": t, "x": flows, "p": load, "q": q,
                     "j": j})


def matches(t: Lin, measured: Fraction | int, exp: ExperimentEnc,
            epsilon: Fraction | int | None = None) -> Formula:
    """The modelled t agrees with a measurement: exactly, or |t - m| < ε·|exp| (CPI noise, sec. 4.3)."""
    m = as_term(Fraction(measured))
    if not epsilon:
        return t == m
    eps = Fraction(epsilon)
    return And(t - m < exp.size * eps, m - t < exp.size * eps)


def differ(t1: Lin, t2: Lin, exp: ExperimentEnc, epsilon: Fraction | int | None = None) -> Formula:
    """Two modelled throughputs are told apart: t1 ≠ t2, or |t1 - t2| > 2ε·|exp| with noise."""
    if not epsilon:
        return t1 != t2
    eps = Fraction(epsilon)
    return Or(t1 - t2 > exp.size * (2 * eps), t2 - t1 > exp.size * (2 * eps))


def separation(ports: int, r_max: Fraction | int | None = None) -> Fraction:
    """A gap valid for `t1 ≠ t2` between noise-free throughputs (for the MILP route).

    Every tp⁻¹ is mass/|Q| with |Q| ≤ |P| (Thm 5.2), and |e|/R_max has denominator dividing
    R_max's numerator; two different such values a/m, b/n differ by at least 1/(m·n).
    """
    d = max(1, ports)
    if r_max is not None:
        d = max(d, Fraction(r_max).numerator)
    return Fraction(1, d * d)
