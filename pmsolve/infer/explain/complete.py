"""A prediction for every scheme (issue 39): the inferred port mapping, and for each misfit the
model that best reproduces what was measured about it (:mod:`pmsolve.modelled` defines the kinds).

A misfit is evidence that no µops on the blocked ports explain a scheme; a user still needs a
number for it. Its candidates, each judged on every measured experiment with it whose other
schemes the mapping predicts (the singleton included; the characterisation measured a few dozen
per scheme):

* ``ports + cost`` — the µops the characterisation found on the blocked ports (whatever
  rejected them) and its cost on a resource of its own;
* ``cost`` — its cost on a resource of its own and nothing else;
* for a scheme that a pair showed on a unit (a divider) whose checks then missed, also
  ``ports + cost`` with its cost on that unit as well (in whole unit µops, :func:`unit_uops`), so that
  two divisions in one mix add up.

µops that make the scheme by itself slower than its measured time alone (by more than WITHIN)
are contradicted by the most basic experiment there is; they come from experiments with the
blocking instructions that ran slower than any port mapping allows (Zen 3's ``bts r16, r16``:
2×[0] from ``{bt r64, i8: 2, bts r16, r16: 2}`` = 4 cycles, 1.0 cycle alone), so the fewest of
them that its singleton allows are removed (:func:`fit_alone`) before the candidates are judged.

The cost is its measured time alone, unless experiments with it ran faster per copy. A resource
of its own is a lower bound on every mix (tp⁻¹ ≥ n·cost), so the cost is the largest bound that
the measurements allow: lowered to the per-copy time of the second-fastest experiment that
undercuts its time alone by more than 5 %, where at least two and a tenth of them do (so a few
too-fast samples do not decide). Only the experiments it is judged on count (beside mapped schemes
alone): beside another scheme outside the port model, the two may interact as no private resource
can say (Zen 5's ``vmovntdq m128, xmm``: 18-40 cycles per copy in 43 of its 48 experiments, 1.0 in
the four beside another non-temporal store, which lowered its cost to 1.0 and made a held-out mix
that took 22 cycles 1.0, run a18). Zen 3's
``vdivps``: 3.5 cycles alone and beside one other instruction, 2.5-3.0 in mixes of three or more,
which is what code looks like. With nothing beside it, a modelled scheme takes its measured time
alone (``alone``): its cost may be lower, and µops found on ports that its own singleton
contradicts (Zen 3's ``shl m16, 1``: 0.56 cycles alone where they give 1.0) may be higher.

The candidate that predicts more of those experiments within 5 % is taken (ties: the smaller
mean error), and then changed one µop at a time (one more on a port set of the mapping, or one
fewer) while that predicts more of them (:func:`refine`): the characterisation stops at the first
blocked set where a misfit misbehaved, so its µops elsewhere may be missing. Its share within 5 %
is its confidence, and both counts are kept as evidence. A scheme that could not be measured alone
gets no prediction: it is listed with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np

from pmsolve.infer.explain.witnesses import Explanation
from pmsolve.model import Experiment, PortMapping, sort_ports
from pmsolve.modelled import Mode, ModelledMapping, SchemeModel, resolved, with_models
from pmsolve.throughput import inverse_throughput

#: a prediction within this relative error counts as reproducing an experiment
WITHIN = 0.05
#: a cost is lowered only where this many experiments undercut it by more than WITHIN, and at
#: least this share of the experiments with it
UNDERCUT, UNDERCUT_SHARE = 2, 0.1
#: at most this many µops added or removed per misfit by :func:`refine`
STEPS = 4
#: a step of :func:`refine` must reproduce this many more experiments
GAIN = 2


def complete(mapping: PortMapping | None, explanations: Mapping[str, Explanation], single: Mapping[str, Any],
             measured: Mapping[Experiment, float], r_max: float | None,
             mode: Mode | None = None, units: frozenset[str] = frozenset()) -> tuple[ModelledMapping, dict[str, str]]:
    """The modelled mapping of every scheme, and the schemes left without a prediction (→ why);
    experiments with a trigger of ``mode`` are evaluated in it; ``units``: the ports of units
    (:func:`refine` adds no µop there: pairs place schemes on a unit, and the shared stage finds
    what else holds it)."""
    models: dict[str, SchemeModel] = {}
    none: dict[str, str] = {}
    mapped = set(mapping.uops) if mapping is not None else set()
    for i, x in explanations.items():
        if i in mapped:
            models[i] = SchemeModel("unit" if x.source == "unit" else "mapped", x.confidence)
    with_i = _by_scheme(measured)
    sets = sorted({u.ports for us in mapping.uops.values() for u in us if not u.ports & units},
                  key=lambda q: (len(q), sort_ports(q))) if mapping is not None else []
    ports = set(mapping.ports) if mapping is not None else set()
    for i, x in sorted(explanations.items()):
        if i in mapped:
            continue
        t = (single.get(i) or {}).get("tp")
        if t is None or not (t == t and t > 0):
            none[i] = x.misfit.reason if x.misfit is not None else "no µops and no measurement alone"
            continue
        exps = _judged_on(i, t, with_i, mapped)
        cost = bound(i, t, exps)
        alone = resolved(t)
        uops = _found(x, ports, alone)
        cands = [("cost", [])] + ([("ports + cost", uops)] if uops else [])
        cands += [("ports + cost", f) for f in narrowed(uops, sets, alone)]
        unit = x.misfit.unit if x.misfit is not None else ()
        if unit and set(unit) <= ports and (k := unit_uops(cost, len(unit))) > 0:
            cands.insert(1, ("ports + cost", uops + [(frozenset(unit), k)]))
        # the experiments hold i and mapped schemes only: the mapping restricted to those predicts
        # them alike and is built in time proportional to them, not to the whole ISA (--all's
        # 3,600 mapped schemes, a whole mapping per candidate: minutes); a mapping needs one
        # scheme at least, and one outside the experiments changes nothing
        near = (mapping.restrict(sorted({n for e, _ in exps for n in e if n != i}) or [next(iter(mapping.uops))])
                if mapping is not None else None)

        def judge(us: list[tuple[frozenset[str], int]]) -> np.ndarray:
            trial = with_models(near, {i: SchemeModel(_kind(us), cost=cost, uops=_canon(us), alone=alone)}, mode)
            return _errors(trial, exps, r_max)

        us = max(cands, key=lambda c: (_score(judge(c[1])), c[0] == "ports + cost"))[1]
        hits, us = refine(us, judge, sets, cost)
        kind = _kind(us)
        why = (x.misfit.category + ": " + x.misfit.reason) if x.misfit is not None else "no µops found"
        models[i] = SchemeModel(kind, hits / len(exps), cost, why[:300], (hits, len(exps)), _canon(us), alone)
    return with_models(mapping, models, mode), none


def narrowed(uops: list[tuple[frozenset[str], int]], sets: list[frozenset[str]],
             alone: Fraction) -> list[list[tuple[frozenset[str], int]]]:
    """``uops`` with the µops of one set Q moved to a port set C ⊂ Q of the mapping, where that
    makes the scheme by itself no slower than ``alone`` (within WITHIN), and as slow where the
    µops alone are faster. A µop that cannot evade Q lies inside it, and the characterisation
    narrows it only to sets a blocking instruction isolates: the Zen 5's ``vpopcntd xmm``,
    ``vpabsb``, saturating adds and ``vpminsq`` (105 schemes of a32) came out 1×[0,1,2,3] at 0.5
    cycles alone, on the pipes 1 and 3 of ``kshiftrw`` that no blocking instruction holds, and took
    0.5 beside it where 1.0 was measured; their memory forms (105 more in a35), whose load sets
    their time alone, the same. Which C, the experiments with a mapped scheme on it say
    (:func:`stand_ins`): replayed on a35's store, the second kind took val3's MAPE from 3.95 to
    3.84 % (RESULTS §1.40)."""
    if not uops:
        return []
    fast = _own(dict(uops)) < alone * (1 - WITHIN)
    out = []
    for q, n in uops:
        for c in sets:
            if c < q:
                f = {**dict(uops), q: 0}
                f[c] = f.get(c, 0) + n
                f = {x: k for x, k in f.items() if k}
                t = _own(f)
                if t <= alone * (1 + WITHIN) and (t >= alone * (1 - WITHIN) or not fast):
                    out.append(list(f.items()))
    return out


def stand_ins(mapping: PortMapping | None, explanations: Mapping[str, Explanation], single: Mapping[str, Any],
              units: frozenset[str] = frozenset()) -> list[Experiment]:
    """The experiments that tell :func:`narrowed` placements apart: each misfit beside a mapped
    scheme of one µop on each set C its µops may move to (the most confident such scheme), both
    about two cycles alone; the misfit's µops on C take the sum there, elsewhere the longer."""
    if mapping is None:
        return []
    one: dict[frozenset[str], tuple[float, str]] = {}
    for b, us in mapping.uops.items():
        x = explanations.get(b)
        if len(us) == 1 and us[0].count == 1 and not us[0].ports & units and x is not None and x.misfit is None:
            key = (-(x.confidence if x.confidence is not None else 1.0), b)
            if us[0].ports not in one or key < one[us[0].ports]:
                one[us[0].ports] = key
    sets = sorted(one, key=lambda q: (len(q), sort_ports(q)))
    ports = set(mapping.ports)
    out = set()
    for i, x in sorted(explanations.items()):
        t = (single.get(i) or {}).get("tp")
        if i in mapping.uops or x.misfit is None or t is None or not (t == t and t > 0):
            continue
        uops = _found(x, ports, resolved(t))
        for f in narrowed(uops, sets, resolved(t)):
            for c in set(dict(f)) - set(dict(uops)):
                # two cycles of each: the stand-in's one µop runs on |C| ports
                out.add(Experiment({i: max(1, round(2 / t)), one[c][1]: 2 * len(c)}))
    return sorted(out, key=str)


def _found(x: Explanation, ports: set[str], alone: Fraction) -> list[tuple[frozenset[str], int]]:
    """The µops the characterisation found for misfit ``x`` on ``ports``, less those its time
    ``alone`` contradicts (:func:`fit_alone`); none for a scheme that is no misfit."""
    found = (x.misfit.found or x.misfit.uops) if x.misfit is not None else ()
    return fit_alone([(frozenset(ps), n) for ps, n in found if set(ps) <= ports], alone)


def _kind(uops: list[tuple[frozenset[str], int]]) -> str:
    return "ports + cost" if uops else "cost"


def refine(uops: list[tuple[frozenset[str], int]], judge: Callable[[list[tuple[frozenset[str], int]]], np.ndarray],
           sets: list[frozenset[str]], cost: Fraction, steps: int = STEPS) -> tuple[int, list[tuple[frozenset[str], int]]]:
    """``uops`` changed one µop at a time while that reproduces more of the misfit's experiments:
    each step tries one more µop on each port set of the mapping (``sets``), where some experiment
    ran slower than predicted, and one fewer of each it has, where some ran faster, and takes the
    best (experiments within WITHIN, then the smaller mean error) if it reproduces GAIN more than
    before: one experiment that noise made slow or fast moved a µop in one run and not in the next
    (the Zen 5's ``vpmovusdw m256, zmm``: 12 of 13 with a load-pipe µop, 11 without; held-out mixes
    with it 2.0 cycles for 1.5), and replayed on run a33's store GAIN 2 took the held-out τ-b .01
    from 0.898 to 0.905 and the 800 independent mixes from 0.895 to 0.901 (RESULTS §1.40).
    ``judge`` gives the signed relative errors of µops. µops that make the scheme by itself
    slower than its ``cost`` (by more than WITHIN) are not tried: experiments with it ran that fast
    (:func:`bound`; Zen 3's ``vdivps`` takes 3.5 cycles beside one instruction, 3.0 in mixes, and
    the pairs, most of its experiments, would otherwise charge it 3.5 on the divider). The
    characterisation finds a misfit's µops on the blocked sets where it first misbehaved and
    stops there: Zen 4's ``xor m32, r32`` came out 1×[0,1,2,3] without its load (27 of its 45
    experiments with the load µop, 23 without), ``bts r16, r16`` with a load µop it does not have
    (45 of 60, 33 with it). Returns the hits and the µops."""
    left, err = dict(uops), judge(uops)
    for _ in range(steps):
        tries = []
        if np.any(err < -WITHIN):
            tries += [t for q in sets if _own(t := {**left, q: left.get(q, 0) + 1}) <= cost * (1 + WITHIN)]
        if np.any(err > WITHIN):
            tries += [_one_fewer(left, q) for q in left]
        if not tries:
            break
        errs = [judge(list(t.items())) for t in tries]
        k = max(range(len(tries)), key=lambda k: (_score(errs[k]), -k))   # ties: the first tried
        if _score(errs[k])[0] < _score(err)[0] + GAIN:
            break
        left, err = tries[k], errs[k]
    return _score(err)[0], list(left.items())


def _score(err: np.ndarray) -> tuple[int, float]:
    """Experiments within WITHIN, and minus the mean relative error."""
    return int(np.sum(np.abs(err) <= WITHIN)), -float(np.mean(np.abs(err)))


def _one_fewer(us: Mapping[frozenset[str], int], q: frozenset[str]) -> dict[frozenset[str], int]:
    """µops ``us`` with one fewer on ``q``."""
    return {r: n - (r == q) for r, n in us.items() if n - (r == q) > 0}


def _own(us: Mapping[frozenset[str], int]) -> Fraction:
    """The port bound of µops ``us`` by themselves."""
    if not us:
        return Fraction(0)
    ports = sorted({p for q in us for p in q})
    return inverse_throughput(PortMapping(ports, {"_": list(us.items())}), Experiment({"_": 1}))


def _by_scheme(measured: Mapping[Experiment, float]) -> dict[str, list[tuple[Experiment, float]]]:
    """The measured experiments (that ran) with each scheme."""
    with_i: dict[str, list[tuple[Experiment, float]]] = {}
    for e, t in measured.items():
        if t == t and t > 0:
            for i in e:
                with_i.setdefault(i, []).append((e, t))
    return with_i


def _judged_on(i: str, alone: float, with_i: Mapping[str, list[tuple[Experiment, float]]],
               mapped: set[str]) -> list[tuple[Experiment, float]]:
    """What a model of ``i`` is judged on: its experiments with mapped schemes only, and its
    singleton (``alone``) when that was not among them."""
    exps = [(e, v) for e, v in with_i.get(i, []) if all(n == i or n in mapped for n in e)]
    if not any(e == Experiment({i: 1}) for e, _ in exps):
        exps.append((Experiment({i: 1}), alone))
    return exps


def _errors(model: ModelledMapping, exps: list[tuple[Experiment, float]], r_max: float | None) -> np.ndarray:
    """The model's signed relative error on each measured experiment (> 0: predicted slower)."""
    measured = np.array([v for _, v in exps])
    return (model.evaluate_many([e for e, _ in exps], r_max) - measured) / measured


def rescored(model: ModelledMapping, measured: Mapping[Experiment, float], r_max: float | None,
             names: frozenset[str]) -> ModelledMapping:
    """``model`` with the confidence and evidence of ``names`` scored again on the experiments
    :func:`complete` judged them on, by the whole model: a serialising scheme was scored as a
    cost of its own, which takes the longer where it holds the front end (Ice Lake-SP's
    ``btc m64, r64``)."""
    mapped = set(model.mapping.uops) if model.mapping is not None else set()
    with_i = _by_scheme(measured)
    models = dict(model.schemes)
    for i in sorted(names & set(models)):
        exps = _judged_on(i, float(models[i].alone or models[i].cost), with_i, mapped)
        hits = int(np.sum(np.abs(_errors(model, exps, r_max)) <= WITHIN))
        models[i] = replace(models[i], confidence=hits / len(exps), evidence=(hits, len(exps)))
    return ModelledMapping(model.mapping, models, model.mode, model.shared, model.serial, model.queues)


def unit_uops(cost: Fraction, width: int) -> int:
    """As many whole unit µops (``width`` a cycle) as ``cost``: the nearest number when within
    WITHIN of it (Zen 3's ``vdivps ymm, ymm, m256``: 2.9986 cycles is 6 µops of a two-port unit,
    not 5), else rounded down."""
    near = round(cost * width)
    return near if near and abs(cost * width - near) <= WITHIN * near else int(cost * width)


def fit_alone(uops: list[tuple[frozenset[str], int]], alone: Fraction) -> list[tuple[frozenset[str], int]]:
    """``uops`` less the fewest µops that bring their port bound by themselves within WITHIN of
    ``alone``: one at a time, the one whose removal lowers that bound most (ties: from the largest
    count, then the smallest port set). Zen 3's ``add m16, i16``: 1×[0,1,2,3] + 1×[4,5,6] +
    1×[5,6] is 0.667 cycles by itself, measured 0.5625; without the 1×[5,6], 0.333."""
    left = dict(uops)
    while left and _own(left) > alone * (1 + WITHIN):
        left = _one_fewer(left, min(left, key=lambda q: (_own(_one_fewer(left, q)), -left[q], len(q), sort_ports(q))))
    return list(left.items())


def bound(i: str, alone: float, measured: list[tuple[Experiment, float]]) -> Fraction:
    """Scheme ``i``'s cost: its time ``alone``, or the per-copy time of the UNDERCUT-th fastest of
    the ``measured`` experiments with it that run faster than that by more than WITHIN, if they
    are at least UNDERCUT_SHARE of them. Zen 3's dividers undercut in 30-45 % of theirs; its
    ``vsqrtps ymm, m256``, 5.0 cycles in 36 of 38, took 1.5 and 2.1 in two."""
    under = sorted(t / e[i] for e, t in measured if t / e[i] < alone * (1 - WITHIN))
    lowered = len(under) >= max(UNDERCUT, UNDERCUT_SHARE * len(measured))
    return resolved(under[UNDERCUT - 1] if lowered else alone)


def kind_summary(model: ModelledMapping, none: Mapping[str, str]) -> dict[str, Any]:
    """Counts per kind, the share of schemes with a prediction, and those without."""
    counts = model.kind_counts()
    total = len(model.schemes) + len(none)
    return {"kinds": counts, "predicted": len(model.schemes), "schemes": total,
            "share": len(model.schemes) / total if total else 1.0,
            "unpredicted": dict(sorted(none.items()))}


def _canon(uops: list[tuple[frozenset[str], int]]) -> tuple[tuple[tuple[str, ...], int], ...]:
    return tuple(sorted((tuple(sort_ports(q)), n) for q, n in uops))
