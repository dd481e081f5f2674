"""What a command gives back: its exit status, JSON on stdout (``--json``), or a text table.

The exit statuses are the contract scripts rely on (:mod:`pmsolve.cli` re-exports them): bad
input is always :data:`EXIT_BAD_INPUT` with one ``pmsolve: error:`` line, never a traceback;
:data:`EXIT_NO` is a command that ran and answers "no" (no mapping explains the CEGIS
measurements, a theorem check or its mutant went the wrong way), so CI can gate on it.
"""

from __future__ import annotations

import json
import math
import sys
from fractions import Fraction
from typing import Any, Sequence

EXIT_OK = 0
EXIT_NO = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def strict_json(data: Any) -> Any:
    """``data`` with every NaN or infinity replaced by null: strict JSON parsers reject the
    ``NaN``/``Infinity`` literals Python's json writes by default."""
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {k: strict_json(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [strict_json(v) for v in data]
    return data


def emit_json(data: object) -> None:
    """``data`` as strict JSON on stdout (non-finite numbers as null, never ``NaN``)."""
    json.dump(strict_json(data), sys.stdout, indent=1, ensure_ascii=False, allow_nan=False, default=str)
    sys.stdout.write("\n")


def one_line(message: str) -> str:
    """A message on one line (its lines joined by '; '), so bad input is always one stderr line."""
    return "; ".join(part.strip() for part in message.splitlines() if part.strip())


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
