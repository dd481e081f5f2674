"""What a command gives back: its exit status, JSON on stdout (``--json``), or a text table.

The exit statuses are the contract scripts rely on (:mod:`pmsolve.cli` re-exports them): bad
input is always :data:`EXIT_BAD_INPUT` with one ``pmsolve: error:`` line, never a traceback;
:data:`EXIT_NO` is a command that ran and answers "no" (no mapping explains the CEGIS
measurements, a theorem check or its mutant went the wrong way), so CI can gate on it.
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from typing import Sequence

EXIT_OK = 0
EXIT_NO = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def emit_json(data: object) -> None:
    json.dump(data, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


def fraction_text(x: Fraction) -> str:
    """``3/2``, or ``3`` for a whole number."""
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns under a dashed header rule."""
    cells = [list(map(str, header))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[j]) for r in cells) for j in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def say(msg: str) -> None:
    """Progress for a human: one line on stderr, at once."""
    print(msg, file=sys.stderr, flush=True)
