"""An extension beyond the paper: local search over µop *port sets*, not only counts.

PMEvo's own local search only changes how often a µop is issued; without mutation the port
sets themselves come from the random initial population, and the evolution stalls once they
have converged. This search moves one instruction at a time: it tries replacing one µop by
*every* port set with a nearby count (the empty set meaning "drop it"), adding one new µop, or
collapsing all of the instruction's µops into one, and takes the best move if it strictly
improves the scalarised fitness. Moving set and count together matters: on a stalled Zen+ run
(4.9 % training error) set-only moves found nothing, compound ones reached 2.9 % in six passes.
All candidates of one move are scored at once: with the tables S_i(Q)/|Q| of Thm 5.2,
replacing µop u (n times) by v (m times) shifts row i by m·Z[v] − n·Z[u], so a move is a few
(2^|P| × 2^|P|) array operations per experiment containing i.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from pmsolve.infer.pmevo.fitness import Evaluator, superset_rows, volume
from pmsolve.infer.pmevo.local_search import Scale, polish
from pmsolve.infer.pmevo.operators import Genome


#: Moves of an instruction in more experiments than this are scored on an even sample of
#: them, then applied only if the exact fitness improves (bounds the cost with random experiments).
SAMPLE_ROWS = 160
#: ... and with more rows than SCREEN_ROWS, all candidates are screened on that many rows first,
#: and only the SHORTLIST best are scored on the sample.
SCREEN_ROWS = 24
SHORTLIST = 24


def _even(rows: np.ndarray, k: int) -> np.ndarray:
    """At most k rows, evenly spaced (deterministic)."""
    return rows if len(rows) <= k else rows[np.linspace(0, len(rows) - 1, k).astype(np.intp)]


class _PortState:
    def __init__(self, ev: Evaluator, genome: Genome):
        self.ev = ev
        self.genome = [dict(e) for e in genome]
        self.z = superset_rows(ev.n_ports).astype(np.float32)
        self.z[0] = 0.0  # candidate 0 is "no µop" (Z's row of the empty set is not zero)
        self.widths = np.bitwise_count(np.arange(1 << ev.n_ports, dtype=np.uint64)).astype(np.int64)
        self.refresh()

    def refresh(self) -> None:
        """Recompute tables and errors from the genome (clears float drift)."""
        self.s = self.ev.tables(self.genome)
        self.err = self.ev.errors(self.ev.predict_tables(self.s))
        self.vol = volume(self.genome)

    @property
    def d(self) -> float:
        return float(self.err.sum()) / len(self.err)

    def candidate_errors(self, i: int, cand: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Summed relative error over the given experiments of i for each candidate table row of i."""
        ev = self.ev
        total = np.zeros(cand.shape[0])
        buf = np.empty_like(cand)
        alone = None  # max_Q of the candidate row itself, shared by i's singleton rows
        for r in rows:
            mine = ev.idx[r] == i
            mi = float(ev.cnt[r][mine].sum())
            others = ~mine & (ev.idx[r] < ev.n_insns)
            if not others.any():
                if alone is None:
                    alone = cand.max(axis=1).astype(np.float64)
                pred = mi * alone
            else:
                partner = (ev.cnt[r][others].astype(np.float32)[:, None] * self.s[ev.idx[r][others]]).sum(axis=0)
                if mi == 1:
                    np.add(cand, partner, out=buf)
                else:
                    np.multiply(cand, np.float32(mi), out=buf)
                    buf += partner
                pred = buf.max(axis=1).astype(np.float64)
            if ev.r_max is not None:
                pred = np.maximum(pred, ev.sizes[r] / ev.r_max)
            total += np.abs(pred - ev.measured[r]) / ev.measured[r]
        return total

    def best_move(self, i: int, scale: Scale, removed: tuple[int, ...], counts: Sequence[int],
                  forbid: tuple[int, int] | None = None) -> tuple[float, int, int]:
        """Best single µop (v, n) to put in place of the µops ``removed`` from instruction i,
        over every port set v and each count n in ``counts``; v = 0 means "add nothing" and is
        only allowed while something else of i stays. ``forbid`` (v, n) is the no-op move.

        With many experiments, all candidates are first screened on a few of i's rows and only
        a short list is scored on the (sampled) rest; callers verify the move exactly."""
        width = self.z.shape[0]
        base = self.s[i] - sum(self.genome[i][u] * self.z[u] for u in removed)
        counts = list(counts)
        cand = np.concatenate([base[None, :] + np.float32(n) * self.z for n in counts])
        rest = self.vol - sum(self.genome[i][u] * u.bit_count() for u in removed)
        v = np.concatenate([rest + n * self.widths for n in counts])
        allowed = np.ones(len(cand), dtype=bool)
        if len(removed) == len(self.genome[i]):
            allowed[::width] = False  # never leave an instruction without µops
        else:
            allowed[width:][::width] = False  # "add nothing" once is enough
        if forbid is not None and forbid[1] in counts:
            allowed[counts.index(forbid[1]) * width + forbid[0]] = False
        all_rows = self.ev.rows_of(i)
        rows = _even(all_rows, SAMPLE_ROWS)
        ids = np.flatnonzero(allowed)
        if len(rows) > SCREEN_ROWS:
            f = self._fitness(i, scale, cand, _even(rows, SCREEN_ROWS), len(all_rows), v)
            order = np.argsort(f, kind="stable")
            ids = order[allowed[order]][:SHORTLIST]  # with few ports the short list is all there is
        f = self._fitness(i, scale, cand[ids], rows, len(all_rows), v[ids])
        best = int(ids[int(np.argmin(f))])
        return float(f.min()), best % width, counts[best // width]

    def _fitness(self, i: int, scale: Scale, cand: np.ndarray, rows: np.ndarray, n_rows: int, v: np.ndarray) -> np.ndarray:
        """Estimated scalarised fitness of each candidate from its errors on ``rows``."""
        total = self.candidate_errors(i, cand, rows)
        factor = n_rows / len(rows)  # 1 unless the rows were sampled
        d = (float(self.err.sum()) + factor * (total - float(self.err[rows].sum()))) / len(self.err)
        return scale.fitness(d, v)

    def apply(self, i: int, removed: tuple[int, ...], v: int, n: int) -> None:
        entry = self.genome[i]
        for u in removed:
            del entry[u]
        if v:
            entry[v] = entry.get(v, 0) + n
        self.refresh_row(i)

    def refresh_row(self, i: int) -> None:
        self.s = self.ev.tables(self.genome)
        rows = self.ev.rows_of(i)
        self.err[rows] = self.ev.errors(self.ev._rows(self.s, rows), rows)
        self.vol = volume(self.genome)

    def moves(self, i: int) -> list[tuple[tuple[int, ...], list[int], tuple[int, int] | None]]:
        """The move kinds for instruction i: replace one µop u (port set and count n → any
        set, counts 1, n−1, n, n+1; the empty set drops u), add one µop (count 1 or 2), and
        collapse all of i's µops into one (counts 1..4). Changing set and count together
        reaches mappings that neither a set move nor PMEvo's count search reaches alone."""
        entry = self.genome[i]
        out = [((u,), sorted({1, max(1, entry[u] - 1), entry[u], entry[u] + 1}), (u, entry[u]))
               for u in sorted(entry)]
        out.append(((), [1, 2], None))
        if len(entry) > 1:
            out.append((tuple(sorted(entry)), [1, 2, 3, 4], None))
        return out


def port_search(ev: Evaluator, genome: Genome, scale: Scale, sweeps: int = 3,
                deadline: float | None = None) -> tuple[Genome, float, int]:
    """Up to ``sweeps`` passes of best-improvement moves per instruction (see
    :meth:`_PortState.moves`), each pass followed by PMEvo's count local search; stops early
    when a pass changes nothing, and stops at ``deadline`` (``time.time()``): no instruction's
    moves are tried after it (a pass over 40 schemes takes tens of seconds; the moves already
    made stand, their errors are exact)."""
    st = _PortState(ev, genome)
    for sweep in range(sweeps):
        changed = False
        for i in range(len(st.genome)):
            if deadline is not None and time.time() > deadline:
                return st.genome, st.d, st.vol
            k = 0
            while k < len(kinds := st.moves(i)):  # re-derived after every applied move
                removed, counts, forbid = kinds[k]
                k += 1
                current = scale.fitness(st.d, st.vol)
                f, v, n = st.best_move(i, scale, removed, counts, forbid)
                if f < current - 1e-9:
                    before = dict(st.genome[i])
                    st.apply(i, removed, v, n)
                    if scale.fitness(st.d, st.vol) < current - 1e-9:  # exact check (sampled scores)
                        changed = True
                    else:
                        st.genome[i] = before
                        st.refresh_row(i)
        genome2, _, _ = polish(ev, st.genome, scale)
        st.genome = genome2
        st.refresh()
        if not changed:
            break
    return st.genome, st.d, st.vol


def port_search_chunk(ev: Evaluator, scale: Scale, sweeps: int, genomes: Sequence[Genome],
                      deadline: float | None = None) -> list[tuple[Genome, float, int]]:
    """Port search on a chunk of genomes: the unit of work handed to a (parallel) map."""
    return [port_search(ev, g, scale, sweeps, deadline) for g in genomes]
