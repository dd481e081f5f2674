"""The ``pmsolve`` command line: the only part of pmsolve that knows argparse or spells a flag.

:func:`main` is the console script. It takes charge of Ctrl-C before anything else is imported
(:func:`pmsolve.interrupts.handling`), so an interrupt at any moment, start-up included, ends
with one line and :data:`EXIT_INTERRUPTED`, and lets a terminal that cannot show µ or ≤ get
them in ASCII (:func:`~pmsolve.cli.output.degrade_output`); the parser and the commands live in
:mod:`pmsolve.cli.app`.
"""

from __future__ import annotations

from typing import Any, Sequence

from pmsolve import interrupts
from pmsolve.cli.output import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_NO, EXIT_OK, degrade_output, interrupted

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERRUPTED", "EXIT_NO", "EXIT_OK", "build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``pmsolve`` command (``argv``, default ``sys.argv[1:]``); returns its exit status."""
    with interrupts.handling():
        try:
            degrade_output()
            from pmsolve.cli.app import run

            code = run(argv)
        except KeyboardInterrupt:   # before the command knew whether it resumes
            interrupts.settle()
            return interrupted(False)
        if interrupts.settle() and code != EXIT_INTERRUPTED:
            # a Ctrl-C that something swallowed (printed and dropped): still not a success
            return interrupted(False)
        return code


def build_parser() -> Any:
    """The argparse parser of every command (:func:`pmsolve.cli.app.build_parser`)."""
    from pmsolve.cli.app import build_parser as build

    return build()
