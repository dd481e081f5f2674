"""The greedy concretisation sampler γ̂ (sec. 8.1.5) and concrete blocks as predictor input.

1. each abstract instruction picks a represented form uniformly at random;
2. hardwired operands are fixed first, and everything that must alias with them follows;
3. the remaining operands, in random order, take a random register / memory slot that no
   must-not-alias constraint forbids, together with their must-alias partners.
A conflict fails the attempt and the sampler retries (sampling is NP-hard in general; this is
the dissertation's greedy approximation). Registers with a role are never allocated: ``rsp``
(stack), ``r13``-``r15`` (the measurement harness's divisor, memory base and loop counter), so
every block also runs on the hardware oracle. Memory operands are ``disp(%r14)`` with one of
``MEM_SLOTS`` displacements, so they alias exactly when they are syntactically identical.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from pmsolve.predictors.block import Block, Insn
from pmsolve.anica.domain import MUST, MUSTNOT, AbstractBlock, Concrete, Universe, operand_file
from pmsolve.harness.allocation import MEM_BASE, RESERVED, immediate
from pmsolve.isa.render import GPRS, GPR_ALIAS, render, representative

GPR_POOL = tuple(r for r in GPRS if r not in RESERVED)
VEC_POOL = tuple(f"vec{i}" for i in range(16))
MASK_POOL = tuple(f"k{i}" for i in range(1, 8))   # k0 cannot be a write mask
MEM_SLOTS = tuple(f"{32 + 64 * i}(%{MEM_BASE})" for i in range(8))


def _value(op, loc: str) -> str:
    """The operand text of location ``loc`` (a representative or a memory slot) for ``op``."""
    if op.kind == "mem":
        return loc
    if op.cls == "gpr":
        return GPRS[loc][op.width]
    if op.cls == "k":
        return loc
    return op.cls + loc[3:]


def _loc_of_fixed(op) -> str:
    return representative(op.fixed) if op.fixed in GPR_ALIAS or op.fixed.startswith(("xmm", "ymm", "zmm")) else op.fixed


class Sampler:
    """γ̂ for one universe; gamma masks are cached per abstract instruction."""

    def __init__(self, universe: Universe, attempts: int = 20):
        self.universe = universe
        self.attempts = attempts
        self._idx: dict[Any, np.ndarray] = {}

    def candidates(self, ai) -> np.ndarray:
        idx = self._idx.get(ai)
        if idx is None:
            idx = np.flatnonzero(self.universe.gamma(ai))
            self._idx[ai] = idx
        return idx

    def sample(self, ab: AbstractBlock, rng: random.Random) -> Concrete | None:
        """A block of γ(ab), or None when every attempt hit a conflict or γ_in is empty."""
        cands = [self.candidates(ai) for ai in ab.insns]
        if any(len(c) == 0 for c in cands):
            return None
        for _ in range(self.attempts):
            forms = [self.universe.forms[int(c[rng.randrange(len(c))])].key for c in cands]
            got = self._operands(ab, forms, rng)
            if got is not None:
                return Concrete(tuple(forms), got)
        return None

    def _operands(self, ab: AbstractBlock, forms: list[str], rng: random.Random):
        ops = {}  # (i, o) -> Operand
        for i, key in enumerate(forms):
            for o_idx, op in enumerate(self.universe.form(key).operands):
                ops[(i, o_idx)] = op
        files = {r: operand_file(op) for r, op in ops.items()}
        parent = {r: r for r in ops}

        def find(r):
            while parent[r] != r:
                parent[r] = parent[parent[r]]
                r = parent[r]
            return r

        mustnot: dict[Any, list] = {}
        for (a, b), v in ab.aliasing:
            if a not in ops or b not in ops or files[a] is None or files[a] != files[b]:
                continue  # constraints apply only to existing, matching operands (eq. 8.15)
            if v == MUST:
                parent[find(a)] = find(b)
            elif v == MUSTNOT:
                mustnot.setdefault(a, []).append(b)
                mustnot.setdefault(b, []).append(a)
        comps: dict[Any, list] = {}
        for r in ops:
            if files[r] is not None:
                comps.setdefault(find(r), []).append(r)
        loc: dict[Any, str] = {}

        def assign(comp: list, where: str) -> bool:
            for r in comp:
                if ops[r].fixed and _loc_of_fixed(ops[r]) != where:
                    return False
                for other in mustnot.get(r, ()):
                    if loc.get(other) == where or other in comp:
                        return False
            for r in comp:
                loc[r] = where
            return True

        fixed_first = [c for c in comps.values() if any(ops[r].fixed for r in c)]
        rest = [c for c in comps.values() if not any(ops[r].fixed for r in c)]
        rng.shuffle(rest)
        for comp in fixed_first:
            first = next(r for r in comp if ops[r].fixed)
            if not assign(comp, _loc_of_fixed(ops[first])):
                return None
        for comp in rest:
            f = files[comp[0]]
            pool = MEM_SLOTS if f == "mem" else GPR_POOL if f == "gpr" else MASK_POOL if f == "mask" else VEC_POOL
            banned = {loc.get(o) for r in comp for o in mustnot.get(r, ())}
            choices = [p for p in pool if p not in banned]
            if not choices or not assign(comp, choices[rng.randrange(len(choices))]):
                return None
        out = []
        for i, key in enumerate(forms):
            vals: list[Any] = []
            for o_idx, op in enumerate(self.universe.form(key).operands):
                r = (i, o_idx)
                if r in loc:
                    vals.append(op.fixed if op.fixed else _value(op, loc[r]))
                elif op.kind == "mem":  # an address only (lea): any slot
                    vals.append(MEM_SLOTS[rng.randrange(len(MEM_SLOTS))])
                elif op.kind == "imm":
                    vals.append(immediate(op.width))
                else:
                    vals.append(op.fixed or (op.value if op.value is not None else 1))
            out.append(tuple(vals))
        return tuple(out)


def to_block(u: Universe, c: Concrete) -> Block:
    """The predictor input: AT&T text per instruction, with the catalogue scheme name."""
    insns = []
    for key, vals in zip(c.forms, c.values):
        f = u.form(key)
        text = render(f.scheme, vals[:len(f.scheme.operands)])
        insns.append(Insn(f.scheme.name, ("lock " if f.lock else "") + text))
    return Block(tuple(insns))
