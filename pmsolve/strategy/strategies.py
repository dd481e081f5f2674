"""Benchmarking strategies: which experiments a port-mapping inference method measures.

* ``pairs`` — every singleton {i↦1} and every pair {a↦1, b↦1};
* ``ratio-pairs`` — PMEvo's full set (sec. 5.1.1): pairs plus, for tp⁻¹(a) > tp⁻¹(b),
  {a↦1, b↦⌈tp⁻¹(a)/tp⁻¹(b)⌉};
* ``uopsinfo:k=RULE`` — the uops.info blocking strategy (Alg. 6.1, sec. 6.2.2) without per-port
  counters: for every instruction i under investigation and every blocking instruction B_Q (one
  single-µop instruction per non-empty port set Q, known and shared), {B_Q↦k} and
  {B_Q↦k, i↦1}, plus singletons and the total µop count of each singleton (the one counter of
  ch. 6). ``RULE`` is ``paper`` (Abel and Reineke 2019: ports × latency, the latency modelled as
  max(1, ⌈tp⁻¹({i↦1})⌉), which is 2 for App. E.1's instruction I), ``uops`` (Constraint 6.1:
  |Q| · µops(i)), ``impl`` (the uops.info implementation: min(max(2|Q|·max(1,⌊tp⁻¹⌋),
  |Q|·µops, 10), 100)) or a fixed integer;
* ``FILE`` — a fixed list of experiments (pmsolve/PMEvo JSON, or one ``insn:count,...`` per line).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations, permutations
from typing import Callable

from pmsolve.encodings.mapping_class import MappingClass, port_subsets
from pmsolve.encodings.sufficiency import Family, Observation, StrategySpec
from pmsolve.errors import ValidationError
from pmsolve.formats import load_experiments, read_text_file
from pmsolve.model import Experiment, Measurement, PortMapping, sort_ports
from pmsolve.throughput import inverse_throughput


def instruction_names(n: int) -> tuple[str, ...]:
    return tuple(f"i{j}" for j in range(1, n + 1))


def port_names(k: int) -> tuple[str, ...]:
    return tuple(str(j) for j in range(k))


def blocking_name(q) -> str:
    ps = sort_ports(q)
    return "B" + ("".join(ps) if all(len(p) == 1 for p in ps) else "_".join(ps))


@dataclass(frozen=True)
class Strategy(StrategySpec):
    """A strategy: its experiment families (for the encoder) and the class it is checked on."""

    name: str
    description: str
    build_families: Callable[[MappingClass], list[Family]]
    observes_uops: bool = False
    port_symmetric: bool = True
    instruction_symmetric: bool = True
    blocking: bool = False  # the class gets one known blocking instruction per port set
    file_instructions: tuple[str, ...] | None = None

    def families(self, cls: MappingClass) -> list[Family]:
        return self.build_families(cls)

    def mapping_class(self, n_insns: int | None, n_ports: int, levels: int = 2,
                      max_uops: int | None = None) -> MappingClass:
        """The bounded class: N symbolic instructions (named i1..iN, or the file's names), ports
        0..K-1, and for blocking strategies the known blocking instructions B_Q."""
        if n_ports < 1:
            raise ValidationError(f"the number of ports must be ≥ 1, got {n_ports}")
        if self.file_instructions is not None and n_insns is None:
            insns = self.file_instructions
        else:
            if n_insns is None or n_insns < 1:
                raise ValidationError(f"the number of instructions must be ≥ 1, got {n_insns}")
            insns = instruction_names(n_insns)
            if self.file_instructions is not None:
                extra = sorted(set(self.file_instructions) - set(insns))
                if extra:
                    raise ValidationError(f"strategy {self.name} uses instructions {extra} outside the class "
                                          f"{list(insns)}; give no instruction count to take the file's names")
        u = max_uops if max_uops is not None else (1 if levels == 2 else 2)
        if levels == 2 and u != 1:
            raise ValidationError("a µop bound (max_uops) needs three-level mappings "
                                  "(two-level instructions are one µop)")
        ports = port_names(n_ports)
        fixed = None
        if self.blocking:
            fixed = PortMapping.two_level(ports, {blocking_name(q): sort_ports(q) for q in port_subsets(ports)})
        return MappingClass(tuple(insns), ports, levels, u, fixed)

    def experiments(self, mapping: PortMapping, cls: MappingClass) -> list[Experiment]:
        """The experiments the strategy runs on a concrete mapping of the class, in order."""
        out: dict[Experiment, None] = {}
        fams = self.families(cls)
        for insn in sorted({i for f in fams for i in f.depends_on if i in cls.instructions}):
            out[Experiment({insn: 1})] = None
        for fam in fams:
            obs = tuple(observe(mapping, i, fam.uses_uops) for i in fam.depends_on)
            for e in fam.make(obs):
                out[e] = None
        return list(out)


def observe(mapping: PortMapping, insn: str, uses_uops: bool = True) -> Observation:
    """A singleton observation as the encoder sees it: (tp⁻¹, µop count or 0 when unused)."""
    t = inverse_throughput(mapping, Experiment({insn: 1}))
    return (t, sum(u.count for u in mapping.uops_of(insn)) if uses_uops else 0)


def _fixed(exps: list[Experiment]) -> Family:
    return Family((), lambda _obs, exps=tuple(exps): list(exps))


def _singletons_pairs(cls: MappingClass) -> list[Family]:
    insns = cls.instructions
    return [_fixed([Experiment({i: 1}) for i in insns]
                   + [Experiment({a: 1, b: 1}) for a, b in combinations(insns, 2)])]


def _ratio(obs: tuple[Observation, ...], a: str, b: str) -> list[Experiment]:
    (ta, _), (tb, _) = obs
    if ta > tb:
        return [Experiment({a: 1, b: math.ceil(ta / tb)})]
    return []


def _ratio_pairs(cls: MappingClass) -> list[Family]:
    fams = _singletons_pairs(cls)
    for a, b in permutations(cls.instructions, 2):
        fams.append(Family((a, b), lambda obs, a=a, b=b: _ratio(obs, a, b)))
    return fams


PAIRS = Strategy("pairs", "all singletons and all pairs {a↦1, b↦1}", _singletons_pairs)
RATIO_PAIRS = Strategy("ratio-pairs", "PMEvo (sec. 5.1.1): singletons, pairs and ratio pairs "
                       "{a↦1, b↦⌈tp⁻¹(a)/tp⁻¹(b)⌉}", _ratio_pairs)


# --------------------------------------------------------------------------- uops.info

@dataclass(frozen=True)
class KRule:
    """The number k of blocking instructions for port set size |Q| on K ports."""

    name: str
    uses_uops: bool
    formula: str
    fn: Callable[[int, int, Fraction, int], int] = field(compare=False)

    def __call__(self, q_size: int, n_ports: int, tp: Fraction, uops: int) -> int:
        return self.fn(q_size, n_ports, tp, uops)


K_RULES = {
    "paper": KRule("paper", False, "k = K · max(1, ⌈tp⁻¹({i↦1})⌉)  (ports × latency, latency ≈ ⌈tp⁻¹⌉)",
                   lambda q, k, t, u: k * max(1, math.ceil(t))),
    "uops": KRule("uops", True, "k = |Q| · µops(i)  (Constraint 6.1)", lambda q, k, t, u: q * u),
    "impl": KRule("impl", True, "k = min(max(2|Q|·max(1,⌊tp⁻¹⌋), |Q|·µops(i), 10), 100)  (uops.info code)",
                  lambda q, k, t, u: min(max(2 * q * max(1, math.floor(t)), q * u, 10), 100)),
}


def k_rule(text: str) -> KRule:
    if text in K_RULES:
        return K_RULES[text]
    if text.isdigit() and int(text) >= 1:
        c = int(text)
        return KRule(text, False, f"k = {c}", lambda q, k, t, u: c)
    raise ValidationError(f"unknown k rule {text!r}: use paper, uops, impl or a positive integer")


def uopsinfo(rule: KRule) -> Strategy:
    def families(cls: MappingClass) -> list[Family]:
        fixed = cls.fixed
        if fixed is None:
            raise ValidationError("the uops.info strategy needs the blocking instructions in the class")
        blockers = [(b, fixed.uops_of(b)[0].ports) for b in fixed.instructions]
        fams = [_fixed([Experiment({i: 1}) for i in cls.all_instructions])]
        n_ports = len(cls.ports)
        for i in cls.instructions:
            for b, q in blockers:
                def make(obs, i=i, b=b, q=q):
                    k = rule(len(q), n_ports, obs[0][0], obs[0][1])
                    return [Experiment({b: k}), Experiment({b: k, i: 1})]
                fams.append(Family((i,), make, uses_uops=rule.uses_uops))
        return fams

    return Strategy(f"uopsinfo:k={rule.name}",
                    f"uops.info blocking benchmarks {{B_Q↦k, i↦1}} for every port set Q, with {rule.formula}; "
                    f"singletons and µop counts observed", families, observes_uops=True, blocking=True)


# --------------------------------------------------------------------------- files

def read_experiment_file(path: str) -> list[Experiment]:
    """Experiments from pmsolve/PMEvo JSON, or from text with one ``insn:count,...`` per line."""
    if not os.path.exists(path):
        raise ValidationError(f"strategy file {path!r} does not exist")
    if path.endswith(".json"):
        return [m.experiment if isinstance(m, Measurement) else m for m in load_experiments(path)]
    exps = []
    for n, line in enumerate(read_text_file(path, "strategy file").splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if text:
            try:
                exps.append(Experiment.parse(text))
            except ValidationError as exc:
                raise ValidationError(f"{path}:{n}: {exc}") from None
    if not exps:
        raise ValidationError(f"strategy file {path!r} lists no experiments")
    return exps


def from_experiments(exps: list[Experiment], name: str = "experiments") -> Strategy:
    exps = list(dict.fromkeys(exps))
    insns = tuple(sorted({i for e in exps for i in e}))

    def families(cls: MappingClass) -> list[Family]:
        return [_fixed(exps)]

    return Strategy(name, f"{len(exps)} fixed experiments", families, instruction_symmetric=False,
                    file_instructions=insns)


def parse_strategy(text: str) -> Strategy:
    """``pairs``, ``ratio-pairs``, ``uopsinfo:k=RULE`` or a file name."""
    if text == "pairs":
        return PAIRS
    if text in ("ratio-pairs", "pmevo"):
        return RATIO_PAIRS
    if text.startswith("uopsinfo"):
        rest = text[len("uopsinfo"):]
        if not rest:
            return uopsinfo(K_RULES["paper"])
        if not rest.startswith(":k="):
            raise ValidationError(f"bad strategy {text!r}: write uopsinfo:k=paper|uops|impl|N")
        return uopsinfo(k_rule(rest[3:]))
    if os.path.exists(text):
        return from_experiments(read_experiment_file(text), text)
    raise ValidationError(f"unknown strategy {text!r}: pairs, ratio-pairs, uopsinfo:k=RULE, or an existing file")
