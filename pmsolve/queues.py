"""Scheduling queues: a bottleneck beside the ports that a port mapping cannot state (issue 39).

A port mapping assumes every µop may wait for any of its ports. On the Zen 4 the four vector
pipes are fed by two scheduling queues of two pipes each (the two shuffle pipes in one), and a
µop that could run on all four is placed, as it is renamed, into one queue without regard to what
waits there; from then on only that queue's pipes can run it. A shuffle beside a flexible µop
then takes 2/3 of a cycle per pair where the port mapping allows 1/2 (RESULTS §1.18, §1.20):
the flexible µops that land in the shuffle queue crowd it, and renaming stops whenever the next
shuffle finds its queue full, while the other queue runs dry.

:class:`Queues` simulates that rule: the copy's µops on the queues' ports, in the harness's
program order (:meth:`pmsolve.model.Experiment.in_program_order`), renamed ``width`` a cycle,
each into a random queue among those that have a port it can use and room (``capacity``
entries); every cycle each port takes the oldest µop of its queue it can run; every µop is
independent and holds its port for one cycle. The result is the steady state's cycles per copy,
estimated from ``cycles`` cycles after a warm-up with a fixed seed: deterministic, and within
about 1 % of the rule's true steady state (a Monte Carlo, not an exact throughput: it serves
as a floor under the port bound, as :class:`pmsolve.modelled.Shared` does). It is only run when
it can differ from the port bound: when the copy holds a µop confined to one queue beside one
that more than one queue can take.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pmsolve.errors import FormatError
from pmsolve.model import Experiment, PortMapping, sort_ports


@dataclass(frozen=True)
class Queues:
    """Disjoint port sets, each fed by one scheduling queue (module docstring); ``witnesses``:
    measured experiments that the queues predict and the port mapping does not."""

    queues: tuple[frozenset[str], ...]
    width: int = 6
    capacity: int = 32
    cycles: int = 4000
    witnesses: tuple[tuple[Experiment, float], ...] = ()

    def __post_init__(self) -> None:
        qs = tuple(frozenset(map(str, q)) for q in self.queues)
        object.__setattr__(self, "queues", qs)
        if len(qs) < 2 or any(not q for q in qs) or len(frozenset().union(*qs)) != sum(map(len, qs)):
            raise FormatError("queues: at least two non-empty, disjoint port sets")
        if min(self.width, self.capacity, self.cycles) < 1:
            raise FormatError("queues: width, capacity and cycles must be positive")

    @property
    def ports(self) -> frozenset[str]:
        return frozenset().union(*self.queues)

    def stream(self, mapping: PortMapping, e: Experiment) -> list[frozenset[str]]:
        """One copy's µops on the queues' ports (their port sets), in program order."""
        out = []
        for i in e.in_program_order():
            for u in mapping.uops.get(i, ()):
                if u.ports <= self.ports:
                    out.extend([frozenset(u.ports)] * u.count)
        return out

    def matters(self, stream: list[frozenset[str]]) -> bool:
        """Can placement slow ``stream`` down: a µop confined to one queue beside one that is not?"""
        spans = [sum(1 for q in self.queues if ps & q) for ps in set(stream)]
        return 1 in spans and any(n > 1 for n in spans)

    def time(self, mapping: PortMapping, e: Experiment) -> Fraction | None:
        """Cycles per copy of ``e`` under the queues (to 1/1000), or None where they cannot matter."""
        return self.time_of(self.stream(mapping, e))

    def time_of(self, stream: list[frozenset[str]]) -> Fraction | None:
        """:meth:`time` of a copy's :meth:`stream`."""
        if not self.matters(stream):
            return None
        return _simulated(tuple(stream), self.queues, self.width, self.capacity, self.cycles)

    def to_json(self) -> dict[str, Any]:
        return {"queues": [sort_ports(q) for q in self.queues], "width": self.width, "capacity": self.capacity,
                "cycles": self.cycles,
                "witnesses": [{"experiment": dict(e.items()), "measured": t} for e, t in self.witnesses]}

    @classmethod
    def from_json(cls, d: Any, source: str = "") -> "Queues":
        try:
            return cls(tuple(frozenset(map(str, q)) for q in d["queues"]), int(d.get("width", 6)),
                       int(d.get("capacity", 32)), int(d.get("cycles", 4000)),
                       tuple((Experiment(dict(w["experiment"])), float(w["measured"])) for w in d.get("witnesses", [])))
        except (TypeError, KeyError, ValueError, AttributeError):
            raise FormatError(f"{source}: 'queues' must be {{'queues': [[port, ...], ...], 'width': n, "
                              "'capacity': n, 'cycles': n, 'witnesses': [...]}}") from None


@functools.lru_cache(maxsize=1 << 16)
def _simulated(stream: tuple[frozenset[str], ...], queues: tuple[frozenset[str], ...], width: int, capacity: int,
               cycles: int) -> Fraction:
    """:func:`simulate` to 1/1000 of a cycle, once per stream (many experiments share their vector µops)."""
    return Fraction(round(1000 * simulate(list(stream), queues, width, capacity, cycles)), 1000)


def simulate(stream: list[frozenset[str]], queues: tuple[frozenset[str], ...], width: int, capacity: int,
             cycles: int, seed: int = 1) -> float:
    """Steady-state cycles per pass over ``stream`` under the queue rule (module docstring)."""
    kinds = sorted(set(stream), key=sort_ports)
    kind = [kinds.index(ps) for ps in stream]
    able = [[q for q, qp in enumerate(queues) if ps & qp] for ps in kinds]       # queues a kind may enter
    pipes = [[(p, {k for k, ps in enumerate(kinds) if p in ps}) for p in sort_ports(qp)] for qp in queues]
    rng = random.Random(seed)
    held: list[list[int]] = [[] for _ in queues]
    warm = min(500, cycles)
    nxt = done = 0
    for t in range(warm + cycles):
        if t == warm:
            done = 0
        for q, ps in enumerate(pipes):
            h = held[q]
            for _, runs in ps:
                for j, k in enumerate(h):
                    if k in runs:
                        del h[j]
                        done += 1
                        break
        for _ in range(width):
            k = kind[nxt % len(kind)]
            room = [q for q in able[k] if len(held[q]) < capacity]
            if not room:
                break
            held[room[0] if len(room) == 1 else rng.choice(room)].append(k)
            nxt += 1
    return cycles * len(stream) / done if done else float("inf")
