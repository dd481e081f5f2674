"""The bottleneck formula of Thm 5.2, exact and vectorised: the reference every other route is
checked against. (The public front door is :func:`pmsolve.throughput.inverse_throughput`; this
module sits below the encodings, which validate solver answers with it.)

* :func:`bottleneck` -- in Fractions: the maximum over port sets Q of (mass of µops whose ports
  lie inside Q) / |Q| (:func:`pmsolve.model.bottleneck_of`), with the bottleneck ports.
* :func:`batch_inverse_throughput` / :func:`evaluate_many` / :func:`evaluate_masks` -- the same
  formula with numpy over many (mapping, experiment) pairs: the inner loop of inference. Each
  mapping is compiled to port bitmasks once and cached, and the experiments are compiled with
  array operations, so a caller holding `PortMapping` objects gets the kernel's speed.

The optional front-end cap ``r_max`` (instructions per cycle, sec. 4.3) raises the result to
at least ``|e| / r_max``.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from functools import partial
from fractions import Fraction
from itertools import chain
from operator import itemgetter
from typing import Any, Sequence

import numpy as np

from pmsolve.errors import ValidationError
from pmsolve.model import Experiment, PortMapping, PortSet, as_experiment, bottleneck_of, check_mapping

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


def check_r_max(r_max: RMax) -> Fraction | None:
    """``r_max`` as a Fraction (None stays None); zero, negative and non-finite caps raise."""
    if r_max is None:
        return None
    try:
        r = Fraction(r_max)
    except (ValueError, OverflowError, TypeError):
        raise ValidationError(f"r_max must be a positive number, got {r_max!r}") from None
    if r <= 0:
        raise ValidationError(f"r_max must be positive, got {r_max}")
    return r


def bottleneck(mapping: PortMapping, experiment: Experiment, r_max: RMax = None) -> Bottleneck:
    """Exact inverse throughput and bottleneck ports (Thm 5.2, :func:`pmsolve.model.bottleneck_of`),
    optionally capped by ``r_max``. The experiment may be a plain ``{insn: count}`` dict."""
    experiment = as_experiment(experiment)
    best, best_q = bottleneck_of(check_mapping(mapping).uop_masses(experiment))
    r = check_r_max(r_max)
    if r is not None and Fraction(experiment.size) / r > best:
        return Bottleneck(Fraction(experiment.size) / r, frozenset(), frontend_bound=True)
    return Bottleneck(best, best_q)


def cpi(experiment: Experiment, inverse_tp: Fraction | float) -> Fraction | float:
    """Cycles per instruction: tp⁻¹ divided by the number of instructions in the experiment."""
    return inverse_tp / as_experiment(experiment).size


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
    # Rows are processed in chunks whose (2^K, chunk) work arrays stay cache-sized (~512 KB);
    # the arrays are reused across calls (fresh ones would cost page faults on every call).
    chunk = max(1, (1 << 16) >> k)
    width = min(chunk, n)
    best = np.empty(n)
    unions, sums, sizes, divisors = _scratch((1 << k) * width)
    for lo in range(0, n, chunk):
        m, w = masks[lo:lo + chunk].T, weights[lo:lo + chunk].T
        c = m.shape[1]
        shape = (1 << k, c)
        u, s = unions[:shape[0] * c].reshape(shape), sums[:shape[0] * c].reshape(shape)
        q, d = sizes[:shape[0] * c].reshape(shape), divisors[:shape[0] * c].reshape(shape)
        u[0], s[0] = 0, 0
        for j in range(k):  # subsets containing µop j = subsets of µops < j, plus µop j
            half = 1 << j
            np.bitwise_or(u[:half], m[j], out=u[half:2 * half])
            np.add(s[:half], w[j], out=s[half:2 * half])
        np.bitwise_count(u, out=q)
        np.copyto(d, q)
        np.maximum(d, 1.0, out=d)  # the empty union (padding, mass 0) divides by 1
        np.divide(s, d, out=s)
        s.max(axis=0, out=best[lo:lo + c])
    return best


_WORK = threading.local()


def _scratch(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """This thread's work arrays for evaluate_masks, at least `size` long."""
    arrays = getattr(_WORK, "arrays", None)
    if arrays is None or len(arrays[0]) < size:
        arrays = _WORK.arrays = (np.empty(size, dtype=np.uint64), np.empty(size),
                                 np.empty(size, dtype=np.uint8), np.empty(size))
    return arrays


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


#: an (instruction, count) item of an experiment is coded as row << COUNT_BITS | count
COUNT_BITS = 24


@dataclass(frozen=True)
class CompiledMapping:
    """A mapping as arrays, built once per mapping and cached (a mapping is immutable): its
    distinct µop port sets ("kinds") as bitmasks, a sparse (instructions × kinds) matrix of µop
    counts, and the codes of the (instruction, count) items seen so far, so that reading an
    experiment is one dict lookup per item."""

    index: dict[str, int]  # instruction -> row
    masks: np.ndarray  # uint64 port bitmask per kind
    uops: Any  # scipy.sparse.csr_matrix, float64
    codes: dict[tuple[str, int], int]

    @classmethod
    def of(cls, mapping: PortMapping) -> "CompiledMapping":
        hit = _COMPILED.get(mapping)
        if hit is None:
            hit = _COMPILED[mapping] = cls._build(mapping)
        return hit

    @classmethod
    def _build(cls, mapping: PortMapping) -> "CompiledMapping":
        from scipy.sparse import csr_matrix  # lazily: scipy.sparse takes ~0.3 s to import; the exact formula needs none

        if len(mapping.ports) > 64:
            raise ValidationError("the batch evaluator supports at most 64 ports")
        bit = {p: 1 << j for j, p in enumerate(mapping.ports)}
        kinds: dict[int, int] = {}
        rows, cols, counts = [], [], []
        for row, us in enumerate(mapping.uops.values()):
            for u in us:
                rows.append(row)
                cols.append(kinds.setdefault(sum(bit[p] for p in u.ports), len(kinds)))
                counts.append(float(u.count))
        uops = csr_matrix((counts, (rows, cols)), shape=(len(mapping.uops), len(kinds)))
        return cls({i: j for j, i in enumerate(mapping.uops)}, np.array(list(kinds), dtype=np.uint64),
                   uops, {})

    def item_codes(self, mapping: PortMapping, items: list[tuple[tuple[str, int], ...]],
                   experiments: Sequence[Experiment], total: int) -> np.ndarray:
        """The codes of the (instruction, count) items of these experiments (`items` holds each
        one's `counts`, `total` items in all); unknown instructions raise."""
        try:
            return np.fromiter(map(self.codes.__getitem__, chain.from_iterable(items)), np.int64, total)
        except KeyError:
            pass
        for item in set(chain.from_iterable(items)) - self.codes.keys():
            name, count = item
            if name not in self.index:
                for e in experiments:
                    mapping.check(e)  # raises the error that names the instruction
            if count >= 1 << COUNT_BITS:
                raise ValidationError(f"the batch evaluator takes counts below {1 << COUNT_BITS}, "
                                      f"not {name}:{count}; use method='exact'")
            self.codes[item] = self.index[name] << COUNT_BITS | count
        return np.fromiter(map(self.codes.__getitem__, chain.from_iterable(items)), np.int64, total)


_COMPILED: "weakref.WeakKeyDictionary[PortMapping, CompiledMapping]" = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class MaskBatch:
    """(mapping, experiment) pairs compiled to port bitmasks, grouped by number of distinct
    µops so each group is one dense array. Compile once, evaluate many times."""

    size: int
    sizes: np.ndarray  # |e| per pair, for the R_max cap
    groups: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]  # (pair indices, masks, weights)

    @classmethod
    def compile(cls, pairs: Sequence[tuple[PortMapping, Experiment]]) -> "MaskBatch":
        if isinstance(pairs, tuple) and len(pairs) == 2 and isinstance(pairs[0], PortMapping):
            raise ValidationError("expected a list of (mapping, experiment) pairs, got one pair: "
                                  "wrap it in a list")
        ids = np.fromiter(map(id, map(itemgetter(0), pairs)), np.uint64, len(pairs))
        _, first, group = np.unique(ids, return_index=True, return_inverse=True)
        by_first = np.argsort(first)  # number the mappings in order of appearance
        group = np.argsort(by_first)[group]
        mappings = [pairs[i][0] for i in first[by_first]]
        cut = np.searchsorted(np.sort(group), np.arange(len(mappings) + 1))  # each mapping's range
        if (np.diff(group) >= 0).all():  # each mapping's pairs are already together
            return _compile(mappings, cut, list(map(itemgetter(1), pairs)), None)
        order = np.argsort(group, kind="stable")
        return _compile(mappings, cut, [pairs[i][1] for i in order.tolist()], order)

    @classmethod
    def of(cls, mapping: PortMapping, experiments: Sequence[Experiment]) -> "MaskBatch":
        """The batch of one mapping with many experiments (no pairs to build)."""
        _refuse_one(experiments)
        return _compile([check_mapping(mapping)], np.array([0, len(experiments)]), experiments, None)

    def evaluate(self, r_max: RMax = None) -> np.ndarray:
        r = check_r_max(r_max)
        out = np.zeros(self.size)
        for idx, masks, weights in self.groups:
            out[idx] = evaluate_masks(masks, weights)
        return np.maximum(out, self.sizes / float(r)) if r is not None else out


def _compile(mappings: list[PortMapping], cut: np.ndarray, experiments: Sequence[Experiment],
             order: np.ndarray | None) -> MaskBatch:
    """All pairs with a constant number of array operations per call: the experiments' count
    vectors (pairs × instructions of all mappings) times the mappings' µop matrix (instructions
    × port sets) is every pair's µop multiset; pairs are then grouped by their number of
    distinct µops. The Python work per pair is one dict lookup per (instruction, count) item.
    Mapping g's experiments are experiments[cut[g]:cut[g + 1]]; `order` maps back to pairs."""
    from scipy.sparse import block_diag, csr_matrix  # lazily, as in CompiledMapping._build

    n = len(experiments)
    if n == 0:
        return MaskBatch(0, np.zeros(0), ())
    try:
        items = [e.counts for e in experiments]
    except AttributeError:  # plain {insn: count} dicts (or something that is no experiment)
        experiments = [as_experiment(e) for e in experiments]
        items = [e.counts for e in experiments]
    compiled = [CompiledMapping.of(m) for m in mappings]
    offsets = np.cumsum([0] + [len(cm.index) for cm in compiled])
    if len(compiled) == 1:
        masks, uops = compiled[0].masks, compiled[0].uops
    else:  # each mapping's kinds are its own columns
        masks = np.concatenate([cm.masks for cm in compiled])
        uops = block_diag([cm.uops for cm in compiled], format="csr")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, items), np.int64, n), out=indptr[1:])
    codes = np.concatenate([cm.item_codes(mappings[g], items[cut[g]:cut[g + 1]], experiments[cut[g]:cut[g + 1]],
                                          int(indptr[cut[g + 1]] - indptr[cut[g]]))
                            for g, cm in enumerate(compiled)])
    rows = codes >> COUNT_BITS
    if len(compiled) > 1:  # each mapping's instructions are its own rows
        rows += np.repeat(offsets[:-1], np.diff(indptr[cut]))
    count = (codes & ((1 << COUNT_BITS) - 1)).astype(np.float64)
    mass = csr_matrix((count, rows, indptr), shape=(n, offsets[-1])) @ uops
    groups = _by_distinct_uops(np.diff(mass.indptr), mass.indptr, masks[mass.indices], mass.data)
    if order is not None:
        groups = [(order[which], m, w) for which, m, w in groups]
    sizes = np.add.reduceat(count, indptr[:-1])
    if order is not None:
        sizes[order] = sizes.copy()
    return MaskBatch(n, sizes, tuple(groups))


#: a group of experiments smaller than this many unions (rows × 2^K) joins the next larger K,
#: padded with empty µops: one kernel call costs about as much as this many unions
SMALL_GROUP = 1 << 12


def _by_distinct_uops(k: np.ndarray, start: np.ndarray, masks: np.ndarray, weights: np.ndarray,
                      ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(rows, masks, weights) per number K of distinct µops, row r's µops being
    masks/weights[start[r]:start[r] + k[r]]. A group too small to be worth a kernel call of its
    own joins the next larger K, padded with empty µops (mask 0, mass 0)."""
    order = np.argsort(k, kind="stable")
    sizes, first = np.unique(k[order], return_index=True)
    ends = np.append(first[1:], len(order))
    groups = []
    lo = 0
    for n, (kk, hi) in enumerate(zip(sizes.tolist(), ends.tolist())):
        if (hi - lo) << kk < SMALL_GROUP and n + 1 < len(sizes):
            continue  # these rows join the next group
        rows = order[lo:hi]
        col = np.arange(kk)
        at = start[rows][:, None] + col
        real = col < k[rows][:, None]  # padding where a row has fewer µops
        at = np.where(real, at, 0)
        groups.append((rows, np.where(real, masks[at], 0), np.where(real, weights[at], 0.0)))
        lo = hi
    return groups


def _refuse_one(experiments: object) -> None:
    """A sequence of experiments is expected; one experiment (or a dict) would read as its names."""
    if isinstance(experiments, (Experiment, dict, str)):
        raise ValidationError(f"expected a sequence of experiments, got one ({experiments!r:.60}): "
                              "wrap it in a list, or use inverse_throughput(mapping, experiment)")


def batch_inverse_throughput(pairs: Sequence[tuple[PortMapping, Experiment]],
                             r_max: RMax = None) -> np.ndarray:
    """Inverse throughputs (float64) of many (mapping, experiment) pairs at once; equal to
    ``float(inverse_throughput(m, e, r_max))`` exactly. See :class:`MaskBatch`."""
    return MaskBatch.compile(pairs).evaluate(r_max)


def evaluate_many(mapping: PortMapping, experiments: Sequence[Experiment], r_max: RMax = None, *,
                  executor=None, chunk: int = 20_000) -> np.ndarray:
    """Inverse throughputs of many experiments under one mapping (float64). With an
    ``executor`` (:mod:`pmsolve.executor`), parts of ``chunk`` experiments run on its workers;
    the answer is the same array. Experiments may be plain ``{insn: count}`` dicts."""
    _refuse_one(experiments)
    if executor is None or getattr(executor, "kind", "serial") == "serial" or len(experiments) <= chunk:
        return MaskBatch.of(mapping, experiments).evaluate(r_max)
    parts = [list(experiments[i:i + chunk]) for i in range(0, len(experiments), chunk)]
    return np.concatenate(executor.map(partial(evaluate_many, mapping, r_max=r_max), parts))
