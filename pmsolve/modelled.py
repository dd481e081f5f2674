"""A port mapping that predicts every scheme it was asked about, and says how (issue 39).

The counter-free inference maps most schemes and leaves the rest as misfits with the experiments
that show why; a user still needs a number for them. A :class:`ModelledMapping` is the port
mapping plus, per scheme, a :class:`SchemeModel` with its *kind* and a *confidence*:

* ``mapped`` — µops on ports, each witnessed by experiments;
* ``unit`` — µops on ports and cycles on a unit, an extra resource (one port, or two at
  half-cycle resolution) that schemes slower alone than their ports by whole or half cycles
  share (a divider): still a port mapping;
* ``ports + cost`` — the µops found on ports, and the scheme's cost (its measured time alone,
  or less where experiments with it run faster) as a resource of its own (slower alone than its
  ports allow and no shared unit found: microcode, an unpipelined unit, a chain through its
  copies);
* ``cost`` — no µops that reproduce its experiments: its cost as a resource of its own, the
  last resort (a bound: the scheme takes at least that long in any mix).

A resource of one scheme's own serves that scheme alone for ``cost`` cycles per copy, so it adds
the constraint tp⁻¹ ≥ n·cost to the port bound (Thm 5.2) and the front-end limit:

    tp⁻¹(e) = max(port bound of the µops in e, |e| / R_max, max over such schemes i of n_i·cost_i)

which is exactly the bottleneck formula with one extra private port per such scheme (kept out of
the port bitmasks, which a thousand private ports would not fit). One exception: an experiment
of one such scheme and nothing else takes n·``alone``, its measured time alone (the cost is the
bound mixes allow and may be lower; µops found on ports may say more). ``confidence`` is in [0, 1]:
for mapped schemes the margin of the estimates that placed their µops, for the others the share
of their measured experiments the model predicts within 5 %.

Every scheme also has ``slots``: how many of the front end's R_max per cycle one copy takes (1
unless a probe showed more, :mod:`pmsolve.infer.explain.slots`; Zen 3's read-modify-writes, ``cmov
r, m`` and ``blsr`` take 2, as AMD's macro-op counts say). The front-end limit is then
Σ n_i·slots_i / R_max instead of |e| / R_max: a port set of R_max ports that every scheme uses
with slots_i µops. The file form is a pmsolve mapping
with a ``models`` section (:meth:`ModelledMapping.to_json`); a file without one is all ``mapped``.

A :class:`Mode` says that while a *trigger* scheme is in the experiment, one port serves no µop
of the *affected* schemes on some port sets: Intel cores with AVX-512 turn off the vector
integer unit of port 1 while 512-bit µops are in flight, so a 128/256-bit add that runs on three
ports runs on two beside any zmm instruction (:mod:`pmsolve.infer.explain.modes` finds it).
Where schemes on one port set differ (Ice Lake-SP's
vector shifts on ports 0 and 1 lose port 1, its floating-point adds there move to ports 0 and
5), a scheme's own probe says where its µops on a set run in the mode (``also``). An experiment
with a trigger is evaluated on the mapping with that port taken out of those sets, or the µops
moved as ``also`` says.

A :class:`Shared` resource is a bottleneck beside the ports that several schemes hold for a
measured time per copy, adding up: Ice Lake-SP's load path beside 512-bit loads (0.888 cycles
per zmm load, and beside one 0.60 per ymm load, 0.46 per xmm load), its divider (``vdivpd zmm``
16 cycles, ``vdivps xmm`` 3 alone and 5 beside a wider divide: the divider then runs at 256-bit
width). A scheme holds ``hold`` cycles always, ``beside`` cycles (instead) while any scheme of
``context`` is in the experiment; the resource adds the constraint tp⁻¹ ≥ Σ n_i·hold_i
(:mod:`pmsolve.infer.explain.shared` finds such resources). A ``capped`` resource (the Zen 5's
``reads``) adds less where the only context schemes in the experiment are *partners*, context
schemes that hold ``beside`` as well: there the other schemes add at most what the partners do
(``{vfnmadd132ps xmm{k}: 1, vpaddd zmm{k}: k}`` takes 1.00, 1.02 and 1.03 cycles for k = 1, 2
and one more merge-masked form, where the sum of the holds says 1.0, 1.5, 1.5). A *serial* scheme is microcode that
holds the front end (Ice Lake-SP's ``btc m64, r64``: 5 cycles alone, 6.0 beside one more
instruction, 7.1 beside ten ``mov r64, imm32`` that take 2.5 alone, 13.0 beside forty, 6.0 beside
``vdivps ymm`` that takes 5): while its microcode is delivered (its time alone, ``alone``, else
``cost``) nothing else enters the machine, and the rest's front-end slots are delivered between
its copies in whole cycles; the back end runs on. So an experiment with k serial copies takes at
least Σ n_i·T_i + k·⌈slots(rest) / (k·R_max)⌉, and at least what the rest of the model says
(without a front-end limit: the serial times plus the rest's tp⁻¹).

:class:`pmsolve.queues.Queues` are scheduling queues in front of some ports (the Zen 4's vector
pipes, two queues of two): a µop is placed into one queue as it is renamed, and only that queue's
ports may run it. Where that matters, their simulated steady state is one more floor under tp⁻¹
(:mod:`pmsolve.infer.explain.queues` finds them; the µops of mapped and ``ports + cost`` schemes
take part).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from pmsolve.errors import FormatError, UnknownNameError, ValidationError
from pmsolve.formats import _read_json, mapping_from_json, mapping_to_json
from pmsolve.formula import RMax, bottleneck, check_r_max
from pmsolve.metrics import RESOLUTION
from pmsolve.model import Experiment, PortMapping, sort_ports
from pmsolve.queues import Queues
from pmsolve.throughput import evaluate_many

KINDS = {
    "mapped": "µops on ports, each witnessed by experiments",
    "unit": "µops on ports and cycles of a unit (an extra resource shared by slow schemes)",
    "ports + cost": ("the µops found on ports, and its cost (its time alone, or less where mixes run faster) "
                     "on a resource of its own"),
    "cost": "its cost on a resource of its own (a bound: no µops reproduce its experiments)",
}
#: kinds whose prediction is a port mapping and nothing else
PORT_KINDS = ("mapped", "unit")


def cycles(x: float) -> Fraction:
    """A time read from a file as the exact fraction the model computes with (to 1/10,000 of a
    cycle)."""
    return Fraction(x).limit_denominator(10_000)


#: measured times within SIMPLE_WITHIN of a fraction of denominator ≤ SIMPLE_DENOMINATOR are it
SIMPLE_DENOMINATOR, SIMPLE_WITHIN = 12, 0.01
_STEP = Fraction(RESOLUTION).limit_denominator(1000)     # 1/100 of a cycle


def resolved(x: float) -> Fraction:
    """A measured time as a model parameter (a cost, a time alone, a shared resource's hold): the
    simplest fraction of denominator ≤ 12 within 1 % of it, else ``x`` to what one measurement
    resolves (:data:`pmsolve.metrics.RESOLUTION`, 0.01 cycles; never 0 for a positive ``x``).
    Ports and units give simple fractions (1/3 cycle: three pipes), and digits below the
    resolution (0.5008 and 0.4995 for 0.5) order predictions by noise: on a25's 300 held-out
    mixes, 438 of the 1,203 pairs predicted in the wrong order were predicted less than 0.5 %
    apart (RESULTS §1.36)."""
    x = Fraction(x)
    if x > 0:
        near = min((Fraction(round(x * q), q) for q in range(1, SIMPLE_DENOMINATOR + 1)),
                   key=lambda f: (abs(f - x), f.denominator))
        if abs(near - x) <= SIMPLE_WITHIN * x:
            return near
    grid = round(x / _STEP) * _STEP
    return max(grid, _STEP) if x > 0 else grid


@dataclass(frozen=True)
class SchemeModel:
    """How one scheme is predicted. ``cost``: cycles per copy on a resource of its own (None
    for the port kinds); ``evidence``: (experiments predicted within 5 %, experiments measured)."""

    kind: str
    confidence: float | None = None
    cost: Fraction | None = None
    why: str = ""
    evidence: tuple[int, int] | None = None
    uops: tuple[tuple[tuple[str, ...], int], ...] = ()    # of a "ports + cost" scheme
    alone: Fraction | None = None     # measured cycles per copy with nothing beside it
    slots: int = 1                    # front-end slots per copy (R_max counts slots)
    slots_witness: tuple[Experiment, float] | None = None   # the probe that showed more than 1

    def __post_init__(self) -> None:
        if isinstance(self.slots, bool) or not isinstance(self.slots, int) or self.slots < 1:
            raise FormatError(f"a scheme model's slots must be a whole number ≥ 1, got {self.slots!r}")
        if bool(self.uops) != (self.kind == "ports + cost"):
            raise FormatError(f"a {self.kind!r} scheme model {'needs' if self.kind == 'ports + cost' else 'takes no'} "
                              "µops of its own")
        if self.kind not in KINDS:
            raise FormatError(f"unknown scheme model kind {self.kind!r} (kinds: {', '.join(KINDS)})")
        if (self.cost is None) != (self.kind in PORT_KINDS):
            raise FormatError(f"a {self.kind!r} scheme model {'has no' if self.cost is None else 'takes no'} cost")
        if self.cost is not None and not self.cost > 0:
            raise FormatError(f"a scheme model's cost must be positive, got {self.cost}")
        if self.alone is not None and (self.cost is None or not self.alone > 0):
            raise FormatError(f"a {self.kind!r} scheme model takes no time alone" if self.cost is None
                              else f"a scheme model's time alone must be positive, got {self.alone}")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.confidence is not None:
            out["confidence"] = round(self.confidence, 3)
        if self.cost is not None:
            out["cost"] = float(self.cost)
        if self.alone is not None:
            out["alone"] = float(self.alone)
        if self.why:
            out["why"] = self.why
        if self.evidence is not None:
            out["evidence"] = list(self.evidence)
        if self.uops:
            out["uops"] = [{"ports": list(ps), "count": n} for ps, n in self.uops]
        if self.slots != 1:
            out["slots"] = self.slots
        if self.slots_witness is not None:
            out["slots_witness"] = {"experiment": dict(self.slots_witness[0].items()), "measured": self.slots_witness[1]}
        return out

    @classmethod
    def from_json(cls, d: Any, name: str) -> "SchemeModel":
        if not isinstance(d, dict) or not isinstance(d.get("kind"), str):
            raise FormatError(f"models: {name!r} needs an object with a 'kind'")
        cost, alone = d.get("cost"), d.get("alone")
        for what, x in (("cost", cost), ("alone", alone)):
            if x is not None and (isinstance(x, bool) or not isinstance(x, (int, float))):
                raise FormatError(f"models: {name!r}: {what} must be a number of cycles, got {x!r}")
        conf = d.get("confidence")
        if conf is not None and (isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1):
            raise FormatError(f"models: {name!r}: confidence must be a number in [0, 1], got {conf!r}")
        ev = d.get("evidence")
        evidence = tuple(int(x) for x in ev) if isinstance(ev, list) and len(ev) == 2 else None
        try:
            uops = tuple((tuple(str(p) for p in u["ports"]), int(u["count"])) for u in d.get("uops", []))
        except (TypeError, KeyError, ValueError):
            raise FormatError(f"models: {name!r}: uops must be a list of {{'ports': [...], 'count': n}}") from None
        slots, witness = d.get("slots", 1), d.get("slots_witness")
        try:
            witness = None if witness is None else (Experiment(dict(witness["experiment"])), float(witness["measured"]))
        except (TypeError, KeyError, ValueError, ValidationError):
            raise FormatError(f"models: {name!r}: slots_witness must be {{'experiment': {{scheme: count}}, "
                              "'measured': cycles}}") from None
        return cls(d["kind"], conf, None if cost is None else cycles(cost),
                   str(d.get("why", "")), evidence, uops,
                   None if alone is None else cycles(alone), slots, witness)


@dataclass(frozen=True)
class Limit:
    """What limits an experiment under a modelled mapping: ``ports`` (the bottleneck ports of
    Thm 3.14), the front end, or ``cost_of`` a scheme's own resource."""

    inverse_throughput: Fraction
    ports: frozenset[str] = frozenset()
    frontend_bound: bool = False
    cost_of: str | None = None
    alone: bool = False                    # the experiment is ``cost_of`` by itself: its time alone
    shared: str | None = None              # the name of a :class:`Shared` resource
    serial: bool = False                   # ``cost_of`` holds the front end: its time alone, the rest between
    queued: bool = False                   # the scheduling queues (:class:`pmsolve.queues.Queues`)

    def describe(self) -> str:
        if self.serial:
            return f"{self.cost_of} holds the front end (its time alone, the rest delivered between copies)"
        if self.frontend_bound:
            return "front end (R_max)"
        if self.shared is not None:
            return f"shared resource {self.shared}"
        if self.queued:
            return "scheduling queues in front of {" + ",".join(sort_ports(self.ports)) + "}"
        if self.alone:
            return f"{self.cost_of} by itself (its measured time alone)"
        if self.cost_of is not None:
            return f"{self.cost_of}'s own resource (modelled cost)"
        return "{" + ",".join(sort_ports(self.ports)) + "}"


@dataclass(frozen=True)
class Mode:
    """While any of ``triggers`` is in an experiment, ``port`` serves none of the µops of the
    ``affected`` schemes on ``sets``, and a (scheme, set, new) of ``also`` runs that scheme's µops
    on the set on ``new`` instead, whatever the sets say (see the module docstring);
    ``witnesses``: the experiments that showed it, with their measured cycles."""

    port: str
    sets: frozenset[frozenset[str]]      # the port sets that lose ``port`` (each has another)
    triggers: frozenset[str]
    affected: frozenset[str]
    witnesses: tuple[tuple[Experiment, float], ...] = ()
    also: frozenset[tuple[str, frozenset[str], frozenset[str]]] = frozenset()   # (scheme, set, new)

    def __post_init__(self) -> None:
        if any(self.port not in q or len(q) < 2 for q in [*self.sets, *(q for _, q, _ in self.also)]):
            raise FormatError(f"mode: every set must hold port {self.port!r} and another port")
        if any(not new or (new != q and self.port in new) for _, q, new in self.also):
            raise FormatError(f"mode: a moved set must be the set itself or one without port {self.port!r}")
        moved = {(i, q): new for i, q, new in self.also}     # narrow's lookup, once
        if len(moved) < len(self.also):
            raise FormatError("mode: a scheme's set is moved once")
        object.__setattr__(self, "_moved", moved)

    def applies(self, e: Experiment) -> bool:
        return any(i in self.triggers for i in e)

    def narrow(self, i: str, ports: frozenset[str]) -> frozenset[str]:
        """The ports a µop of scheme ``i`` on ``ports`` may use in the mode."""
        if (i, ports) in self._moved:
            return self._moved[(i, ports)]
        return ports - {self.port} if i in self.affected and ports in self.sets else ports

    def apply(self, mapping: PortMapping) -> PortMapping:
        """The mapping with ``port`` taken out of the affected schemes' µops on the mode's sets."""
        return PortMapping(mapping.ports, {i: [(self.narrow(i, u.ports), u.count) for u in us]
                                           for i, us in mapping.uops.items()})

    def to_json(self) -> dict[str, Any]:
        return {"port": self.port, "sets": sorted(sort_ports(q) for q in self.sets),
                "triggers": sorted(self.triggers), "affected": sorted(self.affected),
                "witnesses": [{"experiment": dict(e.items()), "measured": t} for e, t in self.witnesses],
                **({"also": sorted([i, sort_ports(q), sort_ports(n)] for i, q, n in self.also)} if self.also else {})}

    @classmethod
    def from_json(cls, d: Any, source: str = "") -> "Mode":
        try:
            return cls(str(d["port"]), frozenset(frozenset(map(str, q)) for q in d["sets"]),
                       frozenset(map(str, d["triggers"])), frozenset(map(str, d["affected"])),
                       tuple((Experiment(dict(w["experiment"])), float(w["measured"])) for w in d.get("witnesses", [])),
                       frozenset((str(i), frozenset(map(str, q)), frozenset(map(str, n))) for i, q, n in d.get("also", [])))
        except (TypeError, KeyError, ValueError, ValidationError):
            raise FormatError(f"{source}: 'mode' must be {{'port': p, 'sets': [[...]], 'triggers': [...], "
                              "'affected': [...], 'witnesses': [...], 'also': [[scheme, [set], [new]], ...]}}") from None


@dataclass(frozen=True)
class Shared:
    """A resource beside the ports that its schemes hold ``hold`` cycles per copy, and ``beside``
    cycles instead while a scheme of ``context`` is in the experiment; ``capped``: where that
    context is partners only, the rest adds at most what they add (module docstring);
    ``witnesses``: the experiments that showed it, with their measured cycles."""

    name: str
    hold: Mapping[str, Fraction]
    beside: Mapping[str, Fraction] = field(default_factory=dict)
    context: frozenset[str] = frozenset()
    witnesses: tuple[tuple[Experiment, float], ...] = ()
    capped: bool = False

    def __post_init__(self) -> None:
        if any(t < 0 for t in [*self.hold.values(), *self.beside.values()]):
            raise FormatError(f"shared {self.name!r}: a hold must be a non-negative number of cycles")

    @property
    def schemes(self) -> frozenset[str]:
        return frozenset(self.hold) | frozenset(self.beside) | self.context

    def time(self, e: Experiment) -> Fraction:
        """Σ n_i·hold_i over ``e`` (``beside`` where a scheme of ``context`` is in ``e``; capped,
        see the class docstring)."""
        ctx = [i for i in e if i in self.context]
        if not ctx:
            return sum((n * self.hold.get(i, 0) for i, n in e.items()), Fraction(0))
        total = sum((n * self.beside.get(i, self.hold.get(i, 0)) for i, n in e.items()), Fraction(0))
        if not (self.capped and all(i in self.beside for i in ctx)):
            return total
        partners = sum((n * self.beside[i] for i, n in e.items() if i in self.context), Fraction(0))
        return partners + min(total - partners, partners)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "hold": {i: float(t) for i, t in sorted(self.hold.items())},
                "beside": {i: float(t) for i, t in sorted(self.beside.items())}, "context": sorted(self.context),
                **({"capped": True} if self.capped else {}),
                "witnesses": [{"experiment": dict(e.items()), "measured": t} for e, t in self.witnesses]}

    @classmethod
    def from_json(cls, d: Any, source: str = "") -> "Shared":
        try:
            if any(isinstance(x, bool) or not isinstance(x, (int, float))
                   for k in ("hold", "beside") for x in d.get(k, {}).values()) or \
                    not isinstance(d.get("capped", False), bool):
                raise TypeError
            return cls(str(d["name"]), {str(i): cycles(t) for i, t in d["hold"].items()},
                       {str(i): cycles(t) for i, t in d.get("beside", {}).items()},
                       frozenset(map(str, d.get("context", []))),
                       tuple((Experiment(dict(w["experiment"])), float(w["measured"])) for w in d.get("witnesses", [])),
                       d.get("capped", False))
        except (TypeError, KeyError, ValueError, AttributeError, ValidationError):
            raise FormatError(f"{source}: each of 'shared' must be {{'name': n, 'hold': {{scheme: cycles}}, "
                              "'beside': {scheme: cycles}, 'context': [...], 'capped': bool, "
                              "'witnesses': [...]}}") from None


@dataclass(frozen=True)
class ModelledMapping:
    """The port mapping of the mapped schemes (``mapped``, ``unit``) and a model for every scheme;
    the µops of ``ports + cost`` schemes live in their models, so that the mapping read alone
    (by any tool that reads pmsolve mappings) holds only what was mapped."""

    mapping: PortMapping | None          # None: no scheme is mapped
    schemes: Mapping[str, SchemeModel] = field(default_factory=dict)
    mode: Mode | None = None
    shared: tuple[Shared, ...] = ()
    serial: frozenset[str] = frozenset()
    queues: Queues | None = None

    def __post_init__(self) -> None:
        models = dict(self.schemes)
        mapped = self.mapping.uops if self.mapping is not None else {}
        for i in mapped:
            models.setdefault(i, SchemeModel("mapped"))
        for i, m in models.items():
            if (m.kind in PORT_KINDS) != (i in mapped):
                raise FormatError(f"models: {i!r} is {m.kind!r} but the mapping {'lacks' if i not in mapped else 'maps'} it")
        object.__setattr__(self, "schemes", dict(sorted(models.items())))
        extra = {i: [(frozenset(ps), n) for ps, n in m.uops] for i, m in models.items() if m.uops}
        # without a mapping the ports are those the µops and the mode name: a mode may move a µop
        # to a port no scheme of a cut-down model (modes._only) uses
        named = set() if self.mode is None else {self.mode.port, *(p for q in self.mode.sets for p in q),
                                                 *(p for _, q, n in self.mode.also for p in q | n)}
        ports = list(self.mapping.ports) if self.mapping is not None else sorted(
            {p for us in extra.values() for ps, _ in us for p in ps} | named)
        combined = PortMapping(ports, {**mapped, **extra}) if (mapped or extra) else None
        object.__setattr__(self, "_combined", combined)
        if self.mode is not None and self.mode.port not in ports:
            raise FormatError(f"mode: port {self.mode.port!r} is not a port of the mapping")
        object.__setattr__(self, "_in_mode", self.mode.apply(combined) if self.mode and combined else combined)
        object.__setattr__(self, "shared", tuple(self.shared))
        for r in self.shared:
            if r.schemes - set(models):
                raise FormatError(f"shared {r.name!r}: unknown scheme(s) {sorted(r.schemes - set(models))[:3]}")
        object.__setattr__(self, "serial", frozenset(self.serial))
        timeless = sorted(i for i in self.serial if i not in models or self._serial_time(i, models) is None)
        if timeless:
            raise FormatError(f"serial: {timeless[:3]} must be modelled schemes with a time alone or a cost")
        if self.queues is not None and not self.queues.ports <= set(ports):
            raise FormatError(f"queues: port(s) {sort_ports(self.queues.ports - set(ports))} are not ports of the mapping")

    def ports_for(self, e: Experiment) -> PortMapping:
        """The port mapping that evaluates ``e``: in the mode when a trigger is in it."""
        return self._in_mode if self.mode is not None and self.mode.applies(e) else self._combined

    @property
    def ports(self) -> tuple[str, ...]:
        """The ports of the mapped and ``ports + cost`` schemes' µops (units' ports among them)."""
        return tuple(self._combined.ports) if self._combined is not None else ()

    @property
    def on_ports(self) -> Mapping[str, Any]:
        """The schemes with µops on ports (mapped and ``ports + cost``), and their µops."""
        return self._combined.uops if self._combined is not None else {}

    @property
    def instructions(self) -> tuple[str, ...]:
        return tuple(self.schemes)

    def kind_counts(self) -> dict[str, int]:
        out = {k: 0 for k in KINDS}
        for m in self.schemes.values():
            out[m.kind] += 1
        return out

    def _check(self, e: Experiment) -> None:
        unknown = [i for i in e if i not in self.schemes]
        if unknown:
            raise UnknownNameError(f"unknown instruction(s) {unknown[:5]} in experiment {e}")

    def _port_part(self, e: Experiment) -> Experiment | None:
        return e.restricted(self.on_ports)

    def slots_of(self, e: Experiment) -> int:
        """The front-end slots of ``e``: Σ n_i·slots_i (|e| when every scheme takes one)."""
        return sum(n * self.schemes[i].slots for i, n in e.items())

    def _costs(self, e: Experiment) -> list[tuple[Fraction, str]]:
        return [(n * self.schemes[i].cost, i) for i, n in e.items() if self.schemes[i].cost is not None]

    def _alone(self, e: Experiment) -> Limit | None:
        """A modelled scheme with nothing beside it takes its measured time alone, per copy."""
        if len(e.counts) == 1:
            (i, n), = e.items()
            if self.schemes[i].alone is not None:
                return Limit(n * self.schemes[i].alone, cost_of=i, alone=True)
        return None

    @staticmethod
    def _serial_time(i: str, models: Mapping[str, SchemeModel]) -> Fraction | None:
        m = models[i]
        return m.alone if m.alone is not None else m.cost

    def _serialised(self, e: Experiment, r_max: RMax) -> Limit | None:
        """The front end held by ``e``'s serial schemes (module docstring), when it has one."""
        mine = [i for i in e if i in self.serial]
        if not mine or (len(e.counts) == 1 and self._alone(e) is not None):
            return None
        rest = {i: n for i, n in e.items() if i not in self.serial}
        t = sum((e[i] * self._serial_time(i, self.schemes) for i in mine), Fraction(0))
        if rest and r_max is None:
            t += self.bottleneck(Experiment(rest), r_max).inverse_throughput
        elif rest:
            k = sum(e[i] for i in mine)
            t += k * math.ceil(Fraction(self.slots_of(Experiment(rest))) / (k * check_r_max(r_max)))
        return Limit(t, cost_of=mine[0], serial=True)

    def queue_time(self, e: Experiment) -> Fraction | None:
        """Cycles per copy under the scheduling queues, where they can matter."""
        if self.queues is None or self._combined is None:
            return None
        return self.queues.time(self.ports_for(e), e)

    def inverse_throughput(self, e: Experiment, r_max: RMax = None) -> Fraction:
        """Exact tp⁻¹ (see the module docstring)."""
        return self.bottleneck(e, r_max).inverse_throughput

    def bottleneck(self, e: Experiment, r_max: RMax = None) -> "Limit":
        """tp⁻¹ and what limits it: ports, the front end, or one scheme's own resource."""
        self._check(e)
        r = check_r_max(r_max)
        if (alone := self._alone(e)) is not None:
            return alone
        best = Limit(Fraction(0))
        part = self._port_part(e)
        if part is not None:
            b = bottleneck(self.ports_for(e), part)
            best = Limit(b.inverse_throughput, b.ports)
        for c, i in self._costs(e):
            if c > best.inverse_throughput:
                best = Limit(c, cost_of=i)
        for res in self.shared:
            if (t := res.time(e)) > best.inverse_throughput:
                best = Limit(t, shared=res.name)
        if (t := self.queue_time(e)) is not None and t > best.inverse_throughput:
            best = Limit(t, self.queues.ports, queued=True)
        if r is not None and (front := Fraction(self.slots_of(e)) / r) > best.inverse_throughput:
            best = Limit(front, frontend_bound=True)
        if (serial := self._serialised(e, r_max)) is not None and serial.inverse_throughput >= best.inverse_throughput:
            best = serial
        return best

    def is_port_mapping_of(self, e: Experiment) -> bool:
        """Does the port mapping alone predict ``e`` (every scheme in it mapped)?"""
        return self.mapping is not None and all(i in self.mapping.uops for i in e)

    def evaluate_many(self, experiments: Sequence[Experiment], r_max: RMax = None) -> np.ndarray:
        """tp⁻¹ of many experiments (float64), vectorised over the port part."""
        exps = list(experiments)
        for e in exps:
            self._check(e)
        out = np.zeros(len(exps))
        parts = [(j, p) for j, e in enumerate(exps) if (p := self._port_part(e)) is not None]
        for in_mode in (False, True):
            group = [(j, p) for j, p in parts if (self.mode is not None and self.mode.applies(exps[j])) == in_mode]
            if group:
                ports = self._in_mode if in_mode else self._combined
                out[[j for j, _ in group]] = evaluate_many(ports, [p for _, p in group])
        for j, e in enumerate(exps):
            costs = self._costs(e)
            if costs:
                out[j] = max(out[j], float(max(c for c, _ in costs)))
            for res in self.shared:
                out[j] = max(out[j], float(res.time(e)))
            if (t := self.queue_time(e)) is not None:
                out[j] = max(out[j], float(t))
        if r_max is not None:
            r = float(check_r_max(r_max))
            out = np.maximum(out, np.array([self.slots_of(e) / r for e in exps]))
        for j, e in enumerate(exps):
            if (alone := self._alone(e)) is not None:
                out[j] = float(alone.inverse_throughput)
            elif (serial := self._serialised(e, r_max)) is not None:
                out[j] = max(out[j], float(serial.inverse_throughput))
        return out

    def to_json(self) -> dict[str, Any]:
        doc = mapping_to_json(self.mapping) if self.mapping is not None else {
            "format": "pmsolve.mapping", "version": 1, "ports": [], "instructions": {}}
        doc["models"] = {i: m.to_json() for i, m in self.schemes.items()}
        if self.mode is not None:
            doc["mode"] = self.mode.to_json()
        if self.shared:
            doc["shared"] = [r.to_json() for r in self.shared]
        if self.serial:
            doc["serial"] = sorted(self.serial)
        if self.queues is not None:
            doc["queues"] = self.queues.to_json()
        return doc

    @classmethod
    def from_json(cls, data: Any, source: str = "") -> "ModelledMapping":
        models = data.get("models") if isinstance(data, dict) else None
        if isinstance(data, dict) and not data.get("instructions") and models:
            mapping = None
        else:
            mapping = mapping_from_json(data, source)
        mode = Mode.from_json(data["mode"], source) if isinstance(data, dict) and "mode" in data else None
        shared = data.get("shared", []) if isinstance(data, dict) else []
        if not isinstance(shared, list):
            raise FormatError(f"{source}: 'shared' must be a list of resources")
        shared = tuple(Shared.from_json(r, source) for r in shared)
        serial = data.get("serial", []) if isinstance(data, dict) else []
        if not isinstance(serial, list) or not all(isinstance(i, str) for i in serial):
            raise FormatError(f"{source}: 'serial' must be a list of scheme names")
        queues = Queues.from_json(data["queues"], source) if isinstance(data, dict) and "queues" in data else None
        if models is None:
            return cls(mapping, mode=mode, shared=shared, serial=frozenset(serial), queues=queues)
        if not isinstance(models, dict):
            raise FormatError(f"{source}: 'models' must be an object of scheme -> model")
        return cls(mapping, {str(i): SchemeModel.from_json(d, i) for i, d in models.items()}, mode, shared,
                   frozenset(serial), queues)


def load_model(path: str | Path) -> ModelledMapping:
    """A mapping file as a :class:`ModelledMapping` (every scheme ``mapped`` without ``models``)."""
    data = _read_json(path)
    try:
        return ModelledMapping.from_json(data, str(path))
    except FormatError as exc:
        msg = str(exc)
        raise FormatError(msg if msg.startswith(str(path)) else f"{path}: {msg}") from None


def with_models(mapping: PortMapping | None, models: Mapping[str, SchemeModel],
                mode: Mode | None = None) -> ModelledMapping:
    """The mapping's schemes as ``mapped`` (unless ``models`` says more), the models and the mode."""
    return ModelledMapping(mapping, dict(models), mode)
