"""Strategy sufficiency (dissertation ch. 9, App. E.1, E.2): does a benchmarking strategy pin
the port mapping down?

    from pmsolve.strategy import check_strategy, smallest_counterexample, shortcut_gap
    v = check_strategy("ratio-pairs", insns=3, ports=4, max_exp_len=3)
    print(v.render()); v.to_json()

The encoding lives in :mod:`pmsolve.encodings.sufficiency`; any SMT (or big-M MILP) backend of
:mod:`pmsolve.backends` solves it; counterexamples are re-checked with the exact formula.
"""

from pmsolve.strategy.checker import (
    COUNTEREXAMPLE, SUFFICIENT, UNKNOWN, Counterexample, ShortcutVerdict, StrategyVerdict,
    check_strategy, facile_value, shortcut_gap, smallest_counterexample,
)
from pmsolve.strategy.strategies import (
    K_RULES, PAIRS, RATIO_PAIRS, KRule, Strategy, from_experiments, k_rule, parse_strategy,
    read_experiment_file, uopsinfo,
)

__all__ = [
    "COUNTEREXAMPLE", "K_RULES", "KRule", "PAIRS", "RATIO_PAIRS", "SUFFICIENT", "UNKNOWN",
    "Counterexample", "ShortcutVerdict", "Strategy", "StrategyVerdict", "check_strategy",
    "facile_value", "from_experiments", "k_rule", "parse_strategy", "read_experiment_file",
    "shortcut_gap", "smallest_counterexample", "uopsinfo",
]
