"""The whole PMEvo pipeline (Fig. 5.1): measure singletons, then pairs and ratio pairs; filter
congruent schemes; evolve a mapping for the representatives; expand it to every scheme."""

from __future__ import annotations

import pickle
import sys
import time
from contextlib import nullcontext
from functools import partial
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from pmsolve.errors import ValidationError
from pmsolve.executor import SerialExecutor, current_executor, open_executor
from pmsolve.harness.oracle import Oracle
from pmsolve.infer.pmevo import checkpoint as ckpt
from pmsolve.infer.pmevo.evolution import Evolution, EvolutionConfig, EvolutionResult
from pmsolve.infer.pmevo.experiments import (Congruence, close, congruence_classes, merge_to_representatives,
                                             pair_experiments, random_experiments, singletons)
from pmsolve.infer.pmevo.fitness import Evaluator
from pmsolve.infer.pmevo.operators import Genome
from pmsolve.infer.pmevo.parallel import MapFn
from pmsolve.model import Experiment, PortMapping

#: Experiments per oracle call: large batches for a hardware oracle, yet visible progress.
MEASURE_BATCH = 5000


@dataclass
class PmevoResult:
    """An inferred mapping for all schemes, with what it was inferred from."""

    mapping: PortMapping
    congruence: Congruence
    d_avg: float
    volume: int
    n_experiments: int
    evolution: EvolutionResult
    seconds: float
    measurements: dict[Experiment, float] = field(repr=False, default_factory=dict)

    def table(self) -> str:
        """A readable table: one line per congruence class, its µops and its members."""
        rows = [("representative", "µops", "members")]
        for rep, members in self.congruence.classes.items():
            uops = " + ".join(str(u) for u in self.mapping.uops[rep])
            others = ", ".join(members[1:4]) if len(members) > 1 else "-"
            if len(members) > 4:
                others += f" (+{len(members) - 4} more)"
            rows.append((rep, uops, others))
        widths = [max(len(r[j]) for r in rows) for j in range(2)]
        lines = [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}".rstrip() for r in rows]
        lines.insert(1, "-" * (widths[0] + widths[1] + 13))
        head = (f"PMEvo: {len(self.mapping.instructions)} schemes in {len(self.congruence.classes)} congruence "
                f"classes, {len(self.mapping.ports)} ports; D_avg {100 * self.d_avg:.2f} % on "
                f"{self.n_experiments} experiments, µop volume {self.volume}, "
                f"{self.evolution.generations} generations, {self.evolution.evaluations} evaluations, "
                f"{self.seconds:.1f} s")
        return head + "\n" + "\n".join(lines)


def stderr_progress(event: dict) -> None:
    """Default progress display: one short line per event on stderr."""
    phase = event.get("phase")
    tag = f"pmevo[run {event['run']}]" if "run" in event else "pmevo"
    if phase == "evolve":
        print(f"{tag}: gen {event['gen']}/{event['generations']}  best D_avg {100 * event['best_d']:.2f} %  "
              f"V {event['best_v']}  mean D_avg {100 * event['mean_d']:.2f} %  distinct {event['distinct']}  "
              f"evals {event['evals']}  {event['seconds']:.0f} s", file=sys.stderr, flush=True)
    elif phase == "measure":
        print(f"pmevo: measured {event['done']}/{event['total']} experiments", file=sys.stderr, flush=True)
    elif phase in ("local search", "port search"):
        print(f"{tag}: {phase} on {event['individuals']} distinct individuals", file=sys.stderr, flush=True)
    elif phase == "congruence":
        print(f"pmevo: {event['instructions']} schemes -> {event['classes']} congruence classes "
              f"(ε {event['epsilon']})", file=sys.stderr, flush=True)


def measure_all(oracle: Oracle, instructions: Sequence[str], checkpoint: Path | None = None,
                progress: Callable[[dict], None] | None = None) -> dict[Experiment, float]:
    """Singletons first (the ratio pairs depend on them), then pairs and ratio pairs. With a
    checkpoint folder, finished measurements are kept so a resumed run re-measures nothing."""
    if checkpoint is not None:
        saved = ckpt.load_json(checkpoint, ckpt.MEASUREMENTS_FILE)
        if saved is not None:
            if saved.get("instructions") != list(instructions):
                raise ValidationError(f"checkpoint {checkpoint} measured other instructions; use a new folder")
            return {Experiment(row["counts"]): float(row["cycles"]) for row in saved["measurements"]}
    singles = singletons(instructions)
    values = oracle.measure(singles)
    if len(values) != len(singles):
        raise ValidationError("oracle returned the wrong number of results")
    measured = dict(zip(singles, map(float, values)))
    single = {i: measured[Experiment({i: 1})] for i in instructions}
    bad = [i for i, t in single.items() if not t > 0]
    if bad:
        raise ValidationError(f"oracle gave non-positive throughput for {bad[:3]}")
    rest = pair_experiments(instructions, single)
    for k in range(0, len(rest), MEASURE_BATCH):
        batch = rest[k:k + MEASURE_BATCH]
        measured.update(zip(batch, map(float, oracle.measure(batch))))
        if progress:
            progress({"phase": "measure", "done": len(singles) + k + len(batch), "total": len(singles) + len(rest)})
    if checkpoint is not None:
        ckpt.save_json(checkpoint, ckpt.MEASUREMENTS_FILE, {
            "instructions": list(instructions),
            "measurements": [{"counts": dict(e.items()), "cycles": t} for e, t in measured.items()]})
    return measured


TRAINING_FILE = "training.json"

#: Training experiments per class member used to check that it really is congruent.
CHECKS_PER_MEMBER = 4


def refine_congruence(oracle: Oracle, congruence: Congruence, training: dict[Experiment, float], eps: float,
                      per_member: int = CHECKS_PER_MEMBER) -> tuple[Congruence, dict[Experiment, float]]:
    """Split off class members that pairs could not tell from their representative but longer
    experiments can (issue 8: pairs do not determine a mapping, so PMEvo's filter may merge
    schemes that differ). For up to ``per_member`` training experiments containing a member,
    the same experiment with the representative in its place is measured; a member whose
    results differ beyond ε becomes a class of its own (deterministic in the input order)."""
    probes: list[tuple[str, str, Experiment, Experiment]] = []
    for rep, members in congruence.classes.items():
        for m in members[1:]:
            found = [e for e in training if m in dict(e.items())][:per_member]
            for e in found:
                probes.append((rep, m, e, Experiment([(rep if i == m else i, n) for i, n in e.items()])))
    if not probes:
        return congruence, {}
    batch = list(dict.fromkeys(p[3] for p in probes if p[3] not in training))
    values = dict(zip(batch, map(float, oracle.measure(batch)))) if batch else {}
    values.update((e, t) for e, t in training.items())
    split = {m for rep, m, e, e2 in probes if not close(training[e], values[e2], eps)}
    classes: dict[str, tuple[str, ...]] = {}
    for rep, members in congruence.classes.items():
        classes[rep] = tuple(m for m in members if m not in split)
        for m in members:
            if m in split:
                classes[m] = (m,)
    return Congruence(classes), {e: values[e] for e in batch}


def measure_training(oracle: Oracle, instructions: Sequence[str], count: int, sizes: tuple[int, int], seed: int,
                     checkpoint: Path | None = None,
                     progress: Callable[[dict], None] | None = None) -> dict[Experiment, float]:
    """Measure the random training experiments (kept in the checkpoint folder like the pairs)."""
    exps = list(dict.fromkeys(random_experiments(instructions, count, sizes, seed)))
    if checkpoint is not None:
        saved = ckpt.load_json(checkpoint, TRAINING_FILE)
        if saved is not None:
            got = {Experiment(row["counts"]): float(row["cycles"]) for row in saved["measurements"]}
            if list(got) != exps:
                raise ValidationError(f"checkpoint {checkpoint} holds other training experiments; use a new folder")
            return got
    out: dict[Experiment, float] = {}
    for k in range(0, len(exps), MEASURE_BATCH):
        batch = exps[k:k + MEASURE_BATCH]
        values = oracle.measure(batch)
        if len(values) != len(batch) or not all(v > 0 for v in values):
            raise ValidationError("oracle returned a wrong number of results or a non-positive throughput "
                                  "for the training experiments")
        out.update(zip(batch, map(float, values)))
        if progress:
            progress({"phase": "measure", "done": k + len(batch), "total": len(exps)})
    if checkpoint is not None:
        ckpt.save_json(checkpoint, TRAINING_FILE,
                       {"measurements": [{"counts": dict(e.items()), "cycles": t} for e, t in out.items()]})
    return out


def build_evaluator(n_ports: int, representatives: Sequence[str], measured: dict[Experiment, float],
                    r_max: float | None, max_width: int = 2) -> Evaluator:
    """Fitness data: the measured experiments of at most ``max_width`` distinct schemes that
    use representatives only."""
    idx = {r: k for k, r in enumerate(representatives)}
    rows, counts, t = [], [], []
    for e, value in measured.items():
        items = e.items()
        if len(items) > max_width or not all(i in idx for i, _ in items):
            continue
        rows.append([idx[i] for i, _ in items])
        counts.append([n for _, n in items])
        t.append(value)
    width = max(2, max((len(r) for r in rows), default=2))
    a = np.full((len(rows), width), -1, dtype=np.intp)
    c = np.zeros((len(rows), width))
    for k, (r, n) in enumerate(zip(rows, counts)):
        a[k, :len(r)], c[k, :len(n)] = r, n
    return Evaluator(n_ports, len(representatives), a, c, np.array(t), r_max)


def genome_to_mapping(genome: Genome, ports: Sequence[str], names: Sequence[str]) -> PortMapping:
    return PortMapping(ports, {name: [([ports[j] for j in range(len(ports)) if mask >> j & 1], n)
                                      for mask, n in sorted(entry.items())]
                               for name, entry in zip(names, genome)})


def _portable(progress: Callable[[dict], None] | None, executor) -> Callable[[dict], None] | None:
    """The progress callback if the executor can ship it to its workers (a closure cannot go to
    another process; the restarts then run without progress lines)."""
    if progress is None or isinstance(executor, SerialExecutor):
        return progress
    try:
        pickle.dumps(progress)
    except (pickle.PicklingError, AttributeError, TypeError):
        return None
    return progress


def _restart(evaluator: Evaluator, single: list[float], config: EvolutionConfig, folder: Path | None,
             progress: Callable[[dict], None] | None, k: int) -> EvolutionResult:
    """One independent evolution (a task for a worker; its fitness calls stay on that worker)."""
    tagged = None if progress is None else (lambda event: progress({**event, "run": k}))
    evo = Evolution(evaluator, single, replace(config, seed=config.seed + k), SerialExecutor(), n_chunks=1,
                    checkpoint=None if folder is None else folder / f"restart-{k}", progress=tagged)
    return evo.run()


def infer(oracle: Oracle, n_ports: int, config: EvolutionConfig = EvolutionConfig(), *,
          instructions: Sequence[str] | None = None, epsilon: float = 0.05, r_max: float | None = None,
          workers: int = 1, map_fn: MapFn | None = None, checkpoint: str | Path | None = None,
          progress: Callable[[dict], None] | None = None, training: int = 0,
          training_sizes: tuple[int, int] = (3, 5), restarts: int = 1) -> PmevoResult:
    """Infer a three-level port mapping with PMEvo.

    ``instructions`` defaults to every scheme the oracle knows. ``r_max`` caps the model's
    rate (instructions per cycle) like the machine's front end. ``map_fn`` replaces the local
    pool of ``workers`` processes (e.g. a :class:`pmsolve.executor.Executor`; without it, the
    ambient executor of :func:`pmsolve.executor.use_executor`, if any). ``checkpoint`` is a folder
    for measurements and per-generation state; rerunning with the same folder resumes.
    ``training`` > 0 adds that many random experiments of ``training_sizes`` schemes to the
    fitness (an extension; the paper uses singletons, pairs and ratio pairs only), drawn with
    a generator keyed by ``config.seed``. ``restarts`` > 1 runs that many independent
    evolutions (seeds ``config.seed + k``, each checkpointed in ``restart-k``) side by side on
    the workers, one per worker, and keeps the one with the lowest training error: the
    evolution's local optima vary from seed to seed, and restarts use the cores better than
    sharing one population's fitness calls.
    """
    t0 = time.monotonic()
    if n_ports < 1:
        raise ValidationError(f"the number of ports must be at least 1, got {n_ports}")
    if restarts < 1:
        raise ValidationError(f"restarts must be at least 1, got {restarts}")
    insns = list(instructions) if instructions is not None else list(oracle.instructions)
    if len(insns) < 1 or len(set(insns)) != len(insns):
        raise ValidationError("PMEvo needs a non-empty list of distinct instructions")
    folder = Path(checkpoint) if checkpoint else None
    measured = measure_all(oracle, insns, folder, progress)
    congruence = congruence_classes(insns, measured, epsilon)
    reps = list(congruence.representatives)
    if progress:
        progress({"phase": "congruence", "instructions": len(insns), "classes": len(reps), "epsilon": epsilon})
    fit = dict(measured)
    if training:
        extra = measure_training(oracle, insns, training, training_sizes, config.seed, folder, progress)
        measured.update(extra)
        congruence, checks = refine_congruence(oracle, congruence, extra, epsilon)
        measured.update(checks)
        reps = list(congruence.representatives)
        if progress:
            progress({"phase": "congruence", "instructions": len(insns), "classes": len(reps), "epsilon": epsilon})
        rep_of = congruence.representative_of()
        fit.update((merge_to_representatives(e, rep_of), t) for e, t in extra.items())
    evaluator = build_evaluator(n_ports, reps, fit, r_max, max_width=max(2, training_sizes[1] if training else 2))
    single = [measured[Experiment({r: 1})] for r in reps]
    if map_fn is None:  # a command's --scheduler/--executor (pmsolve.executor.use_executor)
        map_fn = current_executor()
    n_chunks = 4 * workers if workers > 1 else 1
    if map_fn is not None:
        n_chunks = max(8, 4 * getattr(map_fn, "workers", 2))
    with nullcontext(map_fn) if map_fn is not None else open_executor("pool" if workers > 1 else "serial",
                                                                      workers=workers) as run_map:
        if restarts == 1:
            evo = Evolution(evaluator, single, config, run_map, n_chunks=n_chunks, checkpoint=folder,
                            progress=progress)
            result = evo.run()
        else:
            if folder is not None:
                for k in range(restarts):
                    (folder / f"restart-{k}").mkdir(parents=True, exist_ok=True)
            runs = run_map(partial(_restart, evaluator, single, config, folder, _portable(progress, run_map)),
                           list(range(restarts)))
            result = min(runs, key=lambda r: (r.d_avg, r.volume))
    ports = [str(p) for p in range(n_ports)]
    rep_mapping = genome_to_mapping(result.genome, ports, reps)
    expanded = {m: rep_mapping.uops[r] for r, members in congruence.classes.items() for m in members}
    mapping = PortMapping(ports, expanded)
    return PmevoResult(mapping, congruence, result.d_avg, result.volume, len(evaluator.measured), result,
                       time.monotonic() - t0, measured)
