"""The knobs of a CEGIS run (:class:`CegisOptions`) and the handles user constraints get
(:class:`MappingVars`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pmsolve.encodings.cegis import Space
from pmsolve.encodings.mappings import uop_name
from pmsolve.errors import ValidationError
from pmsolve.model import Experiment
from pmsolve.symbolic import Bool, BoolVar, Formula, Int

STRATEGIES = ("split", "joint")
ENCODINGS = ("auto", "clauses", "bounds", "relate")
INITIAL = ("none", "singletons", "pairs")


class MappingVars:
    """Names the mapping variables for user constraints: ``port(insn, port, uop=1)`` is the Bool
    "µop `uop` of `insn` may run on `port`" (two-level: uop 1 only); ``count(insn, ports)`` is the
    Int µop count of the power-set space."""

    def __init__(self, space: Space):
        self.space = space
        self.instructions = space.instructions
        self.ports = space.ports

    def port(self, insn: str, port: str, uop: int = 1) -> BoolVar:
        self._check(insn, port)
        if self.space.kind == "two-level":
            if uop != 1:
                raise ValidationError(f"two-level mappings have one µop per instruction, not µop {uop} of {insn!r}")
            return Bool(f"M.mapping[{insn},{port}]")
        if self.space.kind == "fixed-counts":
            n = (self.space.uops_per_insn or {}).get(insn, 0)
            if not 1 <= uop <= n:
                raise ValidationError(f"{insn!r} has {n} µop(s); µop {uop} does not exist")
            return Bool(f"M.uop2port[{insn}.{uop},{port}]")
        raise ValidationError("port(...) variables exist for two-level and fixed-counts spaces; use count(...)")

    def count(self, insn: str, ports: Iterable[str]) -> Any:
        if self.space.kind != "power-set":
            raise ValidationError("count(...) variables exist only in the power-set space")
        ps = frozenset(ports)
        self._check(insn, *ps)
        return Int(f"M.insn2uop[{insn},{uop_name(ps)}]", 0, self.space.max_count)

    def uops(self, insn: str) -> int:
        if self.space.kind == "two-level":
            return 1
        return (self.space.uops_per_insn or {}).get(insn, 0)

    def _check(self, insn: str, *ports: str) -> None:
        if insn not in self.instructions:
            raise ValidationError(f"unknown instruction {insn!r} in a CEGIS constraint")
        for p in ports:
            if p not in self.ports:
                raise ValidationError(f"unknown port {p!r} in a CEGIS constraint")


@dataclass(frozen=True)
class CegisOptions:
    """Every knob of :func:`~pmsolve.infer.cegis.infer` (defaults: two-level, exact, split
    strategy, symmetry breaking, a check on 8 unseen experiments).

    * ``ports``: a count K (ports named "0" … "K-1") or the port names; ``instructions``: the
      schemes to infer (default: every scheme the oracle knows);
    * ``kind``: "two-level", "fixed-counts" (needs ``uops_per_insn``; Fig. 4.5) or "power-set"
      (µops = all port sets with counts ≤ ``max_count``; Fig. 4.3 — works, but expensive);
    * ``noise_epsilon``: the noise tolerance ε in cycles per instruction (sec. 4.3): a mapping
      explains a measurement t of experiment e when |tp⁻¹(e) − t| < ε·|e| (None: exact);
      ``r_max``: front-end limit (instructions/cycle);
    * ``initial``: "singletons" (sec. 4.3), "pairs" (singletons + every pair) or "none";
      ``extra_initial``: further experiments measured before the first candidate (e.g. the
      pairs an earlier stage measured anyway: they cost nothing and prune early);
    * ``max_bound``: largest stratified experiment size of the joint strategy, ``screen_bound``
      the size up to which the split strategy screens experiments; ``final_bound``: the size of
      the last, large check (the dissertation's unbounded run);
    * ``committee``: candidates the split strategy asks for per iteration (≥ 1);
      ``equivalent_limit``: after this many candidates turn out indistinguishable from m1 the
      split strategy asks the joint question (bounds screen_bound+1 … final_bound) instead;
    * ``port_set_sizes``: known |port set| per instruction (two-level: an int; fixed counts: a
      list, one per µop); ``shared_uops``: ((i, r), (j, s)) pairs whose µops have the same ports;
      ``constraints``: a function of :class:`MappingVars` returning extra IR formulas;
      ``constraints_symmetric``: declare that they do not single out ports (keeps symmetry breaking);
    * ``encoding``: how a measurement becomes constraints: "clauses" (pure boolean: the lower
      half by counters, the upper half by Hall cuts added lazily for the port sets a candidate
      overloads, on a SAT solver; see :mod:`~pmsolve.infer.cegis.encode`), "bounds" (lean
      upper/lower-bound form with flows, SMT), "relate" (relateThroughput as in the
      dissertation) or "auto" (default: clauses, bounds for the power-set space, whose µop
      masses are variables);
    * ``implied``: add what a singleton says directly (two-level: |port set| = c/tp⁻¹) beside
      its measurement; implied by it, so no mapping is lost, but the solver need not derive it;
    * ``reuse``: a candidate that survives a measurement becomes the next m1 without a
      findMapping call;
    * ``solver_options``: passed to the solver of the incremental session (e.g. z3 random_seed);
    * ``core``: how an inconsistency is explained: "minimal" (the solver's unsat core, then
      deletion-minimised: one more solver call per measurement in it), "solver" (the core as the
      solver gives it) or "none" (every measurement; for mere satisfiability checks);
    * ``backend``: any capable backend name (None: $PMSOLVE_BACKEND / auto); ``timeout`` per check;
      ``max_iterations``: stop (status "stopped") after that many iterations;
    * ``check_experiments``: after an inference, that many random unseen experiments of
      ``check_sizes`` instructions (seeded by ``check_seed``) are measured and compared with the
      mapping (:mod:`pmsolve.infer.common`; 0: no check).

    A state file resumes a run only with the same oracle, ports, instructions, space (kind, µop
    counts, known sizes, shared µops, constraints), ``noise_epsilon``, ``r_max`` and initial
    experiments; the search knobs (strategy, bounds, backend, …) may change: the measurements stay
    true.
    """

    ports: int | Sequence[str]
    instructions: Sequence[str] | None = None
    kind: str = "two-level"
    uops_per_insn: Mapping[str, int] | None = None
    max_count: int = 2
    noise_epsilon: Fraction | float | None = None
    r_max: Fraction | float | None = None
    backend: str | None = None
    strategy: str = "split"
    initial: str = "singletons"
    extra_initial: Sequence[Experiment] = ()
    symmetry: bool = True
    max_bound: int = 6
    screen_bound: int = 4
    final_bound: int = 12
    committee: int = 1
    equivalent_limit: int = 3
    port_set_sizes: Mapping[str, int | Sequence[int]] | None = None
    shared_uops: Sequence[tuple[tuple[str, int], tuple[str, int]]] = ()
    constraints: Callable[[MappingVars], Iterable[Formula]] | None = None
    constraints_symmetric: bool = False
    timeout: float | None = None
    max_iterations: int | None = None
    encoding: str = "auto"
    solver_options: Mapping[str, Any] | None = None
    core: str = "minimal"
    reuse: bool = True
    implied: bool = True
    check_experiments: int = 8
    check_sizes: tuple[int, int] = (3, 5)
    check_seed: int = 0

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValidationError(f"unknown CEGIS strategy {self.strategy!r}: choose {', '.join(STRATEGIES)}")
        if self.encoding not in ENCODINGS:
            raise ValidationError(f"unknown CEGIS encoding {self.encoding!r}: choose {', '.join(ENCODINGS)}")
        if self.encoding == "clauses" and self.kind == "power-set":
            raise ValidationError("the clauses encoding needs constant µop masses: use bounds for the power-set space")
        if self.core not in ("minimal", "solver", "none"):
            raise ValidationError(f"unknown core {self.core!r}: choose minimal, solver or none")
        if self.initial not in INITIAL:
            raise ValidationError(f"unknown initial experiments {self.initial!r}: choose {', '.join(INITIAL)}")
        for name in ("noise_epsilon", "r_max"):
            v = getattr(self, name)
            if v is not None and not (float(v) >= 0 and float(v) < float("inf")):
                raise ValidationError(f"CEGIS: {name} must be a finite number ≥ 0, got {v}")
        if self.r_max is not None and not float(self.r_max) > 0:
            raise ValidationError(f"CEGIS: r_max must be positive, got {self.r_max}")
        if self.check_experiments < 0:
            raise ValidationError(f"CEGIS: check_experiments must be ≥ 0, got {self.check_experiments}")

    def fingerprint(self, port_names: Sequence[str], instructions: Sequence[str]) -> dict[str, Any]:
        """What a state file of these options depends on (see the class doc)."""
        return {"ports": list(port_names), "instructions": sorted(instructions), "kind": self.kind,
                "uops_per_insn": dict(self.uops_per_insn) if self.uops_per_insn is not None else None,
                "max_count": self.max_count if self.kind == "power-set" else None,
                "noise_epsilon": str(as_fraction(self.noise_epsilon)) if self.noise_epsilon else None,
                "r_max": str(as_fraction(self.r_max)) if self.r_max is not None else None,
                "initial": self.initial, "extra_initial": [str(e) for e in self.extra_initial],
                "port_set_sizes": {k: v if isinstance(v, int) else list(v) for k, v in (self.port_set_sizes or {}).items()},
                "shared_uops": [list(map(list, pair)) for pair in self.shared_uops],
                "constraints": self.constraints is not None}


def as_fraction(x: float | Fraction) -> Fraction:
    """A measured float as the nearest fraction with a small denominator (exact oracles give
    values like 5/3 that round-trip through floats)."""
    if isinstance(x, Fraction):
        return x
    return Fraction(x).limit_denominator(10**6)
