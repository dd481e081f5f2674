"""Shared resources: a bottleneck beside the ports that schemes hold for a measured time per copy,
adding up (past the paper's model; :class:`~pmsolve.modelled.Shared`).

Units (:mod:`~pmsolve.infer.explain.units`) cover schemes slower than their ports by whole or
half cycles, as extra ports. Ice Lake-SP shows resources that are not whole cycles and that
schemes hold differently by context, which a port mapping cannot say: every load into a zmm
register costs 0.888 cycles (two: 1.776), and beside one a ymm load costs 0.60, an xmm load 0.46,
a scalar load 0.39 (the load ports alone allow 0.5 per load and two at once); ``vdivps xmm``
takes 3 cycles alone, 6 for two, but 5 more beside any wider divide (the divider runs at 256-bit
width while one is in flight). Each scheme so far modelled by a cost of its own then took the
longer of two such schemes where the machine takes the sum: mixes of two 512-bit loads came out
1.5 cycles for 2.2.

Found by measurement, like units:

1. *slow* schemes: those modelled with a cost that outlasts their µops on ports, or on a unit;
   slowest first, each round takes the first pending one and measures every other beside it
   (``{first: 1, x: 1}``); a pair nearer the sum of their times alone than the two apart (the
   longer time alone, or their ports) shares the first's resource where the sum is longer, and
   x holds the pair's time minus the first's alone. A member whose hold beside the first is
   its time alone is *full*; one that holds more or less there (``vdivps xmm``: 5 beside
   ``vdivpd zmm``, 3 alone) holds that ``beside`` a full member, its time alone otherwise.
   Until 2026-11-28 a pair had to take the sum: Ice Lake-SP's zmm loads read 1.78 in pairs but
   now and then 1.64, once was enough to keep ``vmovaps zmm, m512`` off the load path, and its
   mixes with the other zmm loads came out the longer of the two where the machine takes the sum.
2. *context members*: the schemes that are not slow but have a µop on a port set every full
   member uses (the loads beside the zmm loads' load ports), two copies beside the first; one
   slower than the model holds half the difference beside a full member (nothing otherwise).
   Where every full member accesses memory (by the catalogue), every other scheme that does is
   measured too, one copy beside two of the first: stores have no µop on the load ports.
3. when the first member is a trigger of the AVX-512 mode, a context member that is no trigger
   (the one whose hold most exceeds the model there) is measured several times beside the mode's
   own trigger, a scheme outside the resource: when it
   costs its hold there too (Ice Lake-SP's ymm loads: 0.604·k beside ``vpaddd zmm``), every
   trigger of the mode is context.
4. every member is checked on an experiment not used to place it, beside two copies of the
   first (``{first: 2, x: 1}``), right after its round (context members after step 3); one that
   misses it, and is nearer there to the model without the resource, leaves the resource and may
   join a later one. A resource needs two members.

Microcoded schemes are no such resource: Ice Lake-SP's ``btc m64, r64`` (5 cycles) takes the
sum with almost anything beside it (``{btc m64, clc}`` 6.0, with two loads 6.0, two btc and one
load 11.0): the front end serialises around it. Every slow scheme of a cycle or more is first
measured beside ``c`` front-end cycles of the slots stage's filler (blocking instructions whose
ports leave the most room, ``c`` about half its time); one that takes nearer the sum there than
the longer, which the model says, *serialises* and is kept out (its own cost, as before):
``btc m64`` 7.28, ``bt m64`` 7.15 beside ten ``mov r64, imm32`` (sum 7.5, longer 5.0), where
``vdivpd zmm`` takes 16.0 beside thirty (sum 23.5). The model has a serialising scheme hold the
front end (:class:`~pmsolve.modelled.ModelledMapping`): beside a divider ``btc m64`` takes the
divider's time (6.0 with ``vdivps ymm``), not the sum. It delivers the rest in whole cycles
between its copies, so a candidate is also measured beside one filler instruction, where it must
take nearer that whole cycle more than nothing (``btc m64`` 6.0 for 5 alone; the Zen 4's
``shrd r16, r16, i8``, 1.5 alone and nearer the sum beside the filler, is no such microcode).

Non-temporal stores are no such resource either: they run at the speed of the write-combining
buffers and the memory behind them, not of anything in the core (the Zen 4's ``vmovntpd m256,
ymm`` 32.8 cycles alone). As the slowest schemes they came first: they took three of the Zen 4
``--all`` run a5's four rounds (3.5 of its 6 minutes in this stage, every pair 30 cycles or more)
and, in a4, made the dividers members of ``vmovntpd m256``'s resource (``vdivss`` holding 3.0
cycles of it). They keep their own cost.

At most :data:`ROUNDS` resources, each round measures every pending slow scheme once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from pmsolve.infer.explain.options import ExplainOptions
from pmsolve.infer.explain.slots import filler
from pmsolve.infer.explain.stages import simplicity
from pmsolve.infer.explain.units import off
from pmsolve.isa import load_catalogue
from pmsolve.model import Experiment, PortMapping
from pmsolve.modelled import ModelledMapping, Shared, resolved
from pmsolve.throughput import inverse_throughput

#: resources looked for at most (each round measures every pending slow scheme once). Four kept
#: the Zen 5's ``--all`` to the square roots, dot products and two more, with about 1,000 slow
#: schemes left; sixteen (twelve found) took its held-out MAPE from 5.09 to 4.90 % for 8 s more
#: with a14's later stages replayed, though a fresh run (a15) read 5.13 %: within the spread of
#: fresh runs (benchmarks/RESULTS.md §1.31)
ROUNDS = 16
#: a mapped scheme this slow alone is paired with the slow schemes too: no pipelined µop takes
#: it, and the µops the characterisation found may say where microcode waits without being there.
#: The Zen 5's ``vreduceps zmm, m32bcst`` came out with 2×[3] (2.0 cycles alone), ``vphsubw xmm,
#: m128`` with 4×[6,9], where both hold the microcoded schemes' resource: ``vreducepd zmm, m512``
#: beside the first takes 4.0, which the ports said 2.0 (25 such schemes in run a34, none faster)
MAPPED_SLOW = 1.5
#: copies of the context member beside the mode's trigger (step 3)
COPIES = 4


def _ports_time(model: ModelledMapping, e: Experiment, units: frozenset[str]) -> float:
    """tp⁻¹ of ``e`` on its schemes' µops on ports alone, not on ``units`` (0: none)."""
    uops = {i: us for i in e if (us := [(u.ports, u.count) for u in model.on_ports.get(i, ()) if not u.ports & units])}
    if not uops:
        return 0.0
    return float(inverse_throughput(PortMapping(model.ports, uops),
                                    Experiment({i: n for i, n in e.items() if i in uops})))


def slow_schemes(model: ModelledMapping, alone: Mapping[str, Any], r_max: float | None, o: ExplainOptions,
                 units: frozenset[str] = frozenset()) -> list[str]:
    """Schemes whose time alone outlasts their µops on ports and the front end (a cost of their
    own, or a unit), and mapped schemes of MAPPED_SLOW cycles or more alone, slowest first; not
    the non-temporal stores (module doc)."""
    out = []
    nt = non_temporal_stores(model.schemes)
    for i, m in model.schemes.items():
        t = alone.get(i)
        if not isinstance(t, (int, float)) or t != t or t <= 0 or i in nt:
            continue
        e = Experiment({i: 1})
        least = max(_ports_time(model, e, units), m.slots / r_max if r_max else 0)
        if (m.kind == "unit" or (m.cost is not None and off(e, t, least, o) and t > least)
                or (m.kind == "mapped" and t >= MAPPED_SLOW)):
            out.append(i)
    return sorted(out, key=lambda i: (-alone[i], simplicity(i)))


def find(measure: Callable[[list[Experiment]], list[float]], model: ModelledMapping, alone: Mapping[str, Any],
         r_max: float | None, o: ExplainOptions, say: Callable[[str], None] = lambda _: None,
         trigger: str | None = None, units: frozenset[str] = frozenset(),
         blocking: PortMapping | None = None) -> dict[str, Any]:
    """The resources (module docstring) as a checkpointable value: ``{"resources": [{"name",
    "first", "hold", "beside", "mode_context", "witnesses"}], "left_out": [[scheme, why], ...]}``;
    ``units``: the ports of units (not ports: a unit's sharing is what a pair may show);
    ``blocking``: the blocking instructions, whose filler probes serialising schemes."""
    pending = slow_schemes(model, alone, r_max, o, units)
    # microcode may hide behind µops that explain its time alone (the Zen 5's ``shld m32, r32,
    # imm8``: 1.1 cycles alone as its µops say, 2.0 beside any one instruction, 3.0 beside the
    # filler where the ports say 2.0), so every scheme of a cost is a candidate, not only slow ones
    # (not the non-temporal stores: the Zen 5's ``vmovntdq m512, zmm`` takes the sum beside the
    # filler as it does beside anything, at the speed of memory, run a33)
    others = set(model.schemes) - set(pending) - non_temporal_stores(model.schemes)
    serial = _serial(measure, model, alone, r_max, o, pending + sorted(others), blocking)
    pending = [i for i in pending if i not in serial]
    resources: list[dict[str, Any]] = []
    left_out: list[list[str]] = []
    claimed: set[str] = set(serial)
    say(f"  {len(pending) + len(serial)} slow scheme(s), {len(serial)} serialise; pairing the rest")
    while len(pending) > 1 and len(resources) < ROUNDS:
        # a mapped scheme leads no round: its µops may put microcode waits on ports, which then
        # predict the sum beside every other such scheme (the Zen 5's ``vdpps xmm, m128`` as
        # 12×[6,9] led a round, and ``vphsubw xmm, m128``, 4×[6,9], took the sum beside it as
        # its ports said, so never joined the resource it shares with ``vphsubsw ymm``)
        first = next((i for i in pending if model.schemes[i].kind != "mapped"), pending[0])
        rest = [i for i in pending if i != first]
        say(f"  {len(rest)} slow scheme(s) beside {first}")
        res = _round(measure, model, alone, r_max, o, first, rest, units)
        res["name"] = f"S{len(resources) + 1}"
        # checked at once: a member its check refutes is pending again, for a later resource
        refuted = _checked(measure, model, alone, r_max, o, res, sorted(set(res["hold"]) - {first}))
        pending = [i for i in rest if i not in members(res)]
        if len(members(res)) > 1:       # a round that forms none leaves its name to the next
            resources.append(res)
            claimed |= members(res)
            left_out += refuted
    for res in resources:
        say(f"  {res['name']} ({res['first']}, {len(members(res))} schemes): what other schemes hold beside it")
        _context(measure, model, alone, r_max, o, res, claimed)
        claimed |= set(res["beside"])
        _mode_context(measure, model, r_max, o, res, trigger)
        left_out += _checked(measure, model, alone, r_max, o, res, sorted(set(res["beside"]) - set(res["hold"])))
    resources = [r for r in resources if len(members(r)) > 1]
    left_out = [x for x in left_out if not any(x[0] in members(r) for r in resources)]
    for r in resources:
        say(f"  shared resource {r['name']}: {r['first']} and {len(members(r)) - 1} other(s) "
            f"({len(r['beside'])} holding more or only beside a full member"
            f"{', every trigger of the mode as context' if r['mode_context'] else ''})")
    if serial:
        say(f"  {len(serial)} slow scheme(s) serialise (the sum beside the filler): {', '.join(sorted(serial)[:4])}")
    return {"resources": [{k: r[k] for k in ("name", "first", "hold", "beside", "mode_context", "witnesses")}
                          for r in resources], "left_out": left_out,
            "serial": [[i, *serial[i]] for i in sorted(serial)]}


def members(res: Mapping[str, Any]) -> set[str]:
    """The schemes of a found resource (a narrow member is in ``hold`` and ``beside``)."""
    return set(res["hold"]) | set(res["beside"])


def _serial(measure: Callable[[list[Experiment]], list[float]], model: ModelledMapping, alone: Mapping[str, Any],
            r_max: float | None, o: ExplainOptions, candidates: list[str], blocking: PortMapping | None
            ) -> dict[str, tuple[dict[str, int], float]]:
    """The ``candidates`` of a cycle or more that take the sum beside the filler (module doc):
    scheme -> (the probe, its measured time). Only schemes with a cost of their own: a unit's
    scheme has no time of its own to hold the front end with (its unit explains its time alone)."""
    if blocking is None or not r_max or not blocking.uops:
        return {}
    fill = filler(blocking, int(r_max))
    t_fill = float(model.inverse_throughput(Experiment(fill), r_max)) if set(fill) <= set(model.schemes) else 0.0
    todo = [i for i in candidates if isinstance(alone.get(i), (int, float)) and alone[i] >= 1 and i not in fill
            and t_fill > 0 and model.schemes[i].cost is not None]
    exps = [Experiment({i: 1, **{b: n * max(1, round(float(alone[i]) / 2 / t_fill)) for b, n in fill.items()}})
            for i in todo]
    out = {}
    for i, (e, t, m) in zip(todo, _pairs(measure, model, r_max, exps)):
        whole = float(alone[i]) + float(model.inverse_throughput(Experiment({b: n for b, n in e.items() if b != i}), r_max))
        if t == t and off(e, whole, m, o) and t - m > (whole - m) / 2:     # nearer the sum than the longer
            out[i] = (dict(e.items()), t)
    # the rule delivers the rest between copies in whole cycles: one more instruction costs a
    # cycle (Ice Lake-SP's btc m64: 5 alone, 6.0 beside one); where it does not, the scheme is
    # no such microcode (the Zen 4's shrd r16, r16, i8: 1.5 alone, 2.0 beside three others, which
    # the rule made 2.5; its compress stores take their time alone beside four)
    one = min(fill)
    checks = [Experiment({i: 1, one: 1}) for i in out]
    for i, (e, t, m) in zip(list(out), _pairs(measure, model, r_max, checks)):
        held = float(replace(model, serial=frozenset({i})).inverse_throughput(e, r_max))   # the rule's own time
        if not (t == t and t - m > (held - m) / 2):
            del out[i]
    return out


def _pairs(measure: Callable[[list[Experiment]], list[float]], model: ModelledMapping, r_max: float | None,
           exps: list[Experiment]) -> list[tuple[Experiment, float, float]]:
    """Each experiment measured, with the model's prediction (which has no shared resource yet)."""
    if not exps:
        return []
    return list(zip(exps, measure(exps), (float(m) for m in model.evaluate_many(exps, r_max))))


def _round(measure: Callable[[list[Experiment]], list[float]], model: ModelledMapping, alone: Mapping[str, Any],
           r_max: float | None, o: ExplainOptions, first: str, rest: list[str], units: frozenset[str]
           ) -> dict[str, Any]:
    """Step 1: every pending slow scheme beside ``first``."""
    t0 = float(alone[first])
    hold, beside, witnesses = {first: _hold(model, first, t0)}, {}, []
    for e, t, _ in _pairs(measure, model, r_max, [Experiment({first: 1, x: 1}) for x in rest]):
        x = next(i for i in e if i != first)
        a = float(alone[x])
        apart = max(t0, a, _ports_time(model, e, units))
        if t != t or not off(e, t0 + a, apart, o) or t - apart <= (t0 + a - apart) / 2:
            continue    # nearer the two apart than the sum, or the sum is no longer: not shown one resource
        witnesses.append([dict(e.items()), t])
        hold[x] = _hold(model, x, a)
        if off(e, t, t0 + a, o):
            beside[x] = t - t0              # holds more, or less, beside a full member
    return {"first": first, "hold": hold, "beside": beside, "mode_context": False, "witnesses": witnesses}


def _hold(model: ModelledMapping, i: str, alone: float) -> float:
    """What a member holds: its time alone, or its model's cost where experiments with it ran
    faster (:mod:`~pmsolve.infer.explain.complete`: Zen 3's ``vdivps ymm`` 3.5 alone, 3.0 in mixes)."""
    cost = model.schemes[i].cost
    return min(alone, float(cost)) if cost is not None else alone


#: stores that bypass the caches (``movntq`` is MMX, never offered)
NON_TEMPORAL_STORES = frozenset({"movnti", "movntdq", "movntpd", "movntps", "movntsd", "movntss", "vmovntdq",
                                 "vmovntpd", "vmovntps", "maskmovdqu", "vmaskmovdqu"})


def non_temporal_stores(names: Iterable[str]) -> frozenset[str]:
    """The catalogue's non-temporal stores among ``names`` (names it lacks: none)."""
    cat = load_catalogue(host=False)
    return frozenset(n for n in names if n in cat and cat[n].mnemonic in NON_TEMPORAL_STORES)


def memory_schemes(names: Iterable[str]) -> frozenset[str]:
    """The catalogue's schemes among ``names`` that load or store (names it lacks: none)."""
    cat = load_catalogue(host=False)
    return frozenset(n for n in names if n in cat and cat[n].memory in ("load", "store", "load+store"))


def _context(measure: Callable[[list[Experiment]], list[float]], model: ModelledMapping, alone: Mapping[str, Any],
             r_max: float | None, o: ExplainOptions, res: dict[str, Any], claimed: set[str]) -> None:
    """Step 2: schemes with a µop on a set every full member uses, two copies beside the first;
    where every full member accesses memory, every other scheme that does too, one copy beside
    two of the first (a store has no µop on the load ports: Ice Lake-SP's ``mov m64, r64`` holds
    0.31 cycles beside a zmm load, and mixes of stores with zmm loads came out 19 % short)."""
    full = [i for i in res["hold"] if i not in res["beside"]]
    sets = [{u.ports for u in model.on_ports.get(i, ())} for i in full]
    common = set.intersection(*sets) if sets and all(sets) else set()
    first, t0 = res["first"], float(alone[res["first"]])
    todo = sorted(i for i, us in model.on_ports.items()
                  if i not in claimed and i in model.schemes and any(u.ports in common for u in us))
    memory = memory_schemes(model.schemes)
    more = sorted(memory - set(todo) - claimed - set(res["hold"])) if full and set(full) <= memory else []
    exps = [Experiment({first: 1, x: 2}) for x in todo] + [Experiment({first: 2, x: 1}) for x in more]
    for e, t, m in _pairs(measure, model, r_max, exps):
        x = next(i for i in e if i != first)
        held = (t - 2 * t0) if e[first] == 2 else (t - t0) / 2
        if t == t and t > m and off(e, t, m, o) and held > 0:
            res["beside"][x] = held
            res["witnesses"].append([dict(e.items()), t])


def _mode_context(measure: Callable[[list[Experiment]], list[float]], model: ModelledMapping, r_max: float | None,
                  o: ExplainOptions, res: dict[str, Any], trigger: str | None) -> None:
    """Step 3: is every trigger of the mode context (the first is one, the mode's trigger is not
    in the resource)?"""
    mode = model.mode
    only = {i: t for i, t in res["beside"].items() if i not in res["hold"] and mode and i not in mode.triggers}
    if not only or mode is None or trigger is None or res["first"] not in mode.triggers or trigger in res["hold"]:
        return
    exps = [Experiment({trigger: 1, x: COPIES}) for x in sorted(only)]      # the plainest reading: the largest gap
    gap = {e: COPIES * only[x] - float(m) for e, x, m in zip(exps, sorted(only), model.evaluate_many(exps, r_max))}
    e = max(exps, key=lambda e: gap[e])
    (_, t, m), = _pairs(measure, model, r_max, [e])
    want = max(m, m + gap[e])
    if off(e, want, m, o) and not off(e, t, want, o):
        res["mode_context"] = True
        res["witnesses"].append([dict(e.items()), t])


def resource(res: Mapping[str, Any], model: ModelledMapping) -> Shared:
    """The :class:`Shared` of one found resource: full members and (with ``mode_context``) the
    mode's triggers are its context."""
    context = {i for i in res["hold"] if i not in res["beside"]}
    if res.get("mode_context") and model.mode is not None:
        context |= set(model.mode.triggers) & set(model.schemes)
    return Shared(res["name"], {i: resolved(t) for i, t in res["hold"].items()},
                  {i: resolved(t) for i, t in res["beside"].items()}, frozenset(context),
                  tuple((Experiment(e), t) for e, t in res["witnesses"]))


def _checked(measure: Callable[[list[Experiment]], list[float]], model: ModelledMapping, alone: Mapping[str, Any],
             r_max: float | None, o: ExplainOptions, res: dict[str, Any], todo: list[str]) -> list[list[str]]:
    """Step 4: ``{first: 2, x: 1}`` for the members ``todo`` (the pair's members right after their
    round, the context members after step 3); those that miss leave the resource, but a
    slow member that its pair made narrow and whose check fits it full (one pair sample too slow:
    Ice Lake-SP's ``vfmadd231ps zmm, m32bcst`` 1.915 beside the first, 2.665 in the check where
    full gives 2.667) stays, full. A member whose check misses the resource's time by less than
    the model without the resource stays too: the Zen 5's ``vdivps`` holds 4.0 beside one
    ``vdivpd`` and 3.5 beside two (11.5 where the resource gives 12.0 and the model without it
    8.0); refuted, the narrow divides formed a resource of their own and every mix of a wide and
    a narrow divide came out 4.0 for 8.0. With the resource, a two-scheme experiment takes the
    longer of the model's prediction and the resource's time."""
    first = res["first"]
    path = resource(res, model)
    out = []
    placed = {Experiment(w) for w, _ in res["witnesses"]}
    checks = [Experiment({first: 1, x: 1}) if Experiment({first: 2, x: 1}) in placed   # not the one that placed it
              else Experiment({first: 2, x: 1}) for x in todo]
    for x, (e, t, m) in zip(todo, _pairs(measure, model, r_max, checks)):
        want = max(m, float(path.time(e)))
        if t == t and off(e, t, want, o) and x in res["hold"] and x in res["beside"]:
            full = {**res, "beside": {i: b for i, b in res["beside"].items() if i != x}}
            if not off(e, t, max(m, float(resource(full, model).time(e))), o):
                res["beside"].pop(x)
                res["witnesses"].append([dict(e.items()), t])
                continue
        if t != t or (off(e, t, want, o) and abs(t - want) >= abs(t - m)):
            out.append([x, f"{e} = {t:.4g} where sharing {res['name']} with {first} gives {want:.4g}"])
            res["hold"].pop(x, None)
            res["beside"].pop(x, None)
        else:
            res["witnesses"].append([dict(e.items()), t])
    return out


def resources(found: Mapping[str, Any], model: ModelledMapping) -> tuple[Shared, ...]:
    """The stage's value as :class:`Shared` resources of ``model``."""
    return tuple(resource(r, model) for r in found.get("resources", ()))


def text(found: Mapping[str, Any]) -> str:
    """One line per resource: its first member, its members and what they hold."""
    lines = []
    for r in found.get("resources", ()):
        hold = ", ".join(f"{i} {t:.3g}" for i, t in sorted(r["hold"].items(), key=lambda x: -x[1])[:4])
        beside = ", ".join(f"{i} {t:.3g}" for i, t in sorted(r["beside"].items(), key=lambda x: -x[1])[:4])
        lines.append(f"{r['name']} (first {r['first']}, {len(members(r))} schemes): holds {hold}{', …' if len(r['hold']) > 4 else ''}"
                     + (f"; beside a full member {beside}{', …' if len(r['beside']) > 4 else ''}" if beside else "")
                     + ("; the mode's triggers are context" if r.get("mode_context") else ""))
    return "\n".join(lines)


__all__ = ["find", "members", "resources", "slow_schemes", "text"]
