"""The oracle protocol, what an inference algorithm may ask of a machine (DESIGN §4), and
:func:`open_oracle`, which builds any oracle from a spec string.

The protocol is deliberately small: a batch ``measure`` call (batches let a hardware oracle
assemble many kernels at once), the instruction schemes it can run, and an optional total-µop
counter. The factory is the one place that knows every kind of oracle, so it is also where a
hardware oracle is wrapped in its measurement store.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl

from pmsolve.errors import ValidationError
from pmsolve.harness.cache import CachingOracle
from pmsolve.harness.hardware import HardwareOracle, HarnessSettings
from pmsolve.harness.protocol import Oracle
from pmsolve.harness.recorded import RecordedOracle
from pmsolve.harness.simulated import SimulatedOracle
from pmsolve.harness.store import MeasurementStore


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
        return SimulatedOracle.from_spec(path, options)
    if kind == "recorded":
        if options:
            raise ValidationError(f"oracle spec {spec!r}: recorded oracles take no options, got {sorted(options)}")
        return RecordedOracle.from_file(path)
    if kind == "hardware":
        return _hardware(path, options)
    if kind == "store":
        return _replay_store(path, options)
    raise ValidationError(f"unknown oracle kind {kind!r} in {spec!r}: choose one of {', '.join(ORACLE_KINDS)}")


def _hardware(path: str, options: dict[str, str]) -> HardwareOracle | CachingOracle:
    """``hardware:STORE[?rounds=..&target_ticks=..&reference_ticks=..&noise_tolerance=..&max_retries=..]``
    (``-``: no store)."""
    known = {"rounds": int, "target_ticks": int, "reference_ticks": int, "noise_tolerance": float, "max_retries": int}
    unknown = set(options) - set(known)
    if unknown:
        raise ValidationError(f"hardware oracle: unknown option(s) {sorted(unknown)}; known: {sorted(known)}")
    try:
        settings = HarnessSettings(**{k: known[k](v) for k, v in options.items()})
    except ValueError as exc:
        raise ValidationError(f"hardware oracle: bad option value: {exc}") from None
    oracle = HardwareOracle(settings=settings)
    if path in ("", "-"):
        return oracle
    return CachingOracle.in_sqlite(oracle, MeasurementStore(path))


def _replay_store(path: str, options: dict[str, str]) -> RecordedOracle:
    """``store:FILE[?machine=FP&settings=JSON]``: a recorded oracle over a store's rows."""
    unknown = set(options) - {"machine", "settings"}
    if unknown:
        raise ValidationError(f"store oracle: unknown option(s) {sorted(unknown)}; known: machine, settings")
    if not Path(path).exists():
        raise ValidationError(f"store oracle: {path} does not exist")
    store = MeasurementStore(path)
    keys = [(m, s) for m, s, _ in store.keys()
            if options.get("machine", m) == m and options.get("settings", s) == s]
    if len(keys) != 1:
        shown = "; ".join(f"machine={m} settings={s}" for m, s in keys[:4]) or "none"
        raise ValidationError(f"store oracle: {path} holds {len(keys)} matching measurement sets ({shown}); "
                              "choose one with ?machine=...&settings=...")
    return RecordedOracle(store.measurements(*keys[0]), source=f"{path} (machine {keys[0][0]})")
