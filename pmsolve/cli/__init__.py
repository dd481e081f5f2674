"""The ``pmsolve`` command line: the only part of pmsolve that knows argparse or spells a flag.

Each command group is a module with ``add_parsers(sub)`` and one ``cmd_NAME(args) -> int`` per
command; the flags several commands share live in :mod:`pmsolve.cli.flags`. Errors a user can
cause (bad files, unknown instructions, missing solvers) are :class:`~pmsolve.errors.PmsolveError`\\ s:
:func:`main` prints each as one line and exits with :data:`EXIT_BAD_INPUT`.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Sequence

from pmsolve import __version__
from pmsolve.cli import anica, demo, explain, export, infer, isa, llvm, predict, strategy, throughput
from pmsolve.cli.flags import OneLineParser
from pmsolve.cli.output import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_NO, EXIT_OK, one_line
from pmsolve.errors import PmsolveError
from pmsolve.formats import MAPPING_FORMATS

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERRUPTED", "EXIT_NO", "EXIT_OK", "build_parser", "main"]

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


def main(argv: Sequence[str] | None = None) -> int:
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
        print("pmsolve: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
