"""The theorem checks of the dissertation's ch. 3-6 on bounded domains, each with mutants.

Every check recomputes its statement's two sides by independent routes: the LPs of Thm 3.7 /
3.12 written here in the IR and solved by a backend, the schedule definition (Def. 3.5 / 3.11)
by integer max-flow, the bottleneck formula literally over all port subsets, relateThroughput
from :mod:`pmsolve.encodings`, and SMT queries over symbolic mappings
(:mod:`pmsolve.encodings.mapping_class`, :mod:`pmsolve.encodings.tp_formula`). Each mutant breaks one ingredient; the check must then fail.

pmsolve's own code is called through its modules (``throughput.bottleneck``, not a name bound
at import), so a code mutant (``code:...``, :class:`pmsolve.proofs.base.Check`) can swap a
known-wrong variant into it for one run.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from itertools import combinations, combinations_with_replacement, permutations, product
from typing import Iterator, Sequence

from pmsolve.backends import solve
from pmsolve.encodings import fixed_experiment, fixed_mapping, power_set_mapping, relate_throughput, two_level_mapping
from pmsolve.encodings.experiments import ExperimentEnc
from pmsolve.encodings.mapping_class import FreeExperiment, MappingClass, SymMapping
from pmsolve.encodings.mappings import uop_name
import pmsolve.encodings.relate as relate
from pmsolve.encodings.tp_formula import tp_fixed, tp_free
from pmsolve.model import Experiment, PortMapping, sort_ports
from pmsolve.proofs.base import Check, Tally, Violation, patched, register
import pmsolve.symbolic as symbolic
from pmsolve.symbolic import And, BoolVar, Compare, Formula, Int, Ite, Lin, Not, NumVar, Or, Problem, Real, Sum
from pmsolve.symbolic.nodes import OrF
from pmsolve.symbolic.walk import iter_vars
import pmsolve.throughput as throughput

LP_BACKEND = "highs"
SMT_BACKEND = "z3"
TOL = Fraction(1, 10**6)


# --------------------------------------------------------------------------- domains

def subsets(ports: Sequence[str]) -> list[frozenset[str]]:
    return [frozenset(c) for r in range(1, len(ports) + 1) for c in combinations(ports, r)]


def ports_of(k: int) -> tuple[str, ...]:
    return tuple(str(j) for j in range(k))


def _is_canonical(table: dict[str, tuple[frozenset[str], ...]], ports: tuple[str, ...]) -> bool:
    """Whether the mapping is the smallest of its port renamings (every statement checked here is
    invariant under renaming ports, so one representative per orbit suffices)."""
    def key(rename: dict[str, str]) -> tuple:
        return tuple(tuple(sorted(tuple(sorted(rename[p] for p in q)) for q in us)) for _, us in sorted(table.items()))

    own = key({p: p for p in ports})
    return all(own <= key(dict(zip(ports, perm))) for perm in permutations(ports))


def two_level_domain(n_insns: int, max_ports: int) -> Iterator[PortMapping]:
    """Every two-level mapping of instructions a, b, ... on K = 1..max_ports ports, up to port renaming."""
    names = "abcdefgh"[:n_insns]
    for k in range(1, max_ports + 1):
        ps = ports_of(k)
        for combo in product(subsets(ps), repeat=n_insns):
            if _is_canonical({i: (q,) for i, q in zip(names, combo)}, ps):
                yield PortMapping.two_level(ps, dict(zip(names, combo)))


def three_level_domain(n_insns: int, n_ports: int, max_uops: int) -> Iterator[PortMapping]:
    """Every three-level mapping whose instructions have 1..max_uops µops on n_ports ports, up to
    port renaming."""
    names = "abcdefgh"[:n_insns]
    ps = ports_of(n_ports)
    options = [combo for n in range(1, max_uops + 1) for combo in combinations_with_replacement(subsets(ps), n)]
    for choice in product(options, repeat=n_insns):
        if _is_canonical(dict(zip(names, choice)), ps):
            yield PortMapping(ps, {i: [(q, 1) for q in combo] for i, combo in zip(names, choice)})


def experiments(instructions: Sequence[str], max_count: int) -> list[Experiment]:
    return [Experiment(dict(zip(instructions, c))) for c in product(range(max_count + 1), repeat=len(instructions))
            if any(c)]


def lcm_upto(k: int) -> int:
    out = 1
    for j in range(1, k + 1):
        out = out * j // math.gcd(out, j)
    return out


# --------------------------------------------------------------------------- the LPs, with mutations

Commodity = tuple[str, frozenset[str], int]  # (name, ports that may run it, mass)


def commodities(m: PortMapping, e: Experiment, *, merged: bool = True, counts: bool = True) -> list[Commodity]:
    """The LP's µops: merged by port set (Thm 3.12 / Remark 3.13) or one per µop occurrence of
    each instruction (Def. 3.9 read literally). ``counts=False`` is a mutant: multiplicities dropped."""
    out: list[Commodity] = []
    if merged:
        mass: dict[frozenset[str], int] = {}
        for i, n in e.items():
            for u in m.uops_of(i):
                mass[u.ports] = mass.get(u.ports, 0) + n * (u.count if counts else 1)
        return [("{" + ",".join(sort_ports(q)) + "}", q, w) for q, w in mass.items()]
    for i, n in e.items():
        for j, u in enumerate(m.uops_of(i)):
            for r in range(u.count):
                out.append((f"{i}.{j}.{r}", u.ports, n))
    return out


def lp_problem(goods: Sequence[Commodity], ports: Sequence[str], *, drop: frozenset[str] = frozenset(),
               t_cap: Fraction | None = None, minimise_port: str | None = None) -> Problem:
    """Thm 3.7/3.12: minimise t s.t. (A) Σ_k x_uk = mass_u, (B) p_k = Σ_u x_uk, (C) p_k ≤ t,
    (D) x ≥ 0, (E) x_uk only where u may use k. ``drop`` removes ingredients (mutants):
    "E" (every µop on every port), "C-last" ((C) for the last port), "D" (negative shares)."""
    p = Problem(name="throughput LP")
    t = Real("t", 0)
    loads: dict[str, list[Lin]] = {k: [] for k in ports}
    for name, q, w in goods:
        allowed = ports if "E" in drop else [k for k in ports if k in q]
        xs = [Real(f"x[{name},{k}]", None if "D" in drop else 0, None) for k in allowed]
        for x, k in zip(xs, allowed):
            loads[k].append(x.lin())
        p.add(Sum(xs).eq(w))
    pv = {}
    for j, k in enumerate(ports):
        pk = Real(f"p[{k}]")
        pv[k] = pk
        p.add(pk.eq(Sum(loads[k])))
        if not ("C-last" in drop and j == len(ports) - 1):
            p.add(pk <= t)
    if t_cap is not None:
        p.add(t <= t_cap)
    if minimise_port is not None:
        p.minimize(pv[minimise_port])
    else:
        p.minimize(t)
    return p


def lp_value(goods: Sequence[Commodity], ports: Sequence[str], drop: frozenset[str] = frozenset(),
             backend: str = LP_BACKEND) -> Fraction:
    res = solve(lp_problem(goods, ports, drop=drop), backend)
    if res.status != "sat":
        raise Violation(f"the LP is not solved to optimality ({res}) on {goods}")
    return res.objective  # type: ignore[return-value]


def masses(m: PortMapping, e: Experiment) -> dict[frozenset[str], int]:
    """The µop multiset of ``e`` (port set -> Σ e(i)·n), read by the check itself from each
    instruction's µops, not through pmsolve's ``PortMapping.uop_masses``."""
    return {q: w for _, q, w in commodities(m, e)}


def formula_value(m: PortMapping, e: Experiment, mode: str | None = None) -> Fraction:
    """Thm 5.2's right-hand side literally: max over every non-empty Q ⊆ P (mutants narrow or
    distort it)."""
    mass = masses(m, e)
    if mode == "own-sets-only":
        qs = list(mass) + [frozenset(m.ports)]
    elif mode == "facile-pairs":
        qs = [a | b for a in mass for b in mass]
    else:
        qs = subsets(m.ports)
    if mode == "intersecting":
        return max(Fraction(sum(w for u, w in mass.items() if u & q), len(q)) for q in qs)
    return max(Fraction(sum(w for u, w in mass.items() if u <= q), len(q)) for q in qs)


def close(a: Fraction, b: Fraction) -> bool:
    return abs(Fraction(a) - Fraction(b)) <= TOL


def show(m: PortMapping, e: Experiment) -> str:
    body = "; ".join(f"{i} → " + " + ".join(str(u) for u in us) for i, us in m.uops.items())
    return f"mapping [{body}] on ports {{{','.join(m.ports)}}}, experiment {e}"


# --------------------------------------------------------------------------- Thm 3.7 / 3.12

def _lp_domain() -> Iterator[tuple[PortMapping, Experiment]]:
    for m in two_level_domain(2, 3):
        for e in experiments(m.instructions, 2):
            yield m, e
    for m in three_level_domain(2, 2, 2):
        for e in experiments(m.instructions, 2):
            yield m, e


def _thm_3_7(mutant: str | None, tally: Tally) -> None:
    dropped = {"no-E": "E", "no-C-last": "C-last"}.get(mutant or "")
    drop = frozenset([dropped]) if dropped else frozenset()
    for m, e in _lp_domain():
        goods = commodities(m, e, counts=mutant != "ignore-multiplicity")
        t = lp_value(goods, m.ports, drop)
        lcm = lcm_upto(len(m.ports))
        for n in sorted({1, 2, lcm}):
            sched = throughput.optimal_schedule_length(m, e, n)
            if sched != math.ceil(n * t - TOL):
                raise Violation(f"{show(m, e)}: LP optimum {t} but the optimal schedule of N={n} iterations "
                                f"takes T={sched} cycles (expected ⌈N·t⌉ = {math.ceil(n * t - TOL)})")
        tally.cases += 1


register(Check(
    "thm-3.7", "Theorem 3.7 / 3.12: the throughput LP computes the modelled inverse throughput",
    "tp⁻¹_M(e) := lim T(M,e,N)/N (Def. 3.5 / 3.11) equals the optimum of the LP "
    "min t s.t. (A) Σ_k x_uk = mass_u, (B) Σ_u x_uk = p_k, (C) p_k ≤ t, (D) x ≥ 0, (E) x_uk = 0 off M",
    "all two-level mappings of 2 instructions on 1-3 ports and all three-level mappings of 2 instructions "
    "with 1-2 µops on 2 ports; experiments with counts 0..2; T(M,e,N) = ⌈N·t*⌉ for N ∈ {1, 2, lcm(1..K)} "
    "(so T(M,e,lcm)/lcm = t* attains the infimum of Thm 3.6 and no N in the set beats it); mappings up to "
    "port renaming",
    f"exhaustive: LP in the IR solved by {LP_BACKEND}; optimal schedules by integer max-flow "
    "(pmsolve.throughput.optimal_schedule_length)",
    _thm_3_7,
    {"no-E": "constraint (E) dropped: every µop may use every port",
     "no-C-last": "constraint (C) dropped for the last port",
     "ignore-multiplicity": "Thm 3.12's mass Σ e(i)·n with the µop multiplicity n forgotten",
     "code:schedule-without-counts": "pmsolve.throughput.optimal_schedule_length forgets µop multiplicities"},
    {"code:schedule-without-counts": lambda: _schedule_without_counts()}))


def _schedule_without_counts():
    """optimal_schedule_length scheduling every µop once, whatever its multiplicity (a code mutant)."""
    real = throughput.optimal_schedule_length

    def wrong(mapping: PortMapping, experiment: Experiment, iterations: int) -> int:
        ones = PortMapping(mapping.ports, {i: [(u.ports, 1) for u in us] for i, us in mapping.uops.items()})
        return real(ones, experiment, iterations)

    return patched(throughput, "optimal_schedule_length", wrong)


# --------------------------------------------------------------------------- Remark 3.13

def _remark_3_13(mutant: str | None, tally: Tally) -> None:
    for m in three_level_domain(2, 2, 3):
        for e in experiments(m.instructions, 2):
            literal = lp_value(commodities(m, e, merged=False), m.ports)
            if mutant == "merge-by-size":
                mass: dict[int, tuple[frozenset[str], int]] = {}
                for name, q, w in commodities(m, e):
                    old = mass.get(len(q), (q, 0))
                    mass[len(q)] = (old[0], old[1] + w)
                reduced = [(f"size{s}", q, w) for s, (q, w) in mass.items()]
            else:
                reduced = commodities(m, e, counts=mutant != "ignore-multiplicity")
            two = PortMapping.two_level(m.ports, {n: sort_ports(q) for n, q, _ in reduced})
            e2 = Experiment({n: w for n, _, w in reduced})
            via_two_level = lp_value(commodities(two, e2), two.ports)
            if not close(literal, via_two_level):
                raise Violation(f"{show(m, e)}: three-level LP (one commodity per µop occurrence) gives {literal}, "
                                f"the two-level reduction e' = {e2} on µops-as-port-sets gives {via_two_level}")
            tally.cases += 1


register(Check(
    "remark-3.13", "Remark 3.13: three-level throughput reduces to two-level; µops are their port sets",
    "tp⁻¹ of e under a three-level mapping (each µop occurrence its own commodity, Def. 3.9 literally) "
    "equals tp⁻¹ of e' = {u ↦ Σ_(i,n,u) e(i)·n} under the two-level mapping (U ∪· P, E) whose instructions "
    "are the µops, identified by their port sets",
    "all three-level mappings of 2 instructions with 1-3 µops on 2 ports (up to port renaming); experiments "
    "with counts 0..2",
    f"exhaustive: both sides as LPs in the IR solved by {LP_BACKEND}",
    _remark_3_13,
    {"ignore-multiplicity": "e'(u) = Σ e(i), dropping the multiplicity n",
     "merge-by-size": "µops identified by the size of their port set instead of the set"}))


# --------------------------------------------------------------------------- Thm 3.14

def _thm_3_14(mutant: str | None, tally: Tally) -> None:
    drop = frozenset({"D"}) if mutant == "negative-shares" else frozenset()
    for m, e in _lp_domain():
        goods = commodities(m, e)
        t = lp_value(goods, m.ports)
        cap = t + (Fraction(1, 2) if mutant == "near-optimal" else TOL)
        bp = set()
        for k in m.ports:
            res = solve(lp_problem(goods, m.ports, drop=drop, t_cap=cap, minimise_port=k), LP_BACKEND)
            if res.status == "sat" and res.objective is not None and res.objective >= t - TOL:
                bp.add(k)
        if not bp:
            raise Violation(f"{show(m, e)}: no port is fully loaded (p_k = t* = {t}) in every optimal solution")
        expected = set(throughput.bottleneck(m, e).ports)
        if bp != expected:
            raise Violation(f"{show(m, e)}: bottleneck ports {sort_ports(bp)} differ from the largest maximiser "
                            f"{sort_ports(expected)} of the bottleneck formula")
        tally.cases += 1


register(Check(
    "thm-3.14", "Theorem 3.14: bottleneck ports exist",
    "BP_M(e) := ⋂_(s optimal LP solution) {k | s[p_k] = t*} is non-empty (and, as pmsolve reports it, equals "
    "the largest port set Q maximising the bottleneck formula of Thm 5.2)",
    "the domain of thm-3.7 (two-level: 2 instructions, 1-3 ports; three-level: 2 instructions, 1-2 µops, "
    "2 ports; counts 0..2)",
    f"exhaustive: k ∈ BP iff min p_k over the optimal face (t ≤ t*) is t*, one LP per port ({LP_BACKEND})",
    _thm_3_14,
    {"near-optimal": "intersection over near-optimal solutions (t ≤ t* + 1/2) instead of optimal ones",
     "negative-shares": "constraint (D) dropped: negative shares x_uk move load off every port",
     "code:smallest-maximiser": "pmsolve.throughput.bottleneck reports a smallest maximising port set"},
    {"code:smallest-maximiser": lambda: _smallest_maximiser()}))


def _smallest_maximiser():
    """pmsolve.throughput.bottleneck reporting a smallest port set that attains the maximum
    instead of the largest (their union), a code mutant."""
    real = throughput.bottleneck

    def wrong(mapping, experiment, r_max=None):
        b = real(mapping, experiment, r_max)
        if b.frontend_bound:
            return b
        mass = masses(mapping, experiment)
        best = [q for q in subsets(mapping.ports)
                if Fraction(sum(w for u, w in mass.items() if u <= q), len(q)) == b.inverse_throughput]
        return dataclasses.replace(b, ports=min(best, key=lambda q: (len(q), sort_ports(q))))

    return patched(throughput, "bottleneck", wrong)


# --------------------------------------------------------------------------- Thm 4.4

def _drop_relate(constraints: Sequence[Formula], which: str | None) -> list[Formula]:
    """Remove constraint (I) (the equation with ite(j_u, ...) atoms) or (F) (the disjunction of
    all q_k) from a relateThroughput instance: the mutants of Thm 4.4."""
    def is_i(f: Formula) -> bool:
        return (isinstance(f, Compare) and f.op == "=" and
                any(isinstance(a, Ite) and isinstance(a.cond, BoolVar) and "j[" in a.cond.name
                    for a, _ in f.lhs.terms + f.rhs.terms))

    def is_f(f: Formula) -> bool:
        return isinstance(f, OrF) and all(isinstance(a, BoolVar) and "q[" in a.name for a in f.args)

    if which == "drop-I":
        return [f for f in constraints if not is_i(f)]
    if which == "drop-F":
        return [f for f in constraints if not is_f(f)]
    return list(constraints)


def _thm_4_4(mutant: str | None, tally: Tally) -> None:
    # (1) one SMT query per class: relateThroughput ∧ t ≠ (bottleneck formula) is unsat
    classes = [(2, 3, 2, 1, 3), (3, 3, 2, 1, 2), (2, 2, 3, 2, 3)]
    for n, k, levels, u, bound in classes:
        insns = tuple(f"i{j}" for j in range(1, n + 1))
        ports = ports_of(k)
        cls = MappingClass(insns, ports, levels, u)
        sym = SymMapping(cls, "M.")
        e = FreeExperiment(insns, bound)
        p = Problem(name="Thm 4.4")
        p.add(sym.constraints)
        if cls.two_level:
            enc = two_level_mapping(insns, ports, "M.")
        else:
            enc = power_set_mapping(insns, ports, u, "M.")
            p.add(And(sym.var[i, q].eq(_psvar(enc, i, q)) for i in insns for q in sym.subsets))
        p.add(enc.constraints)
        exp_enc = ExperimentEnc(insns, dict(e.counts), {i: bound for i in insns})
        rel = relate_throughput(enc, exp_enc, "R.")
        p.add(_drop_relate(rel.constraints, mutant))
        cs: list[Formula] = []
        formula_t = tp_free(sym, e, "F.t", cs, "max").t  # type: ignore[attr-defined]
        p.add(cs)
        p.add(e.constraints)
        p.add(rel.t.ne(formula_t))
        res = solve(p, SMT_BACKEND)
        tally.cases += 1
        if res.feasible:
            m, x = sym.decode(res.model), e.decode(res.model)
            raise Violation(f"{show(m, x)}: relateThroughput admits t = {res.model.get('R.t')} but tp⁻¹ = "
                            f"{throughput.bottleneck(m, x).inverse_throughput} ({len(insns)} insns, {k} ports)")
        if not res.infeasible:
            raise Violation(f"solver gave no answer: {res}")
        tally.notes.append(f"{n} instructions, {k} ports, {'two' if levels == 2 else 'three'}-level"
                           f"{'' if levels == 2 else f' (power-set µops, ≤ {u} µops)'}, |e| ≤ {bound}: unsat")
    # (2) satisfiable with t = tp⁻¹ for every fixed mapping and experiment of a small domain
    # (catches an over-constrained encoding, which (1) cannot: it has fewer models, never wrong ones)
    for m in two_level_domain(2, 3):
        for x in experiments(m.instructions, 2):
            rel = relate_throughput(fixed_mapping(m), fixed_experiment(x, m.instructions), "R.")
            p = Problem(name="Thm 4.4 sat")
            p.add(_drop_relate(rel.constraints, mutant))
            p.add(rel.t.eq(throughput.bottleneck(m, x).inverse_throughput))
            res = solve(p, SMT_BACKEND)
            tally.cases += 1
            if not res.feasible:
                raise Violation(f"{show(m, x)}: relateThroughput is unsatisfiable with t = tp⁻¹")


register(Check(
    "thm-4.4", "Theorem 4.4: relateThroughput characterises the LP optimum",
    "the constraints (A)-(I) are satisfiable, and every model has t = the LP optimum t* (= tp⁻¹)",
    "(1) symbolically for all mappings and experiments of: 2 instructions × 3 ports two-level with |e| ≤ 3; "
    "3 × 3 two-level with |e| ≤ 2; 2 × 2 three-level (power-set µops, ≤ 2 µops) with |e| ≤ 3; "
    "(2) satisfiability with t = tp⁻¹ for every two-level mapping of 2 instructions on 1-3 ports (up to port "
    "renaming), counts 0..2",
    f"SMT ({SMT_BACKEND}): relateThroughput from pmsolve.encodings ∧ t ≠ max_Q mass(Q)/|Q| is unsat; "
    "the formula side is Thm 5.2, itself checked against the LP by thm-5.2",
    _thm_4_4,
    {"drop-I": "constraint (I) removed (bottleneck mass no longer tied to t)",
     "drop-F": "constraint (F) removed (the bottleneck port set may be empty)",
     "code:F-every-port": "pmsolve.encodings.relate writes (F) as a conjunction: every port is a bottleneck port",
     "code:implications-as-iff": "pmsolve.encodings.relate writes (E), (G), (H) as equivalences: a µop is in J "
                                 "iff one of its ports is in Q"},
    {"code:F-every-port": lambda: _relate_patched("Or", "And"),
     "code:implications-as-iff": lambda: _relate_patched("Implies", "Iff")}))


def _relate_patched(name: str, instead: str):
    """relateThroughput built with the IR's ``instead`` where it writes ``name`` (a code mutant)."""
    return patched(relate, name, getattr(symbolic, instead))


def _psvar(enc, insn: str, q: frozenset[str]) -> Lin:
    """power_set_mapping's Int variable insn2uop[i,u] (re-created with the same bounds, so the IR
    sees one variable), to tie it to the strategy encoding's n[i,u]."""
    hi = max(1, _max_count(enc))
    return Int(f"M.insn2uop[{insn},{uop_name(q)}]", 0, hi).lin()


def _max_count(enc) -> int:
    for f in enc.constraints:
        for v in iter_vars(f):
            if isinstance(v, NumVar) and "insn2uop" in v.name and v.hi is not None:
                return int(v.hi)
    return 1


# --------------------------------------------------------------------------- Thm 5.2

def counted_domain(n_ports: int) -> Iterator[PortMapping]:
    """Three-level mappings of instructions a, b with one or two µops whose multiplicities are
    1 or 2 (``a → 2×{0}``), up to port renaming: where forgetting a count changes tp⁻¹."""
    ps = ports_of(n_ports)
    sets = subsets(ps)
    options = [((q, n),) for q in sets for n in (1, 2)]
    options += [((q, n), (r, k)) for q, r in combinations(sets, 2) for n in (1, 2) for k in (1, 2)]
    for choice in product(options, repeat=2):
        table = {i: tuple(q for q, n in us for _ in range(n)) for i, us in zip("ab", choice)}
        if _is_canonical(table, ps):
            yield PortMapping(ps, {i: list(us) for i, us in zip("ab", choice)})


def _implementation_domain() -> Iterator[tuple[PortMapping, Experiment]]:
    """Where the known-wrong formulas differ from Thm 5.2: 4 ports (unions of 2 and of 3 µop port
    sets beat every single set and every pair, App. E.2) and µop multiplicities."""
    for m in two_level_domain(3, 4):
        for e in experiments(m.instructions, 1):
            yield m, e
    for m in counted_domain(2):
        for e in experiments(m.instructions, 2):
            yield m, e


def _thm_5_2(mutant: str | None, tally: Tally) -> None:
    # (1) formula == LP on the LP domain, plus App. E.2's shape: 3 instructions on 4 ports, 2 ports each
    cases = list(_lp_domain())
    ps = ports_of(4)
    pairs = [q for q in subsets(ps) if len(q) == 2]
    for combo in product(pairs, repeat=3):
        cases.append((PortMapping.two_level(ps, dict(zip("abc", combo))), Experiment({"a": 1, "b": 1, "c": 1})))
    for m, e in cases:
        f = formula_value(m, e, mutant)
        t = lp_value(commodities(m, e), m.ports)
        if not close(f, t):
            raise Violation(f"{show(m, e)}: max_Q mass(Q)/|Q| = {f} but the LP optimum is {t}")
        tally.cases += 1
    # (2) pmsolve's implementations (exact formula and the vectorised batch route) == the formula
    # over all Q, on a domain where the wrong variants of the formula differ from it
    by_mapping: dict[PortMapping, list[Experiment]] = {}
    for m, e in _implementation_domain():
        by_mapping.setdefault(m, []).append(e)
    for m, exps in by_mapping.items():
        batch = throughput.evaluate_many(m, exps)
        for e, v in zip(exps, batch):
            f = formula_value(m, e)
            b = throughput.bottleneck(m, e).inverse_throughput
            if b != f or abs(float(v) - float(f)) > 1e-9:
                raise Violation(f"{show(m, e)}: the formula over all Q gives {f}, pmsolve.throughput gives {b} "
                                f"(bottleneck) and {float(v):.6g} (evaluate_many)")
            tally.cases += 1


def _wrong_bottleneck(mode: str):
    """pmsolve.throughput.bottleneck with a known-wrong formula in place of Thm 5.2 (a code mutant)."""
    real = throughput.bottleneck

    def wrong(mapping, experiment, r_max=None):
        b = real(mapping, experiment, r_max)
        if b.frontend_bound:
            return b
        return dataclasses.replace(b, inverse_throughput=formula_value(mapping, experiment, mode))

    return lambda: patched(throughput, "bottleneck", wrong)


def _uop_masses_without_counts():
    """PortMapping.uop_masses forgetting each µop's multiplicity n (a code mutant)."""
    def wrong(self, experiment):
        mass: dict[frozenset[str], int] = {}
        for insn, n in experiment.items():
            for u in self.uops_of(insn):
                mass[u.ports] = mass.get(u.ports, 0) + n
        return mass

    return patched(PortMapping, "uop_masses", wrong)


register(Check(
    "thm-5.2", "Theorem 5.2: the bottleneck formula",
    "tp⁻¹_M(e) = max over non-empty Q ⊆ P of Σ{mass of µops u | M[u] ⊆ Q} / |Q|",
    "(1) vs the LP: the domain of thm-3.7 plus all two-level mappings of 3 instructions with 2 of 4 ports each "
    "on {a,b,c} (App. E.2's shape); (2) pmsolve.throughput (bottleneck and evaluate_many) vs the formula: all "
    "two-level mappings of 3 instructions on 1-4 ports with counts 0..1, and all mappings of 2 instructions "
    "with 1-2 µops of multiplicity 1-2 on 2 ports with counts 0..2 (up to port renaming)",
    f"exhaustive, exact Fractions for the formula (from each instruction's µops, not pmsolve's uop_masses), "
    f"LP in the IR solved by {LP_BACKEND}",
    _thm_5_2,
    {"own-sets-only": "Q ranges only over the µops' own port sets and P (no unions)",
     "facile-pairs": "Facile's shortcut: Q ranges over unions of two µops' port sets (App. E.2)",
     "intersecting": "mass of µops that merely intersect Q instead of lying inside it",
     "code:own-sets-only": "pmsolve.throughput.bottleneck with Q over the µops' own port sets and P only",
     "code:facile-pairs": "pmsolve.throughput.bottleneck with Facile's pairwise unions (App. E.2)",
     "code:intersecting": "pmsolve.throughput.bottleneck counting µops that merely intersect Q",
     "code:masses-without-counts": "PortMapping.uop_masses (read by bottleneck) forgets µop multiplicities"},
    {"code:own-sets-only": _wrong_bottleneck("own-sets-only"),
     "code:facile-pairs": _wrong_bottleneck("facile-pairs"),
     "code:intersecting": _wrong_bottleneck("intersecting"),
     "code:masses-without-counts": _uop_masses_without_counts}))


# --------------------------------------------------------------------------- Thm 6.3

def _premise(t_pair: Fraction, ti: Fraction, tj: Fraction, mutant: str | None) -> bool:
    if mutant == "max-premise":
        return t_pair == max(ti, tj)
    if mutant == "leq-premise":
        return t_pair <= ti + tj
    return t_pair == ti + tj


def _thm_6_3(mutant: str | None, tally: Tally) -> None:
    # (1) exhaustive with the exact formula
    unequal_sizes_additive = 0
    for k in range(1, 6):
        ps = ports_of(k)
        for a, b in product(subsets(ps), repeat=2):
            m = PortMapping.two_level(ps, {"i": sort_ports(a), "j": sort_ports(b)})
            t = [throughput.bottleneck(m, Experiment(x)).inverse_throughput for x in ({"i": 1, "j": 1}, {"i": 1}, {"j": 1})]
            if len(a) != len(b):  # outside the theorem: is its size premise needed here?
                unequal_sizes_additive += _premise(t[0], t[1], t[2], None)
                continue
            tally.cases += 1
            if _premise(t[0], t[1], t[2], mutant) and a != b:
                raise Violation(f"{show(m, Experiment({'i': 1, 'j': 1}))}: |M[i]| = |M[j]| and the premise holds "
                                f"(tp⁻¹ {t[0]} vs {t[1]} + {t[2]}) but M[i] ≠ M[j]")
    tally.notes.append(f"beyond the statement: among port sets of different sizes on 1-5 ports, "
                       f"{unequal_sizes_additive} pairs are additive (0 means the premise |M[i]| = |M[j]| is "
                       f"not needed on this domain)")
    # (2) symbolically on 6 ports (the exact formula over all 63 port subsets in the SMT encoding)
    k = 6
    cls = MappingClass(("i", "j"), ports_of(k))
    sym = SymMapping(cls, "M.")
    p = Problem(name="Thm 6.3")
    p.add(sym.constraints)
    cs: list[Formula] = []
    pair = tp_fixed(sym, Experiment({"i": 1, "j": 1}), "pair", cs, "max").t  # type: ignore[attr-defined]
    p.add(cs)
    size = {x: Sum(sym.port_profile(q)[idx] for q in cls.ports) for idx, x in enumerate(cls.instructions)}
    p.add(size["i"].eq(size["j"]))
    options = []
    for s in range(1, k + 1):
        single = Fraction(1, s)
        if mutant == "max-premise":
            prem = pair.eq(single)
        elif mutant == "leq-premise":
            prem = pair <= 2 * single
        else:
            prem = pair.eq(2 * single)
        options.append(And(size["i"].eq(s), prem))
    p.add(Or(options))
    p.add(Or(Or(And(sym.var["i", q], Not(sym.var["j", q])), And(Not(sym.var["i", q]), sym.var["j", q]))
             for q in cls.ports))  # M[i] ≠ M[j]
    res = solve(p, SMT_BACKEND)
    tally.cases += 1
    if res.feasible:
        m = sym.decode(res.model)
        raise Violation(f"{show(m, Experiment({'i': 1, 'j': 1}))}: premise holds on {k} ports but M[i] ≠ M[j]")
    tally.notes.append(f"{k} ports symbolically: unsat")


register(Check(
    "thm-6.3", "Theorem 6.3: additive inverse throughputs identify equal port sets",
    "for a two-level M and |M[i]| = |M[j]|: tp⁻¹({i↦1, j↦1}) = tp⁻¹({i↦1}) + tp⁻¹({j↦1}) implies M[i] = M[j]",
    "(1) every pair of equally large port sets on 1-5 ports; (2) all two-level mappings of i, j on 6 ports",
    f"(1) exhaustive with the exact formula; (2) SMT ({SMT_BACKEND}) over the bottleneck formula on all 63 "
    "port subsets: premise ∧ M[i] ≠ M[j] is unsat",
    _thm_6_3,
    {"max-premise": "premise tp⁻¹({i,j}) = max(tp⁻¹(i), tp⁻¹(j)) (the disjoint-ports signature) instead of the sum",
     "leq-premise": "premise tp⁻¹({i,j}) ≤ tp⁻¹(i) + tp⁻¹(j), which every mapping satisfies",
     "code:bottleneck-intersecting": "pmsolve.throughput.bottleneck (part 1) counts µops that merely intersect Q",
     "code:encoding-intersecting": "pmsolve.encodings.strategy's symbolic formula (part 2) counts µops that "
                                   "merely intersect Q"},
    {"code:bottleneck-intersecting": _wrong_bottleneck("intersecting"),
     "code:encoding-intersecting": lambda: _symbolic_intersecting()}))


def _symbolic_intersecting():
    """SymMapping.inside answering "some port of the µop is in Q" instead of "all are" (a code mutant)."""
    real = SymMapping.inside

    def wrong(self, insn, q):
        kind, val = real(self, insn, q)
        if kind == "bool":
            return kind, Or(self.var[insn, k] for k in self.cls.ports if k in q)
        return kind, val

    return patched(SymMapping, "inside", wrong)

