"""Counter-example-guided port mapping inference (dissertation ch. 4, Alg. 4.1): see
:meth:`Cegis.run` for the algorithm, :class:`~pmsolve.infer.cegis.options.CegisOptions` for its
levers.

Two ways to implement findOtherMapping are offered (``strategy``):

* ``"joint"`` — the dissertation's: one solver call over a free mapping *and* a free experiment
  of at most b instructions (stratified b = 1, 2, …, max_bound, then final_bound; sec. 4.3);
* ``"split"`` (default) — the same question in two easier steps: findMapping again with m1 (and
  mappings already shown equivalent to it) blocked gives competing candidates m2…; the smallest
  experiment separating m1 from them is found by screening every experiment of ≤ screen_bound
  instructions with the vectorised bottleneck formula (falling back to a solver call with fixed
  mappings and a free experiment up to final_bound). When no other candidate exists the
  answer is proved unique (modulo port renaming and the equivalents), without any bound.

Both run in one incremental solver session; port-renaming symmetry is broken by ordering the
port columns of the mapping lexicographically (and, for fixed µop counts, the µop rows of each
instruction), so each class of renamed mappings is searched once. Measurements enter the session
in the ``encoding`` of :class:`CegisOptions`: by default the pure-boolean "clauses" form on a
SAT solver, whose upper bounds are Hall cuts added while candidates overload a port set
(:meth:`Cegis._check` loops until a candidate explains every measurement exactly). Every mapping
and experiment a solver returns is re-checked with the exact bottleneck formula in Fractions
before it is used.

Measurements go through a caching oracle kept in a fingerprinted state file
(:class:`~pmsolve.fileio.StateFile`, :class:`~pmsolve.harness.cache.CachingOracle`), with the
witness of every counterexample, so an interrupted run resumes without measuring anything twice
and a state file of another oracle or space is refused. A resumed run **retraces** the
interrupted one: the loop starts again from the initial experiments and every measurement comes
from the state file, so the solver session meets the same questions in the same order and gives
the same answers. (Asserting the stored counterexamples at once would be faster, but the session's
history decides which of several mappings that explain the measurements it returns: a resumed
run then answered differently from an uninterrupted one, issue 38.) Only solver time is spent
again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from pathlib import Path
from typing import Any

from pmsolve.backends import capabilities as C
from pmsolve.backends import AUTO, get, open_session, requested_name, solve
from pmsolve.encodings.cegis import Space, build_find_other_mapping, observation
from pmsolve.encodings.cardinality import between
from pmsolve.encodings.experiments import free_experiment
from pmsolve.encodings.mappings import fixed_mapping
from pmsolve.encodings.relate import differ, relate_throughput, separation
from pmsolve.encodings.symmetry import lex_geq
from pmsolve.errors import SolverError, ValidationError
from pmsolve.fileio import StateFile
from pmsolve.formats import mapping_from_json, mapping_to_json
from pmsolve.harness.cache import CachingOracle
from pmsolve.harness.protocol import oracle_fingerprint
from pmsolve.infer.cegis.encode import hall_cut, observation_bounds, observation_clauses, singleton_width
from pmsolve.infer.cegis.options import CegisOptions, MappingVars, as_fraction
from pmsolve.infer.cegis.result import CegisResult, Conflict, Refutation, compact, conflict_hint
from pmsolve.infer.cegis.screen import Screen, count_experiments, overloaded
from pmsolve.infer.common import UnseenCheck, check_unseen, likely_cause, port_names
from pmsolve.infer.progress import Progress, emitter
from pmsolve.model import Experiment, PortMapping
from pmsolve.symbolic import And, BoolVar, Formula, Iff, Ne, Not, Or, Problem
from pmsolve.throughput import inverse_throughput

Candidate = tuple[PortMapping, dict[str, Any]]  # a mapping and the solver model it was decoded from


@dataclass(frozen=True)
class Counterexample:
    """findOtherMapping's answer: an experiment that tells m1 apart from the candidates ``against``."""

    experiment: Experiment
    against: list[Candidate]


@dataclass(frozen=True)
class Unique:
    """findOtherMapping found no other mapping: why m1 is the answer, and the mappings no
    bounded experiment tells apart from it."""

    proof: str
    equivalent: list[PortMapping] = field(default_factory=list)


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
    return None if x is None else as_fraction(x)


class Cegis:
    """One inference run; :func:`infer` is the entry point."""

    def __init__(self, oracle: Any, options: CegisOptions, *, state: str | Path | None = None,
                 progress: Progress | None = None):
        self.options = o = options
        names = port_names(o.ports, "CEGIS")
        insns = tuple(o.instructions if o.instructions is not None else oracle.instructions)
        if not insns:
            raise ValidationError("CEGIS needs at least one instruction")
        self.space = Space(insns, names, o.kind,
                           dict(o.uops_per_insn) if o.uops_per_insn is not None else None, o.max_count)
        self.m_free = self.space.free("M.")
        self.eps = _frac(o.noise_epsilon) or None
        self.r_max = _frac(o.r_max)
        self.state = StateFile(state, "cegis", {"oracle": oracle_fingerprint(oracle), **o.fingerprint(names, insns)})
        self.oracle = CachingOracle.in_state(oracle, self.state)
        self.say = emitter("cegis", progress)
        self.obs: list[tuple[Experiment, Fraction]] = []
        self.witnesses: list[Refutation] = []
        self.n_initial = 0
        self.stats: dict[str, Any] = {"solver_checks": 0, "find_mapping_s": 0.0, "find_other_s": 0.0,
                                      "screen_s": 0.0, "equivalents": 0, "max_size": 0, "cuts": 0}
        self.encoding = o.encoding if o.encoding != "auto" else ("bounds" if o.kind == "power-set" else "clauses")
        self.option_constraints = self._option_constraints()
        if self.encoding == "clauses" and o.strategy == "split":  # boolean: a SAT solver's problem
            probe = Problem(name="findMapping").add(self.m_free.constraints).add([f for _, f in self.option_constraints])
        else:
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
        self._cuts_to_keep: list[Formula] = []
        self._cuts_of: dict[Experiment, list[Formula]] = {}  # the Hall cuts found, per measurement
        self._mapping_vars = [v for v in Problem().add(self.m_free.constraints).variables()]
        self._screen: Screen | None = None
        self.joint_proof = False
        # the loop's state between iterations
        self.iteration = 0
        self.current: Candidate | None = None        # m1 and its solver model
        self.carry: Candidate | None = None          # a candidate that survived the last measurement
        self.equivalents: list[Candidate] = []       # candidates no bounded experiment tells from m1
        self.bound = 1 if o.strategy == "joint" else 0
        self.t_start = time.perf_counter()

    # ----- the algorithm
    def run(self) -> CegisResult:
        """Algorithm 4.1 (sec. 4.1) with the practical extensions of sec. 4.3::

            Experiments ← initialExperiments()                 all singletons (sec. 4.3)
            loop
                m1 ← findMapping(Experiments)                  (sec. 4.2.3)
                if m1 = None: return None                      the conflict, an unsat core
                m2, newExp ← findOtherMapping(Experiments, m1) (sec. 4.2.3; bounds, sec. 4.3)
                if m2 = None: return m1                        unique up to port renaming
                cycles ← measureCycles(newExp)
                Experiments ← Experiments ∪ {(newExp, cycles)}

        Every measurement becomes a constraint of one incremental solver session (sec. 4.3).
        The bookkeeping sits beside the loop: :meth:`start` (initial experiments and a resumed
        run's counterexamples), :meth:`witness` (why newExp was measured, kept in the state
        file) and :meth:`finish` (the result, checked on unseen experiments).
        """
        self.start()
        while True:
            m1 = self.next_candidate()
            if m1 is None:
                return self.finish("inconsistent", conflict=self.conflict())
            if self.options.max_iterations is not None and self.iteration > self.options.max_iterations:
                return self.finish("stopped", m1, proof=f"stopped after {self.options.max_iterations} iterations")
            other = self.find_other_mapping(m1)
            if isinstance(other, Unique):
                return self.finish("inferred", m1, proof=other.proof, equivalent=other.equivalent)
            (cycles,) = self.measure([other.experiment])
            self._observe(other.experiment, cycles)
            self.witness(other, cycles)

    def next_candidate(self) -> PortMapping | None:
        """findMapping — or, with ``reuse``, the candidate that explained the last measurement
        too (it explains every measurement, checked exactly)."""
        self.iteration += 1
        found = self.carry if self.carry is not None else self.find_mapping()
        if found is None:
            return None
        if self.current is not None and found[0] != self.current[0]:
            self.equivalents = []  # they were equivalent to the old m1; rediscovered if still so
        self.current = found
        return found[0]

    def find_other_mapping(self, m1: PortMapping) -> Counterexample | Unique:
        """findOtherMapping by the chosen strategy (see the module doc)."""
        assert self.current is not None and self.current[0] == m1
        if self.options.strategy == "split":
            return self._split(m1, self.current[1])
        return self._joint(m1)

    # ----- bookkeeping beside the loop
    def start(self) -> None:
        """Measure and observe the initial experiments. A resumed run then retraces the loop
        (see the module doc): its counterexamples come from the state file, not the oracle."""
        o = self.options
        initial = self._initial()
        stored = self.state.data.setdefault("witnesses", [])
        if self.state.resumed:
            self.say("resume", f"resuming: {len(self.oracle.known())} measurement(s) from {self.state.path}; "
                               f"retracing {len(stored)} counterexample(s) without measuring them again")
        for e, t in zip(initial, self.measure(initial)):
            self._observe(e, t)
        self.n_initial = len(initial)
        self.say("start", f"{len(self.obs)} measurement(s), {len(self.space.instructions)} instructions, "
                          f"{len(self.space.ports)} ports, {o.kind}, strategy {o.strategy}, backend {self.backend}")

    def witness(self, other: Counterexample, cycles: Fraction) -> None:
        """Record why newExp was measured: the candidates its measurement ruled out (in the
        result and the state file); keep a surviving candidate for the next iteration."""
        assert self.current is not None
        e = other.experiment
        pred = [(m, mod, inverse_throughput(m, e, r_max=self.r_max)) for m, mod in [self.current] + other.against]
        out = tuple((m, tp) for m, _, tp in pred if _explains(m, [(e, cycles)], self.r_max, self.eps))
        alive = [(m, mod) for m, mod, _ in pred if not _explains(m, [(e, cycles)], self.r_max, self.eps)]
        self.carry = alive[0] if (alive and self.options.reuse) else None
        k = len(self.witnesses)
        self.witnesses.append(Refutation(e, cycles, alive[0][0] if alive else None, out))
        stored = self.state.data["witnesses"]
        if k < len(stored) and Experiment(stored[k]["experiment"]) == e:
            pass   # retracing a resumed run: the state file holds this one already
        else:
            del stored[k:]
            stored.append({"experiment": dict(e.items()),
                           "ruled_out": [{"mapping": _mapping_json(m), "predicted": str(tp)} for m, tp in out]})
            self.state.save()
        self.say("counterexample", f"[{self.iteration}] {e} measured {float(cycles):.4g}: rules out {len(out)} "
                                   f"candidate(s) ({len(self.obs)} measurements, "
                                   f"{time.perf_counter() - self.t_start:.1f}s)", done=len(self.witnesses))

    def finish(self, status: str, mapping: PortMapping | None = None, *, conflict: Conflict | None = None,
               proof: str = "", equivalent: Sequence[PortMapping] = ()) -> CegisResult:
        """The result; an inferred mapping is first checked on unseen experiments."""
        self.stats["backend"] = self.backend
        self.session.close()
        if conflict is not None:
            self.say("conflict", conflict.describe())
        unseen = self.check_unseen(mapping) if status == "inferred" and mapping is not None else None
        if unseen is not None:
            self.say("check", unseen.summary())
        self.stats["seconds"] = time.perf_counter() - self.t_start
        return CegisResult(status, mapping, list(self.obs), self.n_initial, list(self.witnesses), conflict,
                           list(equivalent), proof, dict(self.stats), unseen)

    def check_unseen(self, mapping: PortMapping) -> UnseenCheck | None:
        """Measure ``check_experiments`` random unseen experiments: CEGIS's own guarantee is that
        every mapping explaining the measurements agrees with ``mapping`` within 2ε·|e| up to the
        bounds, and a measurement lies within ε·|e| of the truth, so 3ε·|e| (exact: equality)
        separates a wrong mapping from noise."""
        o, eps = self.options, self.eps

        def within(e: Experiment, measured: float, predicted: float) -> bool:
            bound = 3 * float(eps) * e.size if eps else 1e-9 * max(1.0, abs(measured))
            return abs(measured - predicted) <= bound

        noise = ("noise larger than the tolerance ε (raise `noise_epsilon`)" if eps else
                 "noise (the inference was exact: allow for noise with `noise_epsilon`)")
        return check_unseen(self.oracle, mapping, self.space.instructions, {e for e, _ in self.obs},
                            count=o.check_experiments, seed=o.check_seed, sizes=o.check_sizes,
                            r_max=float(self.r_max) if self.r_max is not None else None, within=within,
                            tolerance=f"3ε·|e| (ε = {float(eps):g})" if eps else "exact equality",
                            causes=lambda bad: likely_cause(bad, len(self.space.ports), noise))

    # ----- findOtherMapping, the two strategies
    def _split(self, m1: PortMapping, model: dict[str, Any]) -> Counterexample | Unique:
        step = self._split_step(m1, model, self.equivalents)
        if step is not None:
            return Counterexample(*step)
        final = self.options.final_bound
        proof = f"no other mapping of the space (up to port renaming) explains the {len(self.obs)} measurements"
        if self.joint_proof:
            proof = (f"no mapping explaining the {len(self.obs)} measurements differs from it "
                     f"on an experiment of ≤ {final} instructions")
        elif self.equivalents:
            proof += (f", except {len(self.equivalents)} that no experiment of ≤ {final} "
                      f"instructions distinguishes from it")
        return Unique(proof, [m for m, _ in self.equivalents])

    def _joint(self, m1: PortMapping) -> Counterexample | Unique:
        """The stratified bound of sec. 4.3: b = 1, 2, … max_bound, then final_bound."""
        o = self.options
        while True:
            joint = self._joint_step(m1, self.bound, f"j{self.iteration}.")
            if joint is not None:
                m2, e, m2_model = joint
                return Counterexample(e, [(m2, m2_model)])
            if self.bound >= o.final_bound:
                return Unique(f"no experiment of ≤ {o.final_bound} instructions distinguishes another "
                              f"consistent mapping")
            self.bound = self.bound + 1 if self.bound < o.max_bound else o.final_bound
            self.say("bound", f"experiment size bound now {self.bound}")


    # ----- setup pieces
    def _probe_mapping(self) -> PortMapping:
        p = self.space.ports[0]
        return PortMapping.two_level(self.space.ports, {i: [p] for i in self.space.instructions})

    def _margin(self) -> Fraction | None:
        if self.eps:
            return self.eps / 1000
        return separation(len(self.space.ports), self.r_max)

    def _option_constraints(self) -> list[tuple[str, Formula]]:
        o, mv = self.options, MappingVars(self.space)
        out: list[tuple[str, Formula]] = []
        for insn, sizes in (o.port_set_sizes or {}).items():
            per_uop = [sizes] if isinstance(sizes, int) else list(sizes)
            if len(per_uop) != mv.uops(insn):
                raise ValidationError(f"port_set_sizes[{insn!r}] gives {len(per_uop)} size(s) for {mv.uops(insn)} µop(s)")
            for r, s in enumerate(per_uop, 1):
                if not 1 <= int(s) <= len(self.space.ports):
                    raise ValidationError(f"port_set_sizes[{insn!r}]: {s} is not between 1 and {len(self.space.ports)}")
                ports = [mv.port(insn, p, r) for p in self.space.ports]
                out.append((f"size[{insn}.{r}={s}]", between(ports, int(s), int(s), f"size[{insn}.{r}].")))
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
        o, sp = self.options, self.space
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
    def measure(self, experiments: list[Experiment]) -> list[Fraction]:
        """measureCycles (Alg. 4.1 line 9) through the caching oracle: what the state file
        already holds is not measured again."""
        return [as_fraction(v) for v in self.oracle.measure(experiments)]

    def _observe(self, e: Experiment, t: Fraction) -> None:
        """Experiments ← Experiments ∪ {(e, t)}: the measurement becomes a solver constraint."""
        if any(e == x for x, _ in self.obs):
            raise SolverError(f"internal error: experiment {e} was already observed")
        n = len(self.obs)
        if self.encoding == "bounds":
            f = observation_bounds(self.m_free, e, t, f"o{n}.", epsilon=self.eps, r_max=self.r_max)
            self.session.add(f, name=f"observed[{e}]")
        elif self.encoding == "clauses":
            f = observation_clauses(self.m_free, e, t, f"o{n}.", epsilon=self.eps, r_max=self.r_max)
            self.session.add(f, name=f"observed[{e}]")
        else:
            cs, match = observation(self.m_free, e, t, f"o{n}.", r_max=self.r_max, epsilon=self.eps)
            self.session.add(cs)
            self.session.add(match, name=f"observed[{e}]")
        if self.options.implied:
            w = singleton_width(self.m_free, e, t, epsilon=self.eps, r_max=self.r_max)
            if w is not None:
                self.session.add(w)
        self.obs.append((e, t))
        self.stats["max_size"] = max(self.stats["max_size"], e.size)

    def _initial(self) -> list[Experiment]:
        """initialExperiments(): singletons (sec. 4.3), optionally every pair, and the caller's."""
        insns = self.space.instructions
        out: list[Experiment] = []
        if self.options.initial in ("singletons", "pairs"):
            out += [Experiment({i: 1}) for i in insns]
        if self.options.initial == "pairs":
            out += [Experiment({a: 1, b: 1}) for a, b in combinations(insns, 2)]
        known = set(insns)
        for e in self.options.extra_initial:
            if not set(e) <= known:
                raise ValidationError(f"CEGIS: initial experiment {e} uses instructions outside the inferred ones")
        return list(dict.fromkeys(out + list(self.options.extra_initial)))

    # ----- solver steps
    def _check(self, what: str, extra: Sequence[Any] = ()) -> Any:
        while True:
            t0 = time.perf_counter()
            res = self.session.check(values=self._mapping_vars + list(extra))
            self.stats["solver_checks"] += 1
            self.stats[what] += time.perf_counter() - t0
            if not res.feasible and not res.infeasible:
                raise SolverError(f"{what}: {self.backend} gave no answer ({res.status}: {res.reason})")
            if not (res.feasible and self.encoding == "clauses" and self._add_cuts(res.model)):
                return res

    def _add_cuts(self, model: dict[str, Any]) -> bool:
        """The lazy upper bounds of the "clauses" encoding: for each measurement the candidate
        predicts too slow, the Hall constraint it violates (:func:`hall_cut`: every mapping that
        explains the measurement keeps it). Kept at the bottom of the session's stack
        (:meth:`_pushed` re-adds them after a pop). False when the candidate needs none."""
        over = self._overloaded(self.m_free.decode(model))
        for n in over:
            e, t = self.obs[n]
            cut = hall_cut(self.m_free, e, t, model, f"o{n}.h{self.stats['cuts']}.", epsilon=self.eps)
            if cut is None:
                raise SolverError(f"internal error: the overload of {e} was misjudged")
            self._cuts_to_keep.append(cut)
            self._cuts_of.setdefault(e, []).append(cut)
            self.session.add(cut)
            self.stats["cuts"] += 1
        return bool(over)

    def _overloaded(self, m: PortMapping, obs: list[tuple[Experiment, Fraction]] | None = None) -> list[int]:
        return overloaded(m, self.space.instructions, self.space.ports, self.obs if obs is None else obs, self.eps)

    @contextmanager
    def _pushed(self) -> Iterator[None]:
        """A push/pop frame of the session that keeps the cuts found inside it."""
        outer, self._cuts_to_keep = self._cuts_to_keep, []
        self.session.push()
        try:
            yield
        finally:
            self.session.pop()
            kept, self._cuts_to_keep = self._cuts_to_keep, outer
            for f in kept:
                self.session.add(f)
            outer.extend(kept)

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
            b = self.options.screen_bound
            while b > 1 and count_experiments(len(self.space.instructions), b) > 60_000:
                b -= 1
            self._screen = Screen(self.space.instructions, self.space.ports, b,
                                  float(self.r_max) if self.r_max is not None else None)
            self.stats["screen_bound"] = b
        return self._screen

    def _distinguish_fixed(self, m1: PortMapping, m2: PortMapping, bound: int) -> Experiment | None:
        """A solver search for an experiment of ≤ bound instructions separating two fixed mappings."""
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
        res = solve(p, self._arithmetic_backend(), timeout=self.options.timeout)
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
            others: list[tuple[PortMapping, dict[str, Any]]] = []
            with self._pushed():
                self.session.add(self._block(m1_model))
                for _, mod in equivalents:
                    self.session.add(self._block(mod))
                for _ in range(max(1, self.options.committee)):
                    found = self.find_mapping_other()
                    if found is None:
                        break
                    others.append(found)
                    self.session.add(self._block(found[1]))
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
                for b in range(screen.bound + 1, max(screen.bound, self.options.final_bound) + 1):
                    e2 = self._distinguish_fixed(m1, m2, b)
                    if e2 is not None:
                        break
                if e2 is not None:
                    return e2, [(m2, mod)]
                equivalents.append((m2, mod))
                self.stats["equivalents"] += 1
                self.say("equivalent", f"candidate indistinguishable from the current mapping up to size "
                                       f"{self.options.final_bound}: {compact(m2)}")
            if len(equivalents) >= self.options.equivalent_limit:
                # a large class of equivalent mappings (R_max, noise): ask the dissertation's
                # question once instead of meeting its members one by one
                self.stats["joint_fallback"] = self.stats.get("joint_fallback", 0) + 1
                for b in range(screen.bound + 1, max(screen.bound, self.options.final_bound) + 1):
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
        r1 = relate_throughput(fixed_mapping(m1, insns), e_free, f"{tag}d1.", r_max=self.r_max)
        r2 = relate_throughput(self.m_free, e_free, f"{tag}d2.", r_max=self.r_max)
        question = [*e_free.constraints, *r1.constraints, *r2.constraints, differ(r1.t, r2.t, e_free, self.eps)]
        e_vars = Problem().add(e_free.constraints).variables()
        if C.SMT in self.session.backend.capabilities:
            with self._pushed():
                self.session.add(question)
                res = self._check("find_other_s", e_vars)
        else:  # a SAT session cannot take the arithmetic: ask an SMT solver about its stack
            res = self._solve_beside(question)
        if res.infeasible:
            return None
        m2 = self._decode(res)
        e = e_free.decode(res.model)
        if not _apart(inverse_throughput(m1, e, r_max=self.r_max), inverse_throughput(m2, e, r_max=self.r_max), e, self.eps):
            raise SolverError(f"{self.backend} returned {e}, which does not separate m1 and m2")
        return m2, e, res.model

    def _arithmetic_backend(self) -> str:
        """The chosen backend for questions with arithmetic (a free experiment's throughput),
        unless it is a pure SAT solver: then the automatic choice."""
        name = requested_name(self.options.backend)
        return name if name == AUTO or C.SMT in get(name).capabilities else AUTO

    def _solve_beside(self, extra: list[Formula]) -> Any:
        """The session's stack and `extra` solved once on an SMT backend (with the lazy Hall
        clauses its answers call for, which go to the session)."""
        while True:
            p = self.session.problem().add(extra)
            p.strict_margin = self._margin()
            t0 = time.perf_counter()
            res = solve(p, self._arithmetic_backend(), timeout=self.options.timeout)
            self.stats["find_other_s"] += time.perf_counter() - t0
            self.stats["solver_checks"] += 1
            if not res.feasible and not res.infeasible:
                raise SolverError(f"joint findOtherMapping: {res.backend} gave no answer ({res.status}: {res.reason})")
            if not (res.feasible and self.encoding == "clauses" and self._add_cuts(res.model)):
                return res

    # ----- unsat cores
    def _infeasible_clauses(self, obs: list[tuple[Experiment, Fraction]], opts: list[tuple[str, Formula]],
                            core: bool) -> tuple[bool, set[str]]:
        """Do these measurements and option constraints admit no mapping? The "clauses" encoding
        in a fresh session of the run's backend: each measurement's lower half and the Hall cuts
        found for it so far (named after it, for the core), more cuts while candidates call for
        them (:meth:`_add_cuts`), every candidate checked exactly. Returns (infeasible, the
        names in the core: "observed[e]" and option names)."""
        session = open_session(self.backend, timeout=self.options.timeout, options=dict(self.options.solver_options or {}))
        try:
            session.add(self.m_free.constraints)
            for name, f in opts:
                session.add(f, name=name)
            owner: dict[str, str] = {}

            def add(e: Experiment, f: Formula, name: str) -> None:
                owner[name] = f"observed[{e}]"
                session.add(f, name=name)

            for n, (e, t) in enumerate(obs):
                add(e, observation_clauses(self.m_free, e, t, f"k{n}.", epsilon=self.eps, r_max=self.r_max), f"observed[{e}]")
                if self.options.implied:
                    w = singleton_width(self.m_free, e, t, epsilon=self.eps, r_max=self.r_max)
                    if w is not None:
                        add(e, w, f"width[{e}]")
                for k, f in enumerate(self._cuts_of.get(e, [])):
                    add(e, f, f"cut{k}[{e}]")
            while True:
                res = session.check(core=core, values=self._mapping_vars)
                self.stats["solver_checks"] += 1
                if res.infeasible:
                    return True, {owner.get(x, x) for x in res.core}
                if not res.feasible:
                    raise SolverError(f"unsat core: {self.backend} gave no answer ({res.status}: {res.reason})")
                over = self._overloaded(self.m_free.decode(res.model), obs)
                if not over:
                    return False, set()
                for n in over:
                    e, t = obs[n]
                    cut = hall_cut(self.m_free, e, t, res.model, f"k.h{self.stats['cuts']}.", epsilon=self.eps)
                    if cut is None:
                        raise SolverError(f"internal error: the overload of {e} was misjudged")
                    self.stats["cuts"] += 1
                    self._cuts_of.setdefault(e, []).append(cut)
                    add(e, cut, f"cut{len(self._cuts_of[e]) - 1}[{e}]")
        finally:
            session.close()

    def conflict(self) -> Conflict:
        """The measurements (and option constraints) that together admit no mapping, minimised."""
        if self.options.core == "none":
            insns = tuple(sorted({i for e, _ in self.obs for i in e}))
            return Conflict(tuple(self.obs), insns, (), conflict_hint(self.obs, self.eps, len(self.space.ports)))

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

        backend = self.options.backend if C.UNSAT_CORE in self.session.backend.capabilities else None

        def infeasible(obs: list[tuple[Experiment, Fraction]], opts: list[tuple[str, Formula]],
                       core: bool = False) -> tuple[bool, set[str]]:
            if self.encoding == "clauses":
                return self._infeasible_clauses(obs, opts, core)
            res = solve(problem(obs, opts), backend, core=core, timeout=self.options.timeout)
            return res.infeasible, set(res.core) if res.infeasible else set()

        _, names = infeasible(self.obs, self.option_constraints, core=True)
        obs = [(e, t) for e, t in self.obs if f"observed[{e}]" in names] or list(self.obs)
        opts = [(n, f) for n, f in self.option_constraints if n in names]
        if self.options.core == "solver":
            return Conflict(tuple(obs), tuple(sorted({i for e, _ in obs for i in e})), tuple(n for n, _ in opts),
                            conflict_hint(obs, self.eps, len(self.space.ports)))
        # deletion-based minimisation: drop what the contradiction does not need
        for item in list(obs):
            trial = [x for x in obs if x != item]
            if trial and infeasible(trial, opts)[0]:
                obs = trial
        for item in list(opts):
            trial = [x for x in opts if x != item]
            if infeasible(obs, trial)[0]:
                opts = trial
        insns = sorted({i for e, _ in obs for i in e})
        return Conflict(tuple(obs), tuple(insns), tuple(n for n, _ in opts), conflict_hint(obs, self.eps, len(self.space.ports)))


def _mapping_json(m: PortMapping) -> Any:
    return mapping_to_json(m)


def infer(oracle: Any, options: CegisOptions, *, state: str | Path | None = None,
          progress: Progress | None = None) -> CegisResult:
    """Infer a port mapping from ``oracle`` with CEGIS (see :meth:`Cegis.run` and
    :class:`CegisOptions`, which holds every knob, the ports included).

    ``state`` is a JSON file where measurements and witnesses persist; a rerun with the same
    file resumes (and refuses the state of another oracle or mapping space). ``progress``
    receives a :class:`~pmsolve.infer.progress.ProgressEvent` per step.
    """
    return Cegis(oracle, options, state=state, progress=progress).run()
