"""Shared ground truths for the explainable-inference tests: a small synthetic "CPU" with a few
blocking instructions and ~20 multi-µop schemes, and a machine that deviates from the port
mapping model in the ways the Zen+ study met (sec. 6.3)."""

from __future__ import annotations

import random

from pmsolve.generate import zen_like  # noqa: F401  (re-exported for the tests)
from pmsolve.harness.simulated import SimulatedOracle
from pmsolve.model import Experiment, PortMapping

PORTS = [str(p) for p in range(5)]
SETS = [("0",), ("1", "2"), ("0", "1", "2"), ("3", "4")]


def synthetic(seed: int = 0, n_other: int = 20, twins: bool = True) -> PortMapping:
    """Blocking instructions for [0], [1,2], [0,1,2], [3,4] (each with an equivalent twin) and
    ``n_other`` schemes of 2-3 µop kinds drawn from those sets, 1-2 µops each."""
    rng = random.Random(seed)
    table: dict[str, list] = {}
    for j, s in enumerate(SETS):
        table[f"blk{j}"] = [(s, 1)]
        if twins:
            table[f"blk{j}_twin"] = [(s, 1)]
    for j in range(n_other):
        table[f"ins{j}"] = [(s, rng.randint(1, 2)) for s in rng.sample(SETS, rng.randint(2, 3))]
    return PortMapping(PORTS, table)


class DeviatingMachine(SimulatedOracle):
    """The synthetic CPU plus schemes that break the model's assumptions:

    * ``div``: one µop on [0] but 3 cycles per instruction (slower than any mapping allows);
    * ``ucode``: 3 µops, but the counter reports 2 (micro-coded);
    * ``evader``: a µop on [2,3], inside no blocked port set (outside the model);
    * ``narrow``: a µop on [1] only, which the [1,2] blocking instruction cannot tell from [1,2]:
      no mapping over the blocking port sets reproduces its throughputs (unsatisfiable);
    * ``flaky``: its blocking experiments drift with the number of blocking copies (unstable);
    * ``imul``: a blocking instruction slower next to anything than alone with it (like Zen+'s
      imul next to adds): CEGIS meets an unsat core and drops it.
    """

    def __init__(self, **kw):
        table = dict(synthetic().uops)
        table["div"] = [(frozenset({"0"}), 1)]
        table["ucode"] = [(frozenset({"0"}), 1), (frozenset({"3", "4"}), 2)]
        table["evader"] = [(frozenset({"2", "3"}), 1), (frozenset({"0"}), 1)]
        table["narrow"] = [(frozenset({"1"}), 1), (frozenset({"3", "4"}), 1)]
        table["flaky"] = [(frozenset({"1", "2"}), 1), (frozenset({"3", "4"}), 1)]
        table["imul"] = [(frozenset({"4"}), 1)]
        super().__init__(PortMapping(PORTS, table), uop_counter=True, **kw)

    def measure(self, experiments):
        values = super().measure(experiments)
        out = []
        for e, t in zip(experiments, values):
            c = dict(e.items())
            if c == {"div": 1}:
                t = 3.0
            elif "flaky" in c and len(c) == 2:
                k = max(n for i, n in c.items() if i != "flaky")
                t += (k % 3) * 0.5
            elif "imul" in c and len(c) > 1:
                t += 1.5  # beyond tp⁻¹(imul) + tp⁻¹(rest): no mapping allows it (subadditivity)
            out.append(t)
        return out

    def uop_counts(self, experiments):
        return [n - e["ucode"] for n, e in zip(super().uop_counts(experiments), experiments)]


class OneGlitch(SimulatedOracle):
    """The first measurement of ``pair`` reads ``cycles`` (a neighbour's burst), once; the rest as
    the oracle after it in the bases (a machine with a ``measure`` of its own may follow)."""

    def __init__(self, truth: PortMapping, pair: dict[str, int], cycles: float, **kw):
        super().__init__(truth, **kw)
        self.pair, self.cycles, self.glitched = pair, cycles, False

    def measure(self, experiments):
        out = super().measure(experiments)
        for j, e in enumerate(experiments):
            if not self.glitched and dict(e.items()) == self.pair:
                self.glitched, out[j] = True, self.cycles
        return out


def single(e: Experiment) -> bool:
    return len(e.counts) == 1



def _table(spec: dict[str, list[tuple[str, int]]]) -> dict[str, list]:
    return {i: [(tuple(ports.split(",")), n) for ports, n in us] for i, us in spec.items()}


def hidden_union() -> PortMapping:
    """Issue 39's 4-port truth: blocking instructions for [0], [1], [0,1] and [2,3]; ``b04`` on all
    four ports runs at 1/R_max (R_max 4), and ``i00``, ``i02``, ``i03`` hide µops on all four,
    a set inside no blocked one."""
    return PortMapping(["0", "1", "2", "3"], _table({
        "b00": [("0", 1)], "b01": [("1", 1)], "b02": [("0,1", 1)], "b03": [("2,3", 1)], "b04": [("0,1,2,3", 1)],
        "i00": [("0,1", 4), ("0,1,2,3", 2)], "i01": [("0", 1)], "i02": [("0,1", 4), ("0,1,2,3", 1)],
        "i03": [("2,3", 2), ("0,1,2,3", 1)], "i04": [("0", 4), ("0,1", 1)], "i05": [("0", 2)]}))


def readme_tour() -> PortMapping:
    """The README's Python tour (R_max 4): ``addm`` (an add and a load) is as fast as ``load``
    alone, and the adds run three per cycle."""
    return PortMapping(["0", "1", "2", "3"], _table({
        "add": [("0,1,2", 1)], "mul": [("1", 1)], "load": [("3", 1)], "addm": [("0,1,2", 1), ("3", 1)]}))


def small_hidden(seed: int) -> tuple[PortMapping, int]:
    """A 4-8 port truth whose ports fall into groups, each with a blocking instruction (and one
    for a single port of some), and schemes with µops on groups, single ports and on unions of
    two groups that no blocking instruction isolates; with its front-end limit."""
    rng = random.Random(seed)
    n = rng.randint(4, 8)
    ports = [str(p) for p in range(n)]
    groups, left = [], list(ports)
    while left:
        k = min(len(left), rng.randint(1, 3))
        groups.append(left[:k])
        left = left[k:]
    table: dict[str, list] = {}
    for j, g in enumerate(groups):
        table[f"g{j}"] = [(tuple(g), 1)]
        if len(g) > 1 and rng.random() < 0.5:
            table[f"s{j}"] = [((g[0],), 1)]
    sets = [tuple(g) for g in groups] + [((g[0],)) for j, g in enumerate(groups) if f"s{j}" in table]
    unions = [tuple(a + b) for a, b in zip(groups, groups[1:])]
    for j in range(8):
        us = {s: rng.randint(1, 3) for s in rng.sample(sets, rng.randint(1, min(2, len(sets))))}
        if unions and rng.random() < 0.6:
            us[rng.choice(unions)] = rng.randint(1, 2)
        table[f"x{j}"] = list(us.items())
    return PortMapping(ports, table), rng.choice([n, n + 1, n + 2])
