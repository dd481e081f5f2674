"""Safe output files: never half written, never clobbering what is at the path.

The rules of every write here (:func:`atomic_write_bytes`, :func:`atomic_write_text`), which
:func:`check_output_path` applies before any work starts (so a bad ``-o`` fails at once, in
one line, instead of after a long run):

* a **regular file**, or a path where nothing exists yet, is written **atomically**: a
  temporary file in the same directory, fsync, then rename over the target. The file is
  always either its old or its new version, so an interrupted (even SIGKILLed) run never
  loses a checkpoint, state file or output;
* a **symbolic link is followed**: its target is written atomically and the link stays a
  link (a dangling link creates its target);
* a **character or block device or a FIFO** (``-o /dev/null``, ``-o /dev/stdout`` on a
  terminal or pipe, a named pipe) is opened for writing and **written directly**: no
  temporary file, no rename, so the device stays a device (as root, a rename would replace
  ``/dev/null`` with a regular file). A FIFO blocks until a reader opens it, as in a shell;
* a **new file gets the umask's mode** (0666 & ~umask, the kernel applies it), like any
  program's output; a replaced regular file keeps its mode;
* anything else is **refused with one line** (:class:`~pmsolve.errors.OutputError`): a
  directory or socket at the path, a missing or unwritable directory, an existing file
  that is not writable, a symlink loop.

Replacing a regular file gives it a new inode: other hard links to it keep the old content.

**State files** (:class:`StateFile`) are what a run keeps so that a rerun resumes it (CEGIS,
explain, PMEvo's checkpoint folder; the AnICA campaign and PMEvo's evolution file use
:func:`refuse_other_run` with their own formats). Each records a fingerprint of what its
contents depend on; a rerun with anything else is refused in one line naming what differs and
how to start afresh, so the state of two runs is never mixed.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from pmsolve.errors import OutputError, ValidationError

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _describe(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file, device or FIFO"


def _inspect(path: Path, what: str) -> tuple[str, Path, os.stat_result | None]:
    """(kind, where to write, stat of what is there): kind is 'new', 'regular' or 'stream'
    (device or FIFO); any other kind is refused."""
    try:
        st: os.stat_result | None = os.stat(path)  # follows symlinks (and /proc's magic links)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        blocker = next((p for p in reversed(path.parents) if p.exists() and not p.is_dir()), path.parent)
        raise OutputError(f"{what} {path}: {blocker} is not a directory") from None
    except OSError as exc:
        raise OutputError(f"{what} {path}: cannot write there ({exc.strerror or exc})") from None
    if st is None:
        return "new", Path(os.path.realpath(path)), None  # a dangling symlink: create its target
    if stat.S_ISREG(st.st_mode):
        target = Path(os.path.realpath(path))
        # /dev/stdout redirected to a deleted file resolves to a name that does not exist: write through it
        return ("regular", target, st) if target.exists() else ("stream", path, st)
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return "stream", path, st
    raise OutputError(f"{what} {path}: is {_describe(st.st_mode)}; give the path of a file to write")


def _writable_dir(folder: Path, path: Path, what: str, make_parents: bool) -> None:
    probe = folder
    if make_parents:  # the nearest existing ancestor must be a directory we may create entries in
        while not os.path.lexists(probe) and probe.parent != probe:
            probe = probe.parent
    if not probe.exists():
        raise OutputError(f"{what} {path}: directory {folder} does not exist")
    if not probe.is_dir():
        raise OutputError(f"{what} {path}: {probe} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise OutputError(f"{what} {path}: directory {probe} is not writable")


def check_output_path(path: str | Path, what: str = "output file", *, make_parents: bool = False) -> Path:
    """Check, before any work starts, that ``path`` can be written under the rules above.

    Refuses (:class:`~pmsolve.errors.OutputError`, one line naming ``what`` and the path) a
    directory, socket or symlink loop at the path, an existing file or device that is not
    writable, and a directory that is missing or not writable. ``make_parents`` accepts a
    missing directory when its nearest existing ancestor is a writable directory (the write
    creates it). Nothing is created or modified. Returns ``path`` as a :class:`~pathlib.Path`.

    Commands call it for every output (``-o``, state and checkpoint files) right after
    parsing their arguments::

        check_output_path(args.out)
        check_output_path(state, "state file")
    """
    if not str(path).strip():
        raise OutputError(f"{what}: empty path")
    path = Path(path)
    kind, target, _ = _inspect(path, what)
    if kind == "new":
        _writable_dir(target.parent, path, what, make_parents)
    elif not os.access(path, os.W_OK):
        raise OutputError(f"{what} {path}: not writable")
    elif kind == "regular":
        _writable_dir(target.parent, path, what, False)  # the rename needs the directory
    return path


def _write_atomically(target: Path, data: bytes, old: os.stat_result | None) -> None:
    folder = target.parent
    stem = target.name[:200]
    while True:
        tmp = folder / f".{stem}.{secrets.token_hex(4)}.tmp"
        try:  # mode 0666: the kernel applies the umask (mkstemp would give 0600)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            if old is not None:  # a replaced file keeps its mode (and, as root, its owner)
                os.fchmod(f.fileno(), stat.S_IMODE(old.st_mode))
                if os.geteuid() == 0 and (old.st_uid, old.st_gid) != (0, 0):
                    os.fchown(f.fileno(), old.st_uid, old.st_gid)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(folder, os.O_RDONLY | _O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _write_directly(path: Path, data: bytes, truncate: bool) -> None:
    fd = os.open(path, os.O_WRONLY | _O_CLOEXEC | (os.O_TRUNC if truncate else 0))
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def atomic_write_bytes(path: str | Path, data: bytes, what: str = "output file") -> None:
    """Write ``data`` to ``path`` under the module's rules: atomically for a regular or new
    file (through a symlink to its target), directly for a device or FIFO, refusing anything
    else. Missing parent directories are created. Failures are one-line
    :class:`~pmsolve.errors.OutputError`\\ s."""
    path = Path(path)
    check_output_path(path, what, make_parents=True)
    kind, target, st = _inspect(path, what)
    try:
        if kind == "stream":
            _write_directly(path, data, truncate=st is not None and stat.S_ISREG(st.st_mode))
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(target, data, st)
    except OSError as exc:
        raise OutputError(f"{what} {path}: cannot write ({exc.strerror or exc})") from None


def atomic_write_text(path: str | Path, text: str, what: str = "output file") -> None:
    atomic_write_bytes(path, text.encode("utf-8"), what)


# --------------------------------------------------------------------------- state files

STATE_FORMAT = "pmsolve.state"
STATE_VERSION = 2


def digest(data: bytes | str) -> str:
    """A short stable digest (16 hex digits of SHA-256) of bytes or text."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()[:16]


def canonical(value: Any) -> Any:
    """``value`` as plain JSON data (tuples as lists, keys sorted, Fractions and other objects
    as text), so that fingerprints compare equal however they were built."""
    return json.loads(json.dumps(value, sort_keys=True, default=str, allow_nan=True))


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if value is not None else "nothing"
    return text if len(text) <= 40 else text[:37] + "..."


def fingerprint_differences(stored: Any, current: Any) -> list[str]:
    """What differs between two fingerprints, one ``key: A in the file, B now`` per leaf."""
    a, b = _flatten(canonical(stored)), _flatten(canonical(current))
    return [f"{k}: {_short(a.get(k))} in the file, {_short(b.get(k))} now"
            for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def refuse_other_run(path: str | Path, what: str, stored: Any, current: Any) -> None:
    """Raise one line naming what differs if a state file's fingerprint is not ``current``."""
    diff = fingerprint_differences(stored, current)
    if diff:
        shown = "; ".join(diff[:4]) + (f"; and {len(diff) - 4} more" if len(diff) > 4 else "")
        raise ValidationError(f"{path}: this {what} state belongs to another run ({shown}); "
                              f"to start afresh give another path or delete it")


class StateFile:
    """A fingerprinted JSON state file: what a run keeps so that a rerun resumes it.

    The file records ``kind`` (which algorithm wrote it) and a **fingerprint** of everything
    its contents depend on (the oracle's fingerprint, ports, instructions, options). Opening an
    existing file whose kind or fingerprint differs refuses in one line naming what differs
    (:func:`refuse_other_run`), so the state of one run is never continued by another. The run
    keeps its data in :attr:`data` (JSON sections such as ``measurements``) and calls
    :meth:`save`, which rewrites the file atomically; ``path=None`` keeps everything in memory.
    """

    def __init__(self, path: str | Path | None, kind: str, fingerprint: dict[str, Any]):
        self.path = Path(path) if path is not None else None
        self.kind = kind
        self.fingerprint = canonical(fingerprint)
        self.data: dict[str, Any] = {}
        self.resumed = False
        if self.path is not None and self.path.exists():
            self._load()

    def _load(self) -> None:
        assert self.path is not None
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ValidationError(f"{self.path}: cannot read the {self.kind} state file "
                                  f"({getattr(exc, 'strerror', None) or exc})") from None
        if not isinstance(raw, dict) or raw.get("format") != STATE_FORMAT or raw.get("version") != STATE_VERSION:
            raise ValidationError(f"{self.path}: not a pmsolve state file of this version; "
                                  f"to start afresh give another path or delete it")
        if raw.get("kind") != self.kind:
            raise ValidationError(f"{self.path}: this is a {raw.get('kind')} state file, not a {self.kind} one; "
                                  f"to start afresh give another path or delete it")
        refuse_other_run(self.path, self.kind, raw.get("fingerprint"), self.fingerprint)
        data = raw.get("data")
        if not isinstance(data, dict):
            raise ValidationError(f"{self.path}: the {self.kind} state file has no data section")
        self.data = data
        self.resumed = True

    def save(self) -> None:
        if self.path is None:
            return
        doc = {"format": STATE_FORMAT, "version": STATE_VERSION, "kind": self.kind,
               "fingerprint": self.fingerprint, "data": self.data}
        atomic_write_text(self.path, json.dumps(doc, ensure_ascii=False) + "\n", f"{self.kind} state file")
