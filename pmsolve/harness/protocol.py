"""The oracle protocol (DESIGN.md §4): what every measurement source answers, and what determines
its answers (a fingerprint that state files record, so that no run resumes against another
oracle's measurements). The factory for oracle specs is :mod:`pmsolve.harness.oracle`."""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

from pmsolve.errors import ValidationError
from pmsolve.model import Experiment


@runtime_checkable
class Oracle(Protocol):
    """Answers throughput experiments.

    ``measure`` returns one inverse throughput (cycles per loop iteration) per experiment, in
    order. ``uop_counts`` returns the total µops per iteration, or raises
    :class:`~pmsolve.errors.ValidationError` when ``has_uop_counter`` is false. An oracle should
    also have a stable ``fingerprint() -> dict`` (see :func:`oracle_fingerprint`).
    """

    @property
    def instructions(self) -> tuple[str, ...]: ...

    @property
    def has_uop_counter(self) -> bool: ...

    def measure(self, experiments: Sequence[Experiment]) -> list[float]: ...

    def uop_counts(self, experiments: Sequence[Experiment]) -> list[float]: ...

    def describe(self) -> str: ...


class OracleWrapper:
    """Base of oracles that answer through another one (``inner``): they know its instructions
    and its µop counter."""

    def __init__(self, inner: Any):
        self.inner = inner

    @property
    def instructions(self) -> tuple[str, ...]:
        return tuple(self.inner.instructions)

    @property
    def has_uop_counter(self) -> bool:
        return bool(self.inner.has_uop_counter)


def oracle_fingerprint(oracle: object) -> dict[str, Any]:
    """What determines an oracle's answers, as JSON data: its ``fingerprint()`` (the built-in
    oracles: a simulated oracle's mapping digest, noise, seed, R_max and µop counter; a recorded
    oracle's data digest; the hardware oracle's machine fingerprint and harness settings). An
    oracle without one is known by its ``describe()`` text only. State files record it, so a
    run is never resumed against another oracle's measurements."""
    own = getattr(oracle, "fingerprint", None)
    if callable(own):
        fp = own()
        if not isinstance(fp, dict):
            raise ValidationError(f"{type(oracle).__name__}.fingerprint() must return a dict, got {type(fp).__name__}")
        return fp
    return {"kind": "custom", "describe": oracle.describe()}  # type: ignore[attr-defined]
