"""What a command gives back: its exit status, JSON on stdout (``--json``), or a text table.

The exit statuses are the contract scripts rely on (:mod:`pmsolve.cli` re-exports them): bad
input is always :data:`EXIT_BAD_INPUT` with one ``pmsolve: error:`` line, never a traceback;
:data:`EXIT_NO` is a command that ran and answers "no" (no mapping explains the CEGIS
measurements, a theorem check or its mutant went the wrong way, or the result is one the tool
itself found wrong), so CI can gate on it; :data:`EXIT_INTERRUPTED` (130, as for a process
ended by SIGINT) is Ctrl-C, with one ``pmsolve: interrupted`` line.

This module is imported before any command is: keep it light.
"""

from __future__ import annotations

import codecs
import json
import math
import re
import sys
import unicodedata
from fractions import Fraction
from typing import Any, Sequence

EXIT_OK = 0
EXIT_NO = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


#: how a character the terminal cannot show is written instead (an ASCII locale: LC_ALL=C)
ASCII_SPELLING = {
    "µ": "u", "μ": "u", "τ": "tau", "ε": "eps", "γ": "gamma", "β": "beta", "δ": "delta", "φ": "phi",
    "ρ": "rho", "Σ": "Sum", "Λ": "Lambda", "Δ": "Delta", "≤": "<=", "≥": ">=", "≠": "!=", "≈": "~",
    "±": "+-", "×": "x", "·": "*", "−": "-", "–": "-", "—": "--", "…": "...", "→": "->", "←": "<-",
    "↦": "|->", "↔": "<->", "⇒": "=>", "⇐": "<=", "⇔": "<=>", "∞": "inf", "⁻": "^-", "¹": "1", "²": "^2",
    "⌈": "ceil(", "⌉": ")", "⌊": "floor(", "⌋": ")", "∧": "and", "∨": "or", "¬": "not ", "∈": " in ",
    "∉": " not in ", "∋": " contains ", "⊆": "<=", "⊂": "<", "⊇": ">=", "⊑": "<=", "⊏": "<", "⊤": "T",
    "∪": "|", "⋂": "&", "∖": "\\", "∅": "{}", "∃": "exists ", "§": "sec. ", "‘": "'", "’": "'", "“": '"',
    "”": '"', "✓": "ok", "✗": "x",
}


def _spell(exc: UnicodeError) -> tuple[str, int]:
    """A codec error handler: each character the stream's encoding lacks, spelled in ASCII
    (µ → u, τ → tau, ≤ → <=; accents dropped; '?' for anything else)."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for ch in exc.object[exc.start:exc.end]:
        spelled = ASCII_SPELLING.get(ch)
        if spelled is None:
            spelled = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode("ascii") or "?"
        out.append(spelled)
    return "".join(out), exc.end


codecs.register_error("pmsolve-ascii", _spell)


def degrade_output() -> None:
    """Let stdout and stderr write what their encoding lacks in ASCII instead of failing with
    a UnicodeEncodeError (an ASCII locale, ``PYTHONIOENCODING=ascii``): output, help texts and
    error lines alike. Streams that can write everything are left alone."""
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        if not encoding or not hasattr(stream, "reconfigure"):
            continue
        try:
            "µτ≤→—".encode(encoding)
        except UnicodeEncodeError:
            stream.reconfigure(errors="pmsolve-ascii")
        except LookupError:
            pass


def interrupted(resumes: bool) -> int:
    """The one line of an interrupted command (saying whether a rerun resumes it) and its status."""
    print("pmsolve: interrupted" + ("; run the same command again to resume" if resumes else ""),
          file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED


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


#: the longest word a message quotes whole, and the longest message (characters)
MAX_WORD, MAX_LINE = 120, 2000

_LONG_WORD = re.compile(r"\S{%d,}" % (MAX_WORD + 1))


def _shorten(text: str, head: int, tail: int) -> str:
    return f"{text[:head]}…[{len(text) - head - tail:,} characters]…{text[-tail:]}"


def one_line(message: str) -> str:
    """A message on one line (its lines joined by '; '), so bad input is always one stderr line;
    what it quotes is capped (a word at :data:`MAX_WORD`, the line at :data:`MAX_LINE`
    characters): a 100,000-character instruction name must not fill the terminal."""
    line = "; ".join(part.strip() for part in message.splitlines() if part.strip())
    line = _LONG_WORD.sub(lambda m: _shorten(m.group(0), 60, 20), line)
    return line if len(line) <= MAX_LINE else _shorten(line, MAX_LINE - 300, 200)


def fraction_text(x: Fraction) -> str:
    """``3/2``, or ``3`` for a whole number."""
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def shown(text: str, stream: Any = None) -> str:
    """``text`` as ``stream`` (default stdout) will show it: spelled in ASCII where its encoding
    lacks a character (:func:`degrade_output`), so columns can be aligned on what is shown."""
    encoding = getattr(stream or sys.stdout, "encoding", None)
    if not encoding:
        return text
    try:
        return text.encode(encoding, "pmsolve-ascii").decode(encoding)
    except LookupError:
        return text


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns under a dashed header rule."""
    cells = [[shown(str(c)) for c in header]] + [[shown(str(c)) for c in r] for r in rows]
    widths = [max(len(r[j]) for r in cells) for j in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def say(msg: str) -> None:
    """Progress for a human: one line on stderr, at once."""
    print(msg, file=sys.stderr, flush=True)
