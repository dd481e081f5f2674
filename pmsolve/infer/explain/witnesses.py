"""What the explainable inference shows for its answers: witnesses and misfits.

A :class:`Witness` is one experiment that shows a µop (or the absence of one): the experiment,
the baseline it is compared with (the blocking instructions alone), both measured and both as
the final mapping models them. A :class:`Misfit` is an instruction left without a port usage,
with the category and the experiments that put it there. Both are plain JSON-able values so the
result file carries them next to the mapping.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pmsolve.model import Experiment, sort_ports

#: Misfit categories of the Zen+ study (sec. 6.3) and what each means.
CATEGORIES = {
    "micro-coded": "more µops are needed to explain the throughputs than the µop counter reports "
                   "(the microcode sequencer's signature, sec. 6.3.5)",
    "outside the model": "the throughputs cannot come from port contention alone (no µops, slower or "
                         "faster than any port mapping allows, fractional µops on blocked ports, µops "
                         "that no blocking instruction isolates)",
    "unstable": "repeated runs disagree and no majority exists",
    "unsatisfiable": "no port mapping of the model explains these experiments together",
    "unmeasurable": "an experiment with it could not be run (the harness's worker faulted, the assembler "
                    "refused it)",
}


def exp_json(e: Experiment) -> dict[str, int]:
    return dict(e.items())


@dataclass(frozen=True)
class Witness:
    """One experiment behind a µop: ``experiment`` against ``baseline`` (None for singletons
    and CEGIS experiments), measured and modelled inverse throughputs (cycles per iteration)."""

    # "blocking" (non-evading µops), "singleton", "equivalence", "cegis", "check" (not used to derive),
    # "stand-in" (a check the model misses, measured like ``baseline``: the same µops as blocking instructions)
    kind: str
    experiment: Experiment
    measured: float
    modelled: float | None = None
    baseline: Experiment | None = None
    measured_baseline: float | None = None
    modelled_baseline: float | None = None
    ports: tuple[str, ...] = ()  # the blocked port set Q, or the µop's ports
    non_evading: float | None = None  # (t(e) − t(baseline))·|Q|

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "experiment": exp_json(self.experiment),
                               "measured": self.measured, "modelled": self.modelled}
        if self.baseline is not None:
            out.update(baseline=exp_json(self.baseline), measured_baseline=self.measured_baseline,
                       modelled_baseline=self.modelled_baseline)
        if self.ports:
            out["ports"] = list(self.ports)
        if self.non_evading is not None:
            out["non_evading"] = self.non_evading
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Witness":
        return cls(d["kind"], Experiment(d["experiment"]), d["measured"], d.get("modelled"),
                   Experiment(d["baseline"]) if d.get("baseline") else None, d.get("measured_baseline"),
                   d.get("modelled_baseline"), tuple(d.get("ports", ())), d.get("non_evading"))

    def describe(self) -> str:
        def num(x: float | None) -> str:
            return "-" if x is None else f"{x:.4g}"
        text = f"{self.experiment}: measured {num(self.measured)}, modelled {num(self.modelled)}"
        if self.baseline is not None:
            text += (f"; {'stand-in' if self.kind == 'stand-in' else 'baseline'} {self.baseline}: measured {num(self.measured_baseline)}, "
                     f"modelled {num(self.modelled_baseline)}")
        if self.non_evading is not None:
            text += f"; non-evading µops on [{','.join(self.ports)}] = {self.non_evading:.3g}"
        return text


@dataclass(frozen=True)
class Misfit:
    """An instruction the algorithm does not map, with why (one of :data:`CATEGORIES`).
    ``uops``: the µops on ports found for a scheme alone slower than they explain, which
    :mod:`~pmsolve.infer.explain.units` may complete with a unit. ``certificate``: an
    experiment, it doubled and its two parts, measured, that no port mapping fits
    (:mod:`~pmsolve.infer.explain.certify`). ``found``: the µops the characterisation found on
    the blocked ports, whatever rejected them (a prediction for the misfit starts from them).
    ``unit``: the ports of a unit its pairs showed it shares, where its own checks then missed."""

    category: str
    reason: str
    experiments: tuple[tuple[Experiment, float], ...] = ()
    uops: tuple[tuple[tuple[str, ...], int], ...] = ()
    certificate: tuple[tuple[Experiment, float], ...] = ()
    found: tuple[tuple[tuple[str, ...], int], ...] = ()
    unit: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"unknown misfit category {self.category!r}")

    def to_json(self) -> dict[str, Any]:
        out = {"category": self.category, "reason": self.reason,
               "experiments": [{"experiment": exp_json(e), "measured": t} for e, t in self.experiments]}
        if self.uops:
            out["uops"] = [{"ports": list(ps), "count": n} for ps, n in self.uops]
        if self.certificate:
            out["certificate"] = [{"experiment": exp_json(e), "measured": t} for e, t in self.certificate]
        if self.found:
            out["found"] = [{"ports": list(ps), "count": n} for ps, n in self.found]
        if self.unit:
            out["unit"] = list(self.unit)
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Misfit":
        return cls(d["category"], d["reason"],
                   tuple((Experiment(x["experiment"]), x["measured"]) for x in d.get("experiments", [])),
                   tuple((tuple(u["ports"]), int(u["count"])) for u in d.get("uops", [])),
                   tuple((Experiment(x["experiment"]), x["measured"]) for x in d.get("certificate", [])),
                   tuple((tuple(u["ports"]), int(u["count"])) for u in d.get("found", [])),
                   tuple(d.get("unit", ())))


@dataclass(frozen=True)
class Explanation:
    """One instruction's answer: its µops (port set → count) with witnesses per µop, or a misfit.

    ``witnesses`` maps a µop key ("2,3") to the experiments that show it; ``others`` are the
    experiments that show the absence of µops on the other blocked port sets.
    """

    uops: tuple[tuple[tuple[str, ...], int], ...] = ()
    witnesses: dict[str, tuple[Witness, ...]] = field(default_factory=dict, hash=False, compare=False)
    others: tuple[Witness, ...] = field(default=(), compare=False)
    misfit: Misfit | None = None
    counted: float | None = field(default=None, compare=False)
    source: str = field(default="characterised", compare=False)  # "blocking", "equivalent", "characterised",
    # "derived blocking" (characterised, then a blocking instruction of the second pass)
    confidence: float | None = field(default=None, compare=False)  # 0..1, without a µop counter
    # blocked sets the front end kept the full check from loading: a µop across one stays unseen
    unchecked: tuple[tuple[str, ...], ...] = field(default=(), compare=False)
    # other placements of its µops that fit every measurement as well, within the noise (the
    # mapped one is the widest of them): the measurements cannot tell them apart
    alternatives: tuple[tuple[tuple[tuple[str, ...], int], ...], ...] = field(default=(), compare=False)

    def key(self) -> tuple:
        """What the majority vote compares: the port usage, or the misfit category."""
        return ("misfit", self.misfit.category) if self.misfit else ("uops", self.uops)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "counted_uops": self.counted}
        if self.confidence is not None:
            out["confidence"] = round(self.confidence, 3)
        if self.misfit:
            out["misfit"] = self.misfit.to_json()
        else:
            out["uops"] = [{"ports": list(ps), "count": n,
                            "witnesses": [w.to_json() for w in self.witnesses.get(uop_key(ps), ())]}
                           for ps, n in self.uops]
        if self.others:
            out["others"] = [w.to_json() for w in self.others]
        if self.unchecked:
            out["unchecked"] = [list(q) for q in self.unchecked]
        if self.alternatives:
            out["alternatives"] = [[{"ports": list(ps), "count": n} for ps, n in alt] for alt in self.alternatives]
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Explanation":
        uops = tuple((tuple(u["ports"]), int(u["count"])) for u in d.get("uops", []))
        wit = {uop_key(tuple(u["ports"])): tuple(Witness.from_json(w) for w in u.get("witnesses", []))
               for u in d.get("uops", [])}
        return cls(uops, wit, tuple(Witness.from_json(w) for w in d.get("others", [])),
                   Misfit.from_json(d["misfit"]) if d.get("misfit") else None, d.get("counted_uops"),
                   d.get("source", "characterised"), d.get("confidence"),
                   tuple(tuple(q) for q in d.get("unchecked", ())),
                   tuple(tuple((tuple(u["ports"]), int(u["count"])) for u in alt) for alt in d.get("alternatives", ())))


def uop_key(ports: tuple[str, ...] | frozenset[str]) -> str:
    return ",".join(sort_ports(ports))
