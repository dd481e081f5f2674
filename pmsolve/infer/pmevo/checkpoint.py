"""A PMEvo checkpoint folder: ``state.json`` (a fingerprinted :class:`~pmsolve.fileio.StateFile`
with every measurement) and ``evolution.pickle`` (the last completed generation; with restarts
one per ``restart-k`` subfolder), each written atomically, so a killed run resumes from its last
completed generation without measuring anything again."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from pmsolve.errors import FormatError
from pmsolve.fileio import atomic_write_bytes

MEASUREMENTS_FILE = "state.json"
EVOLUTION_FILE = "evolution.pickle"


def save_state(folder: str | Path, state: dict[str, Any]) -> None:
    atomic_write_bytes(Path(folder) / EVOLUTION_FILE, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL),
                       "PMEvo checkpoint")


def load_state(folder: str | Path) -> dict[str, Any] | None:
    path = Path(folder) / EVOLUTION_FILE
    if not path.exists():
        return None
    try:
        state = pickle.loads(path.read_bytes())
    except Exception as exc:  # a foreign or corrupt file: say so instead of crashing
        raise FormatError(f"{path}: not a readable PMEvo checkpoint ({type(exc).__name__}: {exc})") from None
    if not isinstance(state, dict):
        raise FormatError(f"{path}: not a PMEvo checkpoint")
    return state
