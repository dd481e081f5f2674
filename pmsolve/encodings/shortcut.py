"""A throughput shortcut against the exact formula (App. E.2): Facile's pairwise port unions.

The shortcut is the maximum of mass(Q)/|Q| over only the port sets Q an *admissibility*
formula allows; :func:`build_shortcut_gap` asks for a mapping of a class and an experiment on
which it differs from the exact bottleneck formula over all Q (Thm 5.2).
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations_with_replacement
from typing import Callable

from pmsolve.encodings.encoding import Encoding
from pmsolve.encodings.mapping_class import FreeExperiment, MappingClass, SymMapping
from pmsolve.encodings.tp_formula import mass_free, tp_free
from pmsolve.errors import ValidationError
from pmsolve.model import Experiment, PortMapping, PortSet
from pmsolve.symbolic import And, Formula, Implies, Not, Or, Problem, Real


def build_shortcut_gap(cls: MappingClass, max_exp_len: int,
                       admissible: Callable[[SymMapping, FreeExperiment, PortSet], Formula],
                       ) -> Encoding[tuple[PortMapping, Experiment]]:
    """A mapping of ``cls`` and an experiment on which a shortcut formula — the maximum of
    mass(Q)/|Q| over only the port sets Q that ``admissible`` allows — differs from the exact
    bottleneck formula over all Q (Thm 5.2). `t` is the exact value, `vars["shortcut"]` the
    shortcut's; `decode` gives (mapping, experiment)."""
    m = SymMapping(cls, "M.")
    e = FreeExperiment(cls.all_instructions, max_exp_len)
    p = Problem(name="shortcut gap")
    p.add(m.constraints)
    cs: list[Formula] = []
    exact = tp_free(m, e, "M.t", cs, "max").t  # type: ignore[attr-defined]
    p.add(cs)
    hi = max_exp_len * max(m.max_mass(i) for i in e.instructions)
    short = Real("M.t_short", 0, hi)
    options = []
    for q in m.subsets:
        value = mass_free(m, e, q) / len(q)
        ok = admissible(m, e, q)
        p.add(Implies(ok, short >= value))
        options.append(And(ok, short == value))
    p.add(Or(options))
    p.add(e.constraints)
    p.add(short != exact, name="gap")
    p.strict_margin = Fraction(1, len(cls.ports) ** 2)
    return Encoding(p, exact, lambda answer: (m.decode(answer), e.decode(answer)),
                    {"mapping": m, "experiment": e, "shortcut": short})


def pairwise_union_admissible(m: SymMapping, e: FreeExperiment, q: PortSet) -> Formula:
    """Q is M[a] ∪ M[b] for µops a, b (possibly equal) of instructions present in e (two-level)."""
    if not m.cls.two_level:
        raise ValidationError("the pairwise-union shortcut is encoded for two-level mappings")
    insns = [i for i in e.instructions if i in m.cls.instructions]
    opts = []
    for a, b in combinations_with_replacement(insns, 2):
        present = And(e.counts[a] >= 1, e.counts[b] >= 1)
        union_is_q = And([Or(m.var[a, k], m.var[b, k]) if k in q else
                          And(Not(m.var[a, k]), Not(m.var[b, k])) for k in m.cls.ports])
        opts.append(And(present, union_is_q))
    return Or(opts)
