"""Strategy sufficiency: can two mappings agree on every benchmark of a strategy yet differ?

    ∧_{e ∈ strategy} (relate[M_a, e, t_a,e] ∧ relate[M_b, e, t_b,e] ∧ t_a,e = t_b,e)
    ∧ relate[M_a, e*, t_a] ∧ relate[M_b, e*, t_b] ∧ t_a ≠ t_b,   |e*| ≤ bound

Satisfiable: the strategy does not determine the mapping (the model is the counterexample).
Unsatisfiable: within `space` and experiments of ≤ `bound` instructions, it does.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Sequence

from pmsolve.encodings.cegis import Space
from pmsolve.encodings.experiments import fixed_experiment, free_experiment
from pmsolve.encodings.relate import differ, relate_throughput, separation
from pmsolve.errors import SolverError
from pmsolve.model import Experiment, PortMapping
from pmsolve.symbolic import Problem
from pmsolve.throughput import inverse_throughput

Counterexample = tuple[PortMapping, PortMapping, Experiment]


def build_sufficiency(space: Space, strategy: Sequence[Experiment], *, bound: int,
                      r_max: Fraction | int | None = None,
                      ) -> tuple[Problem, Callable[[dict], Counterexample]]:
    r = None if r_max is None else Fraction(r_max)
    ma, mb = space.free("A."), space.free("B.")
    p = Problem(name="strategy sufficiency", strict_margin=separation(len(space.ports), r))
    p.add(ma.constraints)
    p.add(mb.constraints)
    for n, e in enumerate(strategy):
        exp = fixed_experiment(e, space.instructions)
        ra = relate_throughput(ma, exp, f"sa{n}.", r_max=r)
        rb = relate_throughput(mb, exp, f"sb{n}.", r_max=r)
        p.add(ra.constraints)
        p.add(rb.constraints)
        p.add(ra.t.eq(rb.t), name=f"agree[{e}]")
    star = free_experiment(space.instructions, bound, "E.")
    p.add(star.constraints)
    ra = relate_throughput(ma, star, "da.", r_max=r)
    rb = relate_throughput(mb, star, "db.", r_max=r)
    p.add(ra.constraints)
    p.add(rb.constraints)
    p.add(differ(ra.t, rb.t, star), name="differ")

    def decode(model: dict) -> Counterexample:
        return ma.decode(model), mb.decode(model), star.decode(model)

    return p, decode


def find_strategy_counterexample(space: Space, strategy: Sequence[Experiment],
                                 backend: str | None = None, *, bound: int,
                                 r_max: Fraction | int | None = None,
                                 timeout: float | None = None) -> Counterexample | None:
    """Two mappings indistinguishable by `strategy` but told apart by an experiment, or None."""
    from pmsolve.backends import solve

    p, decode = build_sufficiency(space, strategy, bound=bound, r_max=r_max)
    res = solve(p, backend, timeout=timeout)
    if res.infeasible:
        return None
    if not res.feasible:
        raise SolverError(f"strategy sufficiency: solver gave no answer ({res})")
    ma, mb, e = decode(res.model)
    r = None if r_max is None else Fraction(r_max)
    same = all(inverse_throughput(ma, s, r) == inverse_throughput(mb, s, r) for s in strategy)
    if not same or inverse_throughput(ma, e, r) == inverse_throughput(mb, e, r):
        raise SolverError(f"strategy sufficiency on {res.backend} returned a bad counterexample")
    return ma, mb, e
