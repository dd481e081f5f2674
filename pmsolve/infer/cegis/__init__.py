"""Counter-example-guided port mapping inference (dissertation ch. 4) — see
:mod:`pmsolve.infer.cegis.algorithm` for the algorithm and :class:`CegisOptions` for its levers.

    from pmsolve.harness import SimulatedOracle
    from pmsolve.infer.cegis import CegisOptions, infer
    result = infer(SimulatedOracle(truth), CegisOptions(ports=4, noise_epsilon=0.02), state="run.state.json")
    result.mapping, result.witnesses, result.conflict, result.unseen, result.stats
"""

from pmsolve.infer.cegis.algorithm import Cegis, infer
from pmsolve.infer.cegis.options import CegisOptions, MappingVars
from pmsolve.infer.cegis.result import CegisResult, Conflict, Refutation

__all__ = ["Cegis", "CegisOptions", "CegisResult", "Conflict", "MappingVars", "Refutation", "infer"]
