"""Vectorised fitness of candidate mappings: PMEvo's bottleneck simulation (sec. 5.1.4).

For a mapping with µop counts c_i(u) per instruction i, let S_i(Q) = Σ_{u ⊆ Q} c_i(u) (a
zeta transform over port subsets, P passes of one numpy addition). The bottleneck formula of
Thm 5.2 is then *linear in the experiment*: tp⁻¹(e) = max_Q Σ_i e(i)·S_i(Q) / |Q|. So every
experiment of the population's fixed experiment set costs one gather-add-max over the 2^|P|
port subsets, whatever the number of µops — the paper's enumeration of all Q, done as array
operations. (``throughput.evaluate_masks`` enumerates subsets of µops instead, which is
cheaper for a handful of µops but exponential in them; randomly initialised PMEvo candidates
carry up to |P| µops per instruction, so pairs would exceed its limit.)

An individual is a list, one entry per instruction, of ``{port bitmask: count}`` dicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

import numpy as np

from pmsolve.errors import ValidationError

Genome = Sequence[dict[int, int]]

#: The zeta route needs 2^|P| columns; beyond this, memory and time blow up.
MAX_PORTS = 14

#: Experiment rows per block: 256 rows × 1024 subsets × 4 bytes stays in L2 cache.
BLOCK = 256


@lru_cache(maxsize=4)
def inverse_popcounts(n_ports: int) -> np.ndarray:
    """1/|Q| for every port subset Q as a bitmask (0 for the empty set)."""
    pops = np.bitwise_count(np.arange(1 << n_ports, dtype=np.uint64)).astype(np.float64)
    with np.errstate(divide="ignore"):
        return np.where(pops > 0, 1.0 / np.maximum(pops, 1), 0.0)


@lru_cache(maxsize=4)
def superset_rows(n_ports: int) -> np.ndarray:
    """Z[u, Q] = [u ⊆ Q] / |Q|: the change of S_i(Q)/|Q| when one µop u is added (local search)."""
    q = np.arange(1 << n_ports, dtype=np.int64)
    z = ((q[None, :] & q[:, None]) == q[:, None]).astype(np.float64)
    return z * inverse_popcounts(n_ports)[None, :]


def zeta(counts: np.ndarray, n_ports: int) -> np.ndarray:
    """In place: counts[..., Q] becomes Σ_{u ⊆ Q} counts[..., u]."""
    lead = counts.shape[:-1]
    for j in range(n_ports):
        view = counts.reshape(*lead, 1 << (n_ports - 1 - j), 2, 1 << j)
        view[..., 1, :] += view[..., 0, :]
    return counts


#: Closures are only computed for genomes with at most this many distinct µops; beyond it
#: the closure is nearly all subsets and computing it costs more than it saves.
MAX_CLOSURE_UOPS = 48


def union_closure(masks: set[int], n_ports: int) -> np.ndarray | None:
    """Sorted non-empty unions of subsets of ``masks``, or None when not worth restricting to."""
    if len(masks) > MAX_CLOSURE_UOPS:
        return None
    reach = np.zeros(1 << n_ports, dtype=bool)
    reach[0] = True
    for u in sorted(masks):
        idx = np.flatnonzero(reach)
        reach[idx | u] = True
    reach[0] = False
    cols = np.flatnonzero(reach)
    return cols if len(cols) < 0.6 * (1 << n_ports) else None


def volume(genome: Genome) -> int:
    """µop volume V = Σ n·|u| (sec. 5.1.3): small volumes mean compact, readable mappings."""
    return sum(n * mask.bit_count() for entry in genome for mask, n in entry.items())


@dataclass
class Evaluator:
    """Scores genomes on a fixed experiment set (picklable: a map sends it to worker processes).

    Row r of ``idx``/``cnt`` is one experiment: instruction indices (``-1`` pads short rows) and
    their counts. PMEvo's own experiments hold at most two distinct instructions; longer rows
    (random or distinguishing experiments, an extension) take the generic gather route.
    ``measured`` are the oracle's inverse throughputs and ``sizes`` the |e| for the optional
    front-end cap ``r_max``.
    """

    n_ports: int
    n_insns: int
    idx: np.ndarray
    cnt: np.ndarray
    measured: np.ndarray
    r_max: float | None = None
    sizes: np.ndarray = field(init=False)
    _by_insn: list[np.ndarray] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 1 <= self.n_ports <= MAX_PORTS:
            raise ValidationError(f"PMEvo supports 1..{MAX_PORTS} ports, got {self.n_ports}")
        k = self.n_insns
        idx = np.atleast_2d(np.asarray(self.idx, dtype=np.intp))
        cnt = np.atleast_2d(np.asarray(self.cnt, dtype=np.float64))
        if idx.shape[1] < 2:  # keep two columns so a/b exist for every row
            idx = np.hstack([idx, np.full((len(idx), 2 - idx.shape[1]), -1, dtype=np.intp)])
            cnt = np.hstack([cnt, np.zeros((len(cnt), 2 - cnt.shape[1]))])
        self.measured = np.asarray(self.measured, dtype=np.float64)
        if idx.shape != cnt.shape or len(idx) != len(self.measured):
            raise ValidationError("experiment rows: idx, cnt and measured must have matching shapes")
        used = idx >= 0
        if np.any(idx >= k) or np.any(used & (cnt <= 0)) or np.any(~used[:, 0]):
            raise ValidationError("experiment rows must name known instructions with positive counts, first column used")
        for c in range(1, idx.shape[1]):
            if np.any(used[:, c] & np.any(idx[:, :c] == idx[:, c:c + 1], axis=1)):
                raise ValidationError("experiment rows must name distinct instructions")
        if not np.all(self.measured > 0):
            raise ValidationError("PMEvo needs positive measured inverse throughputs")
        self.idx = np.where(used, idx, k)  # padding points at the all-zero table row
        self.cnt = np.where(used, cnt, 0.0)
        self.sizes = self.cnt.sum(axis=1)
        n_used = used.sum(axis=1)
        # Three row kinds, each with its fastest route: singletons (n·max_Q S_a), plain pairs
        # {a:1, b:1} (one contiguous triangle of broadcast adds) and the rest (gathers).
        single = n_used == 1
        plain = (n_used == 2) & (self.cnt[:, 0] == 1) & (self.cnt[:, 1] == 1)
        self._single = np.flatnonzero(single)
        self._plain = np.flatnonzero(plain)
        self._other = np.flatnonzero(~single & ~plain)
        lo = np.minimum(self.a, self.b)[self._plain]
        hi = np.maximum(self.a, self.b)[self._plain]
        self._plain_lo, self._plain_hi = lo, hi
        self._tri_rows = np.unique(lo)

    @property
    def a(self) -> np.ndarray:
        return self.idx[:, 0]

    @property
    def b(self) -> np.ndarray:
        return self.idx[:, 1]

    @property
    def width(self) -> int:
        return self.idx.shape[1]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_by_insn"] = None
        return state

    def tables(self, genome: Genome, dtype: type = np.float32) -> np.ndarray:
        """S_i(Q)/|Q| for every instruction (one extra all-zero row for 'no instruction')."""
        s = np.zeros((self.n_insns + 1, 1 << self.n_ports), dtype=dtype)
        for i, entry in enumerate(genome):
            for mask, n in entry.items():
                s[i, mask] += n
        zeta(s[: self.n_insns], self.n_ports)
        s *= inverse_popcounts(self.n_ports).astype(dtype)
        return s

    def _rows(self, s: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Predictions for arbitrary experiment rows by gathering, in blocks that stay in cache."""
        out = np.empty(len(rows), dtype=np.float64)
        if len(rows) == 0:
            return out
        acc = np.empty((min(BLOCK, len(rows)), s.shape[1]), dtype=s.dtype)
        tmp = np.empty_like(acc)
        k = self.n_insns
        for start in range(0, len(rows), BLOCK):
            r = rows[start:start + BLOCK]
            m = len(r)
            ta, tb = acc[:m], tmp[:m]
            for c in range(self.width):
                ic, nc = self.idx[r, c], self.cnt[r, c]
                if c and np.all(ic == k):
                    continue
                np.take(s, ic, axis=0, out=ta if c == 0 else tb)
                target = ta if c == 0 else tb
                if nc.max() != 1 or nc.min() != 1:
                    target *= nc[:, None].astype(s.dtype)
                if c:
                    np.add(ta, tb, out=ta)
            out[start:start + m] = ta.max(axis=1)
        return self._cap(out, rows)

    def _cap(self, pred: np.ndarray, rows: np.ndarray) -> np.ndarray:
        if self.r_max is not None:
            pred = np.maximum(pred, self.sizes[rows] / self.r_max)
        return pred

    def predict_tables(self, s: np.ndarray) -> np.ndarray:
        """Predicted inverse throughput of every experiment from :meth:`tables`."""
        pred = np.empty(len(self.measured))
        smax = s[: self.n_insns].max(axis=1).astype(np.float64)
        pred[self._single] = self._cap(smax[self.a[self._single]] * self.cnt[self._single, 0], self._single)
        if len(self._plain):
            k = self.n_insns
            tri = np.zeros((k, k))
            buf = np.empty((k, s.shape[1]), dtype=s.dtype)
            for lo in self._tri_rows:
                x = buf[: k - lo - 1]
                np.add(s[lo + 1:k], s[lo], out=x)
                tri[lo, lo + 1:] = x.max(axis=1)
            pred[self._plain] = self._cap(tri[self._plain_lo, self._plain_hi], self._plain)
        pred[self._other] = self._rows(s, self._other)
        return pred

    def predict(self, genome: Genome) -> np.ndarray:
        """Predicted inverse throughput of every experiment, in the evaluator's row order.

        Only port sets that are unions of the genome's µops can be bottlenecks (any other Q
        shrinks to the union of the µops inside it without losing mass), so when the genome
        uses few distinct µops the tables are cut down to those columns first.
        """
        s = self.tables(genome)
        cols = union_closure({u for entry in genome for u in entry}, self.n_ports)
        if cols is not None:
            s = np.ascontiguousarray(s[:, cols])
        return self.predict_tables(s)

    def objectives(self, genome: Genome) -> tuple[float, int]:
        """(D_avg, V): mean relative error over the experiments, and µop volume."""
        return float(self.errors(self.predict(genome)).mean()), volume(genome)

    def errors(self, pred: np.ndarray, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Relative errors |pred − measured| / measured of the given rows."""
        m = self.measured[rows]
        return np.abs(pred - m) / m

    def rows_of(self, insn: int) -> np.ndarray:
        """The experiments that involve instruction ``insn`` (for incremental local search)."""
        if self._by_insn is None:
            self._by_insn = [np.flatnonzero(np.any(self.idx == i, axis=1)) for i in range(self.n_insns)]
        return self._by_insn[insn]


def evaluate_chunk(evaluator: Evaluator, genomes: Sequence[Genome]) -> list[tuple[float, int]]:
    """Objectives of a chunk of genomes: the unit of work handed to a (parallel) map."""
    return [evaluator.objectives(g) for g in genomes]
