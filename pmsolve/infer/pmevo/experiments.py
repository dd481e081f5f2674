"""PMEvo's experiment design (sec. 5.1.1) and congruence filtering (sec. 5.1.2).

Singletons give each scheme's own tp⁻¹; pairs {a:1, b:1} reveal whether two schemes compete
for ports (then tp⁻¹ adds up); ratio pairs {a:1, b:n} with n = ⌈tp⁻¹(a)/tp⁻¹(b)⌉ balance the
two so that disjoint port sets show as n·tp⁻¹(b). Schemes that no such experiment tells apart
are merged into one congruence class, which shrinks the evolutionary search space.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from pmsolve.errors import ValidationError
from pmsolve.model import Experiment


def singletons(instructions: Sequence[str]) -> list[Experiment]:
    return [Experiment({i: 1}) for i in instructions]


def ratio(t_big: float, t_small: float) -> int:
    """n = ⌈tp⁻¹(a) / tp⁻¹(b)⌉ for a ratio pair; a tiny tolerance keeps exact ratios exact."""
    return max(1, math.ceil(t_big / t_small - 1e-9))


def pair_experiments(instructions: Sequence[str], single: Mapping[str, float]) -> list[Experiment]:
    """All pairs {a:1, b:1} and ratio pairs {a:1, b:n} for tp⁻¹(a) > tp⁻¹(b), in a fixed order."""
    out: list[Experiment] = []
    insns = list(instructions)
    for x, a in enumerate(insns):
        for b in insns[x + 1:]:
            out.append(Experiment({a: 1, b: 1}))
            big, small = (a, b) if single[a] > single[b] else (b, a)
            if single[big] > single[small]:
                n = ratio(single[big], single[small])
                if n > 1:
                    out.append(Experiment({big: 1, small: n}))
    return out


def random_experiments(instructions: Sequence[str], count: int, sizes: tuple[int, int] = (3, 5),
                       seed: int = 0) -> list[Experiment]:
    """``count`` random experiments (an extension beyond the paper's pairs): each draws a
    length uniformly from ``sizes`` and that many schemes uniformly with replacement.

    Pairs do not determine a mapping (issue 8's checker finds counterexamples from 3
    instructions on 4 ports), while the experiments one wants to predict mix several schemes;
    training on such mixtures pins down which µops compete. The generator is keyed by a string
    so that it never coincides with an evaluation set drawn from ``random.Random(int)``.
    """
    lo, hi = sizes
    if count < 0 or not 1 <= lo <= hi:
        raise ValidationError(f"random experiments: need count ≥ 0 and 1 ≤ min ≤ max size, got {count}, {sizes}")
    insns = list(instructions)
    rng = random.Random(f"pmevo-training-{seed}")
    return [Experiment([(rng.choice(insns), 1) for _ in range(rng.randint(lo, hi))]) for _ in range(count)]


def merge_to_representatives(e: Experiment, rep_of: Mapping[str, str]) -> Experiment:
    """The experiment with every scheme replaced by its congruence class representative."""
    return Experiment([(rep_of[i], n) for i, n in e.items()])


def generate(instructions: Sequence[str], single: Mapping[str, float]) -> list[Experiment]:
    """The full PMEvo experiment set: singletons, then pairs and ratio pairs."""
    return singletons(instructions) + pair_experiments(instructions, single)


def close(t1: float | np.ndarray, t2: float | np.ndarray, eps: float) -> bool | np.ndarray:
    """Equal up to measurement error: symmetric relative difference below ε (sec. 5.1.2)."""
    return np.abs(t1 - t2) / (np.abs(t1 + t2) / 2) < eps


@dataclass(frozen=True)
class Congruence:
    """A partition of the schemes: representative -> members (the representative first)."""

    classes: dict[str, tuple[str, ...]]

    @property
    def representatives(self) -> tuple[str, ...]:
        return tuple(self.classes)

    def representative_of(self) -> dict[str, str]:
        return {m: r for r, ms in self.classes.items() for m in ms}


def congruence_classes(instructions: Sequence[str], measured: Mapping[Experiment, float],
                       eps: float = 0.05) -> Congruence:
    """Partition schemes into classes no generated experiment distinguishes (up to ε).

    a ~ b iff their singletons agree and, for every other scheme c, experiments that combine
    a with c and b with c in the same counts (pairs, and ratio pairs where both exist with the
    same n) agree. The ε-relation is not transitive, so classes are formed greedily: each scheme
    joins the first class whose representative it matches (deterministic in the input order).
    """
    if eps < 0:
        raise ValidationError(f"congruence ε must be ≥ 0, got {eps}")
    insns = list(instructions)
    k = len(insns)
    idx = {i: x for x, i in enumerate(insns)}
    single = np.array([_lookup(measured, Experiment({i: 1})) for i in insns])
    # pair[x, y]: tp⁻¹{x:1, y:1}; ratio_key/ratio_val[x, y]: the experiment mixing x and y with
    # x once and y n times (n > 1, stored as +n) or x n times and y once (stored as -n).
    pair = np.full((k, k), np.nan)
    rkey = np.zeros((k, k), dtype=np.int64)
    rval = np.full((k, k), np.nan)
    for e, t in measured.items():
        items = e.items()
        if len(items) != 2 or items[0][0] not in idx or items[1][0] not in idx:
            continue
        (a, na), (b, nb) = items
        x, y = idx[a], idx[b]
        if na == nb == 1:
            pair[x, y] = pair[y, x] = t
        elif na == 1 or nb == 1:
            n = nb if na == 1 else -na
            rkey[x, y], rval[x, y] = n, t
            rkey[y, x], rval[y, x] = -n, t
    reps: list[int] = []
    members: dict[int, list[int]] = {}
    others = np.arange(k)
    for x in range(k):
        for r in reps:
            if not close(single[x], single[r], eps):
                continue
            mask = (others != x) & (others != r)
            a, b = pair[x, mask], pair[r, mask]
            both = ~np.isnan(a) & ~np.isnan(b)
            if not np.all(close(a[both], b[both], eps)):
                continue
            same = (rkey[x, mask] == rkey[r, mask]) & (rkey[x, mask] != 0)
            if not np.all(close(rval[x, mask][same], rval[r, mask][same], eps)):
                continue
            members[r].append(x)
            break
        else:
            reps.append(x)
            members[x] = [x]
    return Congruence({insns[r]: tuple(insns[m] for m in members[r]) for r in reps})


def _lookup(measured: Mapping[Experiment, float], e: Experiment) -> float:
    try:
        return measured[e]
    except KeyError:
        raise ValidationError(f"congruence filtering needs the measurement of {e}") from None
