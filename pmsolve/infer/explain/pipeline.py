"""The explainable inference end to end (dissertation sec. 6.2-6.3), as checkpointed stages:

1. ``singletons``  — every scheme alone: inverse throughput and µop count (through the hook);
2. ``candidates``  — single-µop schemes, their port-set sizes 1/tp⁻¹; singleton misfits;
3. ``classes``     — equivalent candidates merged by Thm 6.3, one representative each;
4. ``peak``        — the front-end limit (peak IPC) and the warning of sec. 6.2.3;
5. ``blocking``    — CEGIS on the representatives (+ improper blocking instructions);
5b. ``mode``       — without a counter: whether 512-bit schemes switch a port off for vector µops
                     (:mod:`~pmsolve.infer.explain.modes`); if so, they are characterised against the
                     blocking instructions as they see them, and the model evaluates in the mode;
6. ``run0`` …      — every other scheme against the blocking suite, once per run;
7. the majority vote over the runs, witnesses per µop, misfits per category;
8. ``units``       — without a counter: schemes alone slower than their ports by whole cycles
                     get a unit (an extra one-port resource, :mod:`~pmsolve.infer.explain.units`);
9. without a counter, misfits with a measured experiment that contradicts every port mapping
   get that certificate (:mod:`~pmsolve.infer.explain.certify`; measured, not a checkpointed stage:
   its few measurements are cached like all others);
9b. ``mode schemes`` — with a mode: each affected scheme on a set with the mode's port, beside the
                     trigger on its own: where its µops run in the mode (``Mode.also``);
9c. ``shared``     — without a counter: slow schemes that add up where their own costs would take
                     the longer (a load path, a divider), and what other schemes hold of them beside
                     (:mod:`~pmsolve.infer.explain.shared`);
9d. ``reads``      — without a counter: vector stores and moves beside three-source forms, which
                     slow each other where the ports do not (:mod:`~pmsolve.infer.explain.reads`);
10. ``slots``      — without a counter: every scheme once beside R_max blocking instructions shows
                     how many front-end slots it takes (:mod:`~pmsolve.infer.explain.slots`);
11. ``queues``     — without a counter: whether scheduling queues in front of four ports explain the
                     measured experiments (and a few random mixes of its own) better than the
                     ports alone (:mod:`~pmsolve.infer.explain.queues`).

Every stage's result and every measurement go into the state file as soon as they exist, so
rerunning the same call continues where an interrupted one stopped.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pmsolve.errors import MeasurementError, UnknownNameError, ValidationError
from pmsolve.fileio import atomic_write_text
from pmsolve.formats import mapping_from_json, mapping_to_json
from pmsolve.infer.explain import modes, queues, reads, shared, slots, stages
from pmsolve.infer.explain.blocking import blockers, infer_blocking, port_names
from pmsolve.infer.explain.certify import certify
from pmsolve.infer.explain.characterise import characterise
from pmsolve.harness.cache import CachingOracle
from pmsolve.harness.layouts import LayoutVote
from pmsolve.harness.protocol import oracle_fingerprint
from pmsolve.infer.explain.checkpoint import Checkpoint
from pmsolve.infer.explain.complete import complete, kind_summary, rescored, stand_ins
from pmsolve.infer.explain.hooks import get_hook
from pmsolve.infer.explain.options import ExplainOptions
from pmsolve.infer.explain.structure import infer_structure, slow_summary
from pmsolve.infer.explain.units import place as place_units, ports_of
from pmsolve.infer.explain.vote import vote
from pmsolve.infer.explain.witnesses import CATEGORIES, Explanation, Misfit, Witness, uop_key
from pmsolve.infer.progress import Progress, emitter
from pmsolve.model import Experiment, PortMapping, sort_ports
from pmsolve.modelled import ModelledMapping
from pmsolve.throughput import batch_inverse_throughput


@dataclass
class ExplainResult:
    """The inferred mapping, an :class:`Explanation` per scheme, and what each stage found."""

    mapping: PortMapping | None
    explanations: dict[str, Explanation]
    summary: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    model: ModelledMapping | None = None     # a prediction for every scheme (mapped or modelled)

    @property
    def misfits(self) -> dict[str, Misfit]:
        return {i: x.misfit for i, x in self.explanations.items() if x.misfit is not None}

    def category_counts(self) -> dict[str, int]:
        c = Counter(m.category for m in self.misfits.values())
        return {k: c.get(k, 0) for k in CATEGORIES}

    def to_json(self) -> dict[str, Any]:
        """A pmsolve mapping file (``pmsolve.formats`` reads it) with the explanation alongside."""
        data: dict[str, Any] = (self.model.to_json() if self.model is not None else
                                mapping_to_json(self.mapping) if self.mapping is not None else
                                {"format": "pmsolve.mapping", "version": 1, "ports": [], "instructions": {}})
        data["explanation"] = {"format": "pmsolve.explanation", "version": 1, **self.summary,
                               "warnings": list(self.warnings), "misfit_counts": self.category_counts(),
                               "schemes": {i: x.to_json() for i, x in sorted(self.explanations.items())}}
        return data

    def save(self, path: str | Path) -> None:
        atomic_write_text(path, json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n")


def infer(oracle: Any, options: ExplainOptions, *, state: str | Path | None = None,
          progress: Progress | None = None) -> ExplainResult:
    """Run (or resume, with the same ``state`` file) the explainable inference: with the oracle's
    µop counter when it has one (ASPLOS'24), by throughput alone otherwise or when
    ``options.throughput_only``. ``progress`` receives :class:`~pmsolve.infer.progress.ProgressEvent`\\ s
    whose ``stage`` is the pipeline stage (singletons, classes, structure, characterise, …) and
    whose ``data["depth"]`` says how deep in that stage's detail a line is."""
    emit = emitter("explain", progress)
    current = ["setup"]

    def say(msg: str) -> None:
        text = msg.lstrip(" ")
        emit(current[0], text, depth=(len(msg) - len(text)) // 2)
    t_start = time.perf_counter()
    o = options
    counter = bool(oracle.has_uop_counter) and not o.throughput_only
    o = o.resolved(counter)
    if counter and o.ports is None:
        raise ValidationError("explain: with a µop counter the number of ports must be given")
    known = tuple(oracle.instructions)
    insns = list(o.instructions) if o.instructions is not None else list(known)
    known_set = set(known)
    unknown = [i for i in insns + [n for n, _ in o.improper] if i not in known_set]
    if unknown:
        raise UnknownNameError(f"explain: the oracle does not know {unknown[:3]}")
    for n, _ in o.improper:
        if n not in insns:
            insns.append(n)
    hook = get_hook(o.uop_hook)
    cp = Checkpoint(state, {**o.fingerprint(), "oracle": oracle_fingerprint(oracle)})
    orc = CachingOracle.in_state(oracle, cp.state)
    paired = LayoutVote(orc, o.layouts) if o.layouts > 1 else orc   # for the stages that decide structure
    if cp.resumed:
        say(f"resuming from {cp.path}: stages {', '.join(cp.stages) or 'none'} done, {len(orc.known())} measurements")

    timing: dict[str, dict[str, float]] = {}   # stage → seconds and experiments measured (this process)

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        t0, m0 = time.perf_counter(), orc.measured
        out = fn()
        timing[name] = {"seconds": round(time.perf_counter() - t0, 2), "measured": orc.measured - m0}
        return out

    def stage(name: str, fn: Callable[[], Any]) -> Any:
        got = cp.done(name)
        if got is not None:
            return got
        current[0] = name
        out = cp.finish(name, timed(name, fn))
        say(f"stage {name} done in {timing[name]['seconds']:.1f}s ({orc.measured} measurements so far)")
        return out

    single = stage("singletons", lambda: stages.singletons(orc, insns, hook, counter))
    cand = stage("candidates", lambda: stages.candidates(single, o))
    say(f"{len(cand['sizes'])} blocking candidate(s), {len(cand['misfits'])} singleton misfit(s)")
    left_out: set[str] = set()   # blocking candidates in experiments the harness cannot run

    # 512-bit schemes put an Intel core into a mode that changes other schemes' ports (modes.py):
    # never a blocking instruction, whose ports every other scheme is measured against
    triggers, affected = modes.vector_kinds(insns) if not counter else (frozenset(), frozenset())

    def sizes() -> dict[str, int]:
        return {i: s for i, s in cand["sizes"].items() if i not in left_out and i not in triggers}

    def kept(classes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**c, "members": [m for m in c["members"] if m["insn"] not in left_out]}
                for c in classes if c["rep"] not in left_out]

    def suspects(failed: tuple[Experiment, ...]) -> set[str]:
        """The schemes of failed experiments that no measured mix ran with (a mix runs a
        candidate beside the culprit); all of them when each ran in some mix."""
        names = {i for e in failed for i in dict(e.items())}
        ran = {i for e, r in orc.rows(orc.known()).items() if r.ok and len(e.counts) > 1 for i in dict(e.items())}
        return (names - ran) or names

    def runnable(name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """A stage on blocking candidates; when the harness cannot run one of its experiments (a
        kernel that faults the worker), the candidates in it are candidates no longer (they are
        characterised like any other scheme) and the stage runs again: what it measured comes
        from the cache, and a resumed run meets the same stored failure and does the same."""
        while True:
            try:
                out = stage(name, lambda: {**fn(), "left_out": sorted(left_out)})
                left_out.update(out.get("left_out", ()))
                return out
            except MeasurementError as err:
                bad = suspects(err.experiments) & set(cand["sizes"]) - left_out
                if not bad:
                    raise
                say(f"  {', '.join(sorted(bad))}: in {len(err.experiments)} experiment(s) the harness cannot run "
                    f"({str(err)[:160]}); no blocking candidate(s) any more")
                left_out.update(bad)

    if counter:
        classes = kept(runnable("classes", lambda: stages.equivalence_classes(orc, single, sizes(), o, say))["classes"])
        say(f"{len(classes)} unique blocking instruction(s)")
        peak = runnable("peak", lambda: stages.peak_ipc(orc, single, kept(classes), o))
    else:
        peak = runnable("peak", lambda: stages.peak_ipc(orc, single, stages.peak_probes(sizes()), o, warn=False))
        classes = kept(runnable("classes", lambda: stages.equivalence_classes(
            paired, single, sizes(), o, say, r_max=peak["r_max"], check_pairs=3,
            probes=peak.get("probes")))["classes"])
        say(f"{len(classes)} class(es) of blocking candidates")
    warnings = [peak["warning"]] if peak.get("warning") else []
    for w in warnings:
        say("warning: " + w)
    r_max = peak["r_max"]
    prefix = str(state) if state is not None else None
    if counter:
        blk = runnable("blocking", lambda: infer_blocking(orc, kept(classes), r_max, o, prefix, say))
    else:
        in_peak = frozenset(peak.get("experiment") or ())
        blk = runnable("structure", lambda: infer_structure(paired, kept(classes), single, r_max, o, say, in_peak,
                                                            peak.get("ipc")))
    if left_out:
        warnings.append(f"{len(left_out)} blocking candidate(s) left out: the harness cannot run some experiment "
                        f"with them ({', '.join(sorted(left_out)[:5])}); they are characterised like other schemes")
        say("warning: " + warnings[-1])
    if blk.get("mapping") is None:
        raise ValidationError(f"explain: no blocking instruction explains the measurements ({blk.get('proof')})")
    bmap = mapping_from_json(blk["mapping"])
    if blk.get("equivalent"):
        warnings.append(f"{len(blk['equivalent'])} other mapping(s) of the blocking instructions explain every "
                        f"measurement and differ from the chosen one on no experiment of ≤ 12 instructions (the "
                        f"front-end limit hides them, sec. 6.3.4); documented facts can pick one (disjoint pairs)")
        say("warning: " + warnings[-1])
    slow = blk.get("slow_schedules", [])
    if slow:
        warnings.append(f"{len(slow)} experiment(s) of blocking candidates (pairs or mixes) ran slower than the port "
                        "bound of the fit of everything else (slow schedules, outside the model; set aside): "
                        + slow_summary(slow))
        say("warning: " + warnings[-1])
    improper = [n for n, _ in o.improper if n in bmap.uops] + [i for i in blk.get("multiplicities", {})]
    suite = blockers(bmap, improper)
    dropped = {d["insn"]: d for d in blk.get("dropped", [])}
    if counter:
        explanations = _blocking_explanations(bmap, classes, single, blk, r_max, dropped)
        for i, m in cand["misfits"].items():
            explanations[i] = Explanation(misfit=Misfit.from_json(m), counted=single[i]["uops"], source="singleton")
    else:   # members of a class and dropped candidates are characterised like every other scheme
        explanations = _blocking_explanations(bmap, [], single, blk, r_max, {})
    todo = [i for i in insns if i not in explanations]
    summary: dict[str, Any] = {
        "oracle": oracle.describe(), "counter": counter,
        "options": {**o.fingerprint(), "integrality": o.integrality, "tolerance": o.tolerance}, "runs": o.runs,
        "peak": peak, "r_max": r_max, "ports": len(bmap.ports),
        "blocking": {"proof": blk.get("proof"), "equivalent_mappings": len(blk.get("equivalent", [])),
                     "added_experiments": blk.get("added_experiments"), "dropped": list(dropped.values()),
                     "classes": [{"rep": c["rep"], "size": c["size"], "members": 1 + len(c["members"])}
                                 for c in classes],
                     "components": blk.get("components", []), "multiplicities": blk.get("multiplicities", {}),
                     "slow_schedules": slow,
                     "suite": [[b, sort_ports(q)] for b, q in suite]},
    }
    mode = None
    if triggers & set(single) and affected & set(bmap.uops):     # no triggers with a counter
        found = stage("mode", lambda: modes.detect(orc.measure, bmap, suite, triggers, affected, single, r_max, say))
        mode = modes.mode_of(found, triggers, affected)
        summary["mode"] = {k: found.get(k) for k in ("port", "sets", "why", "trigger", "probes", "blockers")}

    def characterise_all(run: int) -> dict[str, Explanation]:
        """Every scheme of todo against the suite; triggers of a mode against the suite as they see it."""
        if mode is None:
            return characterise(orc, todo, bmap, suite, single, r_max, o, run, say, on_chunk=cp.save_soon)
        nbmap, nsuite = modes.narrowed(bmap, suite, mode)
        out: dict[str, Explanation] = {}
        for part, orc_, bm, su in (([i for i in todo if i not in mode.triggers], orc, bmap, suite),
                                   ([i for i in todo if i in mode.triggers], modes.InMode(orc, nbmap, r_max),
                                    nbmap, nsuite)):
            if part:
                out.update(characterise(orc_, part, bm, su, single, r_max, o, run, say, on_chunk=cp.save_soon))
        return out

    per_run = []
    for run in range(o.runs):
        name = f"run{run} ({o.characterisation_key()})"
        if cp.done(name) is None:
            current[0] = "characterise"
            say(f"characterising {len(todo)} scheme(s) against {len(suite)} blocking instruction(s), "
                f"run {run + 1}/{o.runs}")
            got = timed(f"characterise run {run + 1}", lambda: characterise_all(run))
            cp.finish(name, {i: x.to_json() for i, x in got.items()})
        per_run.append({i: Explanation.from_json(x) for i, x in cp.done(name).items()})
    explanations.update(vote(per_run))
    units: list[dict[str, Any]] = []
    if not counter:   # a counter's µop counts leave no room for unit cycles
        got = stage(f"units (runs={o.runs}, {o.characterisation_key()})",
                    lambda: _units(orc, explanations, bmap, r_max, o, say,
                                   {i: (single.get(i) or {}).get("tp") for i in explanations}))
        units = got["units"]
        explanations.update({i: Explanation.from_json(x) for i, x in got["schemes"].items()})
    summary["units"] = units
    if not counter:   # a stage: resumed later, every stage's measurements would be "known" to it
        got = stage(f"certify (runs={o.runs}, {o.characterisation_key()})",
                    lambda: {i: x.to_json() for i, x in certify(orc, orc.known(), explanations, say).items()})
        explanations.update({i: Explanation.from_json(x) for i, x in got.items()})
    summary["certified"] = sorted(i for i, x in explanations.items() if x.misfit is not None and x.misfit.certificate)
    unit_ports = frozenset(p for u in units for p in ports_of(u))
    mapping = _final_mapping(bmap, explanations, sorted(unit_ports))
    ambiguous = sorted(i for i, x in explanations.items() if x.misfit is None and x.alternatives)
    if ambiguous:
        warnings.append(f"{len(ambiguous)} mapped scheme(s) have other placements of their µops that fit every "
                        f"measurement as well ({', '.join(ambiguous[:5])}{', …' if len(ambiguous) > 5 else ''}): "
                        f"each is mapped to the widest, the others are listed with it (`alternatives`)")
        say("warning: " + warnings[-1])
    if not counter:
        stage(f"stand-ins ({o.characterisation_key()})",
              lambda: _stand_ins(orc, mapping, explanations, single, unit_ports, say))
    measured = {e: r.cycles for e, r in orc.rows(orc.known()).items() if r.ok}
    got = stage(f"complete ({o.characterisation_key()})",
                lambda: _complete(mapping, explanations, single, measured, r_max, mode, unit_ports))
    model, unpredicted = ModelledMapping.from_json(got["model"], "the state's complete stage"), got["unpredicted"]
    if mode is not None:
        got = stage("mode schemes", lambda: modes.each(orc.measure, model, summary["mode"]["trigger"],
                                                         [b for b, _ in suite], r_max))
        mode = modes.refined(mode, got)
        model = ModelledMapping(model.mapping, model.schemes, mode)
        summary["mode"]["schemes"] = got
        summary["mode"]["why"] += modes.also_text(mode)
    if not counter and r_max is not None:
        trigger = summary["mode"]["trigger"] if mode is not None else None
        got = stage(f"shared ({o.characterisation_key()})",
                    lambda: _shared(orc, model, {i: (single.get(i) or {}).get("tp") for i in model.schemes},
                                    r_max, o, say, trigger, unit_ports, bmap))
        model = ModelledMapping(model.mapping, model.schemes, model.mode, shared.resources(got, model),
                                frozenset(i for i, *_ in got.get("serial", ())))
        model = rescored(model, measured, r_max, model.serial)
        summary["shared"] = got
        got = stage(f"reads ({o.characterisation_key()})",
                    lambda: _reads(orc, model, {i: (single.get(i) or {}).get("tp") for i in model.schemes},
                                   r_max, o, say))
        if (res := reads.resource(got)) is not None:
            model = ModelledMapping(model.mapping, model.schemes, model.mode, (*model.shared, res), model.serial)
        summary["reads"] = {k: v for k, v in got.items() if k != "witnesses"}
        say(f"  {reads.text(got)}")
    if not counter and r_max is not None and bmap.uops:
        got = stage(f"slots ({o.characterisation_key()})",
                    lambda: slots.measure(orc, model, bmap, r_max, list(model.schemes), say, on_chunk=cp.save_soon))
        model = slots.with_slots(model, got)
        summary["slots"] = {"filler": got["filler"], "schemes": {i: d["slots"] for i, d in got["schemes"].items()}}
    if not counter and model.on_ports:
        got = stage("queues", lambda: _queues(orc, model, r_max, say))
        model = queues.with_queues(model, got)
        summary["queues"] = got
    summary["predictions"] = kind_summary(model, unpredicted)
    summary["stats"] = {"measurements": len(orc.known()), "measured_now": orc.measured,
                        "seconds": round(time.perf_counter() - t_start, 2),
                        "mapped": len(mapping.uops) if mapping else 0, "schemes": len(insns),
                        "stages": timing}
    cp.save()
    return ExplainResult(mapping, explanations, summary, warnings, model)


def _stand_ins(oracle: Any, mapping: PortMapping | None, explanations: dict[str, Explanation],
               single: dict[str, Any], units: frozenset[str], say: Callable[[str], None]) -> dict[str, Any]:
    """:func:`~pmsolve.infer.explain.complete.stand_ins` measured, for :func:`complete` to judge
    the narrowed placements of misfits' µops on."""
    exps = stand_ins(mapping, explanations, single, units)
    say(f"  {len(exps)} experiment(s) beside mapped schemes, for misfits whose µops may lie on fewer ports")
    if exps:
        oracle.measure(exps)
    return {"experiments": len(exps)}


def _complete(mapping: PortMapping | None, explanations: dict[str, Explanation], single: dict[str, Any],
              measured: dict[Experiment, float], r_max: float | None, mode: Any,
              unit_ports: frozenset[str]) -> dict[str, Any]:
    """:func:`complete` as a stage: it judges each misfit on every experiment known when it runs,
    and a run resumed after the later stages had measured judged theirs too (a26's ``--all`` state
    resumed before its ``reads`` stage: other µops for misfits, and 256 of the resource's 1,361
    three-source members and 176 of its 578 transfers gone, RESULTS §1.37). From the state, a
    resumed run predicts as the uninterrupted run did."""
    model, none = complete(mapping, explanations, single, measured, r_max, mode, unit_ports)
    return {"model": model.to_json(), "unpredicted": none}


def _blocking_explanations(bmap: PortMapping, classes: list[dict[str, Any]], single: dict[str, Any],
                           blk: dict[str, Any], r_max: float | None, dropped: dict[str, Any]
                           ) -> dict[str, Explanation]:
    """Representatives: their singleton and every CEGIS experiment they occur in. Class members:
    their singleton and the pair experiment that makes them equivalent (Thm 6.3)."""
    out: dict[str, Explanation] = {}
    cegis = [(Experiment(c), t) for c, t in blk.get("measurements", []) if set(c) <= set(bmap.uops)]
    if cegis:
        modelled = batch_inverse_throughput([(bmap, e) for e, _ in cegis], r_max)
    for i, us in bmap.uops.items():
        ws = tuple(Witness("singleton" if e.size == 1 and len(e.counts) == 1 else "cegis", e, t, float(m))
                   for (e, t), m in zip(cegis, modelled) if i in set(e))
        uops = tuple(sorted(((tuple(sort_ports(u.ports)), u.count) for u in us), key=lambda x: (len(x[0]), x[0])))
        out[i] = Explanation(uops, {uop_key(ps): ws for ps, _ in uops}, (), None, single[i]["uops"], "blocking")
    for c in classes:
        rep = c["rep"]
        for m in c["members"]:
            i = m["insn"]
            if rep in dropped:
                d = dropped[rep]
                out[i] = Explanation(misfit=Misfit("unsatisfiable", f"equivalent (Thm 6.3) to {rep}: {d['reason']}",
                                                   tuple((Experiment(x["experiment"]), x["measured"])
                                                         for x in d["experiments"])),
                                     counted=single[i]["uops"], source="equivalent")
                continue
            us = bmap.uops[rep]
            sub = PortMapping(bmap.ports, {rep: us, i: us})
            pair, e1 = Experiment(m["experiment"]), Experiment({i: 1})
            mp, m1 = batch_inverse_throughput([(sub, pair), (sub, e1)], r_max)
            ws = (Witness("singleton", e1, single[i]["tp"], float(m1)),
                  Witness("equivalence", pair, m["measured"], float(mp)))
            out[i] = Explanation(out[rep].uops, {uop_key(us[0].ports): ws}, (), None, single[i]["uops"], "equivalent")
        if rep in dropped:
            d = dropped[rep]
            out[rep] = Explanation(misfit=Misfit("unsatisfiable", d["reason"],
                                                 tuple((Experiment(x["experiment"]), x["measured"])
                                                       for x in d["experiments"])),
                                   counted=single[rep]["uops"], source="blocking")
    return out


def _units(oracle: Any, explanations: dict[str, Explanation], bmap: PortMapping, r_max: float | None,
           o: ExplainOptions, say: Callable[[str], None], alone: dict[str, Any]) -> dict[str, Any]:
    """The units stage (:mod:`~pmsolve.infer.explain.units`) as a checkpointable value; when the
    oracle cannot measure its experiments the slow schemes stay misfits."""
    try:
        units, placed = place_units(oracle, explanations, bmap, r_max, o, say, alone)
    except MeasurementError as err:
        say(f"  no units: their experiments could not be measured ({str(err)[:160]})")
        return {"units": [], "schemes": {}}
    return {"units": units, "schemes": {i: x.to_json() for i, x in placed.items()}}


def _shared(oracle: Any, model: ModelledMapping, alone: dict[str, Any], r_max: float, o: ExplainOptions,
            say: Callable[[str], None], trigger: str | None, units: frozenset[str], blocking: PortMapping
            ) -> dict[str, Any]:
    """The shared stage (:mod:`~pmsolve.infer.explain.shared`); none when its experiments cannot be measured."""
    try:
        return shared.find(oracle.measure, model, alone, r_max, o, say, trigger, units, blocking)
    except MeasurementError as err:
        say(f"  no shared resources: their experiments could not be measured ({str(err)[:160]})")
        return {"resources": [], "left_out": [], "serial": []}


def _reads(oracle: Any, model: ModelledMapping, alone: dict[str, Any], r_max: float, o: ExplainOptions,
           say: Callable[[str], None]) -> dict[str, Any]:
    """The reads stage (:mod:`~pmsolve.infer.explain.reads`); none when its experiments cannot be measured."""
    try:
        return reads.find(oracle.measure, model, alone, r_max, o, reads.candidates(model.schemes), say)
    except MeasurementError as err:
        say(f"  no {reads.NAME} resource: its experiments could not be measured ({str(err)[:160]})")
        return {"transfer": None, "three_source": None, "hold": {}, "beside": {}, "context": [], "witnesses": [],
                "left_out": [], "why": "its experiments could not be measured"}


def _queues(oracle: Any, model: ModelledMapping, r_max: float | None, say: Callable[[str], None]) -> dict[str, Any]:
    """The queues stage (:mod:`~pmsolve.infer.explain.queues`); on the stored experiments alone
    when its own mixes cannot be measured."""
    measured = {e: r.cycles for e, r in oracle.rows(oracle.known()).items() if r.ok}
    try:
        return queues.find(model, measured, r_max, say, oracle.measure)
    except MeasurementError as err:
        say(f"  queues: their mixes could not be measured ({str(err)[:160]}); the stored experiments alone")
        return queues.find(model, measured, r_max, say)


def _final_mapping(bmap: PortMapping, explanations: dict[str, Explanation], units: list[str]) -> PortMapping | None:
    table = {i: [(frozenset(ps), n) for ps, n in x.uops] for i, x in explanations.items()
             if x.misfit is None and x.uops}
    return PortMapping(tuple(bmap.ports) + tuple(units), table) if table else None


__all__ = ["ExplainOptions", "ExplainResult", "infer", "port_names"]
