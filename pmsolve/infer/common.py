"""What the inference algorithms share: port naming and the check on unseen experiments.

**Ports** are given as names (kept as they are in the result) or as a count K, which names
them "0" … "K-1" (as every pmsolve mapping generator does). A port's name carries no
information: an inferred mapping is determined up to renaming its ports.

**The check on unseen experiments** (issue 18 item 6): a mapping that explains every experiment
an algorithm chose can still be wrong elsewhere, e.g. when the mapping space has fewer ports
than the machine (the "unique" mapping is unique among the wrong candidates) or the noise
exceeds the tolerance. After an inference, a few random experiments of 3–5 instructions that
were not used are measured and predicted; a mismatch beyond the tolerance is reported with
the experiments and the likely cause, so a wrong answer is never a confident one.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pmsolve.errors import PmsolveError, ValidationError
from pmsolve.model import Experiment, PortMapping
from pmsolve.throughput import batch_inverse_throughput


def port_names(ports: int | Sequence[str], who: str) -> tuple[str, ...]:
    """Port names from a count K ("0" … "K-1") or a sequence of distinct names."""
    if isinstance(ports, bool) or not isinstance(ports, (int, Sequence)) or isinstance(ports, (str, bytes)):
        raise ValidationError(f"{who}: ports must be a count or a list of names, got {ports!r}")
    names = tuple(str(k) for k in range(ports)) if isinstance(ports, int) else tuple(str(p) for p in ports)
    if not names:
        raise ValidationError(f"{who}: ports must name at least one port, got {ports!r}")
    if len(set(names)) != len(names) or not all(n.strip() for n in names):
        raise ValidationError(f"{who}: the names of the ports must be distinct and non-empty, got {list(names)}")
    return names


def unseen_experiments(instructions: Sequence[str], used: Collection[Experiment], count: int,
                       sizes: tuple[int, int] = (3, 5), seed: int = 0) -> list[Experiment]:
    """Up to ``count`` distinct random experiments of ``sizes`` instructions (drawn with a
    generator keyed by ``seed``) that are not in ``used``; when few instructions leave too few
    such experiments (the inference used them all), up to three instructions longer."""
    lo, hi = sizes
    if count < 0 or not 1 <= lo <= hi:
        raise ValidationError(f"check on unseen experiments: need count ≥ 0 and 1 ≤ min ≤ max size, "
                              f"got {count}, {sizes}")
    rng = random.Random(f"pmsolve-unseen-{seed}")
    insns = list(instructions)
    out: list[Experiment] = []
    for top in (hi, hi + 3):
        for _ in range(50 * count):
            if len(out) >= count or not insns:
                return out
            e = Experiment([(rng.choice(insns), 1) for _ in range(rng.randint(lo, top))])
            if e not in used and e not in out:
                out.append(e)
    return out


@dataclass(frozen=True)
class Mismatch:
    """An unseen experiment the mapping predicts beyond the tolerance."""

    experiment: Experiment
    measured: float
    predicted: float

    def describe(self) -> str:
        return f"{self.experiment}: measured {self.measured:.4g}, the mapping gives {self.predicted:.4g}"


@dataclass(frozen=True)
class UnseenCheck:
    """The result of checking an inferred mapping on experiments the inference did not use.

    ``experiments`` are (experiment, measured, predicted) triples; ``mismatches`` those beyond
    ``tolerance`` (in words); ``ok`` is the verdict (CEGIS: no mismatch; PMEvo, an approximate
    fit: a mean relative error within its tolerance); ``skipped`` says why nothing was checked
    (e.g. a recorded oracle cannot measure new experiments). When not ``ok``, :meth:`describe`
    names the experiments and the likely ``cause``."""

    experiments: tuple[tuple[Experiment, float, float], ...]
    tolerance: str
    mismatches: tuple[Mismatch, ...] = ()
    ok: bool = True
    cause: str = ""
    skipped: str = ""

    @property
    def mape(self) -> float:
        """Mean relative error of the predictions on the unseen experiments (a fraction)."""
        rows = [(m, p) for _, m, p in self.experiments if m > 0]
        return sum(abs(p - m) / m for m, p in rows) / len(rows) if rows else 0.0

    def summary(self) -> str:
        """A short line for progress displays."""
        if self.skipped:
            return f"not checked on unseen experiments ({self.skipped})"
        verdict = "within the tolerance" if self.ok else "WRONG (see the result)"
        return f"checked on {len(self.experiments)} unseen experiment(s): {verdict}"

    def describe(self, names: Mapping[str, str] | None = None) -> str:
        """One paragraph; ``names`` renames the library's option names in the advice (the
        command line passes its flags)."""
        if self.skipped:
            return f"not checked on unseen experiments: {self.skipped}"
        mape = f"MAPE {100 * self.mape:.1f} %"
        if self.ok:
            return f"checked on {len(self.experiments)} unseen experiment(s): within {self.tolerance} ({mape})"
        shown = "; ".join(m.describe() for m in self.mismatches[:4])
        more = f" and {len(self.mismatches) - 4} more" if len(self.mismatches) > 4 else ""
        return (f"WARNING: the mapping is wrong on {len(self.mismatches)} of {len(self.experiments)} unseen "
                f"experiment(s) (beyond {self.tolerance}; {mape}): {shown}{more}. Likely cause: "
                f"{rename_options(self.cause, names)}")

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "tolerance": self.tolerance, "mape": self.mape, "skipped": self.skipped or None,
                "cause": self.cause or None,
                "experiments": [{"experiment": dict(e.items()), "measured": m, "predicted": p}
                                for e, m, p in self.experiments],
                "mismatches": [str(m.experiment) for m in self.mismatches]}


def rename_options(text: str, names: Mapping[str, str] | None) -> str:
    """``text`` with every `option` name (in backquotes) replaced by ``names[option]``."""
    for option, shown in (names or {}).items():
        text = text.replace(f"`{option}`", f"`{shown}`")
    return text


def check_unseen(oracle: Any, mapping: PortMapping, instructions: Sequence[str], used: Collection[Experiment], *,
                 count: int, seed: int, r_max: float | None, within: Callable[[Experiment, float, float], bool],
                 tolerance: str, causes: Callable[[list[Mismatch]], str],
                 verdict: Callable[[list[Mismatch], UnseenCheck], bool] | None = None,
                 sizes: tuple[int, int] = (3, 5)) -> UnseenCheck | None:
    """Measure up to ``count`` unseen experiments and compare them with ``mapping``'s
    predictions: ``within(e, measured, predicted)`` accepts one, ``verdict(mismatches, check)``
    judges them all (default: no mismatch), ``causes(mismatches)`` explains a failure. None
    when ``count`` is 0."""
    if count <= 0:
        return None
    exps = unseen_experiments(instructions, used, count, sizes, seed)
    if not exps:
        return UnseenCheck((), tolerance, skipped="every experiment of these sizes was used already")
    try:
        measured = [float(v) for v in oracle.measure(exps)]
    except PmsolveError as exc:
        return UnseenCheck((), tolerance, skipped=f"the oracle could not measure them ({exc})")
    predicted = [float(v) for v in batch_inverse_throughput([(mapping, e) for e in exps], r_max)]
    rows = tuple(zip(exps, measured, predicted))
    bad = [Mismatch(e, m, p) for e, m, p in rows if not (m == m and within(e, m, p))]
    check = UnseenCheck(rows, tolerance, tuple(bad))
    ok = verdict(bad, check) if verdict is not None else not bad
    return replace(check, ok=ok, cause="" if ok else causes(bad))


def likely_cause(mismatches: Sequence[Mismatch], ports: int, noise: str) -> str:
    """The likely cause of mismatches in words, from their direction: a machine faster than
    the mapping has more parallelism than its ports allow (too few ports); a slower machine
    has a limit the model lacks (front end) or more noise than tolerated."""
    faster = sum(m.measured < m.predicted for m in mismatches)
    slower = len(mismatches) - faster
    parts = []
    if faster:
        parts.append(f"the machine ran {faster} of them faster than any mapping with {ports} port(s) can "
                     f"predict: too few ports (give more `ports`)")
    if slower:
        parts.append(f"the machine ran {slower} of them slower than predicted: a front-end limit the "
                     f"inference did not model (`r_max`), a bottleneck outside the port model, or {noise}")
    return "; ".join(parts)
