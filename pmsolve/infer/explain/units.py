"""Units: a bottleneck other than the ports, as extra resources (past the paper's model).

A scheme that alone runs a whole number of cycles n ≥ 1 where its µops on the ports allow less
(Zen 4's ``vdivpd xmm``: 5 cycles where two pipes allow 1; its read-modify-write forms such as
``add m32, r32``: 1 cycle where the ports allow 0.5) holds an unpipelined unit for n cycles.
Modelled as n µops on an extra port that only such schemes use, the result stays a port mapping:
every throughput routine predicts mixes with it unchanged. A unit's "µops" are cycles of the
unit, not decoded µops. A unit shows only where it outlasts the scheme's ports alone. Where a
slow scheme takes a whole number of *half* cycles (Zen 3's divider: ``vdivps ymm`` 3.5,
``vdivpd ymm`` 4.5, both on one divider: 8.0 together), every unit is two ports (``U1a``,
``U1b``) and a scheme holding it for n cycles puts 2n µops on both: still a port mapping, at
half-cycle resolution.

Which schemes share a unit is measured, not assumed: a scheme beside the first member of a unit
takes the sum of their unit cycles when they share it and the longer of the two when they do not
(:func:`verdict`; a pair that fits neither only rules that unit out). Each placement is then
checked on experiments not used to make it: two copies of the scheme (2n cycles, the unit is
unpipelined), two copies of the unit's first beside it (the pair again at other counts: a pair
read once during a burst puts no scheme on a unit), a pair with another member of its unit,
the blocking-instruction experiments of its characterisation, one copy of each blocking
instruction beside it, and three mixes with one copy each of random blocking instructions,
which the model knows exactly. A bottleneck shared
with ports is no unit: Zen 4's ``add m64, r64`` takes 2 cycles beside one vector store, where a
unit of its own gives 1 (mixes with other mapped schemes would charge it with their errors too).
A scheme whose time is not a whole number of half cycles, or whose pairs or checks miss, stays a
misfit; one whose pair showed it on a unit keeps that unit (``Misfit.unit``), so that its
prediction (:mod:`~pmsolve.infer.explain.complete`) adds up with the unit's members (Zen 3's
``vdivps``: 3.5 cycles alone, 3.0 in mixes, 8.0 beside ``vdivpd``). Other misfits slow alone by
whole or half cycles are measured beside a mapped member of each unit for the same (:func:`beside`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from pmsolve.errors import MeasurementError
from pmsolve.infer.explain.options import ExplainOptions
from pmsolve.infer.explain.stages import simplicity
from pmsolve.infer.explain.witnesses import Explanation, Witness, uop_key
from pmsolve.infer.progress import Progress
from pmsolve.model import Experiment, PortMapping
from pmsolve.throughput import batch_inverse_throughput

#: unit port names are this prefix and a number (U1, U2, …): after the numbered ports
PREFIX = "U"
#: checks in mixes: this many, each with this many random blocking instructions beside the scheme
MIXES, MIX = 3, 3


@dataclass(frozen=True)
class Slow:
    """A scheme alone slower than its µops on ports explain: those µops and its time."""

    name: str
    uops: tuple[tuple[tuple[str, ...], int], ...]
    tp: float

    def cycles(self, o: ExplainOptions) -> Fraction | None:
        """The whole, else half, number of unit cycles its time shows; None when neither."""
        e = Experiment({self.name: 1})
        for n in (Fraction(round(self.tp)), Fraction(round(2 * self.tp), 2)):
            if n >= 1 and not off(e, self.tp, float(n), o):
                return n
        return None


def unit_ports(name: str, width: int) -> tuple[str, ...]:
    """The ports of a unit: itself, or at half-cycle resolution two (``U1a``, ``U1b``)."""
    return (name,) if width == 1 else (f"{name}a", f"{name}b")


def ports_of(unit: dict[str, Any]) -> list[str]:
    """A unit's ports as a result lists it (files written before half cycles have ``port`` only)."""
    return list(unit.get("ports") or [unit["port"]])


def slow_schemes(explanations: dict[str, Explanation]) -> list[Slow]:
    """The misfits that carry the µops found on ports (only the 'alone slower' ones do)."""
    return [Slow(i, x.misfit.uops, x.misfit.experiments[0][1]) for i, x in sorted(explanations.items())
            if x.misfit is not None and x.misfit.uops and x.misfit.experiments]


def _on_unit(ports: tuple[str, ...], n: Fraction) -> int:
    """µops on a unit of these ports for ``n`` cycles of it (``len(ports)`` µops a cycle)."""
    return int(n * len(ports))


def _uops(s: Slow, ports: tuple[str, ...], n: Fraction) -> list[tuple[frozenset[str], int]]:
    """Its µops on ports and ``n`` cycles on a unit of these ports."""
    return [(frozenset(ps), k) for ps, k in s.uops] + [(frozenset(ports), _on_unit(ports, n))]


def off(e: Experiment, t: float, m: float, o: ExplainOptions) -> bool:
    """Measured ``t`` misses modelled ``m`` (the characterisation's test: epsilon per instruction)."""
    return abs(t - m) > max(o.epsilon * e.size, o.tolerance * m)


def verdict(e: Experiment, t: float, shared: float, apart: float, o: ExplainOptions) -> str:
    """'shared', 'separate', 'neither' (the pair fits no hypothesis) or 'undecided' (both predict
    the same: the ports bound the pair)."""
    if not off(e, shared, apart, o):
        return "neither" if off(e, t, shared, o) else "undecided"
    return "shared" if not off(e, t, shared, o) else "separate" if not off(e, t, apart, o) else "neither"


def _pair(a: Slow, na: Fraction, b: Slow, nb: Fraction, same: bool, ports: tuple[str, ...], width: int) -> PortMapping:
    """The two schemes alone, on one unit (``same``) or on one each."""
    ua = unit_ports("unit a", width)
    ub = ua if same else unit_ports("unit b", width)
    return PortMapping(ports + tuple(dict.fromkeys(ua + ub)), {a.name: _uops(a, ua, na), b.name: _uops(b, ub, nb)})


def place(oracle: Any, explanations: dict[str, Explanation], blocking: PortMapping, r_max: float | None,
          o: ExplainOptions, progress: Progress, alone: Mapping[str, float] | None = None
          ) -> tuple[list[dict[str, Any]], dict[str, Explanation]]:
    """Units for the slow schemes among ``explanations``: returns the units that stand (port, the
    first member its pairs were measured against, the members that pass their checks; a unit
    none of whose members passes is dropped with its name) and a new explanation for every slow
    scheme placed or turned down on the way (mapped with its unit, or its misfit with why not).
    Schemes are taken by unit cycles, fewest first, register forms before memory forms (their
    µops on ports are the surer ones); each becomes the first member of a new unit unless it
    shares one found before. One measurement batch per unit, and one for all checks."""
    slow = {s.name: s for s in slow_schemes(explanations)}
    cycles = {i: s.cycles(o) for i, s in slow.items()}
    pending = sorted((i for i in slow if cycles[i]), key=lambda i: (cycles[i], simplicity(i)))
    width = 2 if any(cycles[i].denominator == 2 for i in pending) else 1
    out: dict[str, Explanation] = {}
    units: list[dict[str, Any]] = []
    of: dict[str, str] = {}                          # scheme -> its unit's port
    pairs: dict[str, list[Witness]] = {}             # scheme -> its pairs with first members
    while pending:
        first = pending.pop(0)
        port = f"{PREFIX}{len(units) + 1}"
        units.append({"port": port, "ports": list(unit_ports(port, width)), "first": first, "members": [first]})
        of[first] = port
        exps = [Experiment({i: 1, first: 1}) for i in pending]
        measured = oracle.measure(exps) if exps else []
        hyp = [(_pair(slow[i], cycles[i], slow[first], cycles[first], same, tuple(blocking.ports), width), e)
               for i, e in zip(pending, exps) for same in (True, False)]
        both = [float(m) for m in batch_inverse_throughput(hyp, r_max)] if hyp else []   # shared, apart per pair
        keep = []
        for i, e, t, sh, ap in zip(pending, exps, measured, both[::2], both[1::2]):
            v = verdict(e, t, sh, ap, o)
            w = Witness("unit", e, t, sh if v == "shared" else ap)
            pairs.setdefault(i, []).append(w)
            if v == "shared":
                of[i] = port
                units[-1]["members"].append(i)
                pairs.setdefault(first, []).append(w)
            else:   # 'neither' may be the first member's fault as much as this one's: its own checks decide
                keep.append(i)
        pending = keep
    progress(f"  {len(of)} slow scheme(s) on {len(units)} unit(s): "
             + ", ".join(f"{u['port']} {u['first']} (+{len(u['members']) - 1})" for u in units[:6]))
    out.update(_checked(oracle, units, slow, cycles, of, pairs, explanations, blocking, r_max, o))
    units = [{**u, "members": [i for i in u["members"] if out[i].misfit is None]} for u in units]
    units = [u for u in units if u["members"]]
    alone = alone or {}
    rest = {i: x for i, x in explanations.items() if x.misfit is not None and i not in of and i in alone}
    out.update(beside(oracle, units, rest, alone, slow, cycles, tuple(blocking.ports), width, r_max, o))
    return units, out


def beside(oracle: Any, units: list[dict[str, Any]], misfits: dict[str, Explanation], alone: Mapping[str, float],
           slow: dict[str, Slow], cycles: dict[str, Fraction | None], ports: tuple[str, ...], width: int,
           r_max: float | None, o: ExplainOptions) -> dict[str, Explanation]:
    """Which unit the other misfits slow alone by whole (or half) cycles share, measured: each
    beside a mapped member of every unit, one batch. Their µops on ports are unsure (Zen 3's
    ``vdivps ymm, ymm, m256``: 3.5 cycles alone, a misfit of its blocking experiments), so a pair
    is judged on unit cycles alone, and one that showed the unit shared puts it in the misfit's
    ``unit``: its prediction then adds up with the unit's other divisions (7.0 cycles beside
    ``vdivps ymm``, where a cost of its own gives 3.5). Pairs that cannot be measured leave
    the misfits as they were."""
    todo = {i: n for i, x in misfits.items() if not x.misfit.unit and isinstance(alone[i], (int, float))
            and alone[i] >= 1 and (n := Slow(i, (), alone[i]).cycles(o)) is not None and (n * width).denominator == 1}
    first = {u["port"]: u["members"][0] for u in units}      # a mapped member: its unit cycles are known
    exps = [(i, u, Experiment({i: 1, first[u["port"]]: 1})) for i in sorted(todo) for u in units]
    if not exps:
        return {}
    try:
        measured = oracle.measure([e for _, _, e in exps])
    except MeasurementError:
        return {}
    hyp = [(_pair(Slow(i, (), alone[i]), todo[i], slow[first[u["port"]]], cycles[first[u["port"]]], same, ports,
                  width), e) for i, u, e in exps for same in (True, False)]
    both = [float(m) for m in batch_inverse_throughput(hyp, r_max)]     # shared, apart per pair
    out: dict[str, Explanation] = {}
    for (i, u, e), t, sh, ap in zip(exps, measured, both[::2], both[1::2]):
        if i not in out and verdict(e, t, sh, ap, o) == "shared":
            out[i] = _misfit(misfits[i], f"beside {first[u['port']]} it shares unit {u['port']} ({e} = {t:.4g}, "
                             f"{sh:.4g} shared, {ap:.4g} apart)", ((e, t),), tuple(u["ports"]))
    return out


def _checked(oracle: Any, units: list[dict[str, Any]], slow: dict[str, Slow], cycles: dict[str, Fraction | None],
             of: dict[str, str], pairs: dict[str, list[Witness]], explanations: dict[str, Explanation],
             blocking: PortMapping, r_max: float | None, o: ExplainOptions) -> dict[str, Explanation]:
    """Every placement against experiments not used to make it (module doc), in one batch. Each
    member stands on its own checks: a first member that misses its mixes (its µops on ports
    may be wrong) does not take down the members whose pairs with it showed the unit."""
    mapped = {i: [(frozenset(ps), n) for ps, n in x.uops] for i, x in explanations.items()
              if x.misfit is None and x.uops}         # derived blocking instructions occur in witnesses
    on = {u["port"]: tuple(u["ports"]) for u in units}          # unit -> its ports
    full = PortMapping(tuple(blocking.ports) + tuple(p for u in units for p in u["ports"]),
                       {**blocking.uops, **mapped, **{i: _uops(slow[i], on[of[i]], cycles[i]) for i in of}})
    checks: dict[str, list[Experiment]] = {}
    sharing: dict[str, tuple[str, Experiment]] = {}  # member -> its unit's first, two copies of it beside it
    blockers = sorted(blocking.uops)
    for u in units:
        rest = u["members"][1:]                      # pairs with the first member are witnesses already
        for k, i in enumerate(u["members"]):
            checks[i] = [Experiment({i: 2})]
            if i in rest:   # its pair again, but not the same experiment: one burst in the pair is no unit
                sharing[i] = (u["first"], Experiment({u["first"]: 2, i: 1}))
                checks[i].append(sharing[i][1])
            if i in rest and len(rest) > 1:
                checks[i].append(Experiment({i: 1, rest[k % len(rest)]: 1}))   # the next one, cyclically
            checks[i] += [Experiment({i: 1, b: 1}) for b in blockers]   # one copy of each: a port it waits for
            rng = random.Random(f"unit/{i}")
            checks[i] += [Experiment({i: 1, **{j: 1 for j in rng.sample(blockers, MIX)}})
                          for _ in range(MIXES)] if len(blockers) >= MIX else []
    todo = sorted({e for es in checks.values() for e in es}, key=str)
    measured = dict(zip(todo, oracle.measure(todo)))
    seen = {x for i in of for w in explanations[i].others for x in (w.experiment, w.baseline) if x is not None}
    known = list(dict.fromkeys([*todo, *seen, *(Experiment({i: 1}) for i in of)]))
    mod = dict(zip(known, (float(m) for m in batch_inverse_throughput([(full, e) for e in known], r_max))))
    miss = {i: _misses(checks[i], measured, explanations[i], mod, o) for i in of}
    out: dict[str, Explanation] = {}
    apart = {i for i, (_, e) in sharing.items() if off(e, measured[e], mod[e], o)}
    shown = {p for p, k in Counter(p for i, p in of.items() if i not in apart).items() if k > 1}
    for i, port in of.items():
        x, n = explanations[i], cycles[i]
        if i in apart:   # its pair read the sum by chance: no unit shown, no prediction adds it up with it
            first, e = sharing[i]
            out[i] = _misfit(x, f"beside 2 copies of {first} it takes {measured[e]:.4g} where sharing unit {port} "
                             f"gives {mod[e]:.4g}: the pair that put it there does not hold", ((e, measured[e]),))
            continue
        if miss[i]:   # a unit that a pair showed it shares stays with it: a prediction may use it
            out[i] = _misfit(x, f"{float(n):g} cycle(s) on a unit ({port}) beside its µops on ports do not reproduce "
                             f"{len(miss[i])} experiment(s) not used to derive them (" + "; ".join(
                                 f"{e} = {t:.4g} where the unit gives {mod[e]:.4g}"
                                 for e, t in miss[i][:2]) + ")", tuple(miss[i]),
                             on[port] if port in shown else ())
            continue
        sw = Witness("singleton", Experiment({i: 1}), slow[i].tp, mod[Experiment({i: 1})])
        on_unit = (sw,) + tuple(pairs.get(i, ())) + tuple(Witness("check", e, measured[e], mod[e]) for e in checks[i])
        others = tuple(replace(w, modelled=mod[w.experiment], modelled_baseline=mod.get(w.baseline))
                       for w in x.others)
        witnesses = {uop_key(q): (sw,) + tuple(w for w in others if set(q) <= set(w.ports)) for q, _ in slow[i].uops}
        witnesses[uop_key(on[port])] = on_unit
        out[i] = Explanation(tuple(slow[i].uops) + ((on[port], _on_unit(on[port], n)),), witnesses, others, None,
                             x.counted, "unit", x.confidence)
    return out


def _misses(checks: list[Experiment], measured: dict[Experiment, float], x: Explanation,
            mod: dict[Experiment, float], o: ExplainOptions) -> list[tuple[Experiment, float]]:
    """The checks and the characterisation's blocking experiments (and baselines) it misses;
    ``mod``: every one of them as the mapping with the units models it."""
    bad = [(e, measured[e]) for e in checks if off(e, measured[e], mod[e], o)]
    for w in x.others:
        for e, t in ((w.experiment, w.measured), (w.baseline, w.measured_baseline)):
            if e is not None and t is not None and off(e, t, mod[e], o):
                bad.append((e, t))
    return bad


def _misfit(x: Explanation, why: str, experiments: tuple, unit: tuple[str, ...] = ()) -> Explanation:
    m = x.misfit
    return replace(x, misfit=replace(m, reason=f"{m.reason}; {why}", experiments=m.experiments + experiments,
                                     unit=unit))
