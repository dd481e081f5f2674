"""PMEvo's greedy hill climbing on µop counts (sec. 5.1.3, "Local Search").

For each (instruction, µop, n): decrement n while the fitness does not get worse, else
increment n while it strictly improves. The asymmetry favours compact mappings. Changing one
count only affects experiments that contain the instruction, so each step re-evaluates just
those rows against incrementally updated tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pmsolve.infer.pmevo.fitness import Evaluator, superset_rows, union_closure, volume
from pmsolve.infer.pmevo.operators import Genome


@dataclass(frozen=True)
class Scale:
    """The affine normalisation of the final population: F = 1000·(D−d0)/dr + w·1000·(V−v0)/vr."""

    d0: float
    dr: float
    v0: float
    vr: float
    w: float = 1.0

    def fitness(self, d: float | np.ndarray, v: float | np.ndarray) -> float | np.ndarray:
        return 1000.0 * (d - self.d0) / self.dr + self.w * 1000.0 * (v - self.v0) / self.vr

    @classmethod
    def of(cls, objectives: np.ndarray, volume_weight: float = 1.0) -> "Scale":
        """Map the extremes of a population to 0 and 1000. A collapsed range (converged
        population) falls back to the minimum itself, so neither objective is ignored."""
        d, v = objectives[:, 0], objectives[:, 1]
        dr = float(d.max() - d.min()) or float(d.min()) or 1.0
        vr = float(v.max() - v.min()) or float(v.min()) or 1.0
        return cls(float(d.min()), dr, float(v.min()), vr, volume_weight)


class _State:
    """One genome with its tables, predictions and objectives, updated in place."""

    def __init__(self, ev: Evaluator, genome: Genome):
        self.ev = ev
        self.genome = [dict(e) for e in genome]
        s = ev.tables(self.genome, dtype=np.float64)
        z = superset_rows(ev.n_ports)
        # Counts change but no µop is ever added, so the union closure of the start genome's
        # µops keeps containing every possible bottleneck.
        cols = union_closure({u for entry in genome for u in entry}, ev.n_ports)
        if cols is not None:
            s, z = np.ascontiguousarray(s[:, cols]), z[:, cols]
        self.s, self.z = s, z
        self.err = ev.errors(ev.predict_tables(self.s))
        self.err_sum = float(self.err.sum())
        self.vol = volume(self.genome)

    @property
    def d(self) -> float:
        return self.err_sum / len(self.err)

    def trial(self, i: int, u: int, delta: int) -> tuple[float, int, np.ndarray, np.ndarray]:
        """Objectives if instruction i issued ``delta`` more µops u (tables left changed)."""
        self.s[i] += delta * self.z[u]
        rows = self.ev.rows_of(i)
        err = self.ev.errors(self.ev._rows(self.s, rows), rows)
        d = (self.err_sum - float(self.err[rows].sum()) + float(err.sum())) / len(self.err)
        return d, self.vol + delta * u.bit_count(), rows, err

    def commit(self, i: int, u: int, delta: int, rows: np.ndarray, err: np.ndarray) -> None:
        self.err_sum += float(err.sum()) - float(self.err[rows].sum())
        self.err[rows] = err
        self.vol += delta * u.bit_count()
        n = self.genome[i].get(u, 0) + delta
        if n:
            self.genome[i][u] = n
        else:
            del self.genome[i][u]

    def undo(self, i: int, u: int, delta: int) -> None:
        self.s[i] -= delta * self.z[u]


def polish(ev: Evaluator, genome: Genome, scale: Scale) -> tuple[Genome, float, int]:
    """Greedy local search from ``genome``; returns the improved genome, its D_avg and V."""
    st = _State(ev, genome)
    for i in range(len(st.genome)):
        for u in sorted(st.genome[i]):
            if u not in st.genome[i]:
                continue
            best = scale.fitness(st.d, st.vol)
            moved = False
            # Decrement while not worse (never drop an instruction's last µop).
            while st.genome[i].get(u, 0) > 0 and not (st.genome[i][u] == 1 and len(st.genome[i]) == 1):
                d, v, rows, err = st.trial(i, u, -1)
                f = scale.fitness(d, v)
                if f <= best:
                    st.commit(i, u, -1, rows, err)
                    best, moved = f, True
                else:
                    st.undo(i, u, -1)
                    break
            if moved:
                continue
            # Otherwise increment while strictly better.
            while True:
                d, v, rows, err = st.trial(i, u, +1)
                f = scale.fitness(d, v)
                if f < best:
                    st.commit(i, u, +1, rows, err)
                    best = f
                else:
                    st.undo(i, u, +1)
                    break
    return st.genome, st.d, st.vol


def polish_chunk(ev: Evaluator, scale: Scale, genomes: Sequence[Genome]) -> list[tuple[Genome, float, int]]:
    """Local search on a chunk of genomes: the unit of work handed to a (parallel) map."""
    return [polish(ev, g, scale) for g in genomes]
