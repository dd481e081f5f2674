"""PMEvo's evolutionary algorithm (Alg. 5.1, sec. 5.1.3) on DEAP.

Random initialisation, recombination by shuffled split, optional mutation, (N+N) selection
on the scalarised, per-generation normalised fitness Λ1(D_avg) + Λ2(V), and greedy local
search on the final population. Fitness evaluation goes through ``toolbox.map`` in chunks, so
a serial map, a local process pool or a distributed engine can be plugged in. Every completed
generation is checkpointed atomically (population, objectives, random state) with a
fingerprint of the fitness data and the configuration, so a resumed run continues exactly as
an uninterrupted one would, and another run's checkpoint is refused.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Sequence

import numpy as np

from pmsolve.errors import SolverError, ValidationError
from pmsolve.fileio import refuse_other_run

try:
    from deap import base, creator, tools
except ImportError:  # pragma: no cover - depends on the installation
    raise SolverError("PMEvo needs DEAP: pip install 'pmsolve[evo]' (or pip install deap)") from None

from pmsolve.infer.pmevo import checkpoint as ckpt
from pmsolve.infer.progress import Progress, emitter
from pmsolve.infer.pmevo.fitness import Evaluator, evaluate_chunk
from pmsolve.infer.pmevo.local_search import Scale, polish_chunk
from pmsolve.infer.pmevo.operators import Genome, canonical, mutate, random_genome, recombine
from pmsolve.infer.pmevo.port_search import port_search_chunk
from pmsolve.executor import SerialExecutor
from pmsolve.infer.pmevo.parallel import MapFn, chunks

if not hasattr(creator, "PmevoFitness"):
    # Two objectives to minimise, (D_avg, V); selection scalarises them per generation.
    creator.create("PmevoFitness", base.Fitness, weights=(-1.0, -1.0))
    creator.create("PmevoIndividual", list, fitness=creator.PmevoFitness)

STATE_VERSION = 2


@dataclass(frozen=True)
class EvolutionConfig:
    """Parameters of the evolutionary search (the paper used population 100,000).

    ``local_search`` polishes that many of the best distinct final individuals (None: all, as
    in the paper). ``volume_weight`` scales Λ2(V) against Λ1(D_avg). The paper weighs both
    equally (1); on simulated ground truths that converges to compact but inaccurate mappings
    (D_avg 13 % on a six-scheme toy where 0.01 reaches 0 %), so the default makes volume a
    tie-breaker among comparably accurate mappings.

    Extensions beyond the paper, off by default (see :mod:`~pmsolve.infer.pmevo.port_search`):
    ``port_sweeps`` > 0 runs up to that many passes of port-set local search on the
    ``port_top`` best polished mappings at the end; ``memetic_every`` = k > 0 also applies one
    pass to the ``port_top`` best distinct individuals every k generations and puts the
    results back into the population (a memetic algorithm). ``time_limit`` (seconds) ends the
    evolution early: no generation starts that would end past it (as long as the last of its
    kind took), and a memetic pass stops at it; the run is then only reproducible up to where
    the clock stopped it.
    ``init_uops`` caps the distinct µops per instruction of the random initial mappings (None:
    up to |P|, as in the paper; real schemes mostly have one or two kinds of µop).
    ``generations`` caps the generations (None: no cap); ``patience`` stops after that many
    generations without a better D_avg (None: only the caps and full convergence stop the run,
    as in the paper). The defaults are the paper's algorithm with population 1000 and a volume
    weight of 0.01; :class:`~pmsolve.infer.pmevo.options.PmevoOptions` chooses the values
    :func:`~pmsolve.infer.pmevo.infer` uses.
    """

    population: int = 1000
    generations: int | None = 100
    seed: int = 0
    mutation: float = 0.0
    local_search: int | None = None
    patience: int | None = None
    volume_weight: float = 0.01
    port_sweeps: int = 0
    port_top: int = 2
    memetic_every: int = 0
    time_limit: float | None = None
    init_uops: int | None = None

    def __post_init__(self) -> None:
        if self.population < 2:
            raise ValidationError(f"population must be at least 2, got {self.population}")
        if self.generations is not None and self.generations < 0:
            raise ValidationError(f"generations must be ≥ 0, got {self.generations}")
        if not 0.0 <= self.mutation <= 1.0:
            raise ValidationError(f"mutation probability must be in [0, 1], got {self.mutation}")
        if not self.volume_weight >= 0:
            raise ValidationError(f"volume_weight must be ≥ 0, got {self.volume_weight}")
        if self.port_sweeps < 0 or self.port_top < 1 or self.memetic_every < 0:
            raise ValidationError("port_sweeps and memetic_every must be ≥ 0 and port_top ≥ 1")
        if self.init_uops is not None and self.init_uops < 1:
            raise ValidationError(f"init_uops must be ≥ 1, got {self.init_uops}")
        if self.local_search is not None and self.local_search < 0:
            raise ValidationError(f"local_search must be ≥ 0, got {self.local_search}")
        if self.time_limit is not None and not self.time_limit >= 0:
            raise ValidationError(f"time_limit must be ≥ 0, got {self.time_limit}")


@dataclass
class EvolutionResult:
    genome: Genome
    d_avg: float
    volume: int
    generations: int
    evaluations: int
    converged: bool
    history: list[dict] = field(default_factory=list)


def scalarised(objectives: np.ndarray, volume_weight: float = 1.0) -> np.ndarray:
    """F = Λ1(D_avg) + w·Λ2(V), each Λ affinely mapping the population's extremes to 0 and
    1000 (an objective on which everybody agrees contributes 0)."""
    out = np.zeros(len(objectives))
    for col, weight in ((0, 1.0), (1, volume_weight)):
        x = objectives[:, col].astype(np.float64)
        span = x.max() - x.min()
        if span > 0:
            out += weight * 1000.0 * (x - x.min()) / span
    return out


def select_scalarised(individuals: Sequence, k: int, volume_weight: float = 1.0) -> list:
    """(N+N) selection: the k best by scalarised fitness; ties keep the earlier (parents first)."""
    objs = np.array([ind.fitness.values for ind in individuals])
    order = np.argsort(scalarised(objs, volume_weight), kind="stable")
    return [individuals[j] for j in order[:k]]


def _fingerprint(evaluator: Evaluator, config: EvolutionConfig) -> dict:
    """What a checkpointed generation depends on: the fitness data and the configuration
    (the generation cap, time limit, patience and final local search may change on resume)."""
    h = hashlib.sha256()
    for arr in (evaluator.idx, evaluator.cnt, evaluator.measured):
        h.update(np.ascontiguousarray(arr).tobytes())
    return {"fitness data": h.hexdigest()[:16], "ports": evaluator.n_ports, "instructions": evaluator.n_insns,
            "r_max": evaluator.r_max, "population": config.population, "seed": config.seed,
            "mutation": config.mutation, "volume_weight": config.volume_weight, "port_top": config.port_top,
            "memetic_every": config.memetic_every, "init_uops": config.init_uops}


class Evolution:
    """One PMEvo run over an :class:`Evaluator`'s experiments."""

    def __init__(self, evaluator: Evaluator, single: Sequence[float], config: EvolutionConfig,
                 map_fn: MapFn | None = None, n_chunks: int = 1, checkpoint: str | Path | None = None,
                 progress: Progress | None = None):
        if len(single) != evaluator.n_insns:
            raise ValidationError("need one singleton throughput per instruction")
        self.ev = evaluator
        self.config = config
        self.n_chunks = max(1, n_chunks)
        self.checkpoint = Path(checkpoint) if checkpoint else None
        self.say = emitter("pmevo", progress)
        self.rng = random.Random(config.seed)
        self.evaluations = 0
        tb = base.Toolbox()
        tb.register("genome", random_genome, self.rng, evaluator.n_ports, list(single), max_uops=config.init_uops)
        tb.register("individual", tools.initIterate, creator.PmevoIndividual, tb.genome)
        tb.register("population", tools.initRepeat, list, tb.individual)
        tb.register("mate", recombine, self.rng)
        tb.register("mutate", mutate, self.rng, n_ports=evaluator.n_ports)
        tb.register("select", select_scalarised, volume_weight=config.volume_weight)
        tb.register("map", map_fn or SerialExecutor())
        self.toolbox = tb
        self.logbook = tools.Logbook()
        self.logbook.header = ["gen", "evals", "best_d", "best_v", "mean_d", "distinct", "seconds"]

    # -- fitness ---------------------------------------------------------------------------

    def _evaluate(self, individuals: list) -> None:
        genomes = [list(ind) for ind in individuals]
        parts = chunks(genomes, self.n_chunks)
        results = self.toolbox.map(partial(evaluate_chunk, self.ev), parts)
        flat = [r for part in results for r in part]
        for ind, values in zip(individuals, flat):
            ind.fitness.values = values
        self.evaluations += len(individuals)

    # -- checkpointing ---------------------------------------------------------------------

    def _save(self, gen: int, pop: list, converged: bool) -> None:
        if self.checkpoint is None:
            return
        ckpt.save_state(self.checkpoint, {
            "version": STATE_VERSION, "fingerprint": _fingerprint(self.ev, self.config),
            "generation": gen, "converged": converged,
            "population": [list(ind) for ind in pop],
            "objectives": [ind.fitness.values for ind in pop],
            "rng": self.rng.getstate(), "evaluations": self.evaluations,
            "logbook": list(self.logbook), "config": asdict(self.config)})

    def _restore(self) -> tuple[int, list, bool] | None:
        if self.checkpoint is None:
            return None
        state = ckpt.load_state(self.checkpoint)
        if state is None:
            return None
        if state.get("version") != STATE_VERSION:
            raise ValidationError(f"{self.checkpoint}: a PMEvo checkpoint of another version; "
                                  f"to start afresh give another folder or delete it")
        refuse_other_run(self.checkpoint, "PMEvo evolution", state.get("fingerprint"), _fingerprint(self.ev, self.config))
        pop = []
        for genome, values in zip(state["population"], state["objectives"]):
            ind = creator.PmevoIndividual(genome)
            ind.fitness.values = tuple(values)
            pop.append(ind)
        self.rng.setstate(state["rng"])
        self.evaluations = state["evaluations"]
        for row in state["logbook"]:
            self.logbook.record(**row)
        return state["generation"], pop, state["converged"]

    # -- the loop --------------------------------------------------------------------------

    def _log(self, gen: int, pop: list, t0: float) -> dict:
        objs = np.array([ind.fitness.values for ind in pop])
        best = int(np.argmin(scalarised(objs, self.config.volume_weight)))
        row = {"gen": gen, "evals": self.evaluations, "best_d": float(objs[:, 0].min()),
               "best_v": int(objs[best, 1]), "mean_d": float(objs[:, 0].mean()),
               "distinct": len({canonical(ind) for ind in pop}), "seconds": round(time.monotonic() - t0, 2)}
        self.logbook.record(**row)
        cap = self.config.generations
        self.say("evolve", f"gen {gen}{'' if cap is None else f'/{cap}'}  best D_avg {100 * row['best_d']:.2f} %  "
                           f"V {row['best_v']}  mean D_avg {100 * row['mean_d']:.2f} %  distinct {row['distinct']}  "
                           f"evals {row['evals']}  {row['seconds']:.0f} s", done=gen, total=cap, **row)
        return row

    def _converged(self, pop: list) -> bool:
        objs = np.array([ind.fitness.values for ind in pop])
        return bool(np.all(objs.max(axis=0) - objs.min(axis=0) <= 1e-12))

    def evolve(self) -> tuple[list, int, bool]:
        """Run (or resume) the generations; returns the final population."""
        cfg, tb = self.config, self.toolbox
        t0 = time.monotonic()
        restored = self._restore()
        if restored:
            gen, pop, converged = restored
            t0 -= self.logbook[-1]["seconds"] if len(self.logbook) else 0.0  # the time limit counts from the start
        else:
            pop = tb.population(n=cfg.population)
            self._evaluate(pop)
            gen, converged = 0, self._converged(pop)
            self._log(gen, pop, t0)
            self._save(gen, pop, converged)
        best_d, stale = float("inf"), 0
        for row in self.logbook:  # replay, so patience counts the same after a resume
            stale = 0 if row["best_d"] < best_d - 1e-12 else stale + 1
            best_d = min(best_d, row["best_d"])
        while (cfg.generations is None or gen < cfg.generations) and not converged:
            left = None if cfg.time_limit is None else cfg.time_limit - (time.monotonic() - t0)
            if left is not None and (left <= 0 or (self._expected_seconds(gen + 1) or 0.0) > left):
                break  # a generation that would end past the limit is not started
            limit_at = None if left is None else time.time() + left  # for the workers' clocks
            offspring = []
            while len(offspring) < cfg.population:
                i, j = self.rng.sample(range(len(pop)), 2)
                for genome in tb.mate(pop[i], pop[j]):
                    if cfg.mutation and self.rng.random() < cfg.mutation:
                        genome = tb.mutate(genome)
                    offspring.append(creator.PmevoIndividual(genome))
            offspring = offspring[:cfg.population]
            self._evaluate(offspring)
            pop = tb.select(pop + offspring, cfg.population)
            gen += 1
            if cfg.memetic_every and gen % cfg.memetic_every == 0:
                pop = self._memetic(pop, limit_at)
            converged = self._converged(pop)
            row = self._log(gen, pop, t0)
            self._save(gen, pop, converged)
            stale = 0 if row["best_d"] < best_d - 1e-12 else stale + 1
            best_d = min(best_d, row["best_d"])
            if cfg.patience is not None and stale >= cfg.patience:
                break
        return pop, gen, converged

    def _expected_seconds(self, gen: int) -> float | None:
        """How long generation ``gen`` will take: as long as the last one of its kind (with or
        without the memetic pass, which takes most of the time), read from the logbook so that
        a resumed run decides the same; None before one of its kind has run."""
        every = self.config.memetic_every
        memetic = lambda g: bool(every) and g % every == 0  # noqa: E731
        rows = list(self.logbook)
        for prev, row in zip(reversed(rows[:-1]), reversed(rows[1:])):
            if memetic(row["gen"]) == memetic(gen):
                return row["seconds"] - prev["seconds"]
        return None

    def _distinct_best(self, pop: list, scale: Scale, limit: int | None) -> list[int]:
        """Indices of the best individuals by scaled fitness, one per distinct mapping."""
        objs = np.array([ind.fitness.values for ind in pop])
        order = np.argsort(scale.fitness(objs[:, 0], objs[:, 1]), kind="stable")
        seen, picked = set(), []
        for j in order:
            key = canonical(pop[j])
            if key not in seen:
                seen.add(key)
                picked.append(int(j))
                if limit is not None and len(picked) >= limit:
                    break
        return picked

    def _memetic(self, pop: list, deadline: float | None) -> list:
        """One pass of port-set search on the best distinct individuals, written back; no move
        is tried after ``deadline`` (``time.time()``)."""
        objs = np.array([ind.fitness.values for ind in pop])
        scale = Scale.of(objs, self.config.volume_weight)
        picked = self._distinct_best(pop, scale, self.config.port_top)
        work = [list(pop[j]) for j in picked]
        results = self.toolbox.map(partial(port_search_chunk, self.ev, scale, 1, deadline=deadline),
                                   chunks(work, self.n_chunks))
        flat = [r for part in results for r in part]
        pop = list(pop)
        for j, (genome, d, v) in zip(picked, flat):
            ind = creator.PmevoIndividual(genome)
            ind.fitness.values = (d, v)
            pop[j] = ind
        self.evaluations += len(picked)
        return pop

    def local_search(self, pop: list, deadline: float | None = None) -> tuple[Genome, float, int]:
        """Polish the best distinct individuals greedily, then (``port_sweeps``) search port sets
        of the best ones until ``deadline`` (``time.time()``); return the fittest result."""
        objs = np.array([ind.fitness.values for ind in pop])
        scale = Scale.of(objs, self.config.volume_weight)
        starts = [list(pop[j]) for j in self._distinct_best(pop, scale, None if self.config.local_search is None else max(1, self.config.local_search))]
        self.say("local search", f"local search on {len(starts)} distinct individuals", total=len(starts))
        results = self.toolbox.map(partial(polish_chunk, self.ev, scale), chunks(starts, self.n_chunks))
        flat = [r for part in results for r in part]
        flat.sort(key=lambda r: scale.fitness(r[1], r[2]))  # stable: ties keep the better start
        if self.config.port_sweeps:
            top = flat[:self.config.port_top]
            self.say("port search", f"port search on {len(top)} distinct individuals", total=len(top))
            results = self.toolbox.map(partial(port_search_chunk, self.ev, scale, self.config.port_sweeps,
                                               deadline=deadline),
                                       chunks([g for g, _, _ in top], self.n_chunks))
            flat = [r for part in results for r in part] + flat
        fit = [scale.fitness(d, v) for _, d, v in flat]
        return flat[int(np.argmin(fit))]

    def run(self, deadline: float | None = None) -> EvolutionResult:
        """Evolve, then search locally (Alg. 5.1); the port-set search after the evolution
        stops at ``deadline`` (``time.time()``; None: all ``port_sweeps``)."""
        pop, gen, converged = self.evolve()
        genome, d, v = self.local_search(pop, deadline)
        return EvolutionResult(genome, d, v, gen, self.evaluations, converged, list(self.logbook))
