"""AnICA subsumption (Def. 8.7) as a SAT problem.

Abstract block 1 (n1 abstract instructions) subsumes block 2 (n2) iff there is a map
m: I1 -> I2 with
  C1  m injective;
  C2  γ(a2[m(i)]) ⊆ γ(a1[i])                       (given as `compatible[i][j]`);
  C3  every non-⊤ aliasing fact of block 1 holds between the mapped operands in block 2;
  C4  the images of consecutive instructions (cyclically) have no other image between them,
      i.e. the order of block 1 is a rotation of the order of the images in block 2.
Boolean m[i,j] says m(i) = j. The instruction-level test C2 and the aliasing tables come from
the caller (the AnICA abstract domain), so this module depends only on the IR.
"""

from __future__ import annotations

from typing import Hashable, Mapping, Sequence

from pmsolve.backends import solve
from pmsolve.encodings.encoding import Encoding, model_of
from pmsolve.errors import ValidationError
from pmsolve.symbolic import And, Bool, BoolVar, Not, Or, Problem

Operand = tuple[int, Hashable]  # (instruction index, operand key)
Aliasing = Mapping[tuple[Operand, Operand], str]  # "must" / "mustnot"; absent or "top" = ⊤
TOP = "top"


def _alias(table: Aliasing, a: Operand, b: Operand) -> str:
    return table.get((a, b), table.get((b, a), TOP))


def build_subsumption(n1: int, n2: int, compatible: Sequence[Sequence[bool]],
                      aliasing1: Aliasing | None = None, aliasing2: Aliasing | None = None,
                      ) -> Encoding[list[int]]:
    """The Def. 8.7 formula; `decode` gives m as a list (m[i] = index in block 2); `vars["m"]`
    holds the booleans m[i,j]."""
    if n1 < 1 or n2 < 1:
        raise ValidationError(f"abstract blocks need at least one instruction (got {n1}, {n2})")
    if len(compatible) != n1 or any(len(row) != n2 for row in compatible):
        raise ValidationError(f"compatible must be an {n1}x{n2} table")
    al1, al2 = aliasing1 or {}, aliasing2 or {}
    m = {(i, j): Bool(f"m[{i},{j}]") for i in range(n1) for j in range(n2)}
    p = Problem(name="subsumption")
    for i in range(n1):  # m is a function
        p.add(Or(m[i, j] for j in range(n2)), name=f"total[{i}]")
        p.add(_at_most_one([m[i, j] for j in range(n2)]))
    for j in range(n2):  # C1
        p.add(_at_most_one([m[i, j] for i in range(n1)]), name=f"C1[{j}]")
    for i in range(n1):  # C2
        for j in range(n2):
            if not compatible[i][j]:
                p.add(Not(m[i, j]))
    for (a, b), x in al1.items():  # C3
        if x == TOP:
            continue
        (i, op1), (k, op2) = a, b
        for j in range(n2):
            for j2 in range(n2):
                if _alias(al2, (j, op1), (j2, op2)) != x:
                    p.add(Or(Not(m[i, j]), Not(m[k, j2])))
    if n1 >= 2:  # C4
        used = [Or(m[i, k] for i in range(n1)) for k in range(n2)]
        for i in range(n1):
            nxt = (i + 1) % n1
            for ja in range(n2):
                for jb in range(n2):
                    if ja == jb:
                        continue
                    between = [(ja + s) % n2 for s in range(1, (jb - ja) % n2)]
                    for jk in between:
                        p.add(Or(Not(m[i, ja]), Not(m[nxt, jb]), Not(used[jk])))

    def decode(answer: object) -> list[int]:
        model = model_of(answer)
        return [next(j for j in range(n2) if model[m[i, j].name]) for i in range(n1)]

    return Encoding(p, None, decode, {"m": m})


def _at_most_one(xs: list[BoolVar]) -> object:
    return And(Or(Not(a), Not(b)) for n, a in enumerate(xs) for b in xs[n + 1:])


def subsumes(n1: int, n2: int, compatible: Sequence[Sequence[bool]],
             aliasing1: Aliasing | None = None, aliasing2: Aliasing | None = None,
             backend: str | None = None) -> list[int] | None:
    """The witness map m if block 1 subsumes block 2, else None (auto picks the SAT backend)."""
    enc = build_subsumption(n1, n2, compatible, aliasing1, aliasing2)
    res = solve(enc.problem, backend)
    return enc.decode(res) if res.feasible else None
