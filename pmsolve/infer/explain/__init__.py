"""Explainable port-mapping inference (dissertation ch. 6, ASPLOS'24), with a µop counter as
in the paper or by throughput alone (the counter-free stages; docs/algorithms.md).

    from pmsolve.harness.oracle import open_oracle
    from pmsolve.infer.explain import ExplainOptions, infer
    oracle = open_oracle("simulated:zenplus.json?r_max=5&uops=1")
    result = infer(oracle, ExplainOptions(ports=10, runs=3), state="zen.explain-state.json",
                   progress=print)   # ProgressEvents, one line each
    result.mapping, result.explanations["add RW:GPR:32, R:GPR:32"], result.category_counts()
    result.save("zen.explained.json")   # a pmsolve mapping file with witnesses and misfits

Modules: :mod:`.pipeline` (the stages in order, :func:`infer`), :mod:`.options`,
:mod:`.stages` (singletons, candidates, equivalence, peak IPC), :mod:`.structure` (the port
structure of the blocking instructions without a counter), :mod:`.blocking` (CEGIS on the
blocking instructions, the blocking suite), :mod:`.characterise` (the non-evading-µop formula),
:mod:`.units` (extra resources: dividers), :mod:`.certify` (misfits no port mapping fits),
:mod:`.vote`, :mod:`.witnesses`, :mod:`.hooks` (µop-count adjustments such as Postulate 6.5),
:mod:`.checkpoint`, :mod:`.compare` (agreement with a ground truth up to port renaming). The
command is `pmsolve infer explain` (:mod:`pmsolve.cli.infer`).
"""

from pmsolve.infer.explain.hooks import HOOKS, get_hook, no_adjustment, zenplus_postulate_6_5
from pmsolve.infer.explain.options import ExplainOptions
from pmsolve.infer.explain.pipeline import ExplainResult, infer
from pmsolve.infer.explain.witnesses import CATEGORIES, Explanation, Misfit, Witness

__all__ = ["CATEGORIES", "ExplainOptions", "ExplainResult", "Explanation", "HOOKS", "Misfit", "Witness",
           "get_hook", "infer", "no_adjustment", "zenplus_postulate_6_5"]
