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

Oracles use it through the one caching oracle, :mod:`pmsolve.harness.cache`:

>>> oracle = CachingOracle.in_sqlite(HardwareOracle(), "measurements.sqlite")  # doctest: +SKIP
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
from typing import Any, Iterable

from pmsolve.errors import FormatError
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


