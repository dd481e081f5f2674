"""Why held-out experiments miss: each miss shrunk to the smallest sub-experiment that still misses.

A held-out experiment the mapping predicts badly says little by itself: four or five schemes,
any of them, or any two together, may run into something the mapping does not model. So the
worst misses are shrunk (a delta-debugging walk): of the sub-experiments that leave one scheme
out, the one that misses most in the same direction replaces the experiment, until no such
sub-experiment misses any more. What is left, the *core*, is the evidence the issue asks for
("say which bottleneck is not a port, with the experiments"), and is of one of five kinds:

- ``no port mapping`` — both measurements of the core contradict, for every port mapping, two
  measured parts it splits into (one scheme's copies and the rest; the test is
  :func:`pmsolve.infer.explain.certify.contradicted`): slower than their sum (on the Zen 4,
  ``{vpaddq zmm, m512; vmovdqa xmm, m128}`` = 2.0 cycles, the parts 1.0 and 0.5) or faster than
  the slower one, by more than ``margin``. A mapping, ours or any other, that predicts the parts
  as measured predicts the core at most at their sum (at least at the slower one);
- ``scheme alone`` — one scheme on its own runs off its mapping (its µops were derived from
  other experiments, against the blocking instructions);
- ``no shared port`` — schemes whose µops share no port in the mapping, so the mapping lets
  them overlap fully, yet together they run slower (faster) than that: a bottleneck that is not
  a port of the mapping (a register file, the store data path, a scheduler);
- ``shared ports`` — schemes that do share ports, more slowly than the mapping says: the
  mapping's port sets are too wide for them, or a non-port effect adds to the ports;
- ``unstable`` — the core's doubled experiment (a second, independent measurement per copy) does
  not miss: the miss was the measurement's, not the mapping's.

The sub-experiments are measured after the predictors are scored and never used for anything
else; they go through the job's measurement store, so a resumed job measures none of them twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pmsolve.harness.layouts import scaled
from pmsolve.infer.explain.certify import contradicted, splits
from pmsolve.model import Experiment, PortMapping
from pmsolve.modelled import Mode, ModelledMapping, Shared
from pmsolve.throughput import evaluate_many

#: a relative miss beyond this counts (the MAPE the issue targets)
MARGIN = 0.05
KINDS = ("no port mapping", "scheme alone", "no shared port", "shared ports", "unstable")


@dataclass(frozen=True)
class Core:
    """The smallest sub-experiment that still misses, and the held-out misses that shrank to it."""

    experiment: Experiment
    measured: float
    predicted: float
    doubled: float      # cycles per copy of the core's doubled experiment
    kind: str
    held_out: tuple[Experiment, ...]
    #: for ``no port mapping``: the two measured parts the core contradicts, ((a, tp⁻¹), (b, tp⁻¹))
    parts: tuple[tuple[Experiment, float], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"experiment": dict(self.experiment.items()), "measured": self.measured,
                "predicted": self.predicted, "doubled": self.doubled, "kind": self.kind,
                "held_out": [dict(e.items()) for e in self.held_out],
                "parts": [{"experiment": dict(e.items()), "measured": t} for e, t in self.parts]}


def miss(measured: float, predicted: float) -> float:
    """Signed relative miss: positive when the experiment runs slower than predicted."""
    return (measured - predicted) / measured


def misses_like(t: float, predicted: float, slower: bool, margin: float) -> bool:
    """Does the measurement ``t`` miss ``predicted`` by more than ``margin``, slower when
    ``slower`` and faster otherwise (an unmeasured NaN misses nothing)?"""
    return t == t and t > 0 and abs(miss(t, predicted)) > margin and (miss(t, predicted) > 0) == slower


def kind_of(mapping: PortMapping, e: Experiment) -> str:
    """Which of :data:`KINDS` ``scheme alone``, ``no shared port`` or ``shared ports`` a core is
    (module doc)."""
    names = list(e)
    if len(names) == 1:
        return "scheme alone"
    ports = [set().union(*(u.ports for u in mapping.uops[n])) for n in names]
    shared = any(ports[i] & ports[j] for i in range(len(ports)) for j in range(i + 1, len(ports)))
    return "shared ports" if shared else "no shared port"


def localise(oracle, mapping: PortMapping, r_max: float | None, held: Sequence[Experiment],
             measured: Sequence[float], *, margin: float = MARGIN, limit: int = 30,
             mode: Mode | None = None, shared: Sequence[Shared] = ()) -> tuple[int, list[Core]]:
    """(number of held-out experiments of ``mapping``'s schemes that miss by more than
    ``margin``, their cores): the ``limit`` worst are shrunk level by level, one batch of
    measurements per level for all of them. Cores are sorted by how many misses shrank to them.
    With a ``mode`` the mapping predicts as the job's model does: in the mode where a trigger is
    in the experiment (without it, every mix with a zmm scheme looked like a miss on Intel), and
    with its ``shared`` resources (:class:`~pmsolve.modelled.Shared`) as far as mapped schemes hold them."""
    known: dict[Experiment, float] = {}
    mine = [(e, m) for e, m in zip(held, measured)
            if m == m and m > 0 and all(n in mapping.uops for n in e)]
    names = set(mapping.uops)
    cut = tuple(replace(r, hold={i: t for i, t in r.hold.items() if i in names},
                        beside={i: t for i, t in r.beside.items() if i in names}, context=r.context & names)
                for r in shared)
    model = ModelledMapping(mapping, {}, mode, cut) if mode is not None or cut else None

    def predict(exps: list[Experiment]) -> Sequence[float]:
        return model.evaluate_many(exps, r_max) if model is not None else evaluate_many(mapping, exps, r_max=r_max)

    predicted = {e: float(p) for (e, _), p in zip(mine, predict([e for e, _ in mine]))}
    misses = [(e, m) for e, m in mine if abs(miss(m, predicted[e])) > margin]
    misses.sort(key=lambda em: -abs(miss(em[1], predicted[em[0]])))
    current = {e: e for e, _ in misses[:limit]}     # held-out experiment -> where its walk stands
    known.update(misses[:limit])
    done: dict[Experiment, Experiment] = {}
    while current:
        subs = {e: [Experiment({n: c for n, c in at.items() if n != leave}) for leave in at]
                for e, at in current.items() if len(at.counts) > 1}
        fresh = list(dict.fromkeys(s for ss in subs.values() for s in ss if s not in known))
        if fresh:
            known.update(zip(fresh, oracle.measure(fresh)))
            predicted.update(zip(fresh, (float(p) for p in predict(fresh))))
        for e, at in list(current.items()):
            slower = miss(known[at], predicted[at]) > 0
            worse = [s for s in subs.get(e, []) if misses_like(known[s], predicted[s], slower, margin)]
            if worse:
                current[e] = max(worse, key=lambda s: abs(miss(known[s], predicted[s])))
            else:
                done[e] = current.pop(e)
    groups: dict[Experiment, list[Experiment]] = {}
    for e, core in done.items():
        groups.setdefault(core, []).append(e)
    parts = list(dict.fromkeys(p for c in groups for split in splits(c) for p in split if p not in known))
    got = oracle.measure([scaled(c, 2) for c in groups] + parts) if groups else []
    doubled = [t / 2 for t in got[:len(groups)]]
    known.update(zip(parts, got[len(groups):]))
    cores = [_core(c, known, predicted[c], d, tuple(es), mapping, margin)
             for (c, es), d in zip(groups.items(), doubled)]
    cores.sort(key=lambda c: (-len(c.held_out), -abs(miss(c.measured, c.predicted)), str(c.experiment)))
    return len(misses), cores


def _core(c: Experiment, known: dict[Experiment, float], predicted: float, doubled: float,
          held_out: tuple[Experiment, ...], mapping: PortMapping, margin: float) -> Core:
    """The core ``c`` with its kind: ``unstable`` when the doubled experiment does not miss, else
    ``no port mapping`` when both measurements of ``c`` contradict a split's parts, else by ports."""
    slower = miss(known[c], predicted) > 0
    if not misses_like(doubled, predicted, slower, margin):
        return Core(c, known[c], predicted, doubled, "unstable", held_out)
    pairs = splits(c)
    j = contradicted((known[c], doubled), [(known[a], known[b]) for a, b in pairs], margin)
    if j is not None:
        a, b = pairs[j]
        return Core(c, known[c], predicted, doubled, "no port mapping", held_out, ((a, known[a]), (b, known[b])))
    return Core(c, known[c], predicted, doubled, kind_of(mapping, c), held_out)
