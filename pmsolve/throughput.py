"""The inverse throughput a port mapping implies, by four routes that must agree.

* :func:`bottleneck` — the exact bottleneck formula of Thm 5.2 in Fractions: the maximum over
  port sets Q of (mass of µops whose ports lie inside Q) / |Q|. Only unions of the µops'
  port sets need to be tried: any other Q can be shrunk to the union of the µops inside it
  without losing mass. This is the reference every other route is checked against.
* :func:`batch_inverse_throughput` / :func:`evaluate_masks` — the same formula vectorised with
  numpy over many (mapping, experiment) pairs: the inner loop of inference.
* :func:`lp_inverse_throughput` — the linear program of Thm 3.7 / 3.12 (HiGHS, scipy fallback).
* :func:`optimal_schedule_length` — Def. 3.5 / 3.11 itself: the shortest schedule of N
  iterations, by max-flow; ``T(M, e, N) / N`` tends to the inverse throughput.

The optional front-end cap ``r_max`` (instructions per cycle, sec. 4.3) raises the result to
at least ``|e| / r_max``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from pmsolve.errors import SolverError, ValidationError
from pmsolve.model import Experiment, PortMapping, PortSet, sort_ports


@dataclass(frozen=True)
class Bottleneck:
    """An inverse throughput with the port set that limits it.

    ``ports`` is the largest port set attaining the maximum (maximisers are closed under
    union, so it is unique); every port in it is fully loaded (Thm 3.14). It is empty only
    when the front-end cap, not a port, is the bottleneck (``frontend_bound``).
    """

    inverse_throughput: Fraction
    ports: PortSet
    frontend_bound: bool = False


def _check_r_max(r_max: float | int | Fraction | None) -> Fraction | None:
    if r_max is None:
        return None
    r = Fraction(r_max)
    if r <= 0:
        raise ValidationError(f"r_max must be positive, got {r_max}")
    return r


def bottleneck(mapping: PortMapping, experiment: Experiment, r_max: float | None = None) -> Bottleneck:
    """Exact inverse throughput and bottleneck ports (Thm 5.2), optionally capped by ``r_max``."""
    mass = mapping.uop_masses(experiment)
    # Close the µop port sets under union: the candidate Qs of the formula.
    candidates: set[PortSet] = set()
    frontier = set(mass)
    while frontier:
        candidates |= frontier
        frontier = {q | u for q in frontier for u in mass} - candidates
    values = {q: Fraction(sum(m for ps, m in mass.items() if ps <= q), len(q)) for q in candidates}
    best = max(values.values())
    # Maximisers are closed under union (the mass function is supermodular): report the largest.
    best_q = frozenset().union(*(q for q, v in values.items() if v == best))
    r = _check_r_max(r_max)
    if r is not None and Fraction(experiment.size) / r > best:
        return Bottleneck(Fraction(experiment.size) / r, frozenset(), frontend_bound=True)
    return Bottleneck(best, best_q)


def inverse_throughput(mapping: PortMapping, experiment: Experiment, r_max: float | None = None) -> Fraction:
    """Exact inverse throughput tp⁻¹ (cycles per iteration) by the bottleneck formula."""
    return bottleneck(mapping, experiment, r_max).inverse_throughput


def cpi(experiment: Experiment, inverse_tp: Fraction | float) -> Fraction | float:
    """Cycles per instruction: tp⁻¹ divided by the number of instructions in the experiment."""
    return inverse_tp / experiment.size


# --------------------------------------------------------------------------- vectorised route

#: Above this many distinct µops in one pair, the 2^K subset enumeration is replaced by the
#: exact union closure for that pair (rare in practice: experiments have a handful of µops).
MAX_VECTOR_UOPS = 12


def _popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x).astype(np.float64)


def evaluate_masks(masks: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Bottleneck formula for a batch of µop multisets given as port bitmasks.

    ``masks[n, K]`` (uint64, 0 = padding) and ``weights[n, K]`` (µop mass, 0 for padding).
    For every subset S of a row's µops, ``sum(weights[S]) / popcount(union(masks[S]))`` is at
    most the formula's value at Q = union(S), and the maximum over S attains the formula (take
    S = all µops inside the best Q). Subsets are built by the lowest-bit recurrence, one numpy
    operation over all rows per subset. Float results are exactly the rounded exact values.
    """
    masks = np.ascontiguousarray(masks, dtype=np.uint64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    n, k = masks.shape
    if k > MAX_VECTOR_UOPS:
        raise ValidationError(f"evaluate_masks handles at most {MAX_VECTOR_UOPS} µops per row, got {k}")
    best = np.zeros(n)
    if n == 0 or k == 0:
        return best
    unions = np.zeros((1 << k, n), dtype=np.uint64)
    sums = np.zeros((1 << k, n))
    for s in range(1, 1 << k):
        low = (s & -s).bit_length() - 1
        rest = s & (s - 1)
        unions[s] = unions[rest] | masks[:, low]
        sums[s] = sums[rest] + weights[:, low]
    pops = _popcount(unions[1:])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(pops > 0, sums[1:] / np.where(pops > 0, pops, 1), 0.0)
    return ratios.max(axis=0)


def _pair_uops(mapping: PortMapping, experiment: Experiment, bit: dict[str, int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for ps, m in mapping.uop_masses(experiment).items():
        mask = 0
        for p in ps:
            mask |= bit[p]
        out[mask] = out.get(mask, 0) + m
    return out


def batch_inverse_throughput(pairs: Sequence[tuple[PortMapping, Experiment]],
                             r_max: float | None = None) -> np.ndarray:
    """Inverse throughputs (float64) of many (mapping, experiment) pairs at once.

    Pairs are grouped by their number of distinct µops, so each group enumerates only the
    unions of the µops it has (never all 2^|P| port subsets). Results equal
    ``float(inverse_throughput(m, e, r_max))`` exactly.
    """
    r = _check_r_max(r_max)
    out = np.zeros(len(pairs))
    groups: dict[int, list[tuple[int, dict[int, int]]]] = {}
    bits: dict[int, dict[str, int]] = {}
    for idx, (mapping, experiment) in enumerate(pairs):
        bit = bits.get(id(mapping))
        if bit is None:
            if len(mapping.ports) > 64:
                raise ValidationError("the batch evaluator supports at most 64 ports")
            bit = bits[id(mapping)] = {p: 1 << j for j, p in enumerate(mapping.ports)}
        uops = _pair_uops(mapping, experiment, bit)
        groups.setdefault(len(uops), []).append((idx, uops))
    for k, rows in groups.items():
        idx = np.array([i for i, _ in rows])
        if k > MAX_VECTOR_UOPS:
            out[idx] = [_closure_value(u) for _, u in rows]
            continue
        masks = np.array([list(u.keys()) for _, u in rows], dtype=np.uint64)
        weights = np.array([list(u.values()) for _, u in rows], dtype=np.float64)
        out[idx] = evaluate_masks(masks, weights)
    if r is not None:
        sizes = np.array([e.size for _, e in pairs], dtype=np.float64)
        out = np.maximum(out, sizes / float(r))
    return out


def _closure_value(uops: dict[int, int]) -> float:
    """Exact formula on bitmasks by union closure, for pairs with many distinct µops."""
    cands: set[int] = set()
    frontier = set(uops)
    while frontier:
        cands |= frontier
        frontier = {q | u for q in frontier for u in uops} - cands
    return float(max(Fraction(sum(m for u, m in uops.items() if u & ~q == 0), q.bit_count()) for q in cands))


def evaluate_many(mapping: PortMapping, experiments: Sequence[Experiment], r_max: float | None = None) -> np.ndarray:
    """Inverse throughputs of many experiments under one mapping (float64)."""
    return batch_inverse_throughput([(mapping, e) for e in experiments], r_max)


# --------------------------------------------------------------------------- LP route

def _lp_data(mapping: PortMapping, experiment: Experiment):
    """Variables: t, then x[u,k] for every µop u and port k in its set (Thm 3.12)."""
    mass = mapping.uop_masses(experiment)
    ports = list(mapping.ports)
    col = {p: j for j, p in enumerate(ports)}
    xs = [(ps, p) for ps in mass for p in sort_ports(ps)]
    nvar = 1 + len(xs)
    c = np.zeros(nvar)
    c[0] = 1.0
    a_eq = np.zeros((len(mass), nvar))
    b_eq = np.zeros(len(mass))
    a_ub = np.zeros((len(ports), nvar))
    a_ub[:, 0] = -1.0
    row = {ps: i for i, ps in enumerate(mass)}
    for j, (ps, p) in enumerate(xs, start=1):
        a_eq[row[ps], j] = 1.0
        a_ub[col[p], j] = 1.0
    for ps, m in mass.items():
        b_eq[row[ps]] = m
    return c, a_ub, np.zeros(len(ports)), a_eq, b_eq


@dataclass(frozen=True)
class LpSolution:
    """Optimum of the throughput LP: t and the load it puts on every port."""

    inverse_throughput: float
    port_loads: dict[str, float]


def solve_lp(mapping: PortMapping, experiment: Experiment, solver: str = "auto") -> LpSolution:
    """Solve the LP of Thm 3.7 / 3.12: minimise t subject to each µop's mass being spread over
    its ports and every port's load being at most t.

    ``solver`` is ``"highs"`` (highspy), ``"scipy"`` (``scipy.optimize.linprog``), or
    ``"auto"`` (highspy when installed, else scipy).
    """
    c, a_ub, b_ub, a_eq, b_eq = _lp_data(mapping, experiment)
    if solver == "auto":
        try:
            import highspy  # noqa: F401
            solver = "highs"
        except ImportError:
            solver = "scipy"
    if solver == "highs":
        value, x = _solve_highspy(c, a_ub, b_ub, a_eq, b_eq)
    elif solver == "scipy":
        from scipy.optimize import linprog
        res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
        if res.status != 0:
            raise SolverError(f"scipy linprog failed on the throughput LP: {res.message}")
        value, x = float(res.fun), np.asarray(res.x)
    else:
        raise SolverError(f"unknown LP solver {solver!r}: choose highs, scipy or auto")
    loads = a_ub[:, 1:] @ x[1:]
    return LpSolution(value, dict(zip(mapping.ports, map(float, loads))))


def lp_inverse_throughput(mapping: PortMapping, experiment: Experiment, r_max: float | None = None,
                          solver: str = "auto") -> float:
    """Inverse throughput as the LP optimum (see :func:`solve_lp`), capped by ``r_max``."""
    value = solve_lp(mapping, experiment, solver).inverse_throughput
    r = _check_r_max(r_max)
    return max(value, experiment.size / float(r)) if r is not None else value


def _solve_highspy(c, a_ub, b_ub, a_eq, b_eq) -> tuple[float, np.ndarray]:
    try:
        import highspy
    except ImportError:
        raise SolverError("highspy is not installed: pip install highspy, or use solver='scipy'") from None
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    inf = highspy.kHighsInf
    nvar = len(c)
    lp = highspy.HighsLp()
    lp.num_col_ = nvar
    a = np.vstack([a_ub, a_eq])
    lp.num_row_ = a.shape[0]
    lp.col_cost_ = np.asarray(c, dtype=np.float64)
    lp.col_lower_ = np.zeros(nvar)
    lp.col_upper_ = np.full(nvar, inf)
    lp.row_lower_ = np.concatenate([np.full(len(b_ub), -inf), b_eq])
    lp.row_upper_ = np.concatenate([b_ub, b_eq])
    rows, cols = np.nonzero(a.T)  # column-wise sparse matrix
    start = np.searchsorted(rows, np.arange(nvar + 1))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start.astype(np.int32)
    lp.a_matrix_.index_ = cols.astype(np.int32)
    lp.a_matrix_.value_ = a.T[rows, cols].astype(np.float64)
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise SolverError(f"HiGHS did not solve the throughput LP: {h.modelStatusToString(h.getModelStatus())}")
    return float(h.getInfo().objective_function_value), np.asarray(h.getSolution().col_value)


# --------------------------------------------------------------------------- schedule definition

def optimal_schedule_length(mapping: PortMapping, experiment: Experiment, iterations: int) -> int:
    """T(M, e, N) of Def. 3.5 / 3.11: the fewest cycles in which N iterations can execute.

    Every port starts one µop per cycle, so a schedule of length T exists iff the µop
    instances can be assigned to allowed ports with at most T per port: a bipartite
    transportation problem, decided exactly by integer max-flow. T is found by bisection.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    if iterations < 1:
        raise ValidationError(f"iterations must be ≥ 1, got {iterations}")
    mass = mapping.uop_masses(experiment)
    uops = list(mass)
    ports = list(mapping.ports)
    n_u, n_p = len(uops), len(ports)
    source, sink = 0, 1 + n_u + n_p
    total = iterations * sum(mass.values())

    def feasible(t: int) -> bool:
        cap = np.zeros((sink + 1, sink + 1), dtype=np.int64)
        for a, ps in enumerate(uops):
            cap[source, 1 + a] = iterations * mass[ps]
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
