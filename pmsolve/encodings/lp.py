"""The LPs of Thm 3.7 (two-level) and Thm 3.12 (three-level) in the IR.

One flow variable per (µop of an instruction, port of that µop), read straight from
`mapping.uops` as Thm 3.12 states it -- not from the merged µop masses of Remark 3.13 that the
bottleneck formula uses -- so the LP and the formula are two independent readings of a mapping
that the tests hold against each other. Edges that do not exist get no variable, which is
constraint (E). The optimum is tp⁻¹; with `r_max` the objective variable is also bounded below
by |e|/R_max (sec. 4.3), giving max(tp⁻¹, |e|/R_max).
"""

from __future__ import annotations

from fractions import Fraction

from pmsolve.formula import check_r_max
from pmsolve.encodings.encoding import Encoding, model_of
from pmsolve.model import Experiment, PortMapping, sort_ports
from pmsolve.symbolic import Lin, NumVar, Problem, Real, Sum, eval_term


def throughput_lp(mapping: PortMapping, experiment: Experiment,
                  r_max: Fraction | int | None = None, prefix: str = "") -> Encoding[Fraction]:
    """minimise t s.t. (A) Σ_k x[i.r,k] = e(i)·count(i.r) for the r-th µop of every instruction i
    of e, (B) p_k = Σ x[·,k], (C) p_k ≤ t, (D) x ≥ 0.

    `decode` gives the value of t; `vars` holds "t", "x" by (instruction, µop number, port) and
    "load" (p_k) by port.
    """
    mapping.check(experiment)
    r = check_r_max(r_max)
    prob = Problem(name=f"throughput LP of {experiment}")
    t = Real(f"{prefix}t", 0)
    loads: dict[str, list[Lin]] = {k: [] for k in mapping.ports}
    flows: dict[tuple[str, int, str], NumVar] = {}
    for insn, n in experiment.items():
        for number, uop in enumerate(mapping.uops[insn], 1):
            xs = []
            for k in sort_ports(uop.ports):
                x = flows[insn, number, k] = Real(f"{prefix}x[{insn}.{number},{k}]", 0)
                loads[k].append(x.lin())
                xs.append(x)
            prob.add(Sum(xs) == n * uop.count, name=f"A[{insn}.{number}]")
    load = {k: Real(f"{prefix}p[{k}]", 0) for k in mapping.ports}
    for k, p in load.items():
        prob.add(p == Sum(loads[k]), name=f"B[{k}]")
        prob.add(p <= t, name=f"C[{k}]")
    if r is not None:
        prob.add(t >= Fraction(experiment.size) / r, name="Rmax")
    prob.minimize(t)
    term = t.lin()
    return Encoding(prob, term, lambda answer: eval_term(term, model_of(answer)),
                    {"t": t, "x": flows, "load": load})
