"""The one progress event of the inference algorithms (CEGIS, PMEvo, explain).

An algorithm calls ``progress(event)`` with a :class:`ProgressEvent` whenever something worth
showing happened; ``str(event)`` is a one-line rendering (a printer such as the command line's
just prints it). ``done``/``total`` count the units of the stage where that makes sense
(experiments measured, generations evolved, counterexamples); ``data`` carries the stage's
figures for programs (e.g. PMEvo's ``best_d``). Events are plain values: they pickle, so a
progress callback can be shipped to worker processes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProgressEvent:
    """``algorithm`` ("cegis", "pmevo", "explain"), ``stage`` (e.g. "measure", "evolve", "counterexample"),
    a readable ``message``, optional ``done``/``total`` and the stage's figures in ``data``."""

    algorithm: str
    stage: str
    message: str
    done: int | None = None
    total: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.algorithm}: {self.message}"


Progress = Callable[[ProgressEvent], None]


def emitter(algorithm: str, progress: Progress | None) -> Callable[..., None]:
    """``say(stage, message, done=None, total=None, **data)`` for one algorithm (a no-op
    without a progress callback)."""
    if progress is None:
        return lambda *args, **kwargs: None

    def say(stage: str, message: str, done: int | None = None, total: int | None = None, **data: Any) -> None:
        progress(ProgressEvent(algorithm, stage, message, done, total, data))
    return say
