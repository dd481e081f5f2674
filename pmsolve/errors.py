"""The exceptions pmsolve raises for bad input; the CLI turns each into one line and exit code 2."""


class PmsolveError(Exception):
    """Base of every error pmsolve reports to its user (bad input, missing solver, ...)."""


class ValidationError(PmsolveError, ValueError):
    """A value (mapping, experiment, count, port set) violates the model's rules."""


class FormatError(PmsolveError, ValueError):
    """A file or string is not in any format pmsolve reads, or is malformed."""


class UnknownNameError(ValidationError, KeyError):
    """An instruction or port name that the mapping does not know."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SolverError(PmsolveError, RuntimeError):
    """A solver backend is missing, cannot handle a problem, or failed."""


class OutputError(PmsolveError):
    """An output path cannot be written safely: a directory or socket is there, its directory is
    missing or not writable, or the write failed (:mod:`pmsolve.fileio`)."""


class MeasurementError(PmsolveError, RuntimeError):
    """An experiment could not be measured (assembler rejection, fault, worker failure);
    ``experiments`` are the ones that failed, where known."""

    def __init__(self, message: str, experiments: tuple = ()):
        super().__init__(message)
        self.experiments = tuple(experiments)
