"""pmsolve: CPU port mappings as a solved, checkable problem.

A port mapping says into which µops an instruction splits and on which execution ports each
µop may run. pmsolve computes the throughput a mapping implies, infers mappings from
measurements, and checks the results with several solver backends.

The names a researcher needs are here (as pysmt's ``shortcuts``):

    from pmsolve import PortMapping, Experiment, inverse_throughput, load_mapping
    m = load_mapping("mapping.json")
    inverse_throughput(m, Experiment({"add": 2, "mul": 1}))

They are loaded on first use, so importing one room (``pmsolve.harness``, say, which the
measurement worker process imports) pulls in none of the solver layers. Everything else lives
in its room:
``pmsolve.symbolic`` (the IR), ``pmsolve.backends``, ``pmsolve.encodings``,
``pmsolve.strategy``, ``pmsolve.infer``, ``pmsolve.testing``, ...
"""

import importlib
from typing import Any

from pmsolve.errors import FormatError, PmsolveError, SolverError, UnknownNameError, ValidationError

__version__ = "0.1.0"

_SHORTCUTS = {
    "Experiment": "pmsolve.model", "Measurement": "pmsolve.model", "PortMapping": "pmsolve.model",
    "inverse_throughput": "pmsolve.throughput", "bottleneck": "pmsolve.throughput",
    "load_mapping": "pmsolve.formats", "save_mapping": "pmsolve.formats",
    "load_experiments": "pmsolve.formats", "save_experiments": "pmsolve.formats",
    "solve": "pmsolve.backends", "open_session": "pmsolve.backends",
    "accuracy": "pmsolve.metrics", "report": "pmsolve.metrics",
}

__all__ = sorted(["FormatError", "PmsolveError", "SolverError", "UnknownNameError",
                  "ValidationError", "__version__", *_SHORTCUTS])


def __getattr__(name: str) -> Any:
    if name in _SHORTCUTS:
        value = getattr(importlib.import_module(_SHORTCUTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pmsolve' has no attribute {name!r}")
