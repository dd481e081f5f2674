"""The flags several commands share, spelled and read back in one place: ``--backend``,
``--workers``/``--scheduler``/``--executor``, ``--oracle``, ``-o``/``--to``, ``--quiet`` and
``--json``. A command that fans work out gets the same executor flags as every other one.

Also the rules every command applies to what it is given, so they read the same everywhere:
numbers (:func:`number`: finite, in range), outputs (:func:`output_file`, :func:`output_dir`:
checked before any work, missing parent directories created; :func:`refuse_same_file`: two
files a command writes or reads must not be one), flags that exclude each other
(:func:`refuse_together`) and lists that must name something (:func:`name_list`).
"""

from __future__ import annotations

import argparse
import math
import os
import stat
import sys
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qsl

from pmsolve.backends import ENV_VAR as BACKEND_ENV_VAR
from pmsolve.backends import canonical, known_names
from pmsolve.cli.output import one_line
from pmsolve.errors import OutputError, SolverError, ValidationError
from pmsolve.executor import ENV_VAR as EXECUTOR_ENV_VAR
from pmsolve.executor import KINDS, Executor, open_executor, use_executor
from pmsolve.fileio import check_output_path
from pmsolve.formats import MAPPING_FORMATS

ORACLE_HELP = ("simulated:MAPPING.json[?r_max=5&noise=0.01&seed=1] or recorded:MEASUREMENTS.json (an experiment "
               "recorded more than once is answered with the median of its records)")


class OneLineParser(argparse.ArgumentParser):
    """argparse's own errors (unknown flag, bad choice, bad number) as the one line every other
    bad input gets, ``pmsolve: error: …`` and exit 2, instead of the usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("pmsolve").strip()
        where = f"{command}: " if command else ""
        print(f"pmsolve: error: {one_line(where + message)} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


# --------------------------------------------------------------------------- numbers

def number(kind: type = float, *, low: float | None = None, high: float | None = None,
           low_open: bool = False) -> Callable[[str], int | float]:
    """An argparse ``type``: a finite ``kind`` (int or float) in [low, high] (``low_open``: above
    low). NaN, infinities and values out of range are refused naming the value and what is allowed."""
    allowed = "an integer" if kind is int else "a finite number"
    if low is not None:
        allowed += f" {'>' if low_open else '≥'} {low:g}"
    if high is not None:
        allowed += f"{' and' if low is not None else ''} ≤ {high:g}"

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if (value is None or (kind is float and not math.isfinite(value))
                or (low is not None and (value < low or (low_open and value == low)))
                or (high is not None and value > high)):
            raise argparse.ArgumentTypeError(f"expected {allowed}, got {text!r}")
        return value

    parse.__name__ = allowed  # argparse names the type in its own messages
    return parse


POSITIVE_INT = number(int, low=1)
NON_NEGATIVE_INT = number(int, low=0)
POSITIVE = number(float, low=0, low_open=True)
NON_NEGATIVE = number(float, low=0)


# --------------------------------------------------------------------------- outputs

def output_file(path: str | None, what: str = "output file") -> str | None:
    """Check an output file before any work (:func:`~pmsolve.fileio.check_output_path`): a
    directory, socket or unwritable place there is refused in one line. One rule for every
    command: missing parent directories are created when the file is written."""
    if path is not None:
        check_output_path(path, what, make_parents=True)
    return path


def output_dir(path: str | None, what: str = "output folder") -> str | None:
    """Check an output folder before any work: an existing one must be a writable directory
    (a file there is refused in one line); a missing one is created, so its nearest existing
    ancestor must be a writable directory."""
    if not path:
        return path
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{what} {path}: is a file, not a folder; give a folder (it is created if missing)")
    if folder.is_dir():
        if not os.access(folder, os.W_OK | os.X_OK):
            raise OutputError(f"{what} {path}: folder is not writable")
    else:  # same rule as for files: the nearest existing ancestor must be a writable directory
        probe = folder.absolute().parent
        while not probe.exists() and probe.parent != probe:
            probe = probe.parent
        if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
            raise OutputError(f"{what} {path}: cannot create it, {probe} is not a writable directory")
    return path


def _file_identity(path: str) -> tuple | None:
    """What makes two paths one file: device and inode if it exists (links, ``./x``), else the
    resolved path. None for a device or FIFO (``-o /dev/null``): a stream, not a file to keep."""
    try:
        st = os.stat(path)
    except OSError:
        return ("path", os.path.realpath(path))
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return None
    return ("inode", st.st_dev, st.st_ino)


def refuse_same_file(*named: tuple[str, str | None]) -> None:
    """Refuse two of the ``(flag, path)`` pairs naming the same file: what one writes would
    overwrite the other (``--state`` = ``-o``: the mapping replaced the state and the next run
    failed; ``-o`` = the oracle's measurements: they were lost). Checked before any work."""
    seen: dict[tuple, tuple[str, str]] = {}
    for flag, path in named:
        if not path:
            continue
        key = _file_identity(path)
        if key is None:
            continue
        if key in seen:
            other, other_path = seen[key]
            same = path if other_path == path else f"{other_path} and {path}"
            raise ValidationError(f"{other} and {flag} name the same file ({same}): one would overwrite the "
                                  f"other; give each its own path")
        seen[key] = (flag, path)


def name_list(text: str | None, flag: str, what: str = "name") -> tuple[str, ...] | None:
    """A comma-separated list from ``flag`` (None when the flag is absent); given but naming
    nothing (``--schemes ''``, ``--schemes ,``) is refused instead of meaning "the default"."""
    if text is None:
        return None
    names = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    if not names:
        raise ValidationError(f"{flag} {text!r} names no {what}: give comma-separated {what}s")
    return names


def refuse_together(args: argparse.Namespace, first: str, second: str, why: str) -> None:
    """Refuse two flags given together (``first``/``second`` as spelled, e.g. ``--strategy``)
    instead of silently ignoring one."""
    def given(flag: str) -> bool:
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        return value not in (None, False, [], "none")
    if given(first) and given(second):
        raise ValidationError(f"{first} and {second} cannot be combined: {why}")


def backend_name(text: str) -> str:
    """A --backend value as registered (any case; 'pysmt', 'smtlib'/'SMT-LIB2' mean their default
    solver); an unknown name is refused by argparse's one line, naming the ones that exist."""
    try:
        return canonical(text)
    except SolverError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_backend_argument(parser: argparse.ArgumentParser) -> None:
    """``--backend NAME`` (default None: the library reads ``$PMSOLVE_BACKEND``, else auto)."""
    parser.add_argument("--backend", metavar="NAME", type=backend_name, default=None,
                        help=f"solver backend: {known_names()} "
                             f"(default: ${BACKEND_ENV_VAR} or auto; see `pmsolve backends`)")


def add_executor_arguments(parser: argparse.ArgumentParser, *, workers: bool = True, default_workers: int = 1,
                           workers_help: str = "parallel workers") -> None:
    """``--workers N``, ``--scheduler tcp://HOST:PORT`` and ``--executor KIND`` (read them back with
    :func:`executor_from_args`). ``workers=False`` for a command that has its own ``--workers``."""
    if workers:
        parser.add_argument("--workers", type=POSITIVE_INT, default=default_workers,
                            help=f"{workers_help} (default {default_workers}; a local process pool, or with "
                                 f"--executor dask a Dask LocalCluster of that many processes)")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                        help="run the work on this Dask scheduler's workers (pip install 'pmsolve[dask]')")
    parser.add_argument("--executor", choices=KINDS, default=None,
                        help=f"serial, pool or dask (default: ${EXECUTOR_ENV_VAR} or auto: dask with --scheduler, "
                             f"serial for 1 worker, else pool)")


def executor_from_args(args: argparse.Namespace, *, workers: int | None = None,
                       optional: bool = False) -> Executor | None:
    """The executor the flags name. ``optional``: None unless ``--executor``, ``--scheduler`` or
    ``$PMSOLVE_EXECUTOR`` asks for one (for commands whose default is their own threads)."""
    kind, scheduler = getattr(args, "executor", None), getattr(args, "scheduler", None)
    if optional and not (kind or scheduler or os.environ.get(EXECUTOR_ENV_VAR)):
        return None
    n = workers if workers is not None else (getattr(args, "workers", None) or 1)
    return open_executor(kind, workers=n, scheduler=scheduler)


def extend_with_executor(parser: argparse.ArgumentParser) -> None:
    """Give a command that has its own ``--workers`` the ``--scheduler``/``--executor`` flags:
    when asked for, its handler runs with that executor ambient (:func:`~pmsolve.executor.use_executor`),
    which is how the flags reach library code that was not handed an executor."""
    add_executor_arguments(parser, workers=False)
    inner = parser.get_default("func")

    def run(args: argparse.Namespace) -> int:
        ex = executor_from_args(args, optional=True)
        if ex is None:
            return inner(args)
        with ex, use_executor(ex):
            return inner(args)

    parser.set_defaults(func=run)


#: the numeric options of oracle specs, with what each allows (the oracles parse the rest)
ORACLE_NUMBERS = {"r_max": POSITIVE, "noise": NON_NEGATIVE, "noise_tolerance": NON_NEGATIVE,
                  "rounds": POSITIVE_INT, "target_ticks": POSITIVE_INT, "max_retries": NON_NEGATIVE_INT}


def oracle_spec(text: str) -> str:
    """An argparse ``type`` for ``--oracle``: the spec's numeric options must be finite and in
    range (``r_max=inf`` or ``noise=nan`` would otherwise be taken at face value)."""
    _, _, query = text.partition("?")
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key in ORACLE_NUMBERS:
            try:
                ORACLE_NUMBERS[key](value)
            except argparse.ArgumentTypeError as exc:
                raise argparse.ArgumentTypeError(f"{key} in {text!r}: {exc}") from None
    return text


def add_oracle_argument(parser: argparse.ArgumentParser, help: str = ORACLE_HELP) -> None:
    parser.add_argument("--oracle", required=True, type=oracle_spec, help=help)


def add_mapping_output(parser: argparse.ArgumentParser, help: str = "write the inferred mapping here") -> None:
    """``-o FILE`` and ``--to FORMAT`` for commands that write a mapping."""
    parser.add_argument("-o", "--out", help=help)
    parser.add_argument("--to", choices=MAPPING_FORMATS, default="pmsolve", help="format of --out (default: pmsolve)")


def add_quiet_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def add_json_argument(parser: argparse.ArgumentParser, help: str = "machine-readable output") -> None:
    parser.add_argument("--json", action="store_true", help=help)
