"""The measurement store: every answer an oracle gives, in SQLite (DESIGN.md §4).

A row is keyed by (machine fingerprint, harness settings, canonical experiment) and keeps the
value, spread, noise flag, attempts, error and the raw samples. The database runs in WAL mode
and every experiment is committed on its own.

The guarantee, for a campaign killed at any moment by the death of its process (SIGKILL
included; not a power loss, which ``synchronous=NORMAL`` does not cover):

* every experiment whose :meth:`MeasurementStore.put` has returned is in the store, with its
  value and samples (each put is one committed transaction);
* lost are only the results that were measured but not yet put: for an oracle that streams
  (``measure_iter``, the hardware oracle) the one experiment between its measurement and its
  commit; for a batch oracle the rest of the current chunk (at most ``chunk`` experiments);
* a rerun measures exactly the experiments without a row, once each: nothing stored is
  measured again, and the lost in-flight results are measured a second time.

>>> store = MeasurementStore("measurements.sqlite")               # doctest: +SKIP
>>> oracle = StoredOracle(HardwareOracle(), store)                 # doctest: +SKIP
>>> oracle.measure([Experiment({"add_r64_r64": 1})])               # measured once, then read back
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from pmsolve.errors import FormatError, MeasurementError, PmsolveError
from pmsolve.harness.cpu import host_cpu
from pmsolve.model import Experiment, Measurement

SCHEMA = """
CREATE TABLE IF NOT EXISTS machines (
    fingerprint TEXT PRIMARY KEY,
    description TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY,
    machine TEXT NOT NULL,
    settings TEXT NOT NULL,
    experiment TEXT NOT NULL,
    cycles REAL,
    spread REAL,
    noisy INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 1,
    error TEXT,
    samples TEXT,
    created REAL NOT NULL,
    UNIQUE (machine, settings, experiment)
);
"""


def machine_description() -> dict[str, Any]:
    """What identifies a machine's measurements: the CPU's identity (vendor, family, model,
    stepping, microarchitecture, features, vCPUs; :mod:`pmsolve.harness.cpu`), its microcode
    and the operating system."""
    info: dict[str, Any] = {"system": platform.system(), **host_cpu().key()}
    try:
        m = re.search(r"^microcode\s*:\s*(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
        if m:
            info["microcode"] = m.group(1).strip()
    except OSError:
        pass
    return info


def machine_fingerprint(description: dict[str, Any] | None = None) -> str:
    desc = description or machine_description()
    return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:16]


def canonical_settings(settings: dict[str, Any]) -> str:
    return json.dumps(settings, sort_keys=True, separators=(",", ":"))


def canonical_experiment(e: Experiment) -> str:
    """Order-free text of a multiset: ``name:count`` sorted by name, joined by ``;``."""
    return ";".join(f"{n}:{c}" for n, c in e.items())


def parse_experiment(text: str) -> Experiment:
    items = []
    for part in text.split(";"):
        name, _, count = part.rpartition(":")
        items.append((name, int(count)))
    return Experiment(items)


@dataclass(frozen=True)
class StoredRow:
    """One experiment's row of the store: its value (None when it failed) and how it was measured."""

    experiment: Experiment
    cycles: float | None
    spread: float | None
    noisy: bool
    attempts: int
    error: str | None
    samples: Any
    created: float

    @property
    def ok(self) -> bool:
        return self.error is None and self.cycles is not None and not math.isnan(self.cycles)


class MeasurementStore:
    """A SQLite file of measurements (WAL, one transaction per experiment)."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        try:
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")  # durable against process death (not power loss)
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise FormatError(f"{self.path}: not a pmsolve measurement store ({exc})") from None

    def close(self) -> None:
        self.db.close()

    def register_machine(self, fingerprint: str, description: dict[str, Any]) -> None:
        self.db.execute("INSERT OR IGNORE INTO machines VALUES (?, ?)",
                        (fingerprint, json.dumps(description, sort_keys=True)))

    def get(self, machine: str, settings: str, experiments: Iterable[Experiment]) -> dict[Experiment, StoredRow]:
        out: dict[Experiment, StoredRow] = {}
        for e in experiments:
            cur = self.db.execute("SELECT cycles, spread, noisy, attempts, error, samples, created FROM measurements "
                                  "WHERE machine=? AND settings=? AND experiment=?",
                                  (machine, settings, canonical_experiment(e)))
            r = cur.fetchone()
            if r is not None:
                out[e] = StoredRow(e, r[0], r[1], bool(r[2]), r[3], r[4], json.loads(r[5]) if r[5] else None, r[6])
        return out

    def put(self, machine: str, settings: str, e: Experiment, cycles: float | None, *, spread: float | None = None,
            noisy: bool = False, attempts: int = 1, error: str | None = None, samples: Any = None) -> None:
        """Insert or replace one experiment's row, committed at once."""
        if cycles is not None and math.isnan(cycles):
            cycles = None
        self.db.execute("INSERT OR REPLACE INTO measurements (machine, settings, experiment, cycles, spread, noisy, "
                        "attempts, error, samples, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (machine, settings, canonical_experiment(e), cycles, spread, int(noisy), attempts, error,
                         json.dumps(samples) if samples is not None else None, time.time()))

    def rows(self, machine: str | None = None, settings: str | None = None) -> list[StoredRow]:
        q = "SELECT experiment, cycles, spread, noisy, attempts, error, samples, created FROM measurements"
        cond, args = [], []
        if machine:
            cond.append("machine=?")
            args.append(machine)
        if settings:
            cond.append("settings=?")
            args.append(settings)
        if cond:
            q += " WHERE " + " AND ".join(cond)
        return [StoredRow(parse_experiment(r[0]), r[1], r[2], bool(r[3]), r[4], r[5], json.loads(r[6]) if r[6] else None,
                    r[7]) for r in self.db.execute(q + " ORDER BY id", args)]

    def measurements(self, machine: str | None = None, settings: str | None = None) -> list[Measurement]:
        """Successful rows as :class:`~pmsolve.model.Measurement` (for a recorded oracle)."""
        return [Measurement(r.experiment, r.cycles, others={"spread": r.spread or 0.0})
                for r in self.rows(machine, settings) if r.ok]

    def keys(self) -> list[tuple[str, str, int]]:
        """(machine, settings, number of rows) present in the store."""
        return list(self.db.execute("SELECT machine, settings, COUNT(*) FROM measurements GROUP BY machine, settings"))


class StoredOracle:
    """Wraps any oracle: answers from the store when it can, measures the rest through the inner
    oracle and commits each answer as soon as it exists. Inner oracles with ``measure_iter``
    (the hardware oracle) stream results one by one; others are asked in ``chunk``-sized batches.

    ``machine`` defaults to this machine's fingerprint for the hardware oracle and to the inner
    oracle's ``describe()`` otherwise; ``settings`` to the inner oracle's
    ``fingerprint_settings()`` (or ``{}``). Failed experiments are stored with their error and
    not retried unless ``retry_errors``.
    """

    def __init__(self, inner, store: MeasurementStore, *, machine: str | None = None,
                 settings: dict[str, Any] | None = None, chunk: int = 16, retry_errors: bool = False,
                 on_error: str = "raise"):
        self.inner = inner
        self.store = store
        if machine is None:
            if type(inner).__name__ == "HardwareOracle":
                desc = machine_description()
                machine = machine_fingerprint(desc)
                store.register_machine(machine, desc)
            else:
                machine = "oracle:" + hashlib.sha256(inner.describe().encode()).hexdigest()[:16]
                store.register_machine(machine, {"oracle": inner.describe()})
        self.machine = machine
        fs = getattr(inner, "fingerprint_settings", None)
        self.settings = canonical_settings(settings if settings is not None else (fs() if fs else {}))
        self.chunk = max(1, chunk)
        self.retry_errors = retry_errors
        self.on_error = on_error
        self.measured = 0   # experiments this object had the inner oracle measure
        self.reused = 0

    @property
    def instructions(self) -> tuple[str, ...]:
        return self.inner.instructions

    @property
    def has_uop_counter(self) -> bool:
        return self.inner.has_uop_counter

    def uop_counts(self, experiments: Sequence[Experiment]) -> list[float]:
        return self.inner.uop_counts(experiments)

    def describe(self) -> str:
        return f"{self.inner.describe()} via store {self.store.path}"

    def rows(self, experiments: Sequence[Experiment]) -> dict[Experiment, StoredRow]:
        """Measure what is missing and return every experiment's stored row."""
        experiments = list(experiments)
        unique = list(dict.fromkeys(experiments))
        have = self.store.get(self.machine, self.settings, unique)
        missing = [e for e in unique if e not in have or (self.retry_errors and not have[e].ok)]
        self.reused += len(unique) - len(missing)
        for e, cycles, extra in self._measure(missing):
            self.store.put(self.machine, self.settings, e, cycles, **extra)
            self.measured += 1
        return self.store.get(self.machine, self.settings, unique)

    def _measure(self, missing: list[Experiment]) -> Iterator[tuple[Experiment, float | None, dict]]:
        if not missing:
            return
        stream = getattr(self.inner, "measure_iter", None)
        if stream is not None:
            for _, r in stream(missing):
                yield r.experiment, r.cycles, {"spread": r.spread, "noisy": r.noisy, "attempts": r.attempts,
                                               "error": r.error,
                                               "samples": {"variants": r.samples, "reference": r.reference,
                                                           "ratios": r.ratios} if r.samples else None}
            return
        for i in range(0, len(missing), self.chunk):
            part = missing[i:i + self.chunk]
            try:
                values = self.inner.measure(part)
            except PmsolveError as exc:
                if len(part) == 1:
                    yield part[0], None, {"error": str(exc)}
                    continue
                for e in part:  # find the failing ones
                    yield from self._measure_single(e)
                continue
            for e, v in zip(part, values):
                yield e, float(v), {"samples": [float(v)]}

    def _measure_single(self, e: Experiment) -> Iterator[tuple[Experiment, float | None, dict]]:
        try:
            v = self.inner.measure([e])[0]
            yield e, float(v), {"samples": [float(v)]}
        except PmsolveError as exc:
            yield e, None, {"error": str(exc)}

    def measure(self, experiments: Sequence[Experiment]) -> list[float]:
        experiments = list(experiments)
        rows = self.rows(experiments)
        bad = [rows[e] for e in dict.fromkeys(experiments) if not rows[e].ok]
        if bad and self.on_error == "raise":
            shown = "; ".join(f"{r.experiment}: {r.error}" for r in bad[:3])
            raise MeasurementError(f"{len(bad)} experiment(s) could not be measured: {shown} "
                                   f"(stored in {self.store.path}; rerun with retry_errors to try again)")
        return [rows[e].cycles if rows[e].ok else float("nan") for e in experiments]
