"""The LPs of Thm 3.7 (two-level) and Thm 3.12 (three-level) in the IR.

The LP is over µop port sets (Remark 3.13); edges that do not exist get no variable, which is
constraint (E). The optimum is tp⁻¹; with `r_max` the objective variable is also bounded below
by |e|/R_max (sec. 4.3), giving max(tp⁻¹, |e|/R_max).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from pmsolve.model import Experiment, PortMapping, sort_ports
from pmsolve.symbolic import Lin, Problem, Real, Sum


@dataclass(frozen=True)
class ThroughputLp:
    problem: Problem
    t: Lin


def throughput_lp(mapping: PortMapping, experiment: Experiment,
                  r_max: Fraction | int | None = None, prefix: str = "") -> ThroughputLp:
    """minimise t s.t. (A) Σ_k x_uk = mass_u, (B) p_k = Σ_u x_uk, (C) p_k ≤ t, (D) x ≥ 0."""
    mass = mapping.uop_masses(experiment)
    prob = Problem(name=f"throughput LP of {experiment}")
    t = Real(f"{prefix}t", 0)
    loads: dict[str, list[Lin]] = {k: [] for k in mapping.ports}
    for ps in sorted(mass, key=sort_ports):
        label = "{" + ",".join(sort_ports(ps)) + "}"
        xs = [Real(f"{prefix}x[{label},{k}]", 0) for k in sort_ports(ps)]
        for x, k in zip(xs, sort_ports(ps)):
            loads[k].append(x.lin())
        prob.add(Sum(xs).eq(mass[ps]), name=f"A{label}")
    for k in mapping.ports:
        p = Real(f"{prefix}p[{k}]", 0)
        prob.add(p.eq(Sum(loads[k])), name=f"B[{k}]")
        prob.add(p <= t, name=f"C[{k}]")
    if r_max is not None:
        prob.add(t >= Fraction(experiment.size) / Fraction(r_max), name="Rmax")
    prob.minimize(t)
    return ThroughputLp(prob, t.lin())
