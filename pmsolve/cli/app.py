"""The parser of every command and the run of one (:func:`run`; :func:`pmsolve.cli.main` is the
entry point, which handles Ctrl-C before this module is even imported).

Each command group is a module with ``add_parsers(sub)`` and one ``cmd_NAME(args) -> int`` per
command; the flags several commands share live in :mod:`pmsolve.cli.flags`. Errors a user can
cause (bad files, unknown instructions, missing solvers) are :class:`~pmsolve.errors.PmsolveError`\\ s:
:func:`run` prints each as one line and exits with :data:`EXIT_BAD_INPUT`. A command that keeps
state for a rerun says so with ``set_defaults(resumes=lambda args: ...)``: its interruption then
tells the user to run it again.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Sequence

from pmsolve import __version__
from pmsolve.cli import anica, demo, explain, export, infer, isa, llvm, predict, strategy, throughput
from pmsolve.cli.flags import OneLineParser
from pmsolve.cli.output import EXIT_BAD_INPUT, EXIT_OK, interrupted, one_line
from pmsolve.errors import PmsolveError
from pmsolve.formats import MAPPING_FORMATS

__all__ = ["build_parser", "run"]

#: the command groups in the order ``pmsolve --help`` lists them
GROUPS = (throughput, infer, explain, export, llvm, strategy, isa, predict, anica, demo)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="pmsolve",
        description="CPU port mappings as a solved, checkable problem: compute the throughput a "
                    "port mapping implies, infer mappings from measurements (this CPU, simulated or "
                    "recorded), check strategies and theorems, evaluate against measurements, with "
                    "the solver backend of your choice. `pmsolve infer` alone runs the main job.",
        epilog="Mappings are read in any of: " + ", ".join(MAPPING_FORMATS) + " (detected automatically). "
               "Every output path is checked before any work starts; missing parent directories of an "
               "output are created.")
    parser.add_argument("--version", action="version", version=f"pmsolve {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in GROUPS:
        group.add_parsers(sub)
    return parser


def _note(message, category, filename, lineno, file=None, line=None) -> None:
    """A library warning as one line on stderr, not Python's two lines with a source line."""
    print(f"pmsolve: note: {one_line(str(message))}", file=sys.stderr)


def run(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run its command: the exit status, never a traceback for bad input."""
    parser = build_parser()
    try:  # argparse's own errors: one line (OneLineParser); --help and --version exit 0
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _note
            return args.func(args)
    except PmsolveError as exc:
        print(f"pmsolve: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        resumes = getattr(args, "resumes", None)
        return interrupted(bool(resumes and resumes(args)))
    except BrokenPipeError:
        return EXIT_OK
