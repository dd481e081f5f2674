"""Does a benchmarking strategy determine the port mapping? (dissertation ch. 9, App. E)

:func:`check_strategy` builds the sufficiency problem of :mod:`pmsolve.encodings.sufficiency`,
solves it on a backend, and either proves sufficiency within the bounds (unsat) or returns a
counterexample — two mappings that agree on every experiment of the strategy and an experiment
that tells them apart — after re-checking it with the exact bottleneck formula.
:func:`smallest_counterexample` walks the bounds upwards; :func:`shortcut_gap` checks a
throughput shortcut (Facile's pairwise port unions, App. E.2) against the exact formula.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from pmsolve.backends import solve
from pmsolve.encodings.mapping_class import MappingClass
from pmsolve.encodings.shortcut import build_shortcut_gap, pairwise_union_admissible
from pmsolve.encodings.sufficiency import build_sufficiency
from pmsolve.errors import SolverError, ValidationError
from pmsolve.model import Experiment, PortMapping, sort_ports
from pmsolve.strategy.strategies import Strategy, instruction_names, observe, parse_strategy, port_names
from pmsolve.throughput import bottleneck, inverse_throughput

SUFFICIENT, COUNTEREXAMPLE, UNKNOWN = "sufficient", "counterexample", "unknown"


def fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def mapping_json(m: PortMapping, only: tuple[str, ...] | None = None) -> dict[str, list[dict[str, Any]]]:
    return {i: [{"ports": sort_ports(u.ports), "count": u.count} for u in us]
            for i, us in m.uops.items() if only is None or i in only}


def mapping_lines(m: PortMapping, only: tuple[str, ...]) -> list[str]:
    width = max(len(i) for i in only)
    return [f"{i:<{width}} → " + " + ".join(
        (f"{u.count}×" if u.count > 1 else "") + "{" + ",".join(sort_ports(u.ports)) + "}"
        for u in m.uops_of(i)) for i in only]


@dataclass(frozen=True)
class Counterexample:
    """Two mappings agreeing on every strategy experiment (with the common tp⁻¹) and an
    experiment on which they differ; all values computed by the exact bottleneck formula."""

    m1: PortMapping
    m2: PortMapping
    experiment: Experiment
    tp1: Fraction
    tp2: Fraction
    agreed: tuple[tuple[Experiment, Fraction], ...]
    uop_counts: dict[str, int] | None = None

    def to_json(self, instructions: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "m1": mapping_json(self.m1, instructions), "m2": mapping_json(self.m2, instructions),
            "experiment": dict(self.experiment.items()),
            "tp1": fmt(self.tp1), "tp2": fmt(self.tp2),
            "bottleneck1": sort_ports(bottleneck(self.m1, self.experiment).ports),
            "bottleneck2": sort_ports(bottleneck(self.m2, self.experiment).ports),
            "strategy_experiments": [{"counts": dict(e.items()), "tp": fmt(t)} for e, t in self.agreed],
        }
        if self.uop_counts is not None:
            out["uop_counts"] = self.uop_counts
        return out


@dataclass(frozen=True)
class StrategyVerdict:
    """The answer of :func:`check_strategy`."""

    strategy: str
    description: str
    cls: MappingClass
    max_exp_len: int
    status: str  # sufficient | counterexample | unknown
    backend: str
    seconds: float
    counterexample: Counterexample | None = None
    encoded_experiments: int = 0
    reason: str = ""

    @property
    def sufficient(self) -> bool | None:
        return None if self.status == UNKNOWN else self.status == SUFFICIENT

    def bounds(self) -> dict[str, Any]:
        return {"insns": len(self.cls.instructions), "ports": len(self.cls.ports), "levels": self.cls.levels,
                "max_uops": self.cls.max_uops, "max_exp_len": self.max_exp_len,
                "fixed_instructions": list(self.cls.fixed.instructions) if self.cls.fixed else []}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"strategy": self.strategy, "description": self.description,
                               "bounds": self.bounds(), "verdict": self.status, "backend": self.backend,
                               "seconds": round(self.seconds, 3),
                               "encoded_experiments": self.encoded_experiments}
        if self.reason:
            out["reason"] = self.reason
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample.to_json(self.cls.instructions)
        return out

    def render(self) -> str:
        c = self.cls
        lv = "two-level" if c.two_level else f"three-level, ≤ {c.max_uops} µops per instruction"
        fixed = f" + {len(c.fixed.instructions)} known blocking instructions" if c.fixed else ""
        lines = [f"strategy {self.strategy}: {self.description}",
                 f"class: {len(c.instructions)} instructions ({', '.join(c.instructions)}){fixed}, "
                 f"{len(c.ports)} ports ({', '.join(c.ports)}), {lv}; "
                 f"distinguishing experiments of ≤ {self.max_exp_len} instructions"]
        if self.status == SUFFICIENT:
            lines.append("verdict: SUFFICIENT within these bounds — no two distinguishable mappings of the "
                         "class agree on every strategy experiment (unsat)")
        elif self.status == UNKNOWN:
            lines.append(f"verdict: UNKNOWN ({self.reason})")
        else:
            cx = self.counterexample
            assert cx is not None
            lines.append("verdict: NOT SUFFICIENT — counterexample (validated with the exact bottleneck formula)")
            lines.append("  mapping M1:")
            lines += ["    " + s for s in mapping_lines(cx.m1, c.instructions)]
            lines.append("  mapping M2:")
            lines += ["    " + s for s in mapping_lines(cx.m2, c.instructions)]
            if c.fixed:
                lines.append(f"  (both with the blocking instructions {', '.join(c.fixed.instructions)} "
                             f"on the port set their name lists)")
            lines.append(f"  agree on all {len(cx.agreed)} strategy experiments:")
            width = max(len(str(e)) for e, _ in cx.agreed)
            lines += [f"    {str(e):<{width}}  tp⁻¹ = {fmt(t)}" for e, t in cx.agreed]
            if cx.uop_counts is not None:
                lines.append("    µop counts: " + ", ".join(f"{i}: {n}" for i, n in cx.uop_counts.items()))
            b1 = bottleneck(cx.m1, cx.experiment).ports
            b2 = bottleneck(cx.m2, cx.experiment).ports
            lines.append(f"  told apart by {cx.experiment}: M1 tp⁻¹ = {fmt(cx.tp1)} (bottleneck "
                         f"{{{','.join(sort_ports(b1))}}}), M2 tp⁻¹ = {fmt(cx.tp2)} (bottleneck "
                         f"{{{','.join(sort_ports(b2))}}})")
        lines.append(f"solver: {self.backend}, {self.seconds:.2f} s, {self.encoded_experiments} strategy "
                     f"experiments encoded")
        return "\n".join(lines)


def _validate(strategy: Strategy, cls: MappingClass, m1: PortMapping, m2: PortMapping,
              e: Experiment) -> Counterexample:
    """Re-check a solver's counterexample with the exact formula; SolverError if it is wrong."""
    for m in (m1, m2):
        for i in cls.instructions:
            n = sum(u.count for u in m.uops_of(i))
            if n > cls.max_uops:
                raise SolverError(f"counterexample outside the class: {i} has {n} µops")
    exps1, exps2 = strategy.experiments(m1, cls), strategy.experiments(m2, cls)
    if set(exps1) != set(exps2):
        raise SolverError("counterexample is wrong: the two mappings make the strategy run different experiments")
    agreed = []
    for x in exps1:
        t1, t2 = inverse_throughput(m1, x), inverse_throughput(m2, x)
        if t1 != t2:
            raise SolverError(f"counterexample is wrong: the mappings differ on strategy experiment {x} "
                              f"({fmt(t1)} vs {fmt(t2)})")
        agreed.append((x, t1))
    counts = None
    if strategy.observes_uops:
        counts = {i: observe(m1, i)[1] for i in cls.instructions}
        if counts != {i: observe(m2, i)[1] for i in cls.instructions}:
            raise SolverError("counterexample is wrong: the µop counts differ")
    t1, t2 = inverse_throughput(m1, e), inverse_throughput(m2, e)
    if t1 == t2:
        raise SolverError(f"counterexample is wrong: {e} does not tell the mappings apart")
    return Counterexample(m1, m2, e, t1, t2, tuple(agreed), counts)


def _solve(problem, backend: str | None, timeout: float | None):
    return solve(problem, backend, timeout=timeout)


#: the encodings enumerate every non-empty port subset (the bottleneck formula, Thm 5.2): beyond
#: this many ports (65,535 subsets) building them alone would not end in a useful time
MAX_PORTS = 16


def check_strategy(strategy: Strategy | str, insns: int | None, ports: int, *, levels: int = 2,
                   max_uops: int | None = None, max_exp_len: int = 4, backend: str | None = None,
                   timeout: float | None = None, symmetry_breaking: bool = True,
                   shortest: bool = True, given: PortMapping | None = None,
                   encoding: str = "threshold", progress: Callable[[str], None] | None = None) -> StrategyVerdict:
    """Decide whether ``strategy`` determines every mapping of the bounded class up to
    indistinguishability (w.r.t. experiments of ≤ ``max_exp_len`` instructions).

    ``shortest`` re-solves with smaller size bounds so the distinguishing experiment reported
    is as short as possible. ``given`` asks about one mapping only: is *it* determined (M1 = given;
    its instructions and ports must be the class's, i1..iN and 0..K-1, or the file's names)?
    ``encoding`` picks how throughputs are encoded: "threshold" (default: the bottleneck formula
    over all port subsets as integer threshold tests), "max" (the same formula as a real maximum)
    or "relate" (relateThroughput, Def. 4.5; no blocking instructions). ``progress`` receives a
    line per step (encoding, solving, shortening a counterexample): one solver call can take
    minutes.
    """
    say = progress or (lambda msg: None)
    if ports > MAX_PORTS:
        raise ValidationError(f"{ports} ports: the encodings enumerate every non-empty port subset ({ports} ports "
                              f"have 2^{ports} - 1 of them); at most {MAX_PORTS} ports")
    s = parse_strategy(strategy) if isinstance(strategy, str) else strategy
    cls = s.mapping_class(insns, ports, levels, max_uops)
    if given is not None:
        given = _conform(given, cls)
    t0 = time.perf_counter()
    say(f"encoding {s.name} for {len(cls.instructions)} instruction(s) × {len(cls.ports)} port(s), "
        f"{2 ** len(cls.ports) - 1} port subsets, experiments of ≤ {max_exp_len} instructions")
    enc = build_sufficiency(cls, s, max_exp_len, symmetry_breaking=symmetry_breaking, given=given,
                            encoding=encoding)
    say(f"encoded {enc.stats['experiments']} strategy experiment(s), {len(enc.problem.constraints)} constraints "
        f"in {time.perf_counter() - t0:.1f} s; solving")
    res = _solve(enc.problem, backend, timeout)
    if res.infeasible:
        return StrategyVerdict(s.name, s.description, cls, max_exp_len, SUFFICIENT, res.backend,
                               time.perf_counter() - t0, encoded_experiments=enc.stats["experiments"])
    if not res.feasible:
        return StrategyVerdict(s.name, s.description, cls, max_exp_len, UNKNOWN, res.backend,
                               time.perf_counter() - t0, encoded_experiments=enc.stats["experiments"],
                               reason=res.reason or res.status)
    m1, m2, e = enc.decode(res)
    cx = _validate(s, cls, m1, m2, e)
    if shortest:
        say(f"counterexample found by {res.backend} after {time.perf_counter() - t0:.1f} s (an experiment of "
            f"{e.size} instructions); looking for a shorter one")
        for bound in range(1, e.size):
            say(f"  solving for experiments of ≤ {bound} instruction(s)")
            small = build_sufficiency(cls, s, bound, symmetry_breaking=symmetry_breaking, given=given,
                                      encoding=encoding)
            r = _solve(small.problem, backend, timeout)
            if r.feasible:
                cx = _validate(s, cls, *small.decode(r))
                break
    return StrategyVerdict(s.name, s.description, cls, max_exp_len, COUNTEREXAMPLE, res.backend,
                           time.perf_counter() - t0, cx, enc.stats["experiments"])


def _conform(given: PortMapping, cls: MappingClass) -> PortMapping:
    """The given mapping on the class's instructions (plus its fixed ones), or a clear error."""
    if set(given.ports) != set(cls.ports):
        raise ValidationError(f"the given mapping's ports {list(given.ports)} are not the class's {list(cls.ports)}")
    missing = [i for i in cls.instructions if i not in given.uops]
    if missing:
        raise ValidationError(f"the given mapping lacks the class's instructions {missing}")
    table = {i: given.uops_of(i) for i in cls.instructions}
    if cls.fixed is not None:
        for i, us in cls.fixed.uops.items():
            if i in given.uops and given.uops_of(i) != us:
                raise ValidationError(f"the given mapping maps the blocking instruction {i} differently")
            table[i] = us
    return PortMapping(cls.ports, table)


def smallest_counterexample(strategy: Strategy | str, *, levels: int = 2, max_uops: int | None = None,
                            max_insns: int = 3, max_ports: int = 4, max_exp_len: int = 4,
                            backend: str | None = None, timeout: float | None = None,
                            progress: Callable[[StrategyVerdict], None] | None = None,
                            ) -> tuple[StrategyVerdict | None, list[StrategyVerdict]]:
    """The first counterexample in the order (fewest instructions, then fewest ports), and every
    verdict on the way (the smaller classes it proved sufficient)."""
    tried = []
    for n in range(1, max_insns + 1):
        for k in range(1, max_ports + 1):
            v = check_strategy(strategy, n, k, levels=levels, max_uops=max_uops, max_exp_len=max_exp_len,
                               backend=backend, timeout=timeout)
            tried.append(v)
            if progress:
                progress(v)
            if v.status == COUNTEREXAMPLE:
                return v, tried
    return None, tried


# --------------------------------------------------------------------------- shortcut formulas

def facile_value(mapping: PortMapping, experiment: Experiment) -> Fraction:
    """Facile's shortcut (Abel et al. 2023, sec. 4.8): the bottleneck formula restricted to port
    sets M[a] ∪ M[b] of pairs of µops in the experiment (App. E.2)."""
    mass = mapping.uop_masses(experiment)
    best = Fraction(0)
    for a in mass:
        for b in mass:
            q = a | b
            best = max(best, Fraction(sum(m for ps, m in mass.items() if ps <= q), len(q)))
    return best


@dataclass(frozen=True)
class ShortcutVerdict:
    shortcut: str
    insns: int
    ports: int
    max_exp_len: int
    status: str  # "exact" (no gap within the bounds) | "gap" | "unknown"
    backend: str
    seconds: float
    mapping: PortMapping | None = None
    experiment: Experiment | None = None
    exact: Fraction | None = None
    shortcut_value: Fraction | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"shortcut": self.shortcut, "bounds": {"insns": self.insns, "ports": self.ports,
                               "max_exp_len": self.max_exp_len}, "verdict": self.status,
                               "backend": self.backend, "seconds": round(self.seconds, 3)}
        if self.mapping is not None:
            out["mapping"] = mapping_json(self.mapping)
            out["experiment"] = dict(self.experiment.items())  # type: ignore[union-attr]
            out["exact"] = fmt(self.exact)  # type: ignore[arg-type]
            out["shortcut_value"] = fmt(self.shortcut_value)  # type: ignore[arg-type]
        return out

    def render(self) -> str:
        lines = [f"shortcut {self.shortcut}: the bottleneck formula over only the port sets M[a] ∪ M[b] of "
                 f"pairs of µops, against the exact formula (Thm 5.2)",
                 f"class: {self.insns} instructions, {self.ports} ports, two-level; experiments of ≤ "
                 f"{self.max_exp_len} instructions"]
        if self.status == "exact":
            lines.append("verdict: the shortcut equals the exact throughput on the whole class (unsat)")
        elif self.status == "gap":
            assert self.mapping is not None
            lines.append("verdict: the shortcut DIFFERS from the exact throughput (validated):")
            lines += ["    " + s for s in mapping_lines(self.mapping, self.mapping.instructions)]
            lines.append(f"  experiment {self.experiment}: exact tp⁻¹ = {fmt(self.exact)}, "  # type: ignore[arg-type]
                         f"shortcut = {fmt(self.shortcut_value)}")  # type: ignore[arg-type]
        else:
            lines.append("verdict: UNKNOWN")
        lines.append(f"solver: {self.backend}, {self.seconds:.2f} s")
        return "\n".join(lines)


def shortcut_gap(insns: int, ports: int, *, max_exp_len: int = 3, backend: str | None = None,
                 timeout: float | None = None) -> ShortcutVerdict:
    """Search a two-level mapping and experiment where Facile's pairwise shortcut is not exact."""
    if insns < 1 or ports < 1:
        raise ValidationError("the numbers of instructions and ports must be ≥ 1")
    cls = MappingClass(instruction_names(insns), port_names(ports))
    t0 = time.perf_counter()
    enc = build_shortcut_gap(cls, max_exp_len, pairwise_union_admissible)
    res = _solve(enc.problem, backend, timeout)
    if res.infeasible:
        return ShortcutVerdict("facile", insns, ports, max_exp_len, "exact", res.backend, time.perf_counter() - t0)
    if not res.feasible:
        return ShortcutVerdict("facile", insns, ports, max_exp_len, "unknown", res.backend, time.perf_counter() - t0)
    mapping, exp = enc.decode(res)
    used = [i for i in mapping.instructions if exp[i]]
    mapping = mapping.restrict(used)
    exact, short = inverse_throughput(mapping, exp), facile_value(mapping, exp)
    if exact == short:
        raise SolverError(f"shortcut gap on {res.backend} is wrong: both give {fmt(exact)} on {exp}")
    return ShortcutVerdict("facile", insns, ports, max_exp_len, "gap", res.backend, time.perf_counter() - t0,
                           mapping, exp, exact, short)
