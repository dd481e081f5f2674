"""findMapping and findOtherMapping (sec. 4.2.3) as IR problems, plus solving helpers.

    φ_findMapping      := ∧_(e,t_e) relateThroughput[M_free, e, t_e]
    φ_findOtherMapping := t1 ≠ t2 ∧ relateThroughput[M1, e_free, t1]
                          ∧ relateThroughput[M_free, e_free, t2] ∧ φ_findMapping

`build_*` return an Encoding (problem, decode, and the variable handles "mapping" and
"experiment"); `find_*` solve on a backend, decode, and re-check the answer with the exact
bottleneck formula (pmsolve.formula) before returning it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

from pmsolve.backends import solve
from pmsolve.formula import bottleneck
from pmsolve.encodings.encoding import Encoding
from pmsolve.encodings.experiments import fixed_experiment, free_experiment
from pmsolve.encodings.mappings import (
    MappingEnc, fixed_count_mapping, fixed_mapping, power_set_mapping, two_level_mapping,
)
from pmsolve.encodings.relate import differ, matches, relate_throughput, separation
from pmsolve.errors import SolverError, ValidationError
from pmsolve.model import Experiment, PortMapping
from pmsolve.symbolic import Formula, Problem

Observation = tuple[Experiment, Fraction]


@dataclass(frozen=True)
class Space:
    """Which mappings to search: "two-level", "fixed-counts" (needs uops_per_insn) or
    "power-set" (needs max_count), over these instructions and ports."""

    instructions: tuple[str, ...]
    ports: tuple[str, ...]
    kind: str = "two-level"
    uops_per_insn: dict[str, int] | None = None
    max_count: int = 2

    def free(self, prefix: str = "") -> MappingEnc:
        if self.kind == "two-level":
            return two_level_mapping(self.instructions, self.ports, prefix)
        if self.kind == "fixed-counts":
            if self.uops_per_insn is None:
                raise ValidationError("the fixed-counts space needs uops_per_insn")
            return fixed_count_mapping({i: self.uops_per_insn[i] for i in self.instructions},
                                       self.ports, prefix)
        if self.kind == "power-set":
            return power_set_mapping(self.instructions, self.ports, self.max_count, prefix)
        raise ValidationError(f"unknown mapping space {self.kind!r}: two-level, fixed-counts, power-set")


def observation(m_free: MappingEnc, experiment: Experiment, measured: Fraction, tag: str, *,
                r_max: Fraction | int | None = None, epsilon: Fraction | int | None = None,
                faithful: bool = False) -> tuple[tuple[Formula, ...], Formula]:
    """relateThroughput[M_free, e, t_e] for one measurement: (its constraints, the match formula).

    Incremental CEGIS adds these to a session as measurements arrive (sec. 4.3); naming the
    match formula makes it show up in unsat cores ("these measurements contradict each other").
    `tag` must be unique per observation: it prefixes the auxiliary variables.
    """
    exp = fixed_experiment(experiment, m_free.instructions)
    rel = relate_throughput(m_free, exp, f"{tag}.", r_max=_frac(r_max), faithful=faithful)
    return rel.constraints, matches(rel.t, Fraction(measured), exp, _frac(epsilon))


def _observations(problem: Problem, m_free: MappingEnc, observations: Sequence[Observation],
                  *, r_max: Fraction | None, epsilon: Fraction | None, faithful: bool) -> None:
    for n, (e, t_e) in enumerate(observations):
        cs, match = observation(m_free, e, Fraction(t_e), f"o{n}", r_max=r_max, epsilon=epsilon,
                                faithful=faithful)
        problem.add(cs)
        problem.add(match, name=f"observed[{e}]")


def build_find_mapping(space: Space, observations: Sequence[Observation], *,
                       r_max: Fraction | int | None = None, epsilon: Fraction | int | None = None,
                       faithful: bool = False, strict_margin: Fraction | None = None,
                       ) -> Encoding[PortMapping]:
    """φ_findMapping: a mapping of `space` that explains every observation.

    With noise ε the match is strict (sec. 4.3); MILP backends then need `strict_margin`.
    """
    m_free = space.free("M.")
    p = Problem(name="findMapping", strict_margin=strict_margin)
    p.add(m_free.constraints)
    _observations(p, m_free, observations, r_max=_frac(r_max), epsilon=_frac(epsilon),
                  faithful=faithful)
    return Encoding(p, None, m_free.decode, {"mapping": m_free})


def build_find_other_mapping(space: Space, m1: PortMapping, observations: Sequence[Observation],
                             *, bound: int, r_max: Fraction | int | None = None,
                             epsilon: Fraction | int | None = None, faithful: bool = False,
                             strict_margin: Fraction | None = None,
                             ) -> Encoding[tuple[PortMapping, Experiment]]:
    """φ_findOtherMapping with experiments of at most `bound` instructions.

    For MILP backends the problem carries `strict_margin` = the gap of `separation()` when there
    is no noise (exact); with noise ε the strict comparisons of sec. 4.3 need a margin, which
    the caller passes as `strict_margin` (an approximation of `<` that the SMT routes don't need).
    """
    r, eps = _frac(r_max), _frac(epsilon)
    m_free = space.free("M.")
    e_free = free_experiment(space.instructions, bound, "E.")
    p = Problem(name="findOtherMapping")
    p.add(m_free.constraints)
    p.add(e_free.constraints)
    rel1 = relate_throughput(fixed_mapping(m1, space.instructions), e_free, "d1.", r_max=r,
                             faithful=faithful)
    rel2 = relate_throughput(m_free, e_free, "d2.", r_max=r, faithful=faithful)
    p.add(rel1.constraints)
    p.add(rel2.constraints)
    p.add(differ(rel1.t, rel2.t, e_free, eps), name="distinguish")
    _observations(p, m_free, observations, r_max=r, epsilon=eps, faithful=faithful)
    p.strict_margin = strict_margin if eps else separation(len(space.ports), r)

    def decode(answer: object) -> tuple[PortMapping, Experiment]:
        return m_free.decode(answer), e_free.decode(answer)

    return Encoding(p, None, decode, {"mapping": m_free, "experiment": e_free, "t1": rel1.t,
                                      "t2": rel2.t})


def _frac(x: Fraction | int | None) -> Fraction | None:
    return None if x is None else Fraction(x)


def _explains(mapping: PortMapping, observations: Sequence[Observation],
              r_max: Fraction | None, epsilon: Fraction | None) -> str | None:
    for e, t_e in observations:
        t = bottleneck(mapping, e, r_max).inverse_throughput
        ok = t == Fraction(t_e) if not epsilon else abs(t - Fraction(t_e)) < epsilon * e.size
        if not ok:
            return f"{e}: the mapping gives {t}, observed {t_e}"
    return None


def find_mapping(space: Space, observations: Sequence[Observation], backend: str | None = None,
                 *, r_max: Fraction | int | None = None, epsilon: Fraction | int | None = None,
                 timeout: float | None = None) -> PortMapping | None:
    """A mapping explaining the observations, or None if none exists in `space`."""
    enc = build_find_mapping(space, observations, r_max=r_max, epsilon=epsilon)
    res = solve(enc.problem, backend, timeout=timeout)
    if res.infeasible:
        return None
    if not res.feasible:
        raise SolverError(f"findMapping: solver gave no answer ({res})")
    m = enc.decode(res)
    bad = _explains(m, observations, _frac(r_max), _frac(epsilon))
    if bad:
        raise SolverError(f"findMapping on {res.backend} returned a mapping that fails {bad}")
    return m


def find_other_mapping(space: Space, m1: PortMapping, observations: Sequence[Observation],
                       backend: str | None = None, *, bound: int,
                       r_max: Fraction | int | None = None, epsilon: Fraction | int | None = None,
                       timeout: float | None = None) -> tuple[PortMapping, Experiment] | None:
    """Another mapping consistent with the observations plus an experiment telling it apart from
    m1, or None if no experiment of ≤ `bound` instructions distinguishes any such mapping."""
    enc = build_find_other_mapping(space, m1, observations, bound=bound, r_max=r_max,
                                   epsilon=epsilon)
    res = solve(enc.problem, backend, timeout=timeout)
    if res.infeasible:
        return None
    if not res.feasible:
        raise SolverError(f"findOtherMapping: solver gave no answer ({res})")
    m2, e = enc.decode(res)
    r, eps = _frac(r_max), _frac(epsilon)
    bad = _explains(m2, observations, r, eps)
    t1, t2 = bottleneck(m1, e, r).inverse_throughput, bottleneck(m2, e, r).inverse_throughput
    apart = t1 != t2 if not eps else abs(t1 - t2) > 2 * eps * e.size
    if bad or not apart:
        raise SolverError(f"findOtherMapping on {res.backend} returned a bad witness: "
                          f"{bad or f'{e} does not separate {t1} and {t2}'}")
    return m2, e
