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


#: A front-end cap in instructions per cycle, or None for none.
RMax = float | int | Fraction | None


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


def _check_r_max(r_max: RMax) -> Fraction | None:
    if r_max is None:
        return None
    r = Fraction(r_max)
    if r <= 0:
        raise ValidationError(f"r_max must be positive, got {r_max}")
    return r


def bottleneck(mapping: PortMapping, experiment: Experiment, r_max: RMax = None) -> Bottleneck:
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


def inverse_throughput(mapping: PortMapping, experiment: Experiment,
                       r_max: RMax = None) -> Fraction:
    """Exact inverse throughput tp⁻¹ (cycles per iteration) by the bottleneck formula."""
    return bottleneck(mapping, experiment, r_max).inverse_throughput


def cpi(experiment: Experiment, inverse_tp: Fraction | float) -> Fraction | float:
    """Cycles per instruction: tp⁻¹ divided by the number of instructions in the experiment."""
    return inverse_tp / experiment.size


# --------------------------------------------------------------------------- vectorised route

#: |Q| as float64 indexed by popcount; the empty union (padding, mass 0) divides by 1.
_POPCOUNT_DIVISOR = np.maximum(np.arange(65, dtype=np.float64), 1.0)


def evaluate_masks(masks: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Bottleneck formula for a batch of µop multisets given as port bitmasks.

    ``masks[n, K]`` (uint64, 0 = padding) and ``weights[n, K]`` (µop mass, 0 for padding).
    For every subset S of a row's µops, ``sum(weights[S]) / popcount(union(masks[S]))`` is at
    most the formula's value at Q = union(S), and the maximum over S attains the formula (take
    S = all µops inside the best Q). So only unions of the µops present are enumerated, by
    doubling: the subsets containing µop j are those of µops < j extended by j, one numpy
    operation over all rows per µop. When 2^K exceeds the
    cost of a subset-sum transform over all 2^|P| port sets (many µops, few ports), that
    transform is used instead. Float results are exactly the rounded exact values.
    """
    masks = np.ascontiguousarray(masks, dtype=np.uint64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    n, k = masks.shape
    if n == 0 or k == 0:
        return np.zeros(n)
    n_ports = int(masks.max()).bit_length()
    # measured on 10 ports: a zeta-transform row costs about as much as 2^13 unions
    if (1 << k) > (n_ports + 2) << (n_ports + 3) and n_ports <= 20:
        return _evaluate_port_subsets(masks, weights, n_ports)
    if k > 20:
        raise ValidationError(f"too many distinct µops per experiment for the batch evaluator: {k}")
    # Rows are processed in chunks whose (2^K, chunk) work arrays stay cache-sized (~512 KB).
    chunk = max(1, (1 << 16) >> k)
    best = np.empty(n)
    unions = np.empty((1 << k, min(chunk, n)), dtype=np.uint64)
    sums = np.empty(unions.shape)
    ratios = np.empty(unions.shape)
    for lo in range(0, n, chunk):
        m, w = masks[lo:lo + chunk].T, weights[lo:lo + chunk].T
        c = m.shape[1]
        u, s, r = unions[:, :c], sums[:, :c], ratios[:, :c]
        u[0], s[0] = 0, 0
        for j in range(k):  # subsets containing µop j = subsets of µops < j, plus µop j
            half = 1 << j
            np.bitwise_or(u[:half], m[j], out=u[half:2 * half])
            np.add(s[:half], w[j], out=s[half:2 * half])
        np.divide(s, _POPCOUNT_DIVISOR[np.bitwise_count(u)], out=r)
        r.max(axis=0, out=best[lo:lo + c])
    return best


def _evaluate_port_subsets(masks: np.ndarray, weights: np.ndarray, n_ports: int) -> np.ndarray:
    """The formula over all 2^|P| port sets by a subset-sum (zeta) transform: mass(Q) =
    sum of weights of masks ⊆ Q, built bit by bit. Cheaper than 2^K unions when K > |P|."""
    n, k = masks.shape
    size = 1 << n_ports
    divisor = _POPCOUNT_DIVISOR[np.bitwise_count(np.arange(size, dtype=np.uint64))]
    chunk = max(1, (1 << 16) >> n_ports)
    best = np.empty(n)
    for lo in range(0, n, chunk):
        m, w = masks[lo:lo + chunk], weights[lo:lo + chunk]
        c = len(m)
        mass = np.zeros((c, size))
        rows = np.arange(c)
        for j in range(k):  # masks within a row are distinct, so no index repeats per column
            mass[rows, m[:, j].astype(np.int64)] += w[:, j]
        mass[:, 0] = 0.0  # padding
        for b in range(n_ports):
            view = mass.reshape(c, size >> (b + 1), 2, 1 << b)
            view[:, :, 1, :] += view[:, :, 0, :]
        np.divide(mass, divisor, out=mass)
        mass.max(axis=1, out=best[lo:lo + c])
    return best


def _mask_table(mapping: PortMapping) -> dict[str, list[tuple[int, int]]]:
    """Each instruction's µops as (port bitmask, count), for compiling many pairs quickly."""
    if len(mapping.ports) > 64:
        raise ValidationError("the batch evaluator supports at most 64 ports")
    bit = {p: 1 << j for j, p in enumerate(mapping.ports)}
    return {i: [(sum(bit[p] for p in u.ports), u.count) for u in us] for i, us in mapping.uops.items()}


@dataclass(frozen=True)
class MaskBatch:
    """(mapping, experiment) pairs compiled to port bitmasks, grouped by number of distinct
    µops so each group is one dense array. Compile once, evaluate many times."""

    size: int
    sizes: np.ndarray  # |e| per pair, for the R_max cap
    groups: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]  # (pair indices, masks, weights)

    @classmethod
    def compile(cls, pairs: Sequence[tuple[PortMapping, Experiment]]) -> "MaskBatch":
        rows: dict[int, tuple[list[int], list[list[int]], list[list[int]]]] = {}
        tables: dict[int, dict[str, list[tuple[int, int]]]] = {}
        for idx, (mapping, experiment) in enumerate(pairs):
            table = tables.get(id(mapping))
            if table is None:
                table = tables[id(mapping)] = _mask_table(mapping)
            uops: dict[int, int] = {}
            try:
                for insn, n in experiment.counts:
                    for mask, count in table[insn]:
                        uops[mask] = uops.get(mask, 0) + n * count
            except KeyError:
                mapping.check(experiment)  # raises the error that names the instruction
                raise
            idxs, masks, weights = rows.setdefault(len(uops), ([], [], []))
            idxs.append(idx)
            masks.append(list(uops))
            weights.append(list(uops.values()))
        groups = tuple((np.array(i), np.array(m, dtype=np.uint64), np.array(w, dtype=np.float64))
                       for i, m, w in rows.values())
        return cls(len(pairs), np.array([e.size for _, e in pairs], dtype=np.float64), groups)

    def evaluate(self, r_max: RMax = None) -> np.ndarray:
        r = _check_r_max(r_max)
        out = np.zeros(self.size)
        for idx, masks, weights in self.groups:
            out[idx] = evaluate_masks(masks, weights)
        return np.maximum(out, self.sizes / float(r)) if r is not None else out


def batch_inverse_throughput(pairs: Sequence[tuple[PortMapping, Experiment]],
                             r_max: RMax = None) -> np.ndarray:
    """Inverse throughputs (float64) of many (mapping, experiment) pairs at once; equal to
    ``float(inverse_throughput(m, e, r_max))`` exactly. See :class:`MaskBatch`."""
    return MaskBatch.compile(pairs).evaluate(r_max)


def evaluate_many(mapping: PortMapping, experiments: Sequence[Experiment], r_max: RMax = None, *,
                  executor=None, chunk: int = 20_000) -> np.ndarray:
    """Inverse throughputs of many experiments under one mapping (float64). With an
    ``executor`` (:mod:`pmsolve.executor`), parts of ``chunk`` experiments run on its workers;
    the answer is the same array."""
    if executor is None or getattr(executor, "kind", "serial") == "serial" or len(experiments) <= chunk:
        return batch_inverse_throughput([(mapping, e) for e in experiments], r_max)
    from functools import partial

    parts = [list(experiments[i:i + chunk]) for i in range(0, len(experiments), chunk)]
    return np.concatenate(executor.map(partial(evaluate_many, mapping, r_max=r_max), parts))


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


def lp_inverse_throughput(mapping: PortMapping, experiment: Experiment, r_max: RMax = None,
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
