"""Genuine small predictors for the AnICA tests: port-mapping throughput (pmsolve.throughput).

``slow_bsf`` differs from ``base`` only in ``bsf``/``bsr`` (on one port, 3 µops instead of 1),
so every real inconsistency between them involves a bit scan: the planted bug AnICA must find
(cf. the llvm-mca Zen+ bit-scan model bug of sec. 8.3). ``crashy`` fails on ``imul`` blocks.
"""

from __future__ import annotations

from typing import Sequence

from pmsolve.predictors.block import Block
from pmsolve.predictors.base import Prediction
from pmsolve.model import Experiment, PortMapping
from pmsolve.throughput import evaluate_many

SCHEMES = ["add_r64_r64", "add_r64_i8", "sub_r64_r64", "adc_r64_r64", "add_m64_r64", "mov_r64_m64",
           "mov_m64_r64", "imul_r64_r64", "shl_r64_cl", "bsf_r64_r64", "bsr_r64_r64", "bsf_r32_r32",
           "vaddpd_ymm_ymm_ymm", "vmulpd_ymm_ymm_ymm", "lea_r64_m", "popcnt_r64_r64"]
PORTS = ["0", "1", "2", "3", "L", "S", "F0", "F1"]
#: µop counts for the domain's log-size feature (the rest count as one µop)
UOPS = {"add_r64_r64": 1, "add_m64_r64": 4, "bsf_r64_r64": 6, "bsr_r64_r64": 6, "bsf_r32_r32": 6,
        "imul_r64_r64": 1, "mov_r64_m64": 1, "mov_m64_r64": 1}


def make_universe():
    """The AnICA universe over SCHEMES (the catalogue's forms, UOPS as µop counts)."""
    from pmsolve.anica.domain import Form, Universe
    from pmsolve.isa import load_catalogue

    cat = load_catalogue()
    return Universe([Form(cat[n]) for n in SCHEMES if n in cat], UOPS)


def _mapping(slow_bsf: bool) -> PortMapping:
    alu = ("0", "1", "2", "3")
    u: dict[str, list] = {}
    for s in SCHEMES:
        if s.startswith(("bsf", "bsr")):
            u[s] = [(("0",), 3)] if slow_bsf else [(alu, 1)]
        elif s.startswith(("vaddpd", "vmulpd")):
            u[s] = [(("F0", "F1"), 1)]
        elif s == "imul_r64_r64":
            u[s] = [(("1",), 1)]
        elif s == "add_m64_r64":
            u[s] = [(("L",), 1), (alu, 1), (("S",), 1)]
        elif s == "mov_r64_m64":
            u[s] = [(("L",), 1)]
        elif s == "mov_m64_r64":
            u[s] = [(("S",), 1)]
        else:
            u[s] = [(alu, 1)]
    return PortMapping(PORTS, u)


class MappingPredictor:
    def __init__(self, name: str, mapping: PortMapping, crash_on: str | None = None, error_text: str = ""):
        self._name, self.mapping, self.crash_on, self.error_text = name, mapping, crash_on, error_text

    @property
    def name(self) -> str:
        return self._name

    def predict(self, blocks: Sequence[Block]) -> list[Prediction]:
        out: list[Prediction | None] = [None] * len(blocks)
        exps, where = [], []
        for k, b in enumerate(blocks):
            names = [i.scheme for i in b.insns]
            if self.crash_on and self.crash_on in names:
                out[k] = Prediction(None, f"crash: {self.error_text or 'unsupported'}")
            elif any(n not in self.mapping.uops for n in names):
                out[k] = Prediction(None, "unsupported: not in mapping")
            else:
                exps.append(Experiment(names))
                where.append(k)
        if exps:
            for k, v in zip(where, evaluate_many(self.mapping, exps)):
                out[k] = Prediction(float(v))
        return out  # type: ignore[return-value]


def base() -> MappingPredictor:
    return MappingPredictor("map:base", _mapping(False))


def slow_bsf() -> MappingPredictor:
    return MappingPredictor("map:slow-bsf", _mapping(True))


def crashy() -> MappingPredictor:
    return MappingPredictor("map:crashy", _mapping(False), crash_on="imul_r64_r64",
                            error_text="<script>alert('x')</script> & <b>bold</b>")


# --------------------------------------------------------------------------- subsumption by brute force

def brute_subsumes(u, a1, a2, *, rotation: bool = True) -> bool:
    """Def. 8.7 read literally, by enumeration and independent of pmsolve.anica.subsume and the
    SAT encoding: C2 compares the sets of universe forms each abstract instruction admits
    (every instantiation enumerated); C1 + C4 enumerate the injective maps whose images, read
    from some rotation of a2, appear in a1's order; C3 looks the facts up in a2's aliasing.
    ``rotation=False`` drops C4 (every injective map), to see which pairs C4 decides."""
    from itertools import combinations, permutations

    n1, n2 = len(a1.insns), len(a2.insns)
    if n1 > n2:
        return False
    keys = [f.key for f in u.forms]
    g1 = [frozenset(k for k in keys if u.admits(x, k)) for x in a1.insns]
    g2 = [frozenset(k for k in keys if u.admits(y, k)) for y in a2.insns]
    al2 = a2.alias

    def fact(a, b) -> str:
        return al2.get((a, b), al2.get((b, a), "top"))

    if rotation:
        maps = {tuple((r + p) % n2 for p in pos) for r in range(n2) for pos in combinations(range(n2), n1)}
    else:
        maps = set(permutations(range(n2), n1))
    return any(all(g2[m[i]] <= g1[i] for i in range(n1))
               and all(fact((m[i], o), (m[j], p)) == x for ((i, o), (j, p)), x in a1.aliasing)
               for m in maps)


PERTURBATIONS = (None, "swap", "reverse", "narrow", "flip-alias", "add-alias")


def _expand(ab, rng, steps: int):
    from pmsolve.anica.domain import expansions

    for _ in range(steps):
        exps = expansions(ab)
        if not exps:
            break
        ab = exps[rng.randrange(len(exps))].apply(ab)
    return ab


def _reorder(ab, order: list[int]):
    """``ab`` with its instructions in ``order`` (old indices), aliasing renumbered to match."""
    from pmsolve.anica.domain import AbstractBlock

    new = {old: k for k, old in enumerate(order)}
    return AbstractBlock.make([ab.insns[k] for k in order],
                              {((new[i], o), (new[j], p)): v for ((i, o), (j, p)), v in ab.aliasing})


def subsumption_pair(u, rng, perturb: str | None, expand_a2: bool):
    """(c2, a1, a2): a sampled concrete block c2, a2 = β(c2) (generalised if ``expand_a2``) and
    a1 built to subsume a2: the instructions at increasing positions of a rotation of a2 with
    their aliasing, then generalised. ``perturb`` then spoils that on purpose, so that about
    half of the pairs do not subsume and each condition of Def. 8.7 decides some: "swap" and
    "reverse" change a1's order (C4), "narrow" pins one instruction to a random form (C2),
    "flip-alias" / "add-alias" contradict or add an aliasing fact (C3)."""
    from pmsolve.anica.domain import MUST, MUSTNOT, AbstractBlock, beta
    from pmsolve.anica.sampler import Sampler

    smp = Sampler(u)
    c2 = None
    while c2 is None:
        c2 = smp.sample(AbstractBlock.top(rng.randint(1, 4)), rng)
    a2 = beta(u, c2)
    if expand_a2:
        a2 = _expand(a2, rng, rng.randint(0, 6))
    n2 = len(a2.insns)
    n1 = rng.randint(3 if perturb in ("swap", "reverse") and n2 >= 3 else 1, n2)  # order matters from 3 on
    r = rng.randrange(n2)
    picked = [(r + p) % n2 for p in sorted(rng.sample(range(n2), n1))]
    where = {j: i for i, j in enumerate(picked)}
    a1 = AbstractBlock.make([a2.insns[j] for j in picked],
                            {((where[i], o), (where[j], p)): v for ((i, o), (j, p)), v in a2.aliasing
                             if i in where and j in where})
    a1 = _expand(a1, rng, rng.randint(0, 8))
    if perturb == "swap" and n1 >= 2:
        order = list(range(n1))
        i, j = rng.sample(order, 2)
        order[i], order[j] = order[j], order[i]
        a1 = _reorder(a1, order)
    elif perturb == "reverse":
        a1 = _reorder(a1, list(range(n1))[::-1])
    elif perturb == "narrow":
        k = rng.randrange(n1)
        insns = list(a1.insns)
        insns[k] = u.beta_insn(rng.choice(u.forms).key)
        a1 = AbstractBlock(tuple(insns), a1.aliasing)
    elif perturb == "flip-alias" and a1.aliasing:
        alias = a1.alias
        key = rng.choice(sorted(alias))
        alias[key] = MUSTNOT if alias[key] == MUST else MUST
        a1 = AbstractBlock.make(a1.insns, alias)
    elif perturb == "add-alias":
        alias = a1.alias
        a, b = sorted([(rng.randrange(n1), rng.randrange(3)), (rng.randrange(n1), rng.randrange(3))])
        if a != b:
            alias[(a, b)] = rng.choice((MUST, MUSTNOT))
        a1 = AbstractBlock.make(a1.insns, alias)
    return c2, a1, a2
