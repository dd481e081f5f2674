"""Random port mappings and experiments, for benchmarks, tests and simulated ground truths.

Deterministic under a :class:`numpy.random.Generator` (pass ``np.random.default_rng(seed)``).
"""

from __future__ import annotations

import random

import numpy as np

from pmsolve.errors import ValidationError
from pmsolve.model import Experiment, PortMapping


def port_names(n: int) -> list[str]:
    return [str(j) for j in range(n)]


def random_mapping(rng: np.random.Generator, n_ports: int, n_insns: int, *, max_uops: int = 1,
                   max_ports_per_uop: int | None = None, max_uop_count: int = 1,
                   uop_vocabulary: int | None = None) -> PortMapping:
    """A random mapping: each instruction gets 1..max_uops µops with random non-empty port
    sets of size 1..max_ports_per_uop, each issued 1..max_uop_count times.
    ``max_uops = max_uop_count = 1`` gives a two-level mapping.

    Real CPUs use a small vocabulary of µop port sets (the Zen+ reference mapping: 11 for
    1,700 schemes); ``uop_vocabulary = V`` draws every µop from V random port sets like that.
    """
    if n_ports < 1 or n_insns < 1 or max_uops < 1 or max_uop_count < 1:
        raise ValidationError("random_mapping needs at least one port, instruction and µop")
    width = min(max_ports_per_uop or n_ports, n_ports)
    ports = port_names(n_ports)

    def port_set() -> list[str]:
        return list(rng.choice(ports, size=int(rng.integers(1, width + 1)), replace=False))

    vocabulary = [port_set() for _ in range(uop_vocabulary)] if uop_vocabulary else None
    uops = {}
    for i in range(n_insns):
        uops[f"i{i}"] = [(vocabulary[int(rng.integers(len(vocabulary)))] if vocabulary else port_set(),
                          int(rng.integers(1, max_uop_count + 1)))
                         for _ in range(int(rng.integers(1, max_uops + 1)))]
    return PortMapping(ports, uops)


def random_experiment(rng: np.random.Generator, instructions: list[str] | tuple[str, ...],
                      length: int) -> Experiment:
    """An experiment of ``length`` instruction instances drawn uniformly with replacement."""
    if length < 1:
        raise ValidationError(f"experiment length must be ≥ 1, got {length}")
    return Experiment(list(rng.choice(list(instructions), size=length)))


#: the port sets of AMD Zen+ (dissertation Table 6.2: 4 ALUs, 2 AGUs, 4 FP pipes on 10 ports),
#: with the store-data port [5] standing alone
ZEN_SETS = [("6", "7", "8", "9"), ("4", "5"), ("5",), ("2", "3"), ("1", "2"), ("0", "1"), ("0", "1", "3"),
            ("0", "3"), ("0", "1", "2", "3"), ("2",), ("3",)]


def zen_like(seed: int = 0, n_other: int = 40) -> PortMapping:
    """A Zen+-like machine with a single-µop blocking instruction ``blkJ`` for every port set it
    uses (the explainable inference's assumption, sec. 6.2.4), and ``n_other`` schemes ``insJ``
    of 1-3 µop kinds from those sets, 1-3 µops each: the simulated truth of the counter-free
    inference's gate and of the main job away from x86-64."""
    rng = random.Random(seed)
    table: dict[str, list] = {f"blk{j}": [(s, 1)] for j, s in enumerate(ZEN_SETS)}
    for j in range(n_other):
        table[f"ins{j}"] = [(s, rng.randint(1, 3)) for s in rng.sample(ZEN_SETS, rng.randint(1, 3))]
    return PortMapping(port_names(10), table)
