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


def solve_inverse_throughput(mapping: PortMapping, experiment: Experiment, backend: str | None = None,
                             r_max: Fraction | int | None = None) -> Fraction:
    """tp⁻¹ through a solver backend, exact: the LP of Thm 3.7 / 3.12 where the backend can
    optimise, else relateThroughput (Def. 4.5) with t free, whose models all have t = tp⁻¹
    (Thm 4.4). Either way the answer is checked against the exact bottleneck formula."""
    from pmsolve.backends import get, requested_name, solve
    from pmsolve.encodings.experiments import fixed_experiment
    from pmsolve.encodings.mappings import fixed_mapping
    from pmsolve.encodings.relate import relate_throughput
    from pmsolve.errors import SolverError
    from pmsolve.symbolic import evaluate
    from pmsolve.throughput import inverse_throughput

    name = requested_name(backend)
    mapping = mapping.restrict(experiment)  # instructions outside the experiment add nothing
    lp = throughput_lp(mapping, experiment, r_max)
    if name == "auto" or "optimize" in get(name).capabilities:
        result = solve(lp.problem, name)
        value = result.objective
    else:
        rel = relate_throughput(fixed_mapping(mapping), fixed_experiment(experiment, mapping.instructions),
                                "", r_max=r_max)
        prob = Problem(name=f"relateThroughput of {experiment}")
        for c in rel.constraints:
            prob.add(c)
        result = solve(prob, name)
        value = evaluate(rel.t, result.model) if result.feasible else None
    exact = inverse_throughput(mapping, experiment, r_max)
    if value is None or Fraction(value) != exact:
        raise SolverError(f"backend {result.backend} gave tp⁻¹ {value} for {experiment}, "
                          f"but the bottleneck formula gives {exact} ({result.status})")
    return exact
