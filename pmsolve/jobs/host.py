"""The main job (``pmsolve infer`` without an algorithm): the explained port mapping of the CPU
you sit at, without performance counters, and how well it predicts, next to llvm-mca and OSACA.

1. **CPU and schemes** — the CPU's identity (:mod:`pmsolve.harness.cpu`) and a profile of the
   schemes it offers (:mod:`pmsolve.jobs.profiles`: ``smoke``, ``quick``, ``all``);
2. **measure** — the hardware oracle behind a SQLite measurement store in the job's folder, so
   an interrupted job resumes without measuring anything twice; schemes that cannot run (a
   fault, an assembler rejection) are left out and said;
3. **infer** — the counter-free explainable inference (:mod:`pmsolve.infer.explain`) with its
   state file in the same folder (or PMEvo with ``method="pmevo"``);
4. **held-out accuracy** — random 4–5-instruction experiments of all the profile's schemes (the
   same distribution as the profile: misfits too), none of them measured for the inference, are
   measured and predicted by pmsolve's modelled mapping (:mod:`pmsolve.modelled`: every scheme
   mapped or modelled), the newest llvm-mca and OSACA (each with the model that fits this CPU
   best; fallbacks said) and PMEvo trained on mapped schemes; every predictor is scored on the
   experiments all of them cover, on its own coverage and head to head with pmsolve, and the
   experiments with a modelled (not mapped) scheme are scored on a line of their own;
5. **misses** — the worst held-out misses of pmsolve's mapping shrunk to the smallest
   sub-experiments that still miss (:mod:`pmsolve.jobs.misses`): which bottleneck is not a port;
6. **report** — text, JSON and a static HTML page (:mod:`pmsolve.jobs.report`).

Away from x86-64 Linux (or when asked) the same pipeline runs on a simulated Zen-like machine
(:func:`pmsolve.generate.zen_like`) with noise and R_max, where the truth is known.
"""

from __future__ import annotations

import json
import math
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pmsolve.errors import ValidationError
from pmsolve.generate import zen_like
from pmsolve.harness.allocation import allocate, body
from pmsolve.harness.cpu import CpuIdentity, host_cpu, reference_singles
from pmsolve.harness.hardware import HardwareOracle, HarnessSettings, available
from pmsolve.harness.simulated import SimulatedOracle
from pmsolve.harness.cache import CachingOracle
from pmsolve.harness.peak import detect_peak_ipc
from pmsolve.harness.references import MachineState, machine_state
from pmsolve.harness.store import machine_fingerprint
from pmsolve.infer.explain import ExplainOptions, ExplainResult, infer as explain_infer
from pmsolve.infer.explain.structure import slow_summary
from pmsolve.infer.explain.units import ports_of
from pmsolve.infer.pmevo import PmevoOptions, infer as pmevo_infer
from pmsolve.isa import load_catalogue
from pmsolve.jobs import misses as held_out_misses, profiles
from pmsolve.jobs.report import certified_text, mode_text, queues_text, reads_text, shared_text, units_text
from pmsolve.metrics import RESOLUTION, accuracy, kendall_tau_b, tau_b_ceiling
from pmsolve.model import Experiment, PortMapping
from pmsolve.modelled import PORT_KINDS, ModelledMapping
from pmsolve.predictors import llvm_mca, osaca, osaca_export
from pmsolve.predictors.base import ModelChoice
from pmsolve.predictors.block import Block
from pmsolve.predictors.llvm_mca import LlvmMcaPredictor
from pmsolve.predictors.osaca import OsacaPredictor
from pmsolve.throughput import evaluate_many

Say = Callable[[str], None]
METHODS = ("explain", "pmevo")
#: processes for PMEvo's search in the job, at most (benchmarks/RESULTS.md §1.10)
PMEVO_WORKERS = 2
# the witnesses of a mapped scheme that no µop stands on: experiments not used to derive its µops
# (its mapping reproduces them) and stand-ins (checks it misses as its blocking instructions do)
CHECKS = ("check", "stand-in")


@dataclass(frozen=True)
class JobConfig:
    """What the job does. ``schemes`` overrides the profile; ``workdir`` holds the measurement
    store, the inference state and the outputs (default: a folder per CPU and profile under
    ``$XDG_CACHE_HOME/pmsolve``)."""

    profile: str = "quick"
    schemes: tuple[str, ...] | None = None
    method: str = "explain"
    held_out: int = 200
    seed: int = 0
    runs: int = 1
    noise: float = 0.005
    compare_pmevo: bool = True
    # of search, on PMEVO_WORKERS processes (benchmarks/RESULTS.md §1.10); one minute instead of
    # two moved PMEvo's held-out MAPE on three quick runs' stores by -0.16, +0.37, 0.00 points (§1.24)
    pmevo_minutes: float = 1.0
    pmevo_schemes: int = 40   # it measures every pair (twice: pairs and ratio pairs)
    # random training experiments beside the pairs (the paper's PMEvo has none; its best preset
    # 5,000: with them PMEvo's comparison took 6.3 of a 19.8-minute quick run on a Zen 4, with
    # 2,000 it took 2.5–3.2 minutes)
    pmevo_training: int = 2000
    workdir: str | None = None
    simulated: bool = False
    mcpu: str | None = None
    osaca_arch: str | None = None
    #: minutes to wait, before measuring, for the reference kernels to run at this CPU's published
    #: speeds (0: measure at once, with a warning when they do not)
    wait_quiet: float = 0.0

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValidationError(f"unknown method {self.method!r}: choose one of {', '.join(METHODS)}")
        if self.profile not in profiles.PROFILES:
            raise ValidationError(f"unknown profile {self.profile!r}: choose one of {', '.join(profiles.PROFILES)}")
        if self.held_out < 3:
            raise ValidationError(f"held_out must be at least 3 experiments, got {self.held_out}")


@dataclass
class HostReport:
    """Everything the job found; :meth:`to_json` is the document the text, JSON and HTML share."""

    machine: str
    config: JobConfig
    cpu: CpuIdentity | None
    mapping: PortMapping | None
    r_max: float | None
    result: ExplainResult | None
    singles: dict[str, float]
    held_out: list[Experiment]
    measured: list[float]
    predictions: dict[str, list[float | None]]
    models: list[ModelChoice]
    seconds: dict[str, float]
    notes: list[str] = field(default_factory=list)
    misses: tuple[int, list[held_out_misses.Core]] | None = None   # (how many miss, their cores)
    model: ModelledMapping | None = None      # every scheme's prediction (mapped or modelled)
    drawn: int | None = None   # the first held-out experiments, drawn from the whole profile (the rest: PMEvo's sample)
    harness: dict[str, Any] | None = None   # the harness settings that measured it (the store's key: read layout too)

    def subsets(self) -> dict[str, list[int]]:
        """Held-out experiments by what pmsolve predicts them with: the port mapping alone, or a
        modelled scheme among them (``ports + cost``, ``cost``)."""
        out: dict[str, list[int]] = {}
        if self.drawn is not None and self.drawn < len(self.held_out):
            out["drawn from the whole profile"] = list(range(self.drawn))
        return out if self.model is None else {**out, **by_prediction(self.model, self.held_out)}

    def accuracy(self) -> dict[str, Any]:
        """Each predictor on the experiments every predictor covers, and on its own coverage."""
        ok = [j for j, m in enumerate(self.measured) if m == m and m > 0]
        covered = {name: [j for j in ok if vals[j] is not None and vals[j] > 0]
                   for name, vals in self.predictions.items()}
        cover_sets = {name: set(c) for name, c in covered.items()}
        common = [j for j in ok if all(j in c for c in cover_sets.values())]
        model = {c.label(): c for c in self.models}

        def score(name: str, js: list[int]) -> dict[str, float] | None:
            if len(js) < 3:
                return None
            p, m = [self.predictions[name][j] for j in js], [self.measured[j] for j in js]
            return {**accuracy(p, m).to_json(), "kendall_tau_b_resolved": kendall_tau_b(p, m, RESOLUTION),
                    "tau_b_ceiling": tau_b_ceiling(p, m)}

        first = next(iter(self.predictions), None)
        rows = []
        for name in self.predictions:
            # head to head with the first predictor (pmsolve): both on the experiments both cover,
            # which stays meaningful when one tool covers too little for the common set
            both = [j for j in covered[name] if j in cover_sets[first]]
            rows.append({"name": name, "covered": len(covered[name]), "common": score(name, common),
                         "own": score(name, covered[name]),
                         "versus_first": {"covered": len(both), "this": score(name, both),
                                          "first": score(first, both)} if name != first else None,
                         "model": model[name].why if name in model else ""})
        parts = []
        for label, js in self.subsets().items():
            js = [j for j in js if j in set(ok)]
            parts.append({"subset": label, "experiments": len(js),
                          "predictors": [{"name": name, "covered": len([j for j in js if j in cover_sets[name]]),
                                          "own": score(name, [j for j in js if j in cover_sets[name]])}
                                         for name in self.predictions]})
        return {"held_out": len(ok), "common": len(common), "first": first, "resolution": RESOLUTION,
                "predictors": rows, "subsets": parts}

    def to_json(self) -> dict[str, Any]:
        schemes, misfits = [], {}
        if self.result is not None:
            for name, x in sorted(self.result.explanations.items()):
                if x.misfit is not None:
                    misfits.setdefault(x.misfit.category, []).append({"scheme": name, **x.misfit.to_json()})
                elif x.uops:
                    d = x.to_json()
                    schemes.append({"scheme": name, "tp": self.singles.get(name), "uops": d["uops"],
                                    "confidence": x.confidence, "source": x.source,
                                    "checks": [w for w in d.get("others", []) if w["kind"] in CHECKS],
                                    **({"alternatives": d["alternatives"]} if "alternatives" in d else {})})
        elif self.mapping is not None:
            schemes = [{"scheme": i, "tp": self.singles.get(i),
                        "uops": [{"ports": sorted(u.ports), "count": u.count, "witnesses": []} for u in us]}
                       for i, us in sorted(self.mapping.uops.items())]
        if self.model is not None:
            for row in schemes:
                sm = self.model.schemes.get(row["scheme"])
                if sm is not None and sm.slots > 1:
                    row["slots"] = {k: v for k, v in sm.to_json().items() if k in ("slots", "slots_witness")}
            for items in misfits.values():
                for m in items:
                    sm = self.model.schemes.get(m["scheme"])
                    m["prediction"] = sm.to_json() if sm is not None else None
        ref = reference_singles(self.cpu.microarchitecture) if self.cpu else None
        units = self.result.summary.get("units", []) if self.result is not None else []
        return {"format": "pmsolve.host-report", "version": 1, "machine": self.machine,
                "cpu": self.cpu.to_json() if self.cpu else None, "harness": self.harness,
                "profile": self.config.profile,
                "method": self.config.method, "r_max": self.r_max,
                "ports": len(self.mapping.ports) - sum(len(ports_of(u)) for u in units) if self.mapping else None,
                "units": units,
                "mode": self.result.summary.get("mode") if self.result is not None else None,
                "shared": self.result.summary.get("shared") if self.result is not None else None,
                "reads": self.result.summary.get("reads") if self.result is not None else None,
                "queues": self.result.summary.get("queues") if self.result is not None else None,
                "port_names": list(self.mapping.ports) if self.mapping else [],
                "models": [m.to_json() for m in self.models], "accuracy": self.accuracy(),
                "schemes": schemes, "misfits": misfits, "singles": self.singles,
                "predictions": (self.result.summary.get("predictions") if self.result is not None else None),
                "slow_schedules": (self.result.summary["blocking"].get("slow_schedules", [])
                                   if self.result is not None else []),
                "singles_reference": ({"source": ref.source, "values": {s: v for s, v in ref.values.items()
                                                                         if s in self.singles}} if ref else None),
                "held_out": [{"experiment": dict(e.items()), "measured": m,
                              **{k: v[j] for k, v in self.predictions.items()}}
                             for j, (e, m) in enumerate(zip(self.held_out, self.measured))],
                "misses": ({"margin": held_out_misses.MARGIN, "count": self.misses[0],
                            "localised": sum(len(c.held_out) for c in self.misses[1]),
                            "cores": [c.to_json() for c in self.misses[1]]} if self.misses else None),
                "seconds": self.seconds, "notes": self.notes}


def default_workdir(cpu: CpuIdentity, profile: str) -> Path:
    """``$XDG_CACHE_HOME/pmsolve/host/<microarchitecture>-<fingerprint>/<profile>`` (~/.cache by default)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pmsolve" / "host" / f"{cpu.uarch}-{machine_fingerprint()}" / profile


def by_prediction(model: ModelledMapping, experiments: Sequence[Experiment]) -> dict[str, list[int]]:
    """Indices of the experiments the port mapping alone predicts ("mapped schemes only") and of
    those with a modelled scheme among them ("with a modelled scheme")."""
    out: dict[str, list[int]] = {"mapped schemes only": [], "with a modelled scheme": []}
    for j, e in enumerate(experiments):
        kinds = {model.schemes[i].kind for i in e if i in model.schemes}
        out["mapped schemes only" if kinds <= set(PORT_KINDS) else "with a modelled scheme"].append(j)
    return out


def held_out_experiments(schemes: Sequence[str], n: int, seed: int,
                         exclude: set[Experiment] = frozenset()) -> list[Experiment]:
    """Random 4-5-instruction experiments (multisets of at least three schemes), distinct,
    deterministic under ``seed``, none of them in ``exclude``; fewer than ``n`` when the schemes
    do not have that many."""
    if len(schemes) < 3:
        raise ValidationError(f"held-out experiments need at least 3 mapped schemes, got {len(schemes)}")
    rng = random.Random(seed)
    out: dict[Experiment, None] = {}
    misses = 0
    while len(out) < n and misses < 10_000:   # few schemes have few such experiments
        e = Experiment([rng.choice(list(schemes)) for _ in range(rng.choice((4, 5)))])
        if len(e.counts) > 2 and e not in exclude and e not in out:
            out[e] = None
            misses = 0
        else:
            misses += 1
    return list(out)


# ---------------------------------------------------------------------------- other predictors

def block_of(catalogue, e: Experiment, target: int = 40) -> tuple[Block, int]:
    """The experiment as a concrete block (operands allocated, unrolled to about ``target``
    instructions) and its unroll factor: predictions divide by it to get cycles per copy."""
    counts = {catalogue[n]: c for n, c in e.items()}
    factor = max(1, round(target / e.size))
    return Block.of([(i.scheme.name, i.text()) for i in allocate(body(counts, factor))]), factor


def _per_copy(predictor, blocks) -> tuple[list[float | None], list[str]]:
    preds = predictor.predict([b for b, _ in blocks])
    return ([p.cycles / f if p.ok else None for p, (_, f) in zip(preds, blocks)],
            [p.error for p in preds if not p.ok])


def comparison_models(config: JobConfig, cpu: CpuIdentity) -> tuple[ModelChoice, ModelChoice]:
    """The llvm-mca and OSACA models to compare with: given, else the best for this CPU."""
    inst = llvm_mca.find_llvm_mca()
    mca = (ModelChoice("llvm-mca", config.mcpu, inst.version if inst else None, False, "chosen by the user")
           if config.mcpu else llvm_mca.model_for(cpu.microarchitecture))
    osa = (ModelChoice("OSACA", config.osaca_arch, None, False, "chosen by the user")
           if config.osaca_arch else osaca.model_for(cpu.microarchitecture))
    return mca, osa


def tool_predictions(catalogue, held: list[Experiment], models: tuple[ModelChoice, ModelChoice],
                     notes: list[str], own: dict[str, Any] | None = None) -> dict[str, list[float | None]]:
    """llvm-mca and OSACA on the held-out experiments as concrete blocks (cycles per copy); with
    ``own`` (:func:`~pmsolve.predictors.osaca_export.exported_predictor`'s arguments) also OSACA
    with the mapping exported as its machine model."""
    blocks = [block_of(catalogue, e) for e in held]
    out: dict[str, list[float | None]] = {}
    mca, osa = models
    if mca.model:
        out[mca.label()] = _per_copy(LlvmMcaPredictor(mca.model), blocks)[0]
    if osa.model:
        predictor = OsacaPredictor(osa.model)
        try:
            out[osa.label()], errors = _per_copy(predictor, blocks)
        finally:
            predictor.close()
        if errors:
            notes.append(f"OSACA could not predict {len(errors)} held-out experiment(s) (e.g. {errors[0]})")
    if own is not None and osaca.available_models():
        predictor, exported = osaca_export.exported_predictor(latency_from=osa.model, catalogue=catalogue, **own)
        try:
            out[osaca_export.LABEL], errors = _per_copy(predictor, blocks)
        finally:
            predictor.close()
        notes.append(f"{osaca_export.LABEL}: the mapping as an OSACA model ({own['path']}), {exported.latency_note}"
                     + (f"; OSACA could not predict {len(errors)} (e.g. {errors[0]})" if errors else ""))
    for m in models:
        notes.append(f"{m.label()}: {m.why}" + (" (fallback)" if m.model and not m.own else ""))
    return out


# ---------------------------------------------------------------------------- the job

def run(config: JobConfig, *, say: Say = lambda m: None) -> HostReport:
    reason = None if config.simulated else available()
    if reason is None and not config.simulated:
        return _on_hardware(config, say)
    return _simulated(config, say, reason or "requested")


class Beside:
    """``work()`` in a thread of its own, on ``cpus`` (off the CPU that measures: llvm-mca and
    OSACA run beside PMEvo's measurements, nothing of theirs needs the worker): ``result()``
    waits for it and raises what it raised. A daemon thread: an interrupted job does not wait."""

    def __init__(self, work: Callable[[], Any], cpus: set[int] | None):
        self._out: list[Any] = []
        self._error: list[BaseException] = []
        self.seconds = 0.0

        def body() -> None:
            t0 = time.monotonic()
            try:
                if cpus and hasattr(os, "sched_setaffinity"):
                    os.sched_setaffinity(0, cpus)    # this thread, and what it starts
                self._out.append(work())
            except BaseException as exc:   # noqa: BLE001 - handed to result()
                self._error.append(exc)
            finally:
                self.seconds = round(time.monotonic() - t0, 1)

        self._thread = threading.Thread(target=body, name="pmsolve-beside", daemon=True)
        self._thread.start()

    def result(self) -> Any:
        self._thread.join()
        if self._error:
            raise self._error[0]
        return self._out[0]


def _stage(seconds: dict[str, float], name: str, t0: float) -> float:
    now = time.monotonic()
    seconds[name] = round(now - t0, 1)
    return now


def _inference_experiments(state: Path) -> set[Experiment]:
    try:
        data = json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {Experiment(r["experiment"]) for r in data.get("data", {}).get("measurements", [])}


class MeasuringProgress:
    """The hardware oracle's progress callback: a line every 500 experiments or every minute (a
    disturbed machine measures one in seconds, and a silent hour looks hung), and why it is slow:
    when over a fifth stayed noisy through every retry, or when the worker spent over a quarter
    of the time since the last line (ten seconds or more) waiting for quiet reference kernels
    (``waited``: its seconds so far). Beside a neighbour the gate finds a quiet round in the end but waits up to half a
    second for it, so ten minutes can pass at one experiment a second while the noisy share of a
    long run stays small (the Zen 4 VM, 2026-12-01: benchmarks/RESULTS.md §1.20)."""

    def __init__(self, say: Say, noisy: Callable[[Experiment], bool], t0: float,
                 clock: Callable[[], float] = time.monotonic, waited: Callable[[], float] = lambda: 0.0):
        self.say, self.noisy, self.t0, self.clock, self.waited = say, noisy, t0, clock, waited
        self.done = self.flagged = 0
        self.shown = t0
        self.waited_shown = 0.0

    def __call__(self, idx: int, e: Experiment) -> None:
        self.done += 1
        self.flagged += bool(self.noisy(e))
        now = self.clock()
        if self.done % 500 and now - self.shown < 60:
            return
        since, self.shown = now - self.shown, now
        total = self.waited()
        waited, self.waited_shown = total - self.waited_shown, total
        line = (f"  {self.done} experiments measured ({now - self.t0:.0f} s, "
                f"{self.done / max(now - self.t0, 1e-9):.1f} per second)")
        if self.flagged > 0.2 * self.done:
            line += (f"; {self.flagged} stayed noisy through every retry: something shares this core (the "
                     f"reference kernels run slow; docs/harness.md), so each waits for quiet moments")
        elif since >= 10 and waited > 0.25 * since:     # a share of the last second says little
            line += (f"; the worker waited for quiet reference kernels {100 * min(waited / since, 1):.0f} % of "
                     f"the last {since:.0f} s: something shares this core (docs/harness.md)")
        self.say(line)


def _wait_for_quiet(probe: Callable[[], MachineState], minutes: float, say: Say,
                    sleep: Callable[[float], None] = time.sleep,
                    clock: Callable[[], float] = time.monotonic) -> str | None:
    """Before measuring: are the reference kernels at this CPU's published speeds (``probe``:
    one burst of them)? Waits up to ``minutes`` for it, a burst every 30 s; returns the warning
    for the report when they still are not. A neighbour on the core (the other SMT thread, inside
    the VM or outside it) slows them for hours at a time (a Zen 3 VM, 2026-11-27: ALU 0.36 and
    store 0.82 cycles for 0.25 and 0.50), the gate then waits for quiet moments, and a job that
    takes minutes takes hours."""
    deadline = clock() + 60 * minutes
    while True:
        state = probe()
        if not state.slow():
            say(f"  reference kernels at this CPU's published speeds ({state.describe()})")
            return None
        if clock() >= deadline:
            break
        say(f"  waiting for quiet: the reference kernels run slower than published ({state.describe()})")
        sleep(min(30.0, max(0.0, deadline - clock())))
    warning = (f"measuring began with the reference kernels slower than this CPU's published figures "
               f"({state.describe()}): something shares this core, so experiments wait for quiet moments "
               f"(slow) and figures of this run may be off; docs/harness.md")
    say("  warning: " + warning)
    return warning


def _on_hardware(config: JobConfig, say: Say) -> HostReport:
    t0 = t = time.monotonic()
    seconds: dict[str, float] = {}
    notes: list[str] = []
    cpu = host_cpu()
    catalogue = load_catalogue()
    names = list(config.schemes) if config.schemes else profiles.choose(catalogue, config.profile)
    catalogue.require(names)
    work = Path(config.workdir) if config.workdir else default_workdir(cpu, config.profile)
    work.mkdir(parents=True, exist_ok=True)
    say(f"measuring on {cpu.describe()}: {len(names)} schemes ({config.profile} profile), state in {work}")
    progress = MeasuringProgress(say, lambda e: getattr(hw.results.get(e), "noisy", False), t0,
                                 waited=lambda: hw.waited)
    hw = HardwareOracle(names, HarnessSettings(), on_error="nan", progress=progress, patience=60 * config.wait_quiet)
    ref = reference_singles(cpu.microarchitecture)
    if ref is None:
        say("  no published figures for this CPU: whether something shares its core is not checked up front")
    else:
        busy = _wait_for_quiet(lambda: machine_state(hw.settings, ref, hw.cpu), config.wait_quiet, say)
        notes += [busy] if busy else []
    misses = None
    oracle = CachingOracle.in_sqlite(hw, work / "measurements.sqlite", on_error="nan")
    try:
        singles = dict(zip(names, oracle.measure([Experiment({n: 1}) for n in names])))
        bad = [n for n, v in singles.items() if not (v == v and v > 0)]
        if bad:
            notes.append(f"{len(bad)} scheme(s) could not be measured and are left out (e.g. {', '.join(bad[:4])})")
        names = [n for n in names if n not in set(bad)]
        t = _stage(seconds, "singletons", t)
        state = work / f"{config.method}-state.json"
        result, mapping, r_max = _infer(oracle, names, catalogue, config, state, say)
        t = _stage(seconds, "inference", t)
        mapped = sorted(mapping.uops) if mapping else []
        exclude = _inference_experiments(state)
        scored = len(mapped) >= 3
        if not scored:
            notes.append(f"only {len(mapped)} scheme(s) mapped: too few for held-out experiments of 4-5 "
                         "instructions, so no predictor is scored (see the misfits for why)")
        # drawn from every scheme of the profile (the same distribution as the profile, misfits too)
        held = held_out_experiments(names, config.held_out, config.seed + 7919, exclude) if scored else []
        drawn = len(held)
        pmevo_on = mapped
        if config.compare_pmevo and config.method != "pmevo" and len(mapped) > max(3, config.pmevo_schemes):
            # PMEvo measures every pair of its schemes: train it on a sample, and draw half as
            # many held-out experiments again from that sample, so that every predictor is
            # scored on experiments PMEvo covers
            pmevo_on = sorted(random.Random(config.seed).sample(mapped, config.pmevo_schemes))
            extra = held_out_experiments(pmevo_on, config.held_out // 2, config.seed + 104729, exclude | set(held))
            held += extra
            notes.append(f"PMEvo is trained on a random sample of {len(pmevo_on)} of the {len(mapped)} mapped "
                         f"schemes (it measures every pair); {len(extra)} of the held-out experiments are drawn "
                         "from that sample")
        measured = oracle.measure(held)
        t = _stage(seconds, "held-out measurement", t)
        model = result.model if result is not None and result.model is not None else ModelledMapping(mapping)
        preds: dict[str, list[float | None]] = {
            f"pmsolve ({config.method})": _covered(model, held, r_max)}
        models = comparison_models(config, cpu)
        if scored:
            units = [p for u in result.summary.get("units", []) for p in ports_of(u)] if result is not None else []
            own = {"mapping": mapping, "path": work / "osaca-model.yml", "r_max": r_max, "units": units}
            tools = Beside(lambda: tool_predictions(catalogue, held, models, notes, own), hw.off_worker_cpus())
            pm = None
            if config.compare_pmevo and config.method != "pmevo":
                pm = _pmevo(oracle, pmevo_on, r_max, config, work, say)
                seconds["PMEvo"] = round(time.monotonic() - t, 1)
            preds.update(tools.result())
            seconds["llvm-mca and OSACA"] = tools.seconds
            if pm is not None:
                preds["PMEvo"] = _covered(pm, held, r_max)
                notes.append(f"llvm-mca and OSACA ran beside PMEvo ({tools.seconds:.0f} s of its {seconds['PMEvo']:.0f} s), "
                             "off the measuring CPU")
            t = time.monotonic()
        if scored:
            say("  localising the worst held-out misses")
            misses = held_out_misses.localise(oracle, mapping, r_max, held, measured, mode=model.mode,
                                              shared=model.shared)
            t = _stage(seconds, "misses localised", t)
    finally:
        hw.close()
    if hw.waited >= 1:
        notes.append(f"waited {hw.waited:.0f} s of the {hw.patience:.0f} s allowed mid-run for the reference "
                     "kernels to come back to this CPU's published speeds")
    seconds["total"] = round(time.monotonic() - t0, 1)
    notes.insert(0, f"{oracle.measured} experiments measured now, {oracle.reused} answered from the store "
                    f"({work / 'measurements.sqlite'})")
    failed = sum(1 for m in measured if not (m == m))
    if failed:
        notes.append(f"{failed} held-out experiment(s) could not be measured and are not scored")
    return HostReport(f"{cpu.describe()} (hardware)", config, cpu, mapping, r_max, result, singles, held, measured,
                      preds, list(models), seconds, notes, misses, model, drawn, hw.fingerprint_settings())


def _covered(mapping: PortMapping | ModelledMapping, held: list[Experiment], r_max: float | None) -> list[float | None]:
    """The mapping's predictions, None for experiments with a scheme it does not predict."""
    model = mapping if isinstance(mapping, ModelledMapping) else ModelledMapping(mapping)
    js = [j for j, e in enumerate(held) if all(n in model.schemes for n in e)]
    out: list[float | None] = [None] * len(held)
    for j, x in zip(js, model.evaluate_many([held[j] for j in js], r_max=r_max)):
        out[j] = float(x)
    return out


def explain_options(catalogue, names: list[str], config: JobConfig) -> ExplainOptions:
    """The counter-free inference's options in the host job."""
    return ExplainOptions(instructions=tuple(names), runs=config.runs, noise=config.noise,
                          rep_order=profiles.representative_order(catalogue, names),
                          not_blocking=profiles.not_blocking(catalogue, names),
                          min_uops=profiles.min_uops(catalogue, names), timeout=20.0, max_cegis_runs=16,
                          layouts=2, structure_seconds=120.0, max_component=8, slow_pairs=2)


def _infer(oracle, names: list[str], catalogue, config: JobConfig, state: Path, say: Say):
    """(explain result or None, mapping, R_max) by the configured method."""
    if config.method == "pmevo":
        singles = dict(zip(names, oracle.measure([Experiment({n: 1}) for n in names])))
        r_max = detect_peak_ipc(oracle, singles).ipc
        return None, _pmevo(oracle, names, r_max, config, state.parent, say), r_max
    options = explain_options(catalogue, names, config)
    if config.profile == "all" and not config.schemes:
        # one blocking instruction per port set is all the suite needs, and the quick profile
        # covers the port groups; pairing thousands of candidates into classes would take hours
        quick = set(profiles.choose(catalogue, "quick"))
        already = set(options.not_blocking)
        options = replace(options, not_blocking=options.not_blocking
                          + tuple(n for n in names if n not in quick and n not in already))
        say(f"  blocking candidates from the quick profile's {len(quick)} schemes; all {len(names)} are characterised")
    result = explain_infer(oracle, options, state=state, progress=lambda ev: say("  " * (1 + ev.data["depth"]) + ev.message))
    if result.mapping is None:
        raise ValidationError("the inference mapped no scheme; see the misfits in " + str(state))
    return result, result.mapping, result.summary["r_max"]


def _pmevo(oracle, names: list[str], r_max: float | None, config: JobConfig, work: Path, say: Say) -> PortMapping:
    """PMEvo (ch. 5, its best preset) on the same schemes, for comparison: ``pmevo_minutes`` of
    search on up to :data:`PMEVO_WORKERS` of this machine's CPUs (nothing is measured while it
    evolves, so it may have the whole machine)."""
    workers = max(1, min(PMEVO_WORKERS, host_cpu().cpus))
    options = PmevoOptions(ports=10, instructions=tuple(names), r_max=r_max, seed=config.seed,
                           budget_seconds=60 * config.pmevo_minutes, training=config.pmevo_training,
                           check_experiments=0, workers=workers)
    say(f"  PMEvo on {len(names)} mapped schemes: their singletons, pairs, ratio pairs and "
        f"{options.value('training')} random experiments measured, then {config.pmevo_minutes:g} min of search "
        f"on {workers} process(es)")
    return pmevo_infer(oracle, options, state=str(work / "pmevo-checkpoint")).mapping


def _simulated(config: JobConfig, say: Say, reason: str) -> HostReport:
    say(f"no hardware measurement ({reason}): the job runs on a simulated Zen-like machine "
        "(10 ports, R_max 5, 1 % noise, no µop counter)")
    t0 = time.monotonic()
    truth = zen_like(config.seed)
    oracle = SimulatedOracle(truth, r_max=5, noise=0.01, seed=config.seed)
    names = list(truth.instructions)
    singles = dict(zip(names, oracle.measure([Experiment({n: 1}) for n in names])))
    result = explain_infer(oracle, ExplainOptions(epsilon=0.03, runs=config.runs),
                           progress=lambda ev: say("  " * (1 + ev.data["depth"]) + ev.message))
    mapping, r_max = result.mapping, result.summary["r_max"]
    held = held_out_experiments(names, config.held_out, config.seed + 7919)
    measured = oracle.measure(held)
    preds = {"pmsolve (explain)": _covered(result.model, held, r_max), "ground truth": _covered(truth, held, 5)}
    misses = held_out_misses.localise(oracle, mapping, r_max, held, measured)
    return HostReport("simulated Zen-like machine", config, None, mapping, r_max, result, singles, held, measured,
                      preds, [], {"total": round(time.monotonic() - t0, 1)}, [f"simulated because: {reason}"], misses,
                      result.model)


def render(report: HostReport) -> str:
    """The plain-text report."""
    doc = report.to_json()
    acc = doc["accuracy"]
    lines = [f"machine: {report.machine}",
             f"profile {report.config.profile}, method {report.config.method}: {len(doc['schemes'])} schemes mapped "
             f"on {doc['ports']} ports{units_text(doc['units'])}{mode_text(doc.get('mode'))}{shared_text(doc.get('shared'))}"
             f"{reads_text(doc.get('reads'))}{queues_text(doc.get('queues'))} "
             f"(front end {doc['r_max']} instructions/cycle), "
             f"{sum(len(v) for v in doc['misfits'].values())} misfits"
             + (" (" + ", ".join(f"{k} {len(v)}" for k, v in doc["misfits"].items()) + ")" if doc["misfits"] else "")
             + certified_text(doc["misfits"])]
    pr = doc.get("predictions")
    if pr:
        lines.append(f"predictions: {pr['predicted']} of {pr['schemes']} schemes ({100 * pr['share']:.1f} %): "
                     + ", ".join(f"{k} {n}" for k, n in pr["kinds"].items())
                     + (f"; no prediction for {len(pr['unpredicted'])} (e.g. "
                        + ", ".join(list(pr["unpredicted"])[:3]) + ")" if pr["unpredicted"] else ""))
    if doc["slow_schedules"]:
        lines.append(f"{len(doc['slow_schedules'])} experiment(s) of blocking instructions ran slower than their port "
                     "bound (slow schedules, outside the model; set aside): " + slow_summary(doc["slow_schedules"]))
    lines += ["", f"held-out: {acc['held_out']} measured 4-5-instruction experiments, {acc['common']} covered by "
                  "every predictor",
              f"  {'':<28} {'all cover':>24}  {'':>9} {'its own coverage':>33}  {'head to head with pmsolve':>27}",
              f"  {'predictor':<28} {'MAPE':>8} {'τ-b':>7} {'τ-b .01':>8} {'covered':>9} {'MAPE':>8} {'τ-b':>7} "
              f"{'τ-b .01':>8} {'τ-b max':>8}  {'shared':>7} {'MAPE':>8} {'pmsolve':>8}"]
    for r in acc["predictors"]:
        c, own, vs = r["common"] or {}, r["own"] or {}, r.get("versus_first") or {}
        line = (f"  {r['name']:<28} {_pct(c.get('mape'))} {_fmt(c.get('kendall_tau_b'), 7)} "
                f"{_fmt(c.get('kendall_tau_b_resolved'), 8)} {r['covered']:>5}/{acc['held_out']:<3} "
                f"{_pct(own.get('mape'))} {_fmt(own.get('kendall_tau_b'), 7)} "
                f"{_fmt(own.get('kendall_tau_b_resolved'), 8)} {_fmt(own.get('tau_b_ceiling'), 8)}")
        if vs:
            line += (f"  {vs['covered']:>7} {_pct((vs['this'] or {}).get('mape'))} "
                     f"{_pct((vs['first'] or {}).get('mape'))}")
        lines.append(line)
    for part in (p for p in acc.get("subsets", []) if p["experiments"]):
        lines.append(f"  {part['subset']}: {part['experiments']} experiment(s): "
                     + "; ".join(f"{p['name']} {p['covered']} covered, MAPE {_pct((p['own'] or {}).get('mape')).strip()}, "
                                 f"τ-b .01 {_fmt((p['own'] or {}).get('kendall_tau_b_resolved'), 5).strip()}"
                                 for p in part["predictors"]))
    lines.append(f"  (τ-b .01: on measurements rounded to {RESOLUTION} cycles, the precision of published tables "
                 "and the dissertation's τ_K; "
                 "τ-b max: the most τ-b can be with the predictor's ties, as raw measurements tie no pair)")
    lines += _misses_text(doc["misses"])
    ref = doc["singles_reference"]
    if ref and ref["values"]:
        lines += ["", f"singles vs published values ({ref['source'].split(';')[0]}):"]
        for s, v in ref["values"].items():
            got = doc["singles"].get(s)
            if got:
                lines.append(f"  {s:<26} {got:7.3f}   published {v:5.3f}   {100 * (got - v) / v:+5.1f} %")
    lines += ["", "time: " + ", ".join(f"{k} {v:.0f} s" for k, v in report.seconds.items())]
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)


def _misses_text(doc: dict[str, Any] | None, shown: int = 4) -> list[str]:
    if not doc or not doc["count"]:
        return []
    lines = ["", f"held-out misses: {doc['count']} experiment(s) off pmsolve's prediction by more than "
                 f"{100 * doc['margin']:.0f} %; the worst {doc['localised']} shrunk to the smallest sub-experiments "
                 "that still miss (doubled: measured again with every count doubled, per copy):"]
    for kind in held_out_misses.KINDS:
        cores = [c for c in doc["cores"] if c["kind"] == kind]
        if cores:
            lines.append(f"  {kind}: {sum(len(c['held_out']) for c in cores)} miss(es), {len(cores)} core(s)")
            for c in cores[:shown]:
                times = f"  [{len(c['held_out'])} misses]" if len(c["held_out"]) > 1 else ""
                lines.append(f"    {str(Experiment(c['experiment'])):<60} {c['measured']:6.3f} "
                             f"(doubled {c['doubled']:6.3f}), mapping {c['predicted']:6.3f}{times}")
                if c.get("parts"):
                    lines.append("      parts: " + ", ".join(f"{Experiment(p['experiment'])} {p['measured']:.3f}"
                                                         for p in c["parts"]))
    return lines


def _pct(x: float | None) -> str:
    return f"{100 * x:7.1f}%" if x is not None and not math.isnan(x) else f"{'–':>8}"


def _fmt(x: float | None, width: int) -> str:
    return f"{x:{width}.3f}" if x is not None and not math.isnan(x) else f"{'–':>{width}}"
