"""PMEvo (dissertation ch. 5, PLDI'20): infer three-level port mappings from throughput
experiments with an evolutionary algorithm on DEAP.

>>> from pmsolve.harness import SimulatedOracle
>>> from pmsolve.infer.pmevo import PmevoOptions, infer
>>> result = infer(SimulatedOracle(truth), PmevoOptions(ports=4, budget_seconds=60))  # doctest: +SKIP
>>> print(result.table())  # doctest: +SKIP
"""

from pmsolve.infer.pmevo.evolution import Evolution, EvolutionConfig, EvolutionResult
from pmsolve.infer.pmevo.experiments import Congruence, congruence_classes, generate, pair_experiments, singletons
from pmsolve.infer.pmevo.fitness import Evaluator
from pmsolve.infer.pmevo.options import PRESET, PRESETS, PmevoOptions
from pmsolve.infer.pmevo.pipeline import PmevoResult, build_evaluator, infer, measure_all

__all__ = ["Congruence", "Evaluator", "Evolution", "EvolutionConfig", "EvolutionResult", "PRESET", "PRESETS",
           "PmevoOptions", "PmevoResult", "build_evaluator", "congruence_classes", "generate", "infer", "measure_all",
           "pair_experiments", "singletons"]
