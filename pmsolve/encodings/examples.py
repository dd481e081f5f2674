"""The dissertation's worked examples as IR problems, and their export to SMT-LIB2 / LP files.

The files in the repository's top-level `encodings/` folder are produced by `export_examples`;
a test regenerates them and checks that they are current and that z3, cvc5 (SMT-LIB2) and HiGHS
(LP) reach the expected answers, so they double as a cross-solver conformance suite.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Callable

from pmsolve.backends.lpfile import to_lp_format
from pmsolve.backends.smtlib import to_smtlib2
from pmsolve.encodings.cegis import Space, build_find_mapping, build_find_other_mapping
from pmsolve.encodings.coverage import build_coverage
from pmsolve.encodings.experiments import fixed_experiment
from pmsolve.encodings.lp import throughput_lp
from pmsolve.encodings.mappings import fixed_mapping
from pmsolve.encodings.relate import relate_throughput, separation
from pmsolve.encodings.subsumption import build_subsumption
from pmsolve.model import Experiment, PortMapping
from pmsolve.symbolic import Problem


@dataclass(frozen=True)
class Example:
    """A worked example: how to build it, what a solver must answer, which formats to write."""

    name: str
    doc: str
    build: Callable[[], Problem]
    status: str  # sat / unsat (pmsolve.backends.result)
    objective: Fraction | None = None
    formats: tuple[str, ...] = ("smt2",)


# Fig. 3.1: add, sub -> {p1, p2}; mul -> {p1}; store -> {p3}
FIG_3_1 = PortMapping.two_level(["p1", "p2", "p3"], {"add": ["p1", "p2"], "sub": ["p1", "p2"],
                                                     "mul": ["p1"], "store": ["p3"]})
# Fig. 3.3: mul -> 2×u1; add, sub -> u2 = {p1, p2}; store -> u2 + u3. The text fixes u2; u1 = {p1}
# and u3 = {p3} are read off the figure as in Fig. 3.1 (mul on p1, store on p3).
FIG_3_3 = PortMapping(["p1", "p2", "p3"], {
    "mul": [(["p1"], 2)], "add": [(["p1", "p2"], 1)], "sub": [(["p1", "p2"], 1)],
    "store": [(["p1", "p2"], 1), (["p3"], 1)]})
EX_3_8 = Experiment({"add": 2, "mul": 1, "store": 1})
EX41_SPACE = Space(("iA", "iB"), ("p1", "p2"))
EX41_OBS = [(Experiment({"iA": 1}), Fraction(1)), (Experiment({"iB": 1}), Fraction(1))]
EX41_M1 = PortMapping.two_level(["p1", "p2"], {"iA": ["p1"], "iB": ["p1"]})


def _relate_fixed(t_value: Fraction | None, equal: bool = True) -> Problem:
    exp = fixed_experiment(EX_3_8, FIG_3_1.instructions)
    rel = relate_throughput(fixed_mapping(FIG_3_1), exp)
    p = Problem(name=f"relateThroughput, Example 3.8 ({EX_3_8})").add(rel.constraints)
    if t_value is not None:
        p.add(rel.t == t_value if equal else rel.t != t_value, name="t")
        p.strict_margin = separation(len(FIG_3_1.ports))  # both sides are throughputs
    return p


def _lp(mapping: PortMapping, e: Experiment, title: str) -> Problem:
    p = throughput_lp(mapping, e).problem
    p.name = title
    return p


def _find_other(observations: list) -> Problem:
    return build_find_other_mapping(EX41_SPACE, EX41_M1, observations, bound=2).problem


def _subsumption(rotated: bool) -> Problem:
    # block 1 = (mov; add); block 2 = (add; nop; mov) -- rotated order with a gap, or reversed
    if rotated:
        p = build_subsumption(2, 3, [[False, False, True], [True, False, False]],
                              {((0, "dst"), (1, "src")): "must"},
                              {((2, "dst"), (0, "src")): "must"}).problem
    else:
        p = build_subsumption(3, 3, [[j == 2 - i for j in range(3)] for i in range(3)]).problem
    p.name = f"AnICA subsumption (Def. 8.7), {'rotation' if rotated else 'reversed order'}"
    return p


def _coverage() -> Problem:
    return build_coverage({"AB1": ["b1", "b2"], "AB2": ["b2", "b3", "b4"], "AB3": ["b5"]},
                          ["b1", "b2", "b3", "b4", "b5"], 2).problem


EXAMPLES = [
    Example("ex3_8_lp", "Thm 3.7 LP of Example 3.8: tp⁻¹ = 3/2",
            lambda: _lp(FIG_3_1, EX_3_8, "Thm 3.7 LP, Example 3.8"), "sat", Fraction(3, 2),
            ("smt2", "lp")),
    Example("ex3_8_relate_t_free", "relateThroughput for Example 3.8 with t free (t must be 3/2)",
            lambda: _relate_fixed(None), "sat", formats=("smt2", "lp")),
    Example("ex3_8_relate_t_3_2", "relateThroughput for Example 3.8 with t = 3/2",
            lambda: _relate_fixed(Fraction(3, 2)), "sat", formats=("smt2", "lp")),
    Example("ex3_8_relate_t_not_3_2", "relateThroughput for Example 3.8 with t ≠ 3/2 (Thm 4.4)",
            lambda: _relate_fixed(Fraction(3, 2), equal=False), "unsat", formats=("smt2", "lp")),
    Example("fig3_3_lp", "Thm 3.12 LP for the three-level mapping of Fig. 3.3, e = {mul, add, store}",
            lambda: _lp(FIG_3_3, Experiment({"mul": 1, "add": 1, "store": 1}),
                        "Thm 3.12 LP, Fig. 3.3"), "sat", Fraction(2), ("smt2", "lp")),
    Example("ex4_1_find_mapping", "Example 4.1: findMapping from the two singleton measurements",
            lambda: build_find_mapping(EX41_SPACE, EX41_OBS).problem, "sat"),
    Example("ex4_1_find_other_mapping", "Example 4.1: findOtherMapping for m1 = both on p1",
            lambda: _find_other(EX41_OBS), "sat", formats=("smt2", "lp")),
    Example("ex4_1_find_other_mapping_done",
            "Example 4.1 after measuring {iA, iB} = 2 under m1: no other mapping is distinguishable",
            lambda: _find_other(EX41_OBS + [(Experiment({"iA": 1, "iB": 1}), Fraction(2))]),
            "unsat", formats=("smt2", "lp")),
    Example("subsumption_rotation", "Def. 8.7: (mov; add) subsumes (add; nop; mov)",
            lambda: _subsumption(True), "sat"),
    Example("subsumption_reversed", "Def. 8.7: reversed cyclic order is not subsumed",
            lambda: _subsumption(False), "unsat"),
    Example("coverage_ilp", "sec. 8.1.7 coverage ILP: 2 abstract blocks cover 4 of 5 blocks",
            _coverage, "sat", Fraction(4), ("smt2", "lp")),
]


def render(example: Example, fmt: str) -> str:
    """The file text of one example in one format ("smt2" or "lp")."""
    problem = example.build()
    expect = example.status + (f", objective {example.objective}" if example.objective is not None else "")
    if fmt == "smt2":
        return f"; {example.doc}\n; expected: {expect}\n" + to_smtlib2(problem)
    if fmt == "lp":
        return f"\\ {example.doc}\n\\ expected: {expect}\n" + to_lp_format(problem)
    raise ValueError(f"unknown format {fmt!r}")


def export_examples(directory: str | Path) -> list[Path]:
    """Write every example in each of its formats to `directory`; returns the paths written."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for ex in EXAMPLES:
        for fmt in ex.formats:
            path = out / f"{ex.name}.{fmt}"
            path.write_text(render(ex, fmt), encoding="utf-8")
            written.append(path)
    return written
