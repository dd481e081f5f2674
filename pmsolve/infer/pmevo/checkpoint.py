"""Atomic checkpoint files: a killed run resumes from its last completed generation."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

from pmsolve.errors import FormatError
from pmsolve.fileio import atomic_write_bytes

STATE_FILE = "state.pickle"
MEASUREMENTS_FILE = "measurements.json"


def save_state(folder: str | Path, state: dict[str, Any]) -> None:
    atomic_write_bytes(Path(folder) / STATE_FILE, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))


def load_state(folder: str | Path) -> dict[str, Any] | None:
    path = Path(folder) / STATE_FILE
    if not path.exists():
        return None
    try:
        return pickle.loads(path.read_bytes())
    except Exception as exc:  # a foreign or corrupt file: say so instead of crashing
        raise FormatError(f"{path}: not a readable PMEvo checkpoint ({type(exc).__name__}: {exc})") from None


def save_json(folder: str | Path, name: str, data: Any) -> None:
    atomic_write_bytes(Path(folder) / name, (json.dumps(data, indent=1) + "\n").encode())


def load_json(folder: str | Path, name: str) -> Any | None:
    path = Path(folder) / name
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise FormatError(f"{path}: unreadable checkpoint file: {exc}") from None
