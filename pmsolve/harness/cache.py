"""The one caching oracle: every answer an oracle gives is remembered, in memory and, when
asked, persisted, so nothing is measured twice and a killed run resumes (DESIGN.md §4).

:class:`CachingOracle` wraps any oracle. It answers from memory first, then from its
persistence, and has the inner oracle measure only the rest; each answer is persisted as soon
as it exists. Two persistences share one row shape (:class:`~pmsolve.harness.store.StoredRow`):

* :class:`JsonRows` — a section of a fingerprinted JSON state file
  (:class:`~pmsolve.fileio.StateFile`): the measurements of one CEGIS, PMEvo or explain run;
* :class:`SqliteRows` — the SQLite measurement store
  (:class:`~pmsolve.harness.store.MeasurementStore`), keyed by machine and harness settings, so
  one file serves many machines and oracles without mixing them: a hardware oracle is keyed by
  the machine's fingerprint and its settings, any other oracle by its own fingerprint
  (:func:`~pmsolve.harness.protocol.oracle_fingerprint`: a simulated oracle's mapping digest,
  noise, seed, R_max, counter; a recorded oracle's data digest).

Failed experiments (the inner oracle raised a :class:`~pmsolve.errors.PmsolveError`, or a
streaming oracle reported an error) are remembered with their error; :meth:`CachingOracle.measure`
then raises (``on_error="raise"``, after everything else was measured and kept) or returns NaN
for them (``"nan"``). A failure found in the persistence (an earlier run's) is measured again
once, so a run resumed after a fix goes on; one this oracle measured itself is not retried.

>>> cached = CachingOracle(SimulatedOracle(m))                     # memory only  # doctest: +SKIP
>>> cached = CachingOracle.in_sqlite(HardwareOracle(), "m.sqlite")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pmsolve.errors import MeasurementError, PmsolveError, ValidationError
from pmsolve.fileio import StateFile, canonical, digest
from pmsolve.harness.protocol import OracleWrapper, oracle_fingerprint
from pmsolve.harness.store import MeasurementStore, StoredRow, canonical_settings, machine_description
from pmsolve.model import Experiment


#: seconds between saves of a JSON state whose rows a SQLite store keeps as well
SAVE_EVERY = 60.0


class JsonRows:
    """Rows kept in a section (a list, in measurement order) of a :class:`StateFile`.

    Each put saves the state file, unless ``save_every`` (seconds) is given: then at most that
    often, for rows that are safe elsewhere already (a durable inner store). Saving the whole
    state after every batch cost 313 s of a Zen 4 ``--all`` run's characterisation (790 saves
    of a state growing to 26 MB), while each row was already committed to SQLite."""

    def __init__(self, state: StateFile, section: str = "measurements", save_every: float | None = None):
        self.state = state
        self.section = section
        self.save_every = save_every
        self.rows: dict[Experiment, StoredRow] = {}
        self._position: dict[Experiment, int] = {}
        self._saved = time.monotonic()
        for pos, raw in enumerate(state.data.setdefault(section, [])):
            try:
                row = _row_from_json(raw)
            except (KeyError, TypeError, ValueError, PmsolveError) as exc:
                raise ValidationError(f"{state.path}: bad measurement entry {raw!r} ({exc})") from None
            self.rows[row.experiment] = row
            self._position[row.experiment] = pos

    def where(self) -> str:
        return str(self.state.path) if self.state.path is not None else "memory"

    def get(self, experiments: Iterable[Experiment]) -> dict[Experiment, StoredRow]:
        return {e: self.rows[e] for e in experiments if e in self.rows}

    def put(self, rows: Sequence[StoredRow]) -> None:
        kept = self.state.data[self.section]
        for r in rows:
            self.rows[r.experiment] = r
            pos = self._position.setdefault(r.experiment, len(kept))
            if pos == len(kept):
                kept.append(_row_to_json(r))
            else:
                kept[pos] = _row_to_json(r)
        if self.save_every is None or time.monotonic() - self._saved >= self.save_every:
            self.state.save()
            self._saved = time.monotonic()


class SqliteRows:
    """Rows of one (machine, settings) key of a SQLite :class:`MeasurementStore`; each put is
    committed at once (the store's guarantee against a killed process)."""

    def __init__(self, store: MeasurementStore, machine: str, settings: str):
        self.store, self.machine, self.settings = store, machine, settings

    def where(self) -> str:
        return self.store.path

    def get(self, experiments: Iterable[Experiment]) -> dict[Experiment, StoredRow]:
        return self.store.get(self.machine, self.settings, experiments)

    def all(self) -> list[StoredRow]:
        """Every row of this key, in the order they were stored."""
        return self.store.rows(self.machine, self.settings)

    def put(self, rows: Sequence[StoredRow]) -> None:
        for r in rows:
            self.store.put(self.machine, self.settings, r.experiment, r.cycles, spread=r.spread, noisy=r.noisy,
                           attempts=r.attempts, error=r.error, samples=r.samples)


def _row_to_json(r: StoredRow) -> dict[str, Any]:
    out: dict[str, Any] = {"experiment": dict(r.experiment.items()), "cycles": r.cycles}
    for key, default in (("spread", None), ("noisy", False), ("attempts", 1), ("error", None), ("samples", None)):
        if getattr(r, key) != default:
            out[key] = getattr(r, key)
    return out


def _row_from_json(d: dict[str, Any]) -> StoredRow:
    cycles = d["cycles"]
    return StoredRow(Experiment(d["experiment"]), None if cycles is None else float(cycles), d.get("spread"),
               bool(d.get("noisy", False)), int(d.get("attempts", 1)), d.get("error"), d.get("samples"),
               float(d.get("created", 0.0)))


class CachingOracle(OracleWrapper):
    """Wraps any oracle: answers from memory, then from ``store`` (:class:`JsonRows` or
    :class:`SqliteRows`; None keeps answers in memory only), and measures the rest through the
    inner oracle. Inner oracles with ``measure_iter`` (the hardware oracle) stream results, each
    kept at once; others are asked in one batch per call (``chunk``: at most that many per
    batch). µop counts are cached the same way in ``uop_store`` (or in memory).

    ``measured`` and ``reused`` count the experiments the inner oracle measured and those
    answered from the cache.
    """

    def __init__(self, inner: Any, store: JsonRows | SqliteRows | None = None, *,
                 uop_store: JsonRows | None = None, chunk: int | None = None,
                 on_error: str = "raise"):
        if on_error not in ("raise", "nan"):
            raise ValidationError(f"on_error must be 'raise' or 'nan', got {on_error!r}")
        super().__init__(inner)
        self.store = store
        self.uop_store = uop_store
        self.chunk = chunk
        self.on_error = on_error
        self._memory: dict[Experiment, StoredRow] = {}
        self._uops: dict[Experiment, float] = {}
        self.measured = 0
        self.reused = 0

    # ----- constructors for the two persistences
    @classmethod
    def in_state(cls, inner: Any, state: StateFile, **kwargs: Any) -> "CachingOracle":
        """Measurements (and µop counts) in the sections ``measurements`` / ``uop_counts`` of a
        fingerprinted JSON state file: saved with every batch, or every :data:`SAVE_EVERY`
        seconds when ``inner`` keeps its measurements in SQLite itself (a killed run loses none;
        the state file is saved in full at the end of each stage)."""
        every = SAVE_EVERY if isinstance(inner, CachingOracle) and isinstance(inner.store, SqliteRows) else None
        return cls(inner, JsonRows(state, "measurements", every), uop_store=JsonRows(state, "uop_counts"), **kwargs)

    @classmethod
    def in_sqlite(cls, inner: Any, store: MeasurementStore | str | Path, *, machine: str | None = None,
                  settings: dict[str, Any] | None = None, chunk: int | None = 16, **kwargs: Any) -> "CachingOracle":
        """Measurements in a SQLite store, keyed by ``machine`` (default: the machine's
        fingerprint for the hardware oracle, the oracle's fingerprint otherwise) and
        ``settings`` (default: the oracle's harness settings, or none)."""
        if not isinstance(store, MeasurementStore):
            store = MeasurementStore(store)
        fp = oracle_fingerprint(inner)
        if machine is None:
            if fp.get("kind") == "hardware":
                machine = str(fp["machine"])
                store.register_machine(machine, machine_description())
            else:
                own = {k: v for k, v in fp.items() if k != "settings"}
                machine = "oracle:" + digest(json.dumps(canonical(own), sort_keys=True))
                store.register_machine(machine, own)
        key = canonical_settings(settings if settings is not None else fp.get("settings", {}))
        return cls(inner, SqliteRows(store, machine, key), chunk=chunk, **kwargs)

    # ----- the oracle protocol
    def describe(self) -> str:
        where = f" via {self.store.where()}" if isinstance(self.store, SqliteRows) else ""
        return f"{self.inner.describe()}{where}"

    def fingerprint(self) -> dict[str, Any]:
        return oracle_fingerprint(self.inner)

    def known(self) -> list[Experiment]:
        """Every experiment answered so far or kept in a JSON state, in measurement order."""
        out = dict.fromkeys(self.store.rows if isinstance(self.store, JsonRows) else ())
        out.update(dict.fromkeys(self._memory))
        return list(out)

    def rows(self, experiments: Sequence[Experiment]) -> dict[Experiment, StoredRow]:
        """Measure what is missing and return every experiment's row."""
        unique = list(dict.fromkeys(experiments))
        have = {e: self._memory[e] for e in unique if e in self._memory}
        rest = [e for e in unique if e not in have]
        if rest and self.store is not None:
            got = {e: r for e, r in self.store.get(rest).items() if r.ok}    # earlier failures: once more
            self._memory.update(got)
            have.update(got)
        missing = [e for e in unique if e not in have]
        self.reused += len(unique) - len(missing)
        for batch in self._measure(missing):
            self._memory.update((r.experiment, r) for r in batch)
            if self.store is not None:
                self.store.put(batch)
            self.measured += len(batch)
            have.update((r.experiment, r) for r in batch)
        return {e: have[e] for e in unique}

    def measure(self, experiments: Sequence[Experiment]) -> list[float]:
        experiments = list(experiments)
        rows = self.rows(experiments)
        bad = [r for r in rows.values() if not r.ok]
        if bad and self.on_error == "raise":

            kept = f" (kept in {self.store.where()}; a resumed run measures them again)" if self.store else ""
            shown = "; ".join(f"{r.experiment}: {r.error}" for r in bad[:3])
            raise MeasurementError(f"{len(bad)} experiment(s) could not be measured: {shown}{kept}",
                                   tuple(r.experiment for r in bad))
        return [rows[e].cycles if rows[e].ok else math.nan for e in experiments]  # type: ignore[misc]

    def uop_counts(self, experiments: Sequence[Experiment]) -> list[float]:
        experiments = list(experiments)
        todo = [e for e in dict.fromkeys(experiments) if e not in self._uops]
        if todo and self.uop_store is not None:
            self._uops.update((e, float(r.cycles)) for e, r in self.uop_store.get(todo).items() if r.ok)
            todo = [e for e in todo if e not in self._uops]
        if todo:
            values = [float(v) for v in self.inner.uop_counts(todo)]
            if len(values) != len(todo):
                raise ValidationError(f"the oracle counted µops of {len(values)} of {len(todo)} experiments")
            self._uops.update(zip(todo, values))
            if self.uop_store is not None:
                self.uop_store.put([StoredRow(e, v, None, False, 1, None, None, time.time()) for e, v in zip(todo, values)])
        return [self._uops[e] for e in experiments]

    # ----- measuring
    def _measure(self, missing: list[Experiment]) -> Iterator[list[StoredRow]]:
        """Rows of the missing experiments: one at a time from a streaming oracle, else in batches."""
        if not missing:
            return
        stream = getattr(self.inner, "measure_iter", None)
        if stream is not None:
            for _, r in stream(missing):
                samples = {"variants": r.samples, "reference": r.reference, "ratios": r.ratios} if r.samples else None
                yield [StoredRow(r.experiment, r.cycles, r.spread, r.noisy, r.attempts, r.error, samples, time.time())]
            return
        step = self.chunk or len(missing)
        for i in range(0, len(missing), step):
            part = missing[i:i + step]
            try:
                values = self.inner.measure(part)
            except PmsolveError as exc:
                if len(part) == 1:
                    yield [_failed(part[0], exc)]
                else:  # find the failing ones
                    yield [self._measure_single(e) for e in part]
                continue
            if len(values) != len(part):
                raise ValidationError(f"the oracle answered {len(values)} of {len(part)} experiments")
            yield [_value(e, v) for e, v in zip(part, values)]

    def _measure_single(self, e: Experiment) -> StoredRow:
        try:
            return _value(e, self.inner.measure([e])[0])
        except PmsolveError as exc:
            return _failed(e, exc)


def _value(e: Experiment, v: float) -> StoredRow:
    v = float(v)
    return StoredRow(e, None if math.isnan(v) else v, None, False, 1, None if not math.isnan(v) else "NaN", [v],
               time.time())


def _failed(e: Experiment, exc: Exception) -> StoredRow:
    return StoredRow(e, None, None, False, 1, str(exc), None, time.time())
