"""The inverse throughput a port mapping implies: one front door, four methods that must agree.

    inverse_throughput(m, e)                          # exact Fraction (bottleneck formula)
    inverse_throughput(m, exps, method="batch")       # numpy float64 array, many experiments
    inverse_throughput(m, e, method="lp", backend="highs")
    inverse_throughput(m, e, method="schedule")      # Def. 3.5 itself, by max-flow

* ``exact`` -- the bottleneck formula of Thm 5.2 in Fractions (:func:`bottleneck` also gives
  the bottleneck ports). The reference every other route is checked against.
* ``batch`` -- the same formula vectorised with numpy (:mod:`pmsolve.formula`), equal to
  ``float(exact)`` bit for bit; each mapping is compiled to bitmasks once and cached.
* ``lp`` -- a solver backend of :mod:`pmsolve.backends` (``backend=``, else
  ``$PMSOLVE_BACKEND``, else auto): the LP of Thm 3.7 / 3.12 where the backend can optimise,
  else relateThroughput (Def. 4.5), whose models all have t = tp⁻¹ (Thm 4.4). The solver's
  model is validated, and its value must equal the exact formula (else SolverError).
* ``schedule`` -- Def. 3.5 / 3.11: the shortest schedule of N iterations by integer max-flow,
  ``min over N ≤ |P| of T(M, e, N) / N`` (T(N) = ⌈N·tp⁻¹⌉, and tp⁻¹'s denominator is some
  |Q| ≤ |P|, so the limit is attained).

Exact methods return a Fraction, ``batch`` a float; given a sequence of experiments, a list of
Fractions or a numpy array. ``r_max`` (instructions per cycle, sec. 4.3) raises every result to
at least ``|e| / r_max``. The building blocks -- :func:`bottleneck`, :class:`MaskBatch`,
:func:`batch_inverse_throughput` for pairs of many mappings, :func:`evaluate_many` with an
executor, the LP encoding :func:`pmsolve.encodings.throughput_lp` -- stay available.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence, overload

import numpy as np

from pmsolve.backends import get, requested_name, solve
from pmsolve.backends.capabilities import OPTIMIZE
from pmsolve.formula import (
    Bottleneck, MaskBatch, RMax, batch_inverse_throughput, bottleneck, check_r_max, cpi,
    evaluate_many, evaluate_masks,
)
from pmsolve.encodings.lp import throughput_lp
from pmsolve.encodings.relate import relate_throughput
from pmsolve.errors import SolverError, ValidationError
from pmsolve.model import Experiment, PortMapping, as_experiment, as_experiments, check_mapping

METHODS = ("exact", "batch", "lp", "schedule")

__all__ = [
    "METHODS", "Bottleneck", "MaskBatch", "RMax", "batch_inverse_throughput", "bottleneck", "cpi",
    "evaluate_many", "evaluate_masks", "inverse_throughput", "optimal_schedule_length",
]


@overload
def inverse_throughput(mapping: PortMapping, experiment: Experiment, *, r_max: RMax = None,
                       method: str = "exact", backend: str | None = None) -> Fraction: ...


@overload
def inverse_throughput(mapping: PortMapping, experiment: Sequence[Experiment], *, r_max: RMax = None,
                       method: str = "exact", backend: str | None = None) -> list[Fraction] | np.ndarray: ...


def inverse_throughput(mapping: PortMapping, experiment: Experiment | Sequence[Experiment], *,
                       r_max: RMax = None, method: str = "exact", backend: str | None = None,
                       ) -> Fraction | float | list[Fraction] | np.ndarray:
    """tp⁻¹ (cycles per iteration) of one experiment or a sequence of them (module doc). An
    experiment is an :class:`Experiment` or a plain ``{insn: count}`` dict."""
    if method not in METHODS:
        raise ValidationError(f"unknown throughput method {method!r}: choose {', '.join(METHODS)}")
    if backend is not None and method != "lp":
        raise ValidationError(f"backend= applies to method='lp', not to method={method!r}")
    check_r_max(r_max)
    check_mapping(mapping)
    single, exps = as_experiments(experiment)
    if method == "batch":
        values = evaluate_many(mapping, exps, r_max)
        return float(values[0]) if single else values
    one = {"exact": lambda e: bottleneck(mapping, e, r_max).inverse_throughput,
           "lp": lambda e: _by_solver(mapping, e, r_max, backend),
           "schedule": lambda e: _by_schedule(mapping, e, r_max)}[method]
    out = [one(e) for e in exps]
    return out[0] if single else out


def _by_solver(mapping: PortMapping, experiment: Experiment, r_max: RMax, backend: str | None) -> Fraction:
    name = requested_name(backend)
    mapping = mapping.restrict(experiment)  # instructions outside the experiment add nothing
    if name == "auto" or OPTIMIZE in get(name).capabilities:
        enc = throughput_lp(mapping, experiment, check_r_max(r_max))
    else:
        enc = relate_throughput(mapping, experiment, r_max=check_r_max(r_max))
    result = solve(enc.problem, name)
    value = enc.decode(result) if result.feasible else None
    exact = bottleneck(mapping, experiment, r_max).inverse_throughput
    if value != exact:
        raise SolverError(f"backend {result.backend} gave tp⁻¹ {value} for {experiment}, "
                          f"but the bottleneck formula gives {exact} ({result.status})")
    return value


def _by_schedule(mapping: PortMapping, experiment: Experiment, r_max: RMax) -> Fraction:
    best = min(Fraction(optimal_schedule_length(mapping, experiment, n), n)
               for n in range(1, len(mapping.ports) + 1))
    r = check_r_max(r_max)
    return max(best, Fraction(experiment.size) / r) if r is not None else best


def optimal_schedule_length(mapping: PortMapping, experiment: Experiment, iterations: int) -> int:
    """T(M, e, N) of Def. 3.5 / 3.11: the fewest cycles in which N iterations can execute.

    Every port starts one µop per cycle, so a schedule of length T exists iff the µop
    instances can be assigned to allowed ports with at most T per port: a bipartite
    transportation problem, decided exactly by integer max-flow. T is found by bisection.
    The µops are read from `mapping.uops` per instruction (not the merged µop masses).
    """
    from scipy.sparse import csr_matrix  # lazily: only the schedule route needs scipy
    from scipy.sparse.csgraph import maximum_flow

    if iterations < 1:
        raise ValidationError(f"iterations must be ≥ 1, got {iterations}")
    experiment = as_experiment(experiment)
    check_mapping(mapping).check(experiment)
    uops = [(u.ports, n * u.count) for insn, n in experiment.items() for u in mapping.uops[insn]]
    ports = list(mapping.ports)
    n_u, n_p = len(uops), len(ports)
    source, sink = 0, 1 + n_u + n_p
    total = iterations * sum(m for _, m in uops)

    def feasible(t: int) -> bool:
        cap = np.zeros((sink + 1, sink + 1), dtype=np.int64)
        for a, (ps, m) in enumerate(uops):
            cap[source, 1 + a] = iterations * m
            for p in ps:
                cap[1 + a, 1 + n_u + ports.index(p)] = total
        cap[1 + n_u:1 + n_u + n_p, sink] = t
        return maximum_flow(csr_matrix(cap.astype(np.int32)), source, sink).flow_value == total

    lo, hi = 1, total  # one port could run everything serially only if it is allowed: hi is safe
    while not feasible(hi):  # pragma: no cover - total cycles always suffice with one port per µop
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if feasible(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo
