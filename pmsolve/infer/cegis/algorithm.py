"""Counter-example-guided port mapping inference (dissertation ch. 4, Alg. 4.1).

    Experiments ← initial experiments (singletons; optionally pairs)
    loop: m1 ← findMapping(Experiments)          — None: the measurements contradict the model
          m2, e ← findOtherMapping(Experiments, m1) — None: m1 is indistinguishable, return it
          Experiments ← Experiments ∪ {(e, measure(e))}

Two ways to implement findOtherMapping are offered (``strategy``):

* ``"joint"`` — the dissertation's: one solver call over a free mapping *and* a free experiment
  of at most b instructions (stratified b = 1, 2, …, max_bound, then final_bound);
* ``"split"`` (default) — the same question in two easier steps: findMapping again with m1 (and
  mappings already shown equivalent to it) blocked gives competing candidates m2…; the smallest
  experiment separating m1 from them is found by screening every experiment of ≤ screen_bound
  instructions with the vectorised bottleneck formula (falling back to a solver call with fixed
  mappings and a free experiment up to final_bound). When no other candidate exists the
  answer is proved unique (modulo port renaming and the equivalents), without any bound.

Both run in one incremental solver session; port-renaming symmetry is broken by ordering the
port columns of the mapping lexicographically (and, for fixed µop counts, the µop rows of each
instruction), so each class of renamed mappings is searched once. Every mapping and experiment a
solver returns is re-checked with the exact bottleneck formula in Fractions before it is used.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from typing import Any

from pmsolve.encodings.cegis import Space, build_find_other_mapping, observation
from pmsolve.encodings.experiments import free_experiment
from pmsolve.encodings.mappings import fixed_mapping
from pmsolve.encodings.relate import differ, relate_throughput, separation
from pmsolve.encodings.symmetry import lex_geq
from pmsolve.errors import SolverError, ValidationError
from pmsolve.infer.cegis.encode import observation_bounds
from pmsolve.infer.cegis.screen import Screen, count_experiments
from pmsolve.infer.cegis.store import MeasurementLog, as_fraction
from pmsolve.model import Experiment, PortMapping
from pmsolve.symbolic import (
    And,
    Bool,
    BoolVar,
    Formula,
    Iff,
    Int,
    Ne,
    Not,
    Or,
    Problem,
    Sum,
    ite,
)
from pmsolve.throughput import inverse_throughput

Progress = Callable[[str], None]
STRATEGIES = ("split", "joint")
INITIAL = ("none", "singletons", "pairs")


# --------------------------------------------------------------------------- options

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
        from pmsolve.encodings.mappings import uop_name
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
    """Knobs of :func:`infer` (defaults: two-level, exact, split strategy, symmetry breaking).

    * ``kind``: "two-level", "fixed-counts" (needs ``uops_per_insn``; Fig. 4.5) or "power-set"
      (µops = all port sets with counts ≤ ``max_count``; Fig. 4.3 — works, but expensive);
    * ``epsilon``: CPI noise bound ε (sec. 4.3); ``r_max``: front-end limit (instructions/cycle);
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
    * ``encoding``: "bounds" (lean upper/lower-bound form for measured experiments, see
      :mod:`~pmsolve.infer.cegis.encode`) or "relate" (relateThroughput as in the dissertation);
    * ``reuse``: a candidate that survives a measurement becomes the next m1 without a
      findMapping call;
    * ``solver_options``: passed to the solver of the incremental session (e.g. z3 random_seed);
    * ``core``: how an inconsistency is explained: "minimal" (the solver's unsat core, then
      deletion-minimised: one more solver call per measurement in it), "solver" (the core as
      the solver gives it) or "none" (no core: every measurement; for mere satisfiability checks);
    * ``backend``: any capable backend name (None: $PMSOLVE_BACKEND / auto); ``timeout`` per check.
    """

    kind: str = "two-level"
    uops_per_insn: Mapping[str, int] | None = None
    max_count: int = 2
    epsilon: Fraction | float | None = None
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
    encoding: str = "bounds"
    core: str = "minimal"
    solver_options: Mapping[str, Any] | None = None
    reuse: bool = True


# --------------------------------------------------------------------------- results

@dataclass(frozen=True)
class Refutation:
    """One measured experiment and the candidate mapping(s) its measurement ruled out."""

    experiment: Experiment
    measured: Fraction
    kept: PortMapping | None
    ruled_out: tuple[tuple[PortMapping, Fraction], ...]  # (mapping, the tp⁻¹ it predicted)

    def describe(self) -> str:
        outs = "; ".join(f"[{compact(m)}] (predicted {float(t):.4g})" for m, t in self.ruled_out) or "nothing"
        return f"{self.experiment} measured {float(self.measured):.4g} rules out {outs}"


@dataclass(frozen=True)
class Conflict:
    """Measurements no mapping of the space explains: a (minimised) unsat core."""

    experiments: tuple[tuple[Experiment, Fraction], ...]
    instructions: tuple[str, ...]
    constraints: tuple[str, ...] = ()

    def describe(self) -> str:
        exps = "; ".join(f"{e} = {float(t):.4g}" for e, t in self.experiments)
        extra = f" together with constraints {', '.join(self.constraints)}" if self.constraints else ""
        return (f"no port mapping explains these measurements{extra}: {exps} "
                f"(instructions {', '.join(self.instructions)})")


@dataclass
class CegisResult:
    status: str  # "inferred", "inconsistent", "stopped"
    mapping: PortMapping | None
    measurements: list[tuple[Experiment, Fraction]]
    initial: int
    witnesses: list[Refutation] = field(default_factory=list)
    conflict: Conflict | None = None
    equivalent: list[PortMapping] = field(default_factory=list)
    proof: str = ""
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def added_experiments(self) -> int:
        """Experiments measured beyond the initial ones (what Fig. 4.6 (b) counts)."""
        return len(self.measurements) - self.initial


# --------------------------------------------------------------------------- helpers

def compact(m: PortMapping) -> str:
    """A mapping on one line: `add→{p0,p1} st→{p2}+{p0,p1}` (µop counts as `2×{…}`)."""
    from pmsolve.model import sort_ports

    def uop(u: Any) -> str:
        return ("" if u.count == 1 else f"{u.count}×") + "{" + ",".join(sort_ports(u.ports)) + "}"
    return " ".join(f"{i}→" + "+".join(uop(u) for u in m.uops_of(i)) for i in m.instructions)


def _explains(m: PortMapping, obs: Sequence[tuple[Experiment, Fraction]], r_max: Fraction | None,
              eps: Fraction | None) -> str | None:
    for e, t_e in obs:
        t = inverse_throughput(m, e, r_max=r_max)
        if not (t == t_e if not eps else abs(t - t_e) < eps * e.size):
            return f"{e}: the mapping gives {t}, measured {t_e}"
    return None


def _apart(t1: Fraction, t2: Fraction, e: Experiment, eps: Fraction | None) -> bool:
    return t1 != t2 if not eps else abs(t1 - t2) > 2 * eps * e.size


def _frac(x: Fraction | float | None) -> Fraction | None:
    return None if x is None else (x if isinstance(x, Fraction) else as_fraction(x))


# --------------------------------------------------------------------------- the algorithm

class Cegis:
    """One inference run; :func:`infer` is the convenient entry point."""

    def __init__(self, oracle: Any, ports: int | Sequence[str], options: CegisOptions | None = None,
                 *, instructions: Sequence[str] | None = None, state: str | None = None,
                 progress: Progress | None = None):
        from pmsolve.backends import open_session

        self.o = options or CegisOptions()
        o = self.o
        if o.strategy not in STRATEGIES:
            raise ValidationError(f"unknown CEGIS strategy {o.strategy!r}: choose {', '.join(STRATEGIES)}")
        if o.initial not in INITIAL:
            raise ValidationError(f"unknown initial experiments {o.initial!r}: choose {', '.join(INITIAL)}")
        port_names = tuple(f"p{k}" for k in range(ports)) if isinstance(ports, int) else tuple(ports)
        if not port_names:
            raise ValidationError("CEGIS needs at least one port")
        self.oracle = oracle
        insns = tuple(instructions or oracle.instructions)
        if not insns:
            raise ValidationError("CEGIS needs at least one instruction")
        self.space = Space(insns, port_names, o.kind,
                           dict(o.uops_per_insn) if o.uops_per_insn is not None else None, o.max_count)
        self.m_free = self.space.free("M.")
        self.eps = _frac(o.epsilon) or None
        self.r_max = _frac(o.r_max)
        self.store = MeasurementLog(state, insns, len(port_names))
        self.progress = progress or (lambda msg: None)
        self.obs: list[tuple[Experiment, Fraction]] = []
        self.witnesses: list[Refutation] = []
        self.stats: dict[str, Any] = {"solver_checks": 0, "find_mapping_s": 0.0, "find_other_s": 0.0,
                                      "screen_s": 0.0, "equivalents": 0, "max_size": 0}
        self.option_constraints = self._option_constraints()
        probe = build_find_other_mapping(self.space, self._probe_mapping(), [], bound=1,
                                         epsilon=self.eps, r_max=self.r_max).problem
        self.session = open_session(o.backend, problem=probe, timeout=o.timeout,
                                    options=dict(o.solver_options or {}))
        self.backend = self.session.backend.name
        self.session.strict_margin = self._margin()
        self.session.add(self.m_free.constraints)
        for name, f in self.option_constraints:
            self.session.add(f, name=name)
        if o.symmetry:
            self.session.add(self._symmetry_breaking())
        self._mapping_vars = [v for v in Problem().add(self.m_free.constraints).variables()]
        self._screen: Screen | None = None
        self.joint_proof = False

    # ----- setup pieces
    def _probe_mapping(self) -> PortMapping:
        p = self.space.ports[0]
        return PortMapping.two_level(self.space.ports, {i: [p] for i in self.space.instructions})

    def _margin(self) -> Fraction | None:
        if self.eps:
            return self.eps / 1000
        return separation(len(self.space.ports), self.r_max)

    def _option_constraints(self) -> list[tuple[str, Formula]]:
        o, mv = self.o, MappingVars(self.space)
        out: list[tuple[str, Formula]] = []
        for insn, sizes in (o.port_set_sizes or {}).items():
            per_uop = [sizes] if isinstance(sizes, int) else list(sizes)
            if len(per_uop) != mv.uops(insn):
                raise ValidationError(f"port_set_sizes[{insn!r}] gives {len(per_uop)} size(s) for {mv.uops(insn)} µop(s)")
            for r, s in enumerate(per_uop, 1):
                if not 1 <= int(s) <= len(self.space.ports):
                    raise ValidationError(f"port_set_sizes[{insn!r}]: {s} is not between 1 and {len(self.space.ports)}")
                total = Sum(ite(mv.port(insn, p, r), 1, 0) for p in self.space.ports)
                out.append((f"size[{insn}.{r}={s}]", total.eq(int(s))))
        for (i, r), (j, s) in o.shared_uops:
            same = And(*(Iff(mv.port(i, p, r), mv.port(j, p, s)) for p in self.space.ports))
            out.append((f"shared[{i}.{r}={j}.{s}]", same))
        if o.constraints is not None:
            for n, f in enumerate(o.constraints(mv)):
                out.append((f"user[{n}]", f))
        return out

    def _symmetry_breaking(self) -> list[Formula]:
        """Lex-leader constraints: port columns in lexicographically decreasing order, and for
        fixed µop counts the µop rows of each instruction too (double-lex; sound because the
        lex-smallest member of each orbit satisfies both)."""
        o, sp = self.o, self.space
        if sp.kind == "power-set":
            return []
        mv = MappingVars(sp)
        rows = [(i, r) for i in sp.instructions for r in range(1, mv.uops(i) + 1)]
        ports_symmetric = o.constraints is None or o.constraints_symmetric
        out: list[Formula] = []
        if ports_symmetric:
            cols = [[mv.port(i, p, r) for i, r in rows] for p in sp.ports]
            for k in range(len(cols) - 1):
                out += lex_geq(cols[k], cols[k + 1], f"sym.col{k}")
        rows_symmetric = (sp.kind == "fixed-counts" and not o.shared_uops and o.constraints is None
                          and not any(not isinstance(v, int) and len(set(v)) > 1
                                      for v in (o.port_set_sizes or {}).values()))
        if rows_symmetric:
            for i in sp.instructions:
                for r in range(1, mv.uops(i)):
                    a = [mv.port(i, p, r) for p in sp.ports]
                    b = [mv.port(i, p, r + 1) for p in sp.ports]
                    out += lex_geq(a, b, f"sym.row[{i}.{r}]")
        return out

    # ----- measurements
    def _measure(self, experiments: list[Experiment]) -> list[Fraction]:
        todo = [e for e in experiments if e not in self.store]
        if todo:
            values = self.oracle.measure(todo)
            if len(values) != len(todo):
                raise ValidationError(f"the oracle answered {len(values)} of {len(todo)} experiments")
            self.store.add(zip(todo, values))
        return [as_fraction(self.store.values[e]) for e in experiments]

    def _observe(self, e: Experiment, t: Fraction) -> None:
        n = len(self.obs)
        if self.o.encoding == "bounds":
            f = observation_bounds(self.m_free, e, t, f"o{n}.", epsilon=self.eps, r_max=self.r_max)
            self.session.add(f, name=f"observed[{e}]")
        else:
            cs, match = observation(self.m_free, e, t, f"o{n}.", r_max=self.r_max, epsilon=self.eps)
            self.session.add(cs)
            self.session.add(match, name=f"observed[{e}]")
        self.obs.append((e, t))
        self.stats["max_size"] = max(self.stats["max_size"], e.size)

    def _initial(self) -> list[Experiment]:
        insns = self.space.instructions
        out: list[Experiment] = []
        if self.o.initial in ("singletons", "pairs"):
            out += [Experiment({i: 1}) for i in insns]
        if self.o.initial == "pairs":
            out += [Experiment({a: 1, b: 1}) for a, b in combinations(insns, 2)]
        known = set(insns)
        for e in self.o.extra_initial:
            if not set(e) <= known:
                raise ValidationError(f"CEGIS: initial experiment {e} uses instructions outside the inferred ones")
        return list(dict.fromkeys(out + list(self.o.extra_initial)))

    # ----- solver steps
    def _check(self, what: str, extra: Sequence[Any] = ()) -> Any:
        t0 = time.perf_counter()
        res = self.session.check(values=self._mapping_vars + list(extra))
        self.stats["solver_checks"] += 1
        self.stats[what] += time.perf_counter() - t0
        if not res.feasible and not res.infeasible:
            raise SolverError(f"{what}: {self.backend} gave no answer ({res.status}: {res.reason})")
        return res

    def _decode(self, res: Any) -> PortMapping:
        m = self.m_free.decode(res.model)
        bad = _explains(m, self.obs, self.r_max, self.eps)
        if bad:
            raise SolverError(f"{self.backend} returned a mapping that fails {bad}")
        return m

    def _block(self, model: dict[str, Any]) -> Formula:
        lits: list[Formula] = []
        for v in self._mapping_vars:
            val = model[v.name]
            if isinstance(v, BoolVar):
                lits.append(Not(v) if val else v)
            else:
                lits.append(Ne(v, val))
        return Or(*lits)

    def find_mapping(self) -> tuple[PortMapping, dict[str, Any]] | None:
        res = self._check("find_mapping_s")
        if res.infeasible:
            return None
        return self._decode(res), res.model

    # ----- split strategy
    def _screen_for(self) -> Screen:
        if self._screen is None:
            b = self.o.screen_bound
            while b > 1 and count_experiments(len(self.space.instructions), b) > 60_000:
                b -= 1
            self._screen = Screen(self.space.instructions, self.space.ports, b,
                                  float(self.r_max) if self.r_max is not None else None)
            self.stats["screen_bound"] = b
        return self._screen

    def _distinguish_fixed(self, m1: PortMapping, m2: PortMapping, bound: int) -> Experiment | None:
        """A solver search for an experiment of ≤ bound instructions separating two fixed mappings."""
        from pmsolve.backends import solve

        insns = self.space.instructions
        e_free = free_experiment(insns, bound, "E.")
        p = Problem(name="distinguish")
        p.add(e_free.constraints)
        r1 = relate_throughput(fixed_mapping(m1, insns), e_free, "d1.", r_max=self.r_max)
        r2 = relate_throughput(fixed_mapping(m2, insns), e_free, "d2.", r_max=self.r_max)
        p.add(r1.constraints)
        p.add(r2.constraints)
        p.add(differ(r1.t, r2.t, e_free, self.eps))
        p.strict_margin = self._margin()
        t0 = time.perf_counter()
        res = solve(p, self.o.backend, timeout=self.o.timeout)
        self.stats["find_other_s"] += time.perf_counter() - t0
        self.stats["solver_checks"] += 1
        if res.infeasible:
            return None
        if not res.feasible:
            raise SolverError(f"distinguishing experiment: {res.backend} gave no answer ({res.reason})")
        e = e_free.decode(res.model)
        if not _apart(inverse_throughput(m1, e, r_max=self.r_max), inverse_throughput(m2, e, r_max=self.r_max), e, self.eps):
            raise SolverError(f"{res.backend} returned {e}, which does not separate the two mappings")
        return e

    def _split_step(self, m1: PortMapping, m1_model: dict[str, Any],
                    equivalents: list[tuple[PortMapping, dict[str, Any]]]
                    ) -> tuple[Experiment, list[tuple[PortMapping, dict[str, Any]]]] | None:
        """Next experiment and the candidates it was chosen against, or None when m1 is proved."""
        while True:
            self.session.push()
            try:
                self.session.add(self._block(m1_model))
                for _, mod in equivalents:
                    self.session.add(self._block(mod))
                others: list[tuple[PortMapping, dict[str, Any]]] = []
                for _ in range(max(1, self.o.committee)):
                    found = self.find_mapping_other()
                    if found is None:
                        break
                    others.append(found)
                    self.session.add(self._block(found[1]))
            finally:
                self.session.pop()
            if not others:
                return None
            t0 = time.perf_counter()
            screen = self._screen_for()
            row = screen.best(m1, [m for m, _ in others], float(self.eps or 0))
            self.stats["screen_s"] += time.perf_counter() - t0
            if row is not None:
                e = screen.experiment(row)
                against = [(m, mod) for m, mod in others
                           if _apart(inverse_throughput(m1, e, r_max=self.r_max), inverse_throughput(m, e, r_max=self.r_max), e, self.eps)]
                if not against:  # float screening disagreed with the exact formula: use the solver
                    row = None
                else:
                    return e, against
            for m2, mod in others:
                e2 = None
                for b in range(screen.bound + 1, max(screen.bound, self.o.final_bound) + 1):
                    e2 = self._distinguish_fixed(m1, m2, b)
                    if e2 is not None:
                        break
                if e2 is not None:
                    return e2, [(m2, mod)]
                equivalents.append((m2, mod))
                self.stats["equivalents"] += 1
                self.progress(f"  candidate indistinguishable from the current mapping up to size "
                              f"{self.o.final_bound}: {compact(m2)}")
            if len(equivalents) >= self.o.equivalent_limit:
                # a large class of equivalent mappings (R_max, noise): ask the dissertation's
                # question once instead of meeting its members one by one
                self.stats["joint_fallback"] = self.stats.get("joint_fallback", 0) + 1
                for b in range(screen.bound + 1, max(screen.bound, self.o.final_bound) + 1):
                    joint = self._joint_step(m1, b, f"f{len(self.obs)}.{b}.")
                    if joint is not None:
                        return joint[1], [(joint[0], joint[2])]
                self.joint_proof = True
                return None

    def find_mapping_other(self) -> tuple[PortMapping, dict[str, Any]] | None:
        res = self._check("find_other_s")
        if res.infeasible:
            return None
        return self._decode(res), res.model

    # ----- joint strategy (dissertation)
    def _joint_step(self, m1: PortMapping, bound: int, tag: str
                    ) -> tuple[PortMapping, Experiment, dict[str, Any]] | None:
        insns = self.space.instructions
        e_free = free_experiment(insns, bound, f"{tag}E.")
        self.session.push()
        try:
            self.session.add(e_free.constraints)
            r1 = relate_throughput(fixed_mapping(m1, insns), e_free, f"{tag}d1.", r_max=self.r_max)
            r2 = relate_throughput(self.m_free, e_free, f"{tag}d2.", r_max=self.r_max)
            self.session.add(r1.constraints)
            self.session.add(r2.constraints)
            self.session.add(differ(r1.t, r2.t, e_free, self.eps))
            e_vars = Problem().add(e_free.constraints).variables()
            res = self._check("find_other_s", e_vars)
            if res.infeasible:
                return None
            m2 = self._decode(res)
            e = e_free.decode(res.model)
        finally:
            self.session.pop()
        if not _apart(inverse_throughput(m1, e, r_max=self.r_max), inverse_throughput(m2, e, r_max=self.r_max), e, self.eps):
            raise SolverError(f"{self.backend} returned {e}, which does not separate m1 and m2")
        return m2, e, res.model

    # ----- unsat cores
    def conflict(self) -> Conflict:
        """The measurements (and option constraints) that together admit no mapping, minimised."""
        from pmsolve.backends import solve

        if self.o.core == "none":
            return Conflict(tuple(self.obs), tuple(sorted({i for e, _ in self.obs for i in e})))

        def problem(obs: list[tuple[Experiment, Fraction]], opts: list[tuple[str, Formula]]) -> Problem:
            p = Problem(name="findMapping core", strict_margin=self._margin())
            p.add(self.m_free.constraints)
            for name, f in opts:
                p.add(f, name=name)
            for n, (e, t) in enumerate(obs):
                cs, match = observation(self.m_free, e, t, f"c{n}", r_max=self.r_max, epsilon=self.eps)
                p.add(cs)
                p.add(match, name=f"observed[{e}]")
            return p

        from pmsolve.backends import capabilities as C
        backend = self.o.backend if C.UNSAT_CORE in self.session.backend.capabilities else None
        res = solve(problem(self.obs, self.option_constraints), backend, core=True, timeout=self.o.timeout)
        names = set(res.core) if res.infeasible else set()
        obs = [(e, t) for e, t in self.obs if f"observed[{e}]" in names] or list(self.obs)
        opts = [(n, f) for n, f in self.option_constraints if n in names]
        if self.o.core == "solver":
            return Conflict(tuple(obs), tuple(sorted({i for e, _ in obs for i in e})), tuple(n for n, _ in opts))
        # deletion-based minimisation: drop what the contradiction does not need
        for item in list(obs):
            trial = [x for x in obs if x != item]
            if trial and solve(problem(trial, opts), backend, timeout=self.o.timeout).infeasible:
                obs = trial
        for item in list(opts):
            trial = [x for x in opts if x != item]
            if solve(problem(obs, trial), backend, timeout=self.o.timeout).infeasible:
                opts = trial
        insns = sorted({i for e, _ in obs for i in e})
        return Conflict(tuple(obs), tuple(insns), tuple(n for n, _ in opts))

    # ----- main loop
    def run(self) -> CegisResult:
        t_start = time.perf_counter()
        o = self.o
        resumed = list(self.store.values)
        initial = self._initial()
        if self.store.resumed:
            self.progress(f"resuming: {self.store.resumed} measurement(s) from {self.store.path}")
        init_values = self._measure(initial)
        for e, t in zip(initial, init_values):
            self._observe(e, t)
        n_initial = len(initial)
        for e in resumed:  # earlier runs' counterexamples, in their order
            if e not in set(initial):
                self._observe(e, as_fraction(self.store.values[e]))
                note = self.store.notes.get(e)
                if note:
                    self.witnesses.append(self._witness_from_note(e, note))
        self.progress(f"{len(self.obs)} measurement(s), {len(self.space.instructions)} instructions, "
                      f"{len(self.space.ports)} ports, {o.kind}, strategy {o.strategy}, backend {self.backend}")
        equivalents: list[tuple[PortMapping, dict[str, Any]]] = []
        bound = 1 if o.strategy == "joint" else 0
        iteration = 0
        m1_prev: PortMapping | None = None
        carry: tuple[PortMapping, dict[str, Any]] | None = None  # a candidate that survived
        while True:
            iteration += 1
            found = carry if carry is not None else self.find_mapping()
            if found is None:
                conflict = self.conflict()
                self.progress(conflict.describe())
                return self._result("inconsistent", None, n_initial, t_start, conflict=conflict)
            m1, model = found
            if m1_prev is not None and m1 != m1_prev:
                equivalents = []  # they were equivalent to the old m1; rediscovered if still so
            m1_prev = m1
            if o.max_iterations is not None and iteration > o.max_iterations:
                return self._result("stopped", m1, n_initial, t_start,
                                    proof=f"stopped after {o.max_iterations} iterations")
            if o.strategy == "split":
                step = self._split_step(m1, model, equivalents)
                if step is None:
                    proof = (f"no other mapping of the space (up to port renaming) explains the "
                             f"{len(self.obs)} measurements")
                    if self.joint_proof:
                        proof = (f"no mapping explaining the {len(self.obs)} measurements differs from it "
                                 f"on an experiment of ≤ {o.final_bound} instructions")
                    elif equivalents:
                        proof += (f", except {len(equivalents)} that no experiment of ≤ {o.final_bound} "
                                  f"instructions distinguishes from it")
                    return self._result("inferred", m1, n_initial, t_start, proof=proof,
                                        equivalent=[m for m, _ in equivalents])
                e, against = step
            else:
                joint = None
                while joint is None:
                    joint = self._joint_step(m1, bound, f"j{iteration}.")
                    if joint is not None:
                        break
                    if bound >= o.final_bound:
                        return self._result("inferred", m1, n_initial, t_start,
                                            proof=f"no experiment of ≤ {o.final_bound} instructions "
                                                  f"distinguishes another consistent mapping")
                    bound = bound + 1 if bound < o.max_bound else o.final_bound
                    self.progress(f"  experiment size bound now {bound}")
                m2, e, m2_model = joint
                against = [(m2, m2_model)]
            if e in self.store.values and any(e == x for x, _ in self.obs):
                raise SolverError(f"internal error: experiment {e} was already measured")
            (t,) = self._measure([e])
            self._observe(e, t)
            pred = [(m, mod, inverse_throughput(m, e, r_max=self.r_max)) for m, mod in [(m1, model)] + against]
            out = tuple((m, tp) for m, _, tp in pred if _explains(m, [(e, t)], self.r_max, self.eps))
            alive = [(m, mod) for m, mod, _ in pred if not _explains(m, [(e, t)], self.r_max, self.eps)]
            kept = alive[0][0] if alive else None
            # reuse between iterations: a mapping explaining every measurement so far (checked
            # exactly) is the next m1 without asking the solver again
            carry = alive[0] if (alive and o.reuse) else None
            w = Refutation(e, t, kept, out)
            self.witnesses.append(w)
            self.store.note(e, {"ruled_out": [{"mapping": _mapping_json(m), "predicted": str(tp)} for m, tp in out]})
            self.progress(f"[{iteration}] {e} measured {float(t):.4g}: rules out {len(out)} candidate(s) "
                          f"({len(self.obs)} measurements, {time.perf_counter() - t_start:.1f}s)")

    def _witness_from_note(self, e: Experiment, note: dict[str, Any]) -> Refutation:
        from pmsolve.formats import mapping_from_json
        outs = tuple((mapping_from_json(r["mapping"]), Fraction(r["predicted"])) for r in note.get("ruled_out", []))
        return Refutation(e, as_fraction(self.store.values[e]), None, outs)

    def _result(self, status: str, mapping: PortMapping | None, n_initial: int, t_start: float, *,
                conflict: Conflict | None = None, proof: str = "",
                equivalent: list[PortMapping] | None = None) -> CegisResult:
        self.stats["seconds"] = time.perf_counter() - t_start
        self.stats["backend"] = self.backend
        self.session.close()
        return CegisResult(status, mapping, list(self.obs), n_initial, list(self.witnesses), conflict,
                           list(equivalent or []), proof, dict(self.stats))


def _mapping_json(m: PortMapping) -> Any:
    from pmsolve.formats import mapping_to_json
    return mapping_to_json(m)


def infer(oracle: Any, ports: int | Sequence[str], options: CegisOptions | None = None, *,
          instructions: Sequence[str] | None = None, state: str | None = None,
          progress: Progress | None = None, **kwargs: Any) -> CegisResult:
    """Infer a port mapping with `ports` ports from `oracle` (see the module doc).

    Keyword arguments not named here are CegisOptions fields (``infer(o, 4, epsilon=0.02)``).
    `state` is a JSON file where measurements persist; a rerun with the same file resumes.
    """
    if kwargs:
        from dataclasses import replace
        options = replace(options or CegisOptions(), **kwargs)
    return Cegis(oracle, ports, options, instructions=instructions, state=state, progress=progress).run()
