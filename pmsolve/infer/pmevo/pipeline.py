"""The whole PMEvo pipeline (Fig. 5.1): measure singletons, then pairs and ratio pairs; filter
congruent schemes; evolve a mapping for the representatives; expand it to every scheme."""

from __future__ import annotations

import pickle
import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Sequence

import numpy as np

from pmsolve.errors import ValidationError
from pmsolve.executor import SerialExecutor, current_executor, open_executor
from pmsolve.fileio import StateFile
from pmsolve.harness.cache import CachingOracle
from pmsolve.harness.protocol import Oracle, oracle_fingerprint
from pmsolve.infer.common import Mismatch, UnseenCheck, check_unseen, port_names
from pmsolve.infer.pmevo import checkpoint as ckpt
from pmsolve.infer.pmevo.evolution import Evolution, EvolutionConfig, EvolutionResult
from pmsolve.infer.pmevo.experiments import (Congruence, close, congruence_classes, merge_to_representatives,
                                             pair_experiments, random_experiments, singletons)
from pmsolve.infer.pmevo.fitness import Evaluator
from pmsolve.infer.pmevo.operators import Genome
from pmsolve.infer.pmevo.options import EVOLUTION_SHARE, PmevoOptions
from pmsolve.infer.progress import Progress, ProgressEvent, emitter
from pmsolve.model import Experiment, PortMapping

#: Experiments per oracle call: large batches for a hardware oracle, yet visible progress.
MEASURE_BATCH = 5000


@dataclass
class PmevoResult:
    """An inferred mapping for all schemes, with what it was inferred from: the congruence
    classes, the training error ``d_avg`` and µop volume, the evolution's history, every
    measurement, and the check on unseen experiments (``unseen``, None when not asked)."""

    mapping: PortMapping
    congruence: Congruence
    d_avg: float
    volume: int
    n_experiments: int
    evolution: EvolutionResult
    seconds: float
    measurements: dict[Experiment, float] = field(repr=False, default_factory=dict)
    unseen: UnseenCheck | None = None

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


def measure_all(oracle: Oracle, instructions: Sequence[str], progress: Progress | None = None) -> dict[Experiment, float]:
    """Singletons first (the ratio pairs depend on them), then pairs and ratio pairs (sec. 5.1.1)."""
    say = emitter("pmevo", progress)
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
    total = len(singles) + len(rest)
    for k in range(0, len(rest), MEASURE_BATCH):
        batch = rest[k:k + MEASURE_BATCH]
        measured.update(zip(batch, map(float, oracle.measure(batch))))
        done = len(singles) + k + len(batch)
        say("measure", f"measured {done}/{total} experiments", done, total)
    return measured


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
                     progress: Progress | None = None) -> dict[Experiment, float]:
    """Measure the random training experiments (an extension beyond the paper)."""
    say = emitter("pmevo", progress)
    exps = list(dict.fromkeys(random_experiments(instructions, count, sizes, seed)))
    out: dict[Experiment, float] = {}
    for k in range(0, len(exps), MEASURE_BATCH):
        batch = exps[k:k + MEASURE_BATCH]
        values = oracle.measure(batch)
        if len(values) != len(batch) or not all(v > 0 for v in values):
            raise ValidationError("oracle returned a wrong number of results or a non-positive throughput "
                                  "for the training experiments")
        out.update(zip(batch, map(float, values)))
        say("measure", f"measured {k + len(batch)}/{len(exps)} training experiments", k + len(batch), len(exps))
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


def _portable(progress: Progress | None, executor) -> Progress | None:
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
             progress: Progress | None, deadline: float | None, k: int) -> EvolutionResult:
    """One independent evolution (a task for a worker; its fitness calls stay on that worker)."""
    def tagged(event: ProgressEvent) -> None:
        assert progress is not None
        progress(replace(event, message=f"run {k}: {event.message}", data={**event.data, "run": k}))

    evo = Evolution(evaluator, single, replace(config, seed=config.seed + k), SerialExecutor(), n_chunks=1,
                    checkpoint=None if folder is None else folder / f"restart-{k}",
                    progress=None if progress is None else tagged)
    return evo.run(deadline)


def infer(oracle: Oracle, options: PmevoOptions, *, state: str | Path | None = None,
          progress: Progress | None = None) -> PmevoResult:
    """Infer a three-level port mapping with PMEvo (Fig. 5.1, sec. 5.1)::

        measure singletons, pairs and ratio pairs (sec. 5.1.1)   [+ random training experiments]
        merge congruent schemes (sec. 5.1.2)                     [split what the training tells apart]
        evolve a mapping of the representatives (Alg. 5.1)      for the budget, then local search
        expand it to every scheme of its class
        check it on unseen experiments (issue 18: no confident wrong answers)

    ``options`` (:class:`~pmsolve.infer.pmevo.options.PmevoOptions`) holds every knob; its
    defaults are PMEvo's best configuration for a two-minute budget. ``state`` is a checkpoint
    folder: measurements (fingerprinted, :class:`~pmsolve.fileio.StateFile`) and the last
    completed generation; rerunning with the same folder resumes and refuses another run's
    folder. ``progress`` receives a :class:`~pmsolve.infer.progress.ProgressEvent` per step.
    """
    t0 = time.monotonic()
    o = options.resolved()
    say = emitter("pmevo", progress)
    ports = port_names(o.ports, "PMEvo")
    insns = list(o.instructions) if o.instructions is not None else list(oracle.instructions)
    if len(insns) < 1 or len(set(insns)) != len(insns):
        raise ValidationError("PMEvo needs a non-empty list of distinct instructions")
    folder = Path(state) if state else None
    if folder is not None and folder.exists() and not folder.is_dir():
        raise ValidationError(f"{folder}: a PMEvo checkpoint is a folder, not a file")
    statefile = StateFile(None if folder is None else folder / ckpt.MEASUREMENTS_FILE, "pmevo",
                          {"oracle": oracle_fingerprint(oracle), **o.fingerprint(ports, insns)})
    cached = CachingOracle.in_state(oracle, statefile)
    if statefile.resumed:
        say("resume", f"resuming from {folder}: {len(cached.known())} measurements")
    measured = measure_all(cached, insns, progress)
    congruence = congruence_classes(insns, measured, o.congruence_epsilon)
    say("congruence", f"{len(insns)} schemes -> {len(congruence.classes)} congruence classes "
                      f"(ε {o.congruence_epsilon})", classes=len(congruence.classes))
    fit = dict(measured)
    if o.training:
        extra = measure_training(cached, insns, o.training, o.training_sizes, o.seed, progress)
        measured.update(extra)
        congruence, checks = refine_congruence(cached, congruence, extra, o.congruence_epsilon)
        measured.update(checks)
        say("congruence", f"{len(insns)} schemes -> {len(congruence.classes)} congruence classes after the "
                          f"training experiments", classes=len(congruence.classes))
        rep_of = congruence.representative_of()
        fit.update((merge_to_representatives(e, rep_of), t) for e, t in extra.items())
    reps = list(congruence.representatives)
    evaluator = build_evaluator(len(ports), reps, fit, o.r_max, max_width=max(2, o.training_sizes[1] if o.training else 2))
    single = [measured[Experiment({r: 1})] for r in reps]
    budget = o.budget_seconds
    config = o.evolution(None if budget is None else EVOLUTION_SHARE * budget)
    deadline = None if budget is None else time.time() + budget
    result = _evolve(evaluator, single, config, o, folder, progress, deadline)
    rep_mapping = genome_to_mapping(result.genome, ports, reps)
    expanded = {m: rep_mapping.uops[r] for r, members in congruence.classes.items() for m in members}
    mapping = PortMapping(ports, expanded)
    unseen = _check_unseen(cached, mapping, insns, measured, o, result.d_avg)
    if unseen is not None:
        say("check", unseen.summary())
    return PmevoResult(mapping, congruence, result.d_avg, result.volume, len(evaluator.measured), result,
                       time.monotonic() - t0, measured, unseen)


def _evolve(evaluator: Evaluator, single: list[float], config: EvolutionConfig, o: PmevoOptions,
            folder: Path | None, progress: Progress | None, deadline: float | None) -> EvolutionResult:
    """One evolution on the executor's map, or ``restarts`` of them side by side, one per worker
    (the best training fit wins)."""
    run_map = o.executor if o.executor is not None else current_executor()  # e.g. a command's --executor
    n_chunks = 4 * o.workers if o.workers > 1 else 1
    if run_map is not None:
        n_chunks = max(8, 4 * getattr(run_map, "workers", 2))
    with nullcontext(run_map) if run_map is not None else open_executor("pool" if o.workers > 1 else "serial",
                                                                      workers=o.workers) as run_map:
        if o.restarts == 1:
            return Evolution(evaluator, single, config, run_map, n_chunks=n_chunks, checkpoint=folder,
                             progress=progress).run(deadline)
        if folder is not None:
            for k in range(o.restarts):
                (folder / f"restart-{k}").mkdir(parents=True, exist_ok=True)
        runs = run_map(partial(_restart, evaluator, single, config, folder, _portable(progress, run_map), deadline),
                       list(range(o.restarts)))
        return min(runs, key=lambda r: (r.d_avg, r.volume))


def _check_unseen(oracle: Oracle, mapping: PortMapping, insns: Sequence[str], used: dict[Experiment, float],
                  o: PmevoOptions, d_avg: float) -> UnseenCheck | None:
    """PMEvo's fit is approximate: the check fails when the mean relative error on the unseen
    experiments exceeds ``check_tolerance`` (and lists those beyond it)."""
    tol = o.check_tolerance

    def causes(bad: list[Mismatch]) -> str:
        if d_avg > tol / 2:
            return (f"the mapping does not fit its own measurements either (training error {100 * d_avg:.1f} %): "
                    f"too few `ports`, too small a `budget_seconds`, or a machine outside the port-mapping model")
        return (f"the mapping fits its measurements (training error {100 * d_avg:.1f} %) but not these: the "
                f"experiments PMEvo measured do not pin it down (more `training` experiments), or noise")

    return check_unseen(oracle, mapping, insns, used, count=o.check_experiments, seed=o.seed, r_max=o.r_max,
                        within=lambda e, m, p: abs(p - m) <= tol * m, verdict=lambda bad, check: check.mape <= tol,
                        tolerance=f"a mean relative error of {100 * tol:g} %", causes=causes,
                        sizes=o.training_sizes if o.training else (3, 5))
