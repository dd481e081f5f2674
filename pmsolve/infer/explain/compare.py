"""Agreement of an inferred mapping with a ground truth up to port renaming (Def. 3.16).

The renaming is the assignment of inferred to true ports that best matches, per port, how many
µops of each scheme may use it (Hungarian method on the summed differences). For mappings that
agree up to renaming this finds the renaming exactly; otherwise it is the closest one, and the
schemes whose port usage still differs are listed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmsolve.errors import ValidationError
from pmsolve.model import PortMapping


@dataclass(frozen=True)
class Agreement:
    renaming: dict[str, str]  # inferred port -> true port
    compared: int  # schemes in both mappings
    identical: tuple[str, ...]
    different: tuple[str, ...]
    missing: tuple[str, ...]  # in the truth, not in the inferred mapping

    @property
    def total(self) -> int:
        return self.compared + len(self.missing)

    def rate(self) -> float:
        return len(self.identical) / self.total if self.total else 1.0


def _usage(m: PortMapping, insns: list[str], ports: list[str]) -> np.ndarray:
    col = {i: j for j, i in enumerate(insns)}
    a = np.zeros((len(ports), len(insns)))
    row = {p: k for k, p in enumerate(ports)}
    for i in insns:
        for u in m.uops_of(i):
            for p in u.ports:
                a[row[p], col[i]] += u.count
    return a


def agreement(truth: PortMapping, inferred: PortMapping | None, schemes: list[str] | None = None) -> Agreement:
    """Compare on ``schemes`` (default: all of the truth's)."""
    from scipy.optimize import linear_sum_assignment

    schemes = list(schemes if schemes is not None else truth.instructions)
    have = [i for i in schemes if inferred is not None and i in inferred.uops]
    missing = tuple(i for i in schemes if i not in have)
    if inferred is None or not have:
        return Agreement({}, 0, (), (), missing)
    if len(inferred.ports) != len(truth.ports):
        raise ValidationError(f"compare: {len(inferred.ports)} inferred ports vs {len(truth.ports)} true ports")
    pi, pt = list(inferred.ports), list(truth.ports)
    a, b = _usage(inferred, have, pi), _usage(truth, have, pt)
    cost = np.abs(a[:, None, :] - b[None, :, :]).sum(axis=2)
    rows, cols = linear_sum_assignment(cost)
    renaming = {pi[r]: pt[c] for r, c in zip(rows, cols)}
    renamed = inferred.rename_ports(renaming)
    same = tuple(i for i in have if renamed.uops[i] == truth.uops[i])
    diff = tuple(i for i in have if renamed.uops[i] != truth.uops[i])
    return Agreement(renaming, len(have), same, diff, missing)
