"""pmsolve: CPU port mappings as a solved, checkable problem.

A port mapping says into which µops an instruction splits and on which execution ports each
µop may run. pmsolve computes the throughput a mapping implies, infers mappings from
measurements, and checks the results with several solver backends.
"""

from pmsolve.errors import FormatError, PmsolveError, SolverError, UnknownNameError, ValidationError

__version__ = "0.1.0"

__all__ = [
    "FormatError",
    "PmsolveError",
    "SolverError",
    "UnknownNameError",
    "ValidationError",
    "__version__",
]
