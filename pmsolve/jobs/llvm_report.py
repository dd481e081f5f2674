"""What an llvm-mca model gets wrong about a measured port mapping, with the measurements that show it.

The input is an explained mapping (``pmsolve infer -o``): per mapped scheme its µops and the
measured experiments that show each of them (witnesses), and an llvm-mca ``-mcpu``. Every
witness experiment and its baseline is rendered as the main job renders experiments (operands
allocated, unrolled to about 40 instructions) and asked of llvm-mca, many per call. A scheme
disagrees on

* **throughput** when llvm-mca's cycles for the scheme alone differ from the measured singleton
  by more than ``tolerance`` (relative): llvm-mca is ``slower`` or ``faster``;
* **ports** when its throughput agrees but the ports it shares do not. A blocking witness runs
  the scheme beside blocking instructions (its baseline, alone on a known port set Q); the
  difference ``t(witness) − t(baseline)`` is the time the scheme adds on Q. When llvm-mca's
  difference misses the measured one by more than ``tolerance`` × t(witness), llvm-mca puts
  the scheme on ports it shares with Q more (``shares more``) or less (``shares less``) than
  measured. A check (a mix not used to derive the µops) that llvm-mca misses counts the same way.

Only measurements the mapping reproduces (modelled within ``tolerance``) are evidence: they are
where the measured mapping and llvm-mca really disagree, not noise in either.

A witness where llvm-mca's answer is its dispatch limit (µops / dispatch width) and slower than
measured is evidence of a third kind, **dispatch**; those findings form one family, as they have
one cause whatever the scheme.

Schemes that disagree the same way are grouped as AnICA generalises (dissertation sec. 8.2,
Alg. 8.2): from the most specific abstract instruction of a scheme (mnemonic, category, ISA
extension, µop count, memory use, operand kinds: :mod:`pmsolve.anica.domain`), one expansion
after another is kept while every mapped scheme the abstract instruction then covers disagrees
in the same way. AnICA samples blocks to judge that; here it is exact, over the mapped schemes.
A group is thus a family a maintainer can act on ("mnemonic: vpaddd (±2 edits); memory: none"),
with every member's measured and predicted cycles, llvm-mca's resources for it and the mapping's
ports, and the witness experiments. :func:`remeasure` measures the witnesses again.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

from pmsolve.anica.domain import FEATURES, AbstractBlock, AbstractInsn, Expansion, Form, Universe, expansions
from pmsolve.anica.features import DEF_NONE, TOP, levenshtein
from pmsolve.errors import FormatError, ValidationError
from pmsolve.formats import load_mapping, parse_json_text, read_text_file
from pmsolve.infer.explain.witnesses import Explanation, Witness, exp_json
from pmsolve.isa import Catalogue, load_catalogue
from pmsolve.jobs.host import block_of
from pmsolve.model import Experiment, PortMapping, sort_ports
from pmsolve.predictors.llvm_mca import LlvmMcaPredictor, block_details

LABELS = {"slower": "llvm-mca predicts the scheme alone slower than measured",
          "faster": "llvm-mca predicts the scheme alone faster than measured",
          "ports": "llvm-mca's throughput alone is right, but the ports it shares with other instructions are not",
          "dispatch": "llvm-mca's throughput alone is right, but beside other instructions its dispatch limit "
                      "(µops / dispatch width) binds where the measured machine runs faster"}


@dataclass(frozen=True)
class Evidence:
    """One measured experiment and llvm-mca's cycles for it (per copy of the experiment).
    ``kind``: ``singleton``, ``blocking`` (beside blocking instructions: ``baseline`` is them
    alone, ``ports`` their port set), ``check`` (a mix not used to derive the µops)."""

    kind: str
    experiment: Experiment
    measured: float
    modelled: float | None
    llvm: float | None
    baseline: Experiment | None = None
    measured_baseline: float | None = None
    llvm_baseline: float | None = None
    ports: tuple[str, ...] = ()
    remeasured: float | None = None
    remeasured_baseline: float | None = None

    @property
    def added(self) -> tuple[float, float] | None:
        """(measured, llvm-mca) time the scheme adds to the baseline."""
        if self.baseline is None or None in (self.llvm, self.llvm_baseline, self.measured_baseline):
            return None
        return self.measured - self.measured_baseline, self.llvm - self.llvm_baseline   # type: ignore[operator]

    def miss(self) -> float | None:
        """llvm-mca's error relative to the measurement: of the added time for a blocking
        witness, of the cycles otherwise (signed: positive when llvm-mca says slower)."""
        if self.llvm is None:
            return None
        added = self.added
        if added is not None:
            return (added[1] - added[0]) / self.measured
        return (self.llvm - self.measured) / self.measured

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "experiment": exp_json(self.experiment),
                               "measured": self.measured, "modelled": self.modelled, "llvm_mca": self.llvm}
        if self.baseline is not None:
            out.update(baseline=exp_json(self.baseline), measured_baseline=self.measured_baseline,
                       llvm_mca_baseline=self.llvm_baseline, ports=list(self.ports))
        if self.remeasured is not None:
            out["remeasured"] = self.remeasured
        if self.remeasured_baseline is not None:
            out["remeasured_baseline"] = self.remeasured_baseline
        return out

    def describe(self) -> str:
        text = f"{self.kind} {self.experiment}: measured {_n(self.measured)}, llvm-mca {_n(self.llvm)}"
        if self.baseline is not None:
            text += (f"; blocking instructions {self.baseline} on [{','.join(self.ports)}]: measured "
                     f"{_n(self.measured_baseline)}, llvm-mca {_n(self.llvm_baseline)}")
            if self.added:
                text += f"; adds {_n(self.added[0])} measured, {_n(self.added[1])} by llvm-mca"
        if self.remeasured is not None:
            text += f"; measured again {_n(self.remeasured)}"
            if self.remeasured_baseline is not None:
                text += f" and {_n(self.remeasured_baseline)}"
        return text


@dataclass
class Finding:
    """A scheme where llvm-mca and the measured mapping disagree (``label``: a key of :data:`LABELS`)."""

    scheme: str
    label: str
    measured: float
    llvm: float
    uops: tuple[tuple[tuple[str, ...], int], ...]
    evidence: list[Evidence]
    resources: dict[str, float] | None = None
    llvm_uops: float | None = None

    @property
    def error(self) -> float:
        """How far llvm-mca is off: alone for a throughput finding, the worst witness otherwise."""
        if self.label in ("slower", "faster"):
            return (self.llvm - self.measured) / self.measured
        return max((e.miss() or 0.0 for e in self.evidence), key=abs, default=0.0)

    def to_json(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "label": self.label, "measured": self.measured, "llvm_mca": self.llvm,
                "error": self.error, "uops": [{"ports": list(p), "count": n} for p, n in self.uops],
                "llvm_mca_resources": self.resources, "llvm_mca_uops": self.llvm_uops,
                "witnesses": [e.to_json() for e in self.evidence]}


@dataclass
class Group:
    """Findings of one label that one abstract instruction covers, and nothing else it covers."""

    label: str
    family: str
    abstract: dict[str, Any]
    members: list[Finding]

    @property
    def mnemonics(self) -> list[str]:
        return sorted({m.scheme.split("_")[0] for m in self.members})

    def to_json(self) -> dict[str, Any]:
        errs = [abs(m.error) for m in self.members]
        return {"label": self.label, "meaning": LABELS[self.label], "family": self.family,
                "mnemonics": self.mnemonics,
                "abstract_instruction": self.abstract, "schemes": len(self.members),
                "mean_error": sum(errs) / len(errs), "members": [m.to_json() for m in self.members]}


@dataclass
class LlvmReport:
    mcpu: str
    llvm: str
    source: str
    tolerance: float
    compared: int
    agreeing: int
    groups: list[Group]
    skipped: dict[str, str] = field(default_factory=dict)
    dispatch_width: int | None = None
    r_max: float | None = None
    remeasured_with: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"format": "pmsolve.llvm-report", "version": 1, "llvm_mca": self.llvm, "mcpu": self.mcpu,
                "mapping": self.source, "tolerance": self.tolerance, "schemes_compared": self.compared,
                "schemes_agreeing": self.agreeing, "findings": sum(len(g.members) for g in self.groups),
                "dispatch_width": self.dispatch_width, "r_max": self.r_max,
                "labels": LABELS, "groups": [g.to_json() for g in self.groups], "skipped": self.skipped,
                "remeasured_with": self.remeasured_with, "reproduced": self.reproduced()}

    def reproduced(self) -> dict[str, int] | None:
        """How many witnesses reproduce when measured again (within the tolerance), if they were."""
        ev = [e for g in self.groups for m in g.members for e in m.evidence if e.remeasured is not None]
        if not ev:
            return None
        ok = sum(1 for e in ev if _close(e.remeasured, e.measured, self.tolerance)
                 and (e.baseline is None or _close(e.remeasured_baseline, e.measured_baseline, self.tolerance)))
        return {"witnesses": len(ev), "reproduced": ok}

    def render(self, top: int | None = None, witnesses: int = 3) -> str:
        lines = [f"{self.llvm} -mcpu={self.mcpu} against {self.source}: {self.compared} mapped schemes compared, "
                 f"{self.agreeing} agree within {100 * self.tolerance:g} %; "
                 f"{sum(len(g.members) for g in self.groups)} disagree, in {len(self.groups)} families"]
        if self.dispatch_width:
            lines.append(f"llvm-mca dispatches {self.dispatch_width} µops per cycle; the measured front end runs "
                         f"{self.r_max if self.r_max else '?'} instructions per cycle")
        rep = self.reproduced()
        if rep:
            lines.append(f"measured again with {self.remeasured_with}: {rep['reproduced']} of {rep['witnesses']} "
                         f"witnesses reproduce within {100 * self.tolerance:g} %")
        for k, g in enumerate(self.groups[:top] if top else self.groups, 1):
            lines += ["", f"{k}. [{g.label}] {g.family} ({', '.join(g.mnemonics)}) — {len(g.members)} scheme(s): "
                          f"{LABELS[g.label]}"]
            for m in g.members:
                res = (", ".join(f"{r} {v:g}" for r, v in m.resources.items()) if m.resources else "?")
                usage = " + ".join(f"{n}×[{','.join(p)}]" for p, n in m.uops)
                if m.label in ("ports", "dispatch"):
                    off = (f"beside other instructions llvm-mca is off by up to {100 * abs(m.error):.0f} % of the "
                           f"measured cycles ({len(m.evidence) - 1} witness(es))")
                else:
                    off = f"{100 * m.error:+.0f} %"
                lines.append(f"   {m.scheme:<28} alone: measured {m.measured:.3f}, llvm-mca {m.llvm:.3f}; {off}")
                lines.append(f"      mapping {usage}; llvm-mca: {_n(m.llvm_uops)} µops on {res}")
                shown = [e for e in m.evidence if e.kind != "singleton" or m.label in ("slower", "faster")][:witnesses]
                lines += [f"      {e.describe()}" for e in shown]
        if self.skipped:
            lines += ["", f"{len(self.skipped)} mapped scheme(s) not compared (e.g. "
                          + "; ".join(f"{k}: {v}" for k, v in list(self.skipped.items())[:3]) + ")"]
        return "\n".join(lines)


def _n(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _close(a: float | None, b: float | None, tol: float) -> bool:
    return a is not None and b is not None and abs(a - b) <= tol * abs(b)


# ----------------------------------------------------------------------------- building it

def read_explained_mapping(path: str | Path) -> tuple[PortMapping, dict[str, Explanation], dict[str, Any]]:
    """The mapping, its explanations per scheme and the rest of the explanation (``r_max``,
    ``oracle``, ...) from a file written by ``pmsolve infer -o``."""
    data = parse_json_text(read_text_file(path, "mapping file"), str(path))
    ex = data.get("explanation") if isinstance(data, dict) else None
    if not isinstance(ex, dict) or not isinstance(ex.get("schemes"), dict):
        raise FormatError(f"{path}: no explanation in this file (an explained mapping from `pmsolve infer -o` "
                          "carries the measured witnesses the report needs)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mapping = load_mapping(path)
    try:
        schemes = {k: Explanation.from_json(v) for k, v in ex["schemes"].items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise FormatError(f"{path}: malformed explanation ({type(exc).__name__}: {exc})") from None
    return mapping, schemes, {k: v for k, v in ex.items() if k != "schemes"}


def llvm_report(mapping: PortMapping, explanations: dict[str, Explanation], mcpu: str, *,
                version: int | None = None, tolerance: float = 0.10, source: str = "", r_max: float | None = None,
                catalogue: Catalogue | None = None, say: Callable[[str], None] = lambda m: None) -> LlvmReport:
    """Compare llvm-mca ``-mcpu`` with the measured mapping (see the module docstring)."""
    if not 0 < tolerance < 1:
        raise ValidationError(f"tolerance must be between 0 and 1, got {tolerance}")
    cat = catalogue or load_catalogue(host=False)
    mca = LlvmMcaPredictor(mcpu, version=version)
    skipped: dict[str, str] = {}
    witnesses: dict[str, list[Witness]] = {}
    for s in sorted(mapping.uops):
        x = explanations.get(s)
        if s not in cat:
            skipped[s] = "not a catalogue scheme (no assembly to give llvm-mca)"
        elif x is None or x.misfit is not None:
            skipped[s] = "no explanation with witnesses"
        else:
            ws = [w for key in x.witnesses for w in x.witnesses[key]] + list(x.others)
            if not any(w.kind == "singleton" for w in ws):
                skipped[s] = "no singleton measurement among its witnesses"
            else:
                witnesses[s] = _unique(w for w in ws if w.kind in ("singleton", "blocking", "check")
                                       and all(n in cat for n in w.experiment))
    exps = sorted({e for ws in witnesses.values() for w in ws for e in (w.experiment, w.baseline) if e is not None},
                  key=str)
    say(f"asking {mca.name} about {len(exps)} measured experiments of {len(witnesses)} schemes")
    blocks = [block_of(cat, e) for e in exps]
    preds = mca.predict([b for b, _ in blocks])
    llvm = {e: (p.cycles / f if p.ok else None) for e, (_, f), p in zip(exps, blocks, preds)}
    singles: dict[str, Evidence] = {}
    for s, ws in witnesses.items():
        w = next(w for w in ws if w.kind == "singleton")
        single = _evidence(w, llvm)
        if not _close(single.modelled, single.measured, tolerance):
            skipped[s] = "the mapping does not reproduce its singleton"
        elif single.llvm is None:
            skipped[s] = "llvm-mca cannot predict it alone"
        else:
            singles[s] = single
    right = {s for s, e in singles.items() if _close(e.llvm, e.measured, tolerance)}
    missed: dict[str, list[Evidence]] = {}
    for s in singles:
        ev = [_evidence(w, llvm) for w in witnesses[s] if w.kind != "singleton" and _usable(w, s, llvm, right, tolerance)]
        missed[s] = sorted((e for e in ev if abs(e.miss()) > tolerance), key=lambda e: -abs(e.miss()))
    # llvm-mca's details: the resources of every scheme alone, and for every missed witness
    # whether llvm-mca's answer is its dispatch limit (µops / dispatch width) rather than a port
    asked = sorted(set(singles) - right | {s for s, ms in missed.items() if ms})
    todo = [Experiment({s: 1}) for s in asked] + sorted({e.experiment for s in asked for e in missed[s]}, key=str)
    rendered = [block_of(cat, e) for e in todo]
    say(f"asking llvm-mca for the resources and dispatch limits of {len(todo)} experiments")
    details = dict(zip(todo, block_details(mcpu, [b for b, _ in rendered], version=mca.version)))
    width = next((d["dispatch_width"] for d in details.values() if d), None)
    findings, agreeing = [], 0
    for s, single in singles.items():
        ports = [e for e in missed[s] if not (e.miss() > 0 and _dispatch_bound(details.get(e.experiment)))]
        if s not in right:
            label = "slower" if single.llvm > single.measured else "faster"
        elif ports:
            label = "ports"
        elif missed[s]:
            label = "dispatch"
        else:
            agreeing += 1
            continue
        d = details.get(Experiment({s: 1}))
        factor = next(f for e, (_, f) in zip(todo, rendered) if e == Experiment({s: 1}))
        findings.append(Finding(s, label, single.measured, single.llvm, tuple(mapping_uops(mapping, s)),
                                [single] + (missed[s] if label == "dispatch" else ports),
                                {r: round(v / factor, 3) for r, v in d["resources"].items()} if d else None,
                                d["uops"] / factor if d else None))
    groups = group_findings(cat, mapping, list(singles), {f.scheme: f for f in findings if f.label != "dispatch"},
                            {f.scheme: f.label for f in findings})
    dispatch = sorted((f for f in findings if f.label == "dispatch"), key=lambda f: (-abs(f.error), f.scheme))
    if dispatch:   # one cause: llvm-mca's dispatch width, whatever the scheme
        groups.append(Group("dispatch", f"llvm-mca's dispatch width ({width} µops per cycle)", {}, dispatch))
        groups.sort(key=lambda g: (-len(g.members), -max(abs(m.error) for m in g.members)))
    return LlvmReport(mcpu, f"llvm-mca-{mca.version}", source, tolerance, len(singles), agreeing, groups, skipped,
                      dispatch_width=width, r_max=r_max)


def _dispatch_bound(d: dict | None) -> bool:
    """Is llvm-mca's answer for the block its dispatch limit (within 2 %)? (A witness counts as
    a dispatch miss only when llvm-mca is also slower than measured there.)"""
    return d is not None and d["cycles"] <= 1.02 * d["uops"] / d["dispatch_width"]


def mapping_uops(mapping: PortMapping, s: str) -> list[tuple[tuple[str, ...], int]]:
    return [(tuple(sort_ports(u.ports)), u.count) for u in mapping.uops_of(s)]


def _unique(ws: Iterable[Witness]) -> list[Witness]:
    seen, out = set(), []
    for w in ws:
        key = (w.kind, w.experiment, w.baseline)
        if key not in seen:
            seen.add(key)
            out.append(w)
    return out


def _usable(w: Witness, s: str, llvm: dict[Experiment, float | None], right: set[str], tol: float) -> bool:
    """Is the witness evidence about ``s``? The mapping must reproduce it, and llvm-mca must be
    right about everything else in it: the blocking instructions alone (the baseline), or
    every other scheme of a check alone. Otherwise a miss may be llvm-mca's error about them."""
    if not _close(w.modelled, w.measured, tol) or llvm.get(w.experiment) is None:
        return False
    if w.baseline is not None:
        return (_close(w.modelled_baseline, w.measured_baseline, tol)
                and _close(llvm.get(w.baseline), w.measured_baseline, tol))
    return w.kind == "check" and all(n in right for n in w.experiment if n != s)


def _evidence(w: Witness, llvm: dict[Experiment, float | None]) -> Evidence:
    return Evidence(w.kind, w.experiment, w.measured, w.modelled, llvm.get(w.experiment), w.baseline,
                    w.measured_baseline, llvm.get(w.baseline) if w.baseline is not None else None, w.ports)


#: the order in which expansions are tried: the mnemonic last, so a family keeps it as long as it can
_PRIORITY = ("operands", "memory", "uops", "prefix", "extension", "category", "mnemonic")


def group_findings(cat: Catalogue, mapping: PortMapping, compared: list[str],
                   findings: dict[str, Finding], labels: dict[str, str] | None = None) -> list[Group]:
    """AnICA's generalisation (Alg. 8.2) over the compared schemes: from the abstract instruction
    of a finding, keep every expansion after which everything it covers is a finding of the same
    label (expansions tried in :data:`_PRIORITY` order). The family is what the result covers;
    its description is the tightest abstract instruction covering exactly those members (never
    wider than what was proven). ``labels``: every compared scheme's label, when some are
    findings not to group here (they still bound the families). Largest families first."""
    uops = {s: sum(n for _, n in mapping_uops(mapping, s)) for s in compared}
    universe = Universe([Form(cat[s]) for s in compared], uops)
    labels = labels if labels is not None else {s: f.label for s, f in findings.items()}
    label_of = [labels.get(f.scheme.name) for f in universe.forms]
    order = sorted(findings.values(), key=lambda f: (-abs(f.error), f.scheme))
    covered: set[str] = set()
    groups = []
    for f in order:
        if f.scheme in covered:
            continue
        ab = AbstractBlock((universe.beta_insn(f.scheme),))
        rejected: set[Expansion] = set()
        while True:
            todo = sorted((e for e in expansions(ab) if e not in rejected), key=lambda e: _PRIORITY.index(e.feature))
            if not todo:
                break
            t = todo[0].apply(ab)
            if all(label_of[k] == f.label for k in universe.gamma(t.insns[0]).nonzero()[0]):
                ab = t
            else:
                rejected.add(todo[0])
        idx = [int(k) for k in universe.gamma(ab.insns[0]).nonzero()[0]]
        tight = _tightest(universe, idx, f.scheme, ab.insns[0])
        members = [universe.forms[k].scheme.name for k in idx]
        fresh = [findings[m] for m in members if m not in covered]
        covered.update(members)
        groups.append(Group(f.label, tight.describe(), tight.to_json(),
                            sorted(fresh, key=lambda x: (-abs(x.error), x.scheme))))
    groups.sort(key=lambda g: (-len(g.members), -max(abs(m.error) for m in g.members)))
    return groups


def _tightest(universe: Universe, idx: list[int], seed: str, general: AbstractInsn) -> AbstractInsn:
    """``general`` tightened: each feature it constrains at its most specific value that still
    admits every form in ``idx`` (the mnemonic measured from ``seed``'s); the others stay ⊤."""
    feats = [universe.feats[k] for k in idx]
    values = []
    for name, dom in FEATURES:
        vals = [fv[name] for fv in feats]
        if general.get(name) is TOP:
            values.append(TOP)
        elif name == "mnemonic":
            base = universe.feats[universe.index[seed]]["mnemonic"]
            d = max(levenshtein(base, v) for v in vals)
            values.append((base, d) if d <= dom.k else TOP)
        elif name == "uops":
            betas = [dom.beta(v) for v in vals]
            values.append(TOP if TOP in betas else max(betas))
        elif name in ("memory", "operands"):
            common = frozenset.intersection(*vals)
            values.append(DEF_NONE if not any(vals) else tuple(sorted(common)) if common else TOP)
        else:
            values.append(vals[0] if len(set(vals)) == 1 else TOP)
    return AbstractInsn(tuple(values))


# ----------------------------------------------------------------------------- measuring it again

def remeasure(report: LlvmReport, oracle: Any, spec: str, say: Callable[[str], None] = lambda m: None) -> None:
    """Measure every witness of the report (and its baseline) again with ``oracle``, in place."""
    ev = [e for g in report.groups for m in g.members for e in m.evidence]
    exps = sorted({x for e in ev for x in (e.experiment, e.baseline) if x is not None}, key=str)
    say(f"measuring {len(exps)} witness experiments again")
    got = dict(zip(exps, oracle.measure(exps)))
    for g in report.groups:
        for m in g.members:
            m.evidence = [_again(e, got) for e in m.evidence]
    report.remeasured_with = spec


def _again(e: Evidence, got: dict[Experiment, float]) -> Evidence:
    def ok(x: float | None) -> float | None:
        return x if x is not None and not math.isnan(x) else None

    return replace(e, remeasured=ok(got.get(e.experiment)),
                   remeasured_baseline=ok(got.get(e.baseline)) if e.baseline is not None else None)
