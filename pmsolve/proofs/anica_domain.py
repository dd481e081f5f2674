"""Def. 8.2 / Thm 8.6 on bounded domains: AnICA's abstract domain is a valid abstract domain.

Per feature abstraction of Table 8.2, exhaustively over a bounded set of concrete values and
all abstract values over them: (1) ⊑ is a partial order, (2) every ascending chain through
expansions reaches ⊤ within the lattice height, (3) expansions are strictly ascending,
(4) finitely many apply, (5) every direct successor (cover) in ⊑ is an expansion,
(6) expansions are monotone, (7) γ is monotone, (8) β is sound (v ∈ γ(β(v))). The aliasing
component is checked the same way on pmsolve.anica.domain itself (``AbstractBlock.leq``, the
aliasing expansions, ``contains`` and ``beta``) for every map over the three register pairs of a
two-instruction block and every concrete aliasing pattern, against eq. 8.14-8.16 written out. On
whole blocks of a small real scheme universe, sampled blocks b satisfy b ∈ γ(β(b)) and stay in
γ(E(β(b))) for random expansion chains E (monotone γ, ascending ⊑).
"""

from __future__ import annotations

import random
from itertools import combinations, product
from typing import Any

import pmsolve.anica.domain as domain  # read at call time: a code mutant patches domain.contains
from pmsolve.anica.domain import AbstractBlock, Concrete, Expansion, Form, MUST, MUSTNOT, Universe, beta, expansions
from pmsolve.anica.features import DEF_NONE, TOP, EditDistance, LogSizes, Singleton, SubsetOrNone
from pmsolve.anica.sampler import Sampler
from pmsolve.isa import load_catalogue
from pmsolve.proofs.base import Check, Tally, Violation, patched, register


class _PaperLogSizes(LogSizes):
    """The paper's β (⌈log2 n⌉), which the dissertation corrects: unsound at powers of two."""

    def beta(self, v):
        if v is None or v >= 2 ** self.k:
            return TOP
        return 0 if v == 0 else (v - 1).bit_length()


class _UncappedEdit(EditDistance):
    """Bounds grow without reaching ⊤: an infinite ascending chain."""

    def succ(self, av):
        return [] if av is TOP else [(av[0], av[1] + 1)]


class _DropTwo(SubsetOrNone):
    """Successors drop two elements at once: the covers (drop one) are unreachable."""

    def succ(self, av):
        if av is TOP:
            return []
        if av == DEF_NONE or len(av) < 2:
            return [TOP]
        return [tuple(x for x in av if x not in pair) for pair in combinations(av, 2)]


def _feature_cases(mutant: str | None) -> list[tuple[str, Any, list[Any], list[Any]]]:
    """(name, abstraction, abstract values, concrete values) for each feature lattice."""
    words = ["", "a", "b", "ab", "ba", "aa", "abb", "bab", "aabb"]
    ed = _UncappedEdit(3) if mutant == "edit-uncapped" else EditDistance(3)
    ls = _PaperLogSizes(5) if mutant == "logsize-paper-beta" else LogSizes(5)
    ss = _DropTwo() if mutant == "subset-drop-two" else SubsetOrNone()
    base = ["R", "W", "S:32"]
    sets = [frozenset(c) for r in range(len(base) + 1) for c in combinations(base, r)]
    return [
        ("singleton", Singleton(), [TOP, "x", "y", "z"], ["x", "y", "z"]),
        ("edit distance K=3", ed, [TOP] + [(w, d) for w in words for d in range(4)], words),
        ("log sizes K=5", ls, [TOP] + list(range(6)), [None] + list(range(0, 70))),
        ("subset-or-none", ss, [TOP, DEF_NONE] + [tuple(sorted(s)) for s in sets], sets),
    ]


def _check_feature(name: str, dom: Any, avs: list[Any], vals: list[Any], tally: Tally) -> None:
    leq = dom.leq
    for x in avs:  # (1) partial order
        if not leq(x, x):
            raise Violation(f"{name}: ⊑ not reflexive at {x!r}")
        for y in avs:
            if x != y and leq(x, y) and leq(y, x):
                raise Violation(f"{name}: ⊑ not antisymmetric: {x!r}, {y!r}")
            for z in avs:
                if leq(x, y) and leq(y, z) and not leq(x, z):
                    raise Violation(f"{name}: ⊑ not transitive: {x!r} ⊑ {y!r} ⊑ {z!r}")
    height = len(avs)
    for x in avs:
        succ = dom.succ(x)
        if len(succ) > height:  # (4) finitely many, bounded by the domain
            raise Violation(f"{name}: {len(succ)} expansions at {x!r}")
        for y in succ:  # (3) strictly ascending
            if not leq(x, y) or x == y:
                raise Violation(f"{name}: expansion {x!r} -> {y!r} is not strictly ascending")
        frontier, steps = [x], 0  # (2) chains through expansions reach ⊤
        while frontier:
            steps += 1
            if steps > height:
                raise Violation(f"{name}: an ascending chain from {x!r} is longer than {height} steps")
            frontier = list({repr(s): s for f in frontier for s in dom.succ(f)}.values())
        above = [y for y in avs if y != x and leq(x, y)]  # (5) covers are expansions
        covers = [y for y in above if not any(z != y and leq(z, y) for z in above)]
        missing = [c for c in covers if c not in succ]
        if missing:
            raise Violation(f"{name}: direct successor {missing[0]!r} of {x!r} is not an expansion")
        for y in avs:  # (7) γ monotone
            if leq(x, y):
                bad = [v for v in vals if dom.admits(x, v) and not dom.admits(y, v)]
                if bad:
                    raise Violation(f"{name}: {x!r} ⊑ {y!r} but γ({x!r}) ∋ {bad[0]!r} ∉ γ({y!r})")
        tally.cases += 1
    for v in vals:  # (8) soundness of β
        if not dom.admits(dom.beta(v), v):
            raise Violation(f"{name}: {v!r} ∉ γ(β({v!r})) = γ({dom.beta(v)!r})")
        tally.cases += 1
    # (6) monotone: an expansion function of eq. 8.12 is defined at a single value x, so
    # a ⊑ a' in its domain means a = a' at this feature; the product extends it componentwise.


#: the aliasing component is checked on a block of add r64, r64 and mov r64, [m64]: its three
#: general-purpose register operands give three matching pairs (the memory operand has no partner)
ALIAS_FORMS = ("add_r64_r64", "mov_r64_m64")
ALIAS_PAIRS = (((0, 0), (0, 1)), ((0, 0), (1, 0)), ((0, 1), (1, 0)))
#: register choices (add's destination, add's source, mov's destination): every realisable pattern
ALIAS_REGS = (("rbx", "rsi", "rdi"), ("rbx", "rbx", "rdi"), ("rbx", "rsi", "rbx"), ("rbx", "rsi", "rsi"),
              ("rbx", "rbx", "rbx"))


def _check_alias(mutant: str | None, tally: Tally) -> None:
    """Eq. 8.13-8.17 on pmsolve.anica.domain itself: AbstractBlock.leq (⊑_al), the aliasing
    expansions of ``expansions``, ``contains`` (γ) and ``beta`` (β_al), on every aliasing map over
    the three operand pairs of ALIAS_FORMS and every concrete aliasing pattern of them."""
    cat = load_catalogue()
    u = Universe([Form(cat[n]) for n in ALIAS_FORMS], {})
    insns = [u.beta_insn(n) for n in ALIAS_FORMS]
    maps = [dict(zip(ALIAS_PAIRS, vs)) for vs in product([MUST, MUSTNOT, TOP], repeat=len(ALIAS_PAIRS))]
    blocks = [AbstractBlock.make(insns, {x: v for x, v in h.items() if v is not TOP}) for h in maps]
    concrete = [Concrete(ALIAS_FORMS, ((a, b), (c, "32(%r14)"))) for a, b, c in ALIAS_REGS]
    # the facts of each concrete block, from the register names (not through pmsolve's alias_facts)
    facts = [{((0, 0), (0, 1)): a == b, ((0, 0), (1, 0)): a == c, ((0, 1), (1, 0)): b == c} for a, b, c in ALIAS_REGS]
    facts = [{x: MUST if same else MUSTNOT for x, same in f.items()} for f in facts]

    def show(h: dict) -> str:
        return "{" + ", ".join(f"{x}: {'⊤' if v is TOP else v}" for x, v in h.items()) + "}"

    leq = [[a.leq(b) for b in blocks] for a in blocks]
    for i, h in enumerate(maps):  # ⊑_al (eq. 8.14): a partial order, and the one the paper defines
        for j, g in enumerate(maps):
            want = all(g[x] is TOP or h[x] == g[x] for x in ALIAS_PAIRS)
            if leq[i][j] != want:
                raise Violation(f"aliasing: AbstractBlock.leq says {leq[i][j]} for {show(h)} ⊑ {show(g)} (eq. 8.14: "
                                f"{want})")
            if i != j and leq[i][j] and leq[j][i]:
                raise Violation(f"aliasing: ⊑ not antisymmetric: {show(h)}, {show(g)}")
            for k in range(len(maps)):
                if leq[i][j] and leq[j][k] and not leq[i][k]:
                    raise Violation(f"aliasing: ⊑ not transitive at {show(h)} ⊑ {show(g)} ⊑ {show(maps[k])}")
    top = blocks[-1]
    for i, (h, ab) in enumerate(zip(maps, blocks)):
        exps = [x for x in expansions(ab) if x.where == "alias"]
        if len(exps) != sum(v is not TOP for v in h.values()):  # finitely many: one per non-⊤ entry
            raise Violation(f"aliasing: {len(exps)} expansions at {show(h)}")
        succ = [x.apply(ab) for x in exps]
        for x, nxt in zip(exps, succ):  # strictly ascending (eq. 8.17)
            if not (ab.leq(nxt) and not nxt.leq(ab)):
                raise Violation(f"aliasing: expansion '{x.describe()}' of {show(h)} is not strictly ascending")
            for j, h2 in enumerate(maps):  # monotone
                if leq[i][j] and h2[x.pair] is not TOP and not nxt.leq(x.apply(blocks[j])):
                    raise Violation(f"aliasing: expansion '{x.describe()}' not monotone at {show(h)} ⊑ {show(h2)}")
        above = [j for j in range(len(maps)) if j != i and leq[i][j]]
        covers = [j for j in above if not any(k != j and leq[k][j] for k in above)]
        missing = [maps[j] for j in covers if blocks[j] not in succ]
        if missing:
            raise Violation(f"aliasing: direct successor {show(missing[0])} of {show(h)} is not an expansion")
        frontier, steps = [ab], 0  # chains through expansions reach ⊤
        while frontier != [top] and frontier:
            steps += 1
            if steps > len(ALIAS_PAIRS):
                raise Violation(f"aliasing: an ascending chain from {show(h)} is longer than {len(ALIAS_PAIRS)} steps")
            frontier = list({b: None for f in frontier for b in (x.apply(f) for x in expansions(f)
                                                                   if x.where == "alias")} or [top])
        for c, f in zip(concrete, facts):  # γ (eq. 8.15) exactly, hence monotone
            want = all(h[x] is TOP or h[x] == f[x] for x in ALIAS_PAIRS)
            if domain.contains(u, ab, c) != want:
                raise Violation(f"aliasing: contains() says {not want} for the block with facts {show(f)} "
                                f"and {show(h)}")
        tally.cases += 1
    for c, f in zip(concrete, facts):  # β_al (eq. 8.16): exactly the block's facts, so b ∈ γ(β(b))
        got = beta(u, c).alias
        if got != f or not domain.contains(u, beta(u, c), c):
            raise Violation(f"aliasing: β of the block with facts {show(f)} has aliasing {show(got)}")
        tally.cases += 1


def _check_blocks(mutant: str | None, tally: Tally) -> None:
    cat = load_catalogue()
    names = ["add_r64_r64", "adc_r64_r64", "add_m64_r64", "shl_r64_cl", "mov_m64_r64", "imul_r64_r64",
             "vaddpd_ymm_ymm_ymm", "vaddps_xmm_xmm_m128", "bsf_r64_r64", "lea_r64_m"]
    schemes = [cat[n] for n in names if n in cat]
    counts = {"add_r64_r64": 1, "adc_r64_r64": 2, "add_m64_r64": 4, "shl_r64_cl": 1, "mov_m64_r64": 1,
              "imul_r64_r64": 1, "vaddpd_ymm_ymm_ymm": 1, "vaddps_xmm_xmm_m128": 2, "bsf_r64_r64": 6}
    u = Universe([Form(s) for s in schemes], counts)
    smp = Sampler(u)
    rng = random.Random(7)
    for _ in range(60):
        c = smp.sample(AbstractBlock.top(rng.randint(1, 3)), rng)
        if c is None:
            continue
        ab = beta(u, c)
        if not domain.contains(u, ab, c):
            raise Violation(f"block soundness: {c} ∉ γ(β)")
        for _ in range(8):
            exps = expansions(ab)
            if not exps:
                break
            e = exps[rng.randrange(len(exps))]
            nxt = e.apply(ab)
            if mutant == "block-expansion-noop":
                nxt = ab
            if not ab.leq(nxt) or nxt == ab:
                raise Violation(f"block expansion {e.describe()} is not strictly ascending")
            if not (u.gamma(ab.insns[e.index]) <= u.gamma(nxt.insns[e.index])).all() if e.where == "insn" else False:
                raise Violation(f"block expansion {e.describe()} shrinks γ_in")
            for _ in range(3):  # samples of γ(a) stay in γ(E(a))
                s = smp.sample(ab, rng)
                if s is not None and not domain.contains(u, nxt, s):
                    raise Violation(f"γ not monotone: a sample of γ(a) leaves γ(E(a)) after {e.describe()}")
            ab = nxt
        tally.cases += 1


def _body(mutant: str | None, tally: Tally) -> None:
    for name, dom, avs, vals in _feature_cases(mutant):
        _check_feature(name, dom, avs, vals, tally)
    _check_alias(mutant, tally)
    _check_blocks(mutant, tally)


def _alias_expansion_to_mustnot():
    """Expansion.apply turning a 'must' aliasing entry into 'mustnot' instead of ⊤ (a code mutant)."""
    real = Expansion.apply

    def wrong(self, ab):
        if self.where == "alias" and ab.alias.get(self.pair) == MUST:
            return AbstractBlock.make(ab.insns, {**ab.alias, self.pair: MUSTNOT})
        return real(self, ab)

    return patched(Expansion, "apply", wrong)


def _leq_without_aliasing():
    """AbstractBlock.leq comparing the instructions only (a code mutant)."""
    def wrong(self, other):
        return len(self.insns) == len(other.insns) and all(a.leq(b) for a, b in zip(self.insns, other.insns))

    return patched(AbstractBlock, "leq", wrong)


def _contains_without_aliasing():
    """contains() (γ_A) checking the instructions only, not the aliasing (a code mutant)."""
    def wrong(u, ab, c):
        return len(c.forms) == len(ab.insns) and all(u.admits(ai, k) for ai, k in zip(ab.insns, c.forms))

    return patched(domain, "contains", wrong)


CHECK = register(Check(
    "anica-domain", "Def. 8.2 / Thm 8.6: AnICA's abstract domain is valid",
    "partial order; no infinite ascending chains; expansions strictly ascending, finitely many, covering every "
    "direct successor, monotone; γ monotone; b ∈ γ(β(b))",
    "each Table 8.2 feature lattice exhaustively over bounded values (9 mnemonics, counts 0-69, subsets of "
    "3 memory facts, 3 singletons); the aliasing component of pmsolve.anica.domain on all 27 maps over the 3 "
    "register pairs of 'add r64, r64; mov r64, [m64]' and all 5 concrete aliasing patterns; 60 sampled blocks "
    "of ≤ 3 instructions over 10 real schemes with random expansion chains",
    "exhaustive enumeration with the implementation's own ⊑, succ, γ and β (AbstractBlock.leq, expansions, "
    "contains, beta for aliasing, against eq. 8.14-8.16 written out); sampling for whole blocks",
    _body,
    {"logsize-paper-beta": "the paper's log-sizes β (⌈log2 n⌉) that the dissertation corrects",
     "edit-uncapped": "edit-distance bounds that never reach ⊤ (infinite ascending chain)",
     "subset-drop-two": "subset-or-none expansions that drop two elements (skip direct successors)",
     "block-expansion-noop": "a block expansion that returns its input",
     "code:alias-must-to-mustnot": "pmsolve.anica.domain's aliasing expansion turns must into mustnot",
     "code:leq-without-aliasing": "AbstractBlock.leq ignores the aliasing component",
     "code:contains-without-aliasing": "pmsolve.anica.domain.contains (γ_A) ignores the aliasing constraints"},
    {"code:alias-must-to-mustnot": _alias_expansion_to_mustnot,
     "code:leq-without-aliasing": _leq_without_aliasing,
     "code:contains-without-aliasing": _contains_without_aliasing}))
