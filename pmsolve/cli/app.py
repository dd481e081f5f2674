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
from pmsolve.backends.registry import requested_name
from pmsolve.cli import anica, demo, explain, export, infer, isa, llvm, predict, strategy, throughput
from pmsolve.cli.flags import OneLineParser
from pmsolve.cli.output import EXIT_BAD_INPUT, EXIT_OK, interrupted, one_line
from pmsolve.errors import PmsolveError
from pmsolve.formats import MAPPING_FORMATS

__all__ = ["build_parser", "run"]

#: the command groups in the order ``pmsolve --help`` lists them
GROUPS = (throughput, infer, explain, export, llvm, strategy, isa, predict, anica, demo)

#: the page of the source tree's docs/ that explains each command (a sub-command without an
#: entry of its own shares its command's page)
DOCS = {"throughput": "algorithms.md", "evaluate": "predictors.md", "convert": "formats.md",
        "encode": "solvers.md", "backends": "solvers.md", "infer": "main-job.md",
        "infer pmevo": "algorithms.md", "infer cegis": "algorithms.md", "infer explain": "explain.md",
        "explain": "explain.md", "export": "osaca-and-llvm.md", "llvm-report": "osaca-and-llvm.md",
        "check-strategy": "algorithms.md", "prove": "algorithms.md",
        "isa": "harness.md", "bridge": "predictors.md", "predict": "predictors.md",
        "anica": "predictors.md", "demo": "main-job.md"}


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="pmsolve",
        description="CPU port mappings as a solved, checkable problem: compute the throughput a "
                    "port mapping implies, infer mappings from measurements (this CPU, simulated or "
                    "recorded), check strategies and theorems, evaluate against measurements, with "
                    "the solver backend of your choice. `pmsolve infer` alone runs the main job.",
        epilog="Mappings are read in any of: " + ", ".join(MAPPING_FORMATS) + " (detected automatically). "
               "Every output path is checked before any work starts; missing parent directories of an "
               "output are created. Documentation: README.md and docs/ in pmsolve's source tree; "
               "`pmsolve COMMAND --help` names the page of each command.")
    parser.add_argument("--version", action="version", version=f"pmsolve {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in GROUPS:
        group.add_parsers(sub)
    _point_to_docs(parser)
    return parser


def commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """Every command and sub-command (``"infer cegis"``) with its one-line help and its parser."""
    out = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                out[prefix + name] = (helps.get(name, ""), sub)
                out.update(commands(sub, f"{prefix}{name} "))
    return out


def _point_to_docs(parser: argparse.ArgumentParser) -> None:
    """Each command's --help opens with what it is for (its one-line help, where it has no
    description) and ends with the page that explains it."""
    for name, (line, sub) in commands(parser).items():
        page = DOCS.get(name) or DOCS[name.split()[0]]
        sub.description = sub.description or (line[:1].upper() + line[1:] + ".")
        pointer = f"Documentation: docs/{page} in pmsolve's source tree."
        sub.epilog = f"{sub.epilog}\n\n{pointer}" if sub.epilog else pointer


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
        if hasattr(args, "backend") and args.backend is None:
            requested_name(None)    # a bad $PMSOLVE_BACKEND is refused before any work starts
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
