"""Deterministic findOtherMapping instances of growing size, for benchmarks and stress tests.

A random two-level ground truth gives the singleton observations; m1 maps each instruction to the
first |M(i)| ports, which explains the singletons (tp⁻¹ of a singleton is 1/|M(i)|) but is
usually not the truth, so findOtherMapping has work to do.
"""

from __future__ import annotations

import random

from pmsolve.encodings.cegis import Observation, Space, build_find_other_mapping
from pmsolve.model import Experiment, PortMapping
from pmsolve.symbolic import Problem
from pmsolve.formula import bottleneck


def cegis_instance(n_insns: int, n_ports: int, seed: int = 0,
                   ) -> tuple[Space, PortMapping, PortMapping, list[Observation]]:
    """(space, ground truth, m1, singleton observations) for a seeded random mapping."""
    rng = random.Random(seed)
    ports = [f"p{k}" for k in range(n_ports)]
    insns = [f"i{j}" for j in range(n_insns)]
    truth = PortMapping.two_level(ports, {i: rng.sample(ports, rng.randint(1, n_ports))
                                          for i in insns})
    obs = [(e, bottleneck(truth, e).inverse_throughput) for e in (Experiment({i: 1}) for i in insns)]
    m1 = PortMapping.two_level(ports, {i: ports[:len(truth.uops_of(i)[0].ports)] for i in insns})
    return Space(tuple(insns), tuple(ports)), truth, m1, obs


def find_other_mapping_instance(n_insns: int, n_ports: int, seed: int = 0,
                                bound: int = 4) -> Problem:
    """The φ_findOtherMapping problem of `cegis_instance` with experiments of ≤ `bound` insns."""
    space, _, m1, obs = cegis_instance(n_insns, n_ports, seed)
    problem = build_find_other_mapping(space, m1, obs, bound=bound).problem
    problem.name = f"findOtherMapping {n_insns} insns x {n_ports} ports (seed {seed})"
    return problem


__all__ = ["cegis_instance", "find_other_mapping_instance"]
