"""Strategy sufficiency (dissertation ch. 9) written once in the IR.

Two symbolic mappings M1, M2 of a bounded class (N instructions, K ports, two levels or three
levels with at most U µops per instruction; :mod:`pmsolve.encodings.mapping_class`) must agree
on every experiment of a benchmarking strategy, while a free experiment e* of at most L
instructions tells them apart:

    wf(M1) ∧ wf(M2) ∧ ⋀_{e ∈ S} tp_M1(e) = tp_M2(e) ∧ tp_M1(e*) ≠ tp_M2(e*)

Satisfiable: a counterexample (the strategy does not determine the mapping up to
indistinguishability). Unsatisfiable: it does, within the bounds. Throughputs are encoded by
:mod:`pmsolve.encodings.tp_formula`.

Adaptive strategies (PMEvo's ratio pairs depend on singleton throughputs, the uops.info
blocking counts on throughputs and µop counts) are encoded by enumerating the finitely many
values a singleton observation can take in the class: "if the observations are v, then the
experiments f(v) must agree". Since M1 and M2 must agree on the singletons, both mappings
generate the same experiments, so M1's observation terms decide which ones.

Instructions of the class may also be *fixed* (known, identical in M1 and M2), such as the
blocking instructions of the uops.info strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import product
from typing import Callable

from pmsolve.formula import bottleneck
from pmsolve.encodings.encoding import Encoding
from pmsolve.encodings.mapping_class import FreeExperiment, MappingClass, SymMapping
from pmsolve.encodings.symmetry import lex_geq
from pmsolve.encodings.tp_formula import Tp, equal, tp_fixed, tp_free
from pmsolve.model import Experiment, PortMapping
from pmsolve.symbolic import FALSE, TRUE, And, Bool, Formula, Iff, Implies, Or, Problem, as_term, same


Observation = tuple[Fraction, int]  # singleton tp⁻¹, µop count


@dataclass(frozen=True)
class Family:
    """Experiments that depend on the singleton observations of ``depends_on``.

    ``make`` receives one observation (tp⁻¹, µop count) per instruction of ``depends_on`` and
    returns the experiments the strategy runs in that case. ``uses_uops`` says whether the
    µop counts matter (the sparse µop counter of ch. 6); otherwise only tp⁻¹ does.
    """

    depends_on: tuple[str, ...]
    make: Callable[[tuple[Observation, ...]], list[Experiment]]
    uses_uops: bool = False


class StrategySpec:
    """What the encoder needs from a strategy (see :mod:`pmsolve.strategy`)."""

    observes_uops: bool = False
    port_symmetric: bool = True  # invariant under port renaming (with the fixed instructions' names)
    instruction_symmetric: bool = True  # invariant under renaming the symbolic instructions

    def families(self, cls: MappingClass) -> list[Family]:
        raise NotImplementedError


def build_sufficiency(cls: MappingClass, strategy: StrategySpec, max_exp_len: int, *,
                      symmetry_breaking: bool = True, encoding: str = "threshold",
                      given: PortMapping | None = None,
                      ) -> Encoding[tuple[PortMapping, PortMapping, Experiment]]:
    """The problem "two mappings of ``cls`` agree on every experiment of ``strategy`` but differ
    on an experiment of at most ``max_exp_len`` instructions"; with ``given``, M1 is that mapping.

    `decode` gives (M1, M2, e*); `vars` holds the symbolic mappings "m1", "m2" and the free
    "experiment"; `stats["experiments"]` counts the distinct strategy experiments encoded
    (conditional ones included)."""
    m1, m2 = SymMapping(cls, "M1."), SymMapping(cls, "M2.")
    p = Problem(name="strategy sufficiency")
    p.add(m1.constraints)
    p.add(m2.constraints)
    if given is not None:  # is this particular mapping determined? (no symmetry to break then)
        p.add(m1.fix(given))
        symmetry_breaking = False
    cache: dict[tuple[int, Experiment], Tp] = {}
    sink: list[Formula] = []

    def tp(which: int, exp: Experiment) -> Tp:
        key = (which, exp)
        if key not in cache:
            m = m1 if which == 1 else m2
            cache[key] = tp_fixed(m, exp, f"M{which}.t[{exp}]", sink, encoding)
        return cache[key]

    agreed: set[Experiment] = set()

    def agree(exp: Experiment, when: Formula = TRUE) -> None:
        if same(when, FALSE):
            return
        f = tp(1, exp).agree(tp(2, exp))
        p.add(f if same(when, TRUE) else Implies(when, f))
        agreed.add(exp)

    families = strategy.families(cls)
    observed = sorted({i for f in families for i in f.depends_on if i in cls.instructions})
    for insn in observed:  # the observations the adaptive experiments are computed from
        agree(Experiment({insn: 1}))
    if strategy.observes_uops:
        for insn in cls.instructions:
            p.add(equal(m1.uop_count(insn), m2.uop_count(insn)), name=f"uops[{insn}]")

    domain = cls.observation_domain()
    indicator: dict[tuple[str, Observation, bool], Formula] = {}

    def holds(insn: str, obs: Observation, uses_uops: bool) -> Formula:
        """M1 shows observation ``obs`` for ``insn`` (a formula; constants for fixed ones)."""
        key = (insn, obs, uses_uops)
        if key not in indicator:
            f = tp(1, Experiment({insn: 1})).equals(obs[0])
            if uses_uops:
                f = And(f, equal(m1.uop_count(insn), as_term(obs[1])))
            if not (same(f, TRUE) or same(f, FALSE)):
                b = Bool(f"obs[{insn},{obs[0]},{obs[1] if uses_uops else '*'}]")
                p.add(Iff(b, f))
                f = b
            indicator[key] = f
        return indicator[key]

    for fam in families:
        doms = []
        for insn in fam.depends_on:
            if insn in cls.instructions:
                vals = domain if fam.uses_uops else sorted({(t, 0) for t, _ in domain})
            else:
                fixed_m = cls.fixed.restrict([insn])  # type: ignore[union-attr]
                obs = (bottleneck(fixed_m, Experiment({insn: 1})).inverse_throughput,
                       sum(u.count for u in fixed_m.uops_of(insn)))
                vals = [obs if fam.uses_uops else (obs[0], 0)]
            doms.append(vals)
        cases: dict[Experiment, list[Formula]] = {}
        for combo in product(*doms):
            cond = And(holds(i, o, fam.uses_uops) for i, o in zip(fam.depends_on, combo))
            if same(cond, FALSE):
                continue
            for exp in fam.make(tuple(combo)):
                cases.setdefault(exp, []).append(cond)
        for exp, conds in cases.items():
            agree(exp, Or(conds))

    e_star = FreeExperiment(cls.all_instructions, max_exp_len)
    t1 = tp_free(m1, e_star, "M1.t*", sink, encoding)
    t2 = tp_free(m2, e_star, "M2.t*", sink, encoding)
    p.add(t1.differ(t2), name="distinguish")
    p.add(e_star.constraints)
    p.add(sink)
    if symmetry_breaking:
        # double-lex on M1's profile matrix P[i,k] = #µops of i that may use port k: columns
        # (and rows, if instructions are interchangeable) in decreasing lexicographic order.
        # P transforms as a matrix under port and instruction renamings, and every matrix has a
        # double-lex ordered image, so some renaming of any counterexample satisfies this.
        prof = [m1.port_profile(k) for k in cls.ports]
        if strategy.port_symmetric:
            for c, (a, b) in enumerate(zip(prof, prof[1:])):
                p.add(lex_geq(a, b, f"sym.col{c}"))
        if strategy.instruction_symmetric:
            rows = [[col[j] for col in prof] for j in range(len(cls.instructions))]
            for r, (a, b) in enumerate(zip(rows, rows[1:])):
                p.add(lex_geq(a, b, f"sym.row{r}"))
    # every tp⁻¹ here is mass/|Q| with |Q| ≤ K: distinct values differ by ≥ 1/K² (MILP route)
    p.strict_margin = Fraction(1, len(cls.ports) ** 2)

    def decode(answer: object) -> tuple[PortMapping, PortMapping, Experiment]:
        return m1.decode(answer), m2.decode(answer), e_star.decode(answer)

    return Encoding(p, None, decode, {"m1": m1, "m2": m2, "experiment": e_star},
                    {"experiments": len(agreed)})
