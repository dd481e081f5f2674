"""PMEvo's evolutionary operators (sec. 5.1.3) on genomes: one ``{port bitmask: count}`` per
instruction. All randomness comes from the ``random.Random`` passed in, so runs are
reproducible under a seed and resumable from a saved generator state."""

from __future__ import annotations

import math
import random
from typing import Sequence

Genome = list[dict[int, int]]


def random_genome(rng: random.Random, n_ports: int, single: Sequence[float], max_uops: int | None = None) -> Genome:
    """Sample 1..|P| (or 1..``max_uops``) distinct µops per instruction, each issued
    1..⌈tp⁻¹(i)·|u|⌉ times: more copies of u than that would alone make i slower than measured."""
    full = (1 << n_ports) - 1
    top = n_ports if max_uops is None else max(1, min(max_uops, n_ports))
    genome: Genome = []
    for t in single:
        masks = rng.sample(range(1, full + 1), rng.randint(1, top))
        genome.append({u: rng.randint(1, max(1, math.ceil(t * u.bit_count() - 1e-9))) for u in masks})
    return genome


def _merge(entries: Sequence[tuple[int, int]]) -> dict[int, int]:
    """Entries of one child; a µop inherited from both parents keeps the larger count (the
    union of the parents' evidence, rather than a sum that would inflate the mapping)."""
    out: dict[int, int] = {}
    for u, n in entries:
        out[u] = max(out.get(u, 0), n)
    return out


def recombine(rng: random.Random, left: Genome, right: Genome) -> tuple[Genome, Genome]:
    """Per instruction: concatenate both parents' µop lists, shuffle, split into two non-empty
    parts, one per child."""
    c1: Genome = []
    c2: Genome = []
    for p, q in zip(left, right):
        entries = list(p.items()) + list(q.items())
        rng.shuffle(entries)
        cut = rng.randint(1, len(entries) - 1)
        c1.append(_merge(entries[:cut]))
        c2.append(_merge(entries[cut:]))
    return c1, c2


def mutate(rng: random.Random, genome: Genome, n_ports: int) -> Genome:
    """Optional mutation (off by default, as in the paper): one random edit of one instruction —
    add a µop, drop a µop, change a count by one, or toggle one port of a µop."""
    out = [dict(e) for e in genome]
    entry = out[rng.randrange(len(out))]
    kind = rng.randrange(4)
    u = rng.choice(sorted(entry))
    if kind == 0:
        v = rng.randrange(1, 1 << n_ports)
        entry[v] = entry.get(v, 0) + 1
    elif kind == 1 and len(entry) > 1:
        del entry[u]
    elif kind == 2:
        entry[u] = max(1, entry[u] + rng.choice((-1, 1)))
    else:
        v = u ^ (1 << rng.randrange(n_ports))
        if v:
            n = entry.pop(u)
            entry[v] = max(entry.get(v, 0), n)
    return out


def canonical(genome: Genome) -> tuple:
    """A hashable key: equal keys mean equal mappings."""
    return tuple(tuple(sorted(e.items())) for e in genome)
