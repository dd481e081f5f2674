"""A persistent cache of predictions in SQLite, keyed by predictor name and block key.

Errors are cached like answers (a crash is a result AnICA counts), unless their kind is listed
in ``retry`` (e.g. ``("timeout",)`` on a loaded machine). The database runs in WAL mode with a
busy timeout, one connection per thread, and commits each batch it writes, so several threads
and processes can share one cache file and a killed campaign keeps everything answered so far.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Iterable, Sequence

from pmsolve.predictors.block import Block
from pmsolve.predictors.base import Prediction, Predictor, error_kind
from pmsolve.errors import FormatError

SCHEMA = """
CREATE TABLE IF NOT EXISTS predictions (
    predictor TEXT NOT NULL,
    block TEXT NOT NULL,
    cycles REAL,
    error TEXT,
    asm TEXT NOT NULL,
    seconds REAL,
    created REAL NOT NULL,
    PRIMARY KEY (predictor, block)
);
"""


class PredictionCache:
    """The SQLite file; thread-safe (a connection per thread) and process-safe (WAL)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        try:
            self._conn().executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise FormatError(f"prediction cache {self.path} is not usable: {exc}") from None

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=60000")
            self._local.conn = conn
        return conn

    def get(self, predictor: str, keys: Iterable[str]) -> dict[str, Prediction]:
        keys = list(dict.fromkeys(keys))
        found: dict[str, Prediction] = {}
        conn = self._conn()
        for start in range(0, len(keys), 500):
            part = keys[start:start + 500]
            rows = conn.execute(f"SELECT block, cycles, error FROM predictions WHERE predictor = ? AND block IN "
                                f"({','.join('?' * len(part))})", [predictor, *part]).fetchall()
            for block, cycles, error in rows:
                found[block] = Prediction(cycles, error)
        return found

    def put(self, predictor: str, items: Sequence[tuple[Block, Prediction]], seconds: float | None = None) -> None:
        now = time.time()
        per = seconds / len(items) if seconds is not None and items else None
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR REPLACE INTO predictions VALUES (?, ?, ?, ?, ?, ?, ?)",
                             [(predictor, b.key, p.cycles, p.error, b.asm, per, now) for b, p in items])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def count(self, predictor: str | None = None) -> int:
        if predictor is None:
            return self._conn().execute("SELECT COUNT(*) FROM predictions").fetchone()[0]
        return self._conn().execute("SELECT COUNT(*) FROM predictions WHERE predictor = ?", (predictor,)).fetchone()[0]

    def predictors(self) -> list[str]:
        return [r[0] for r in self._conn().execute("SELECT DISTINCT predictor FROM predictions ORDER BY 1")]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class CachedPredictor:
    """``inner`` answered from the cache where possible; misses go to ``inner`` and are stored."""

    def __init__(self, inner: Predictor, cache: PredictionCache | str | Path, *, retry: Sequence[str] = ()):
        self.inner = inner
        self.cache = cache if isinstance(cache, PredictionCache) else PredictionCache(cache)
        self.retry = tuple(retry)
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def max_workers(self) -> int | None:
        return getattr(self.inner, "max_workers", None)

    @property
    def exclusive(self) -> bool:
        return bool(getattr(self.inner, "exclusive", False))

    def predict(self, blocks: Sequence[Block]) -> list[Prediction]:
        name = self.inner.name
        known = self.cache.get(name, (b.key for b in blocks))
        known = {k: p for k, p in known.items() if error_kind(p.error) not in self.retry}
        todo: dict[str, Block] = {}
        for b in blocks:
            if b.key not in known:
                todo.setdefault(b.key, b)
        if todo:
            t0 = time.monotonic()
            answers = self.inner.predict(list(todo.values()))
            seconds = time.monotonic() - t0
            if len(answers) != len(todo):
                answers = [Prediction(None, f"garbage: {name} gave {len(answers)} answers for {len(todo)} blocks")] * len(todo)
            self.cache.put(name, list(zip(todo.values(), answers)), seconds)
            known.update(zip(todo.keys(), answers))
        with self._lock:
            self.misses += len(todo)
            self.hits += len(blocks) - len(todo)
        return [known[b.key] for b in blocks]

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close:
            close()
