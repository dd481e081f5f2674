"""Crash-safe file writes: a file is always either its old or its new version, never half
written, so an interrupted run never loses a checkpoint, state file or output."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over the target."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def read_state(path: str | Path, fmt: str, what: str) -> dict:
    """Read a JSON state file written by this package, refusing anything else in one line."""
    from pmsolve.errors import ValidationError

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValidationError(f"{path}: cannot read the {what} state file ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise ValidationError(f"{path}: not a pmsolve {what} state file")
    return data
