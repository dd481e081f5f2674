"""The same question as :func:`pmsolve.strategy.check_strategy`, answered by enumeration.

Every mapping of the (small) class is generated; mappings are grouped by what the strategy
observes (its experiments with their exact throughputs, plus µop counts where observed); a group
whose members differ on some experiment of ≤ L instructions is a counterexample. No solver is
involved, so this is an independent cross-check of the SMT route for tiny classes (and fast
for them).
"""

from __future__ import annotations

import time
from fractions import Fraction
from itertools import product
from typing import Iterator

from pmsolve.encodings.mapping_class import MappingClass
from pmsolve.model import Experiment, PortMapping
from pmsolve.strategy.checker import COUNTEREXAMPLE, SUFFICIENT, StrategyVerdict, _validate
from pmsolve.strategy.strategies import Strategy, observe, parse_strategy
from pmsolve.throughput import inverse_throughput


def enumerate_class(cls: MappingClass) -> Iterator[PortMapping]:
    """Every mapping of the class (symbolic instructions over all their options)."""
    options = cls.single_uop_options()
    fixed = dict(cls.fixed.uops) if cls.fixed is not None else {}
    for combo in product(options, repeat=len(cls.instructions)):
        table = dict(zip(cls.instructions, combo))
        table.update(fixed)
        yield PortMapping(cls.ports, table)


def experiments_up_to(instructions: tuple[str, ...], bound: int) -> list[Experiment]:
    """All experiments of 1..bound instructions, shortest first."""
    out: list[Experiment] = []

    def rec(j: int, left: int, acc: dict[str, int]) -> None:
        if j == len(instructions):
            if acc:
                out.append(Experiment(acc))
            return
        for c in range(left + 1):
            if c:
                acc[instructions[j]] = c
            rec(j + 1, left - c, acc)
            acc.pop(instructions[j], None)

    rec(0, bound, {})
    return sorted(out, key=lambda e: (e.size, str(e)))


def check_strategy_exhaustive(strategy: Strategy | str, insns: int | None, ports: int, *, levels: int = 2,
                              max_uops: int | None = None, max_exp_len: int = 4) -> StrategyVerdict:
    s = parse_strategy(strategy) if isinstance(strategy, str) else strategy
    cls = s.mapping_class(insns, ports, levels, max_uops)
    t0 = time.perf_counter()
    groups: dict[object, list[PortMapping]] = {}
    for m in enumerate_class(cls):
        key: list[object] = [frozenset((e, inverse_throughput(m, e)) for e in s.experiments(m, cls))]
        if s.observes_uops:
            key.append(tuple(observe(m, i)[1] for i in cls.instructions))
        groups.setdefault(tuple(key), []).append(m)
    probes = experiments_up_to(cls.all_instructions, max_exp_len)
    best = None
    for members in groups.values():
        if len(members) < 2:
            continue
        first = members[0]
        base: dict[Experiment, Fraction] = {}
        for other in members[1:]:
            for e in probes:
                if e not in base:
                    base[e] = inverse_throughput(first, e)
                if inverse_throughput(other, e) != base[e]:
                    if best is None or e.size < best[2].size:
                        best = (first, other, e)
                    break
    seconds = time.perf_counter() - t0
    if best is None:
        return StrategyVerdict(s.name, s.description, cls, max_exp_len, SUFFICIENT, "enumeration", seconds)
    cx = _validate(s, cls, *best)
    return StrategyVerdict(s.name, s.description, cls, max_exp_len, COUNTEREXAMPLE, "enumeration", seconds, cx)
