"""Counter-example-guided port mapping inference (dissertation ch. 4) — see
:mod:`pmsolve.infer.cegis.algorithm` for the algorithm and its levers.

    from pmsolve.harness.oracle import open_oracle
    from pmsolve.infer.cegis import infer
    result = infer(open_oracle("simulated:truth.json"), ports=4, epsilon=0.02, state="run.state.json")
    result.mapping, result.witnesses, result.conflict, result.stats
"""

from pmsolve.infer.cegis.algorithm import (
    Cegis,
    CegisOptions,
    CegisResult,
    Conflict,
    MappingVars,
    Refutation,
    infer,
)
from pmsolve.infer.cegis.store import MeasurementLog

__all__ = ["Cegis", "CegisOptions", "CegisResult", "Conflict", "MappingVars", "MeasurementLog",
           "Refutation", "infer"]
