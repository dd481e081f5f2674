"""The oracle protocol: what an inference algorithm may ask of a machine (DESIGN §4).

Kept deliberately small so that a hardware oracle and a caching measurement store can plug in
later: a batch ``measure`` call (batches let a hardware oracle assemble many kernels at once),
the instruction schemes it can run, and an optional total-µop counter.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable
from urllib.parse import parse_qsl

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


ORACLE_KINDS = ("simulated", "recorded", "hardware", "store")


def parse_spec(spec: str) -> tuple[str, str, dict[str, str]]:
    """Split ``KIND:PATH[?key=value&...]`` into its parts, or raise a clear error."""
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ValidationError(f"bad oracle spec {spec!r}: expected KIND:PATH with KIND one of "
                              f"{', '.join(ORACLE_KINDS)} (e.g. simulated:mapping.json?r_max=5)")
    path, _, query = rest.partition("?")
    try:
        options = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)))
    except ValueError:
        raise ValidationError(f"bad oracle spec {spec!r}: options must look like ?key=value&key=value") from None
    return kind, path, options


def open_oracle(spec: str) -> Oracle:
    """Build an oracle from a spec string.

    * ``simulated:MAPPING.json[?r_max=5&noise=0.01&seed=1&uops=1]`` — a known mapping answers,
      optionally capped by a front end, with seeded multiplicative noise and a µop counter;
    * ``recorded:FILE`` — measurements from a file (pmsolve or PMEvo experiment list);
    * ``hardware:STORE.sqlite[?rounds=5&target_ticks=40000]`` — this x86-64 machine, answers kept
      in the measurement store (``hardware:-`` keeps none);
    * ``store:STORE.sqlite[?machine=FINGERPRINT]`` — replay a measurement store.
    """
    kind, path, options = parse_spec(spec)
    if kind == "simulated":
        from pmsolve.harness.simulated import SimulatedOracle
        return SimulatedOracle.from_spec(path, options)
    if kind == "recorded":
        from pmsolve.harness.recorded import RecordedOracle
        if options:
            raise ValidationError(f"oracle spec {spec!r}: recorded oracles take no options, got {sorted(options)}")
        return RecordedOracle.from_file(path)
    if kind == "hardware":
        from pmsolve.harness.hardware import open_hardware
        return open_hardware(path, options)
    if kind == "store":
        from pmsolve.harness.store import open_store_oracle
        return open_store_oracle(path, options)
    raise ValidationError(f"unknown oracle kind {kind!r} in {spec!r}: choose one of {', '.join(ORACLE_KINDS)}")
