"""µop-count adjustment hooks (dissertation sec. 6.3.1, Postulate 6.5).

The explainable algorithm needs the number of µops an instruction decomposes into, but a
machine's counter may count something else: Zen+'s "Retired Uops" counter counts macro-ops,
so a load or store folded into an instruction is not counted. A hook turns the counter's value
for one scheme into the µop count the algorithm works with. It is a plain function
``hook(scheme, counted) -> float`` so that a user can plug in their own postulate; hooks are
looked up by name for the command line (``--uop-hook NAME``).

Built in:

* ``none`` — the counter counts µops (the simulated oracle's counter does);
* ``zenplus`` — Postulate 6.5: add 1 per memory operand of at most 128 bits and 2 per 256-bit
  memory operand, except for ``lea`` and loading ``mov``. The dissertation documents where this
  is known to be wrong (8/16-bit read-modify-write needs one more µop); the characterisation
  stage then reports the difference, it does not hide it.
"""

from __future__ import annotations

import re
from typing import Callable

from pmsolve.errors import UnknownNameError

UopHook = Callable[[str, float], float]

_MEM = re.compile(r"(\b[RW]{1,2}):MEM\((\d+)\)")


def no_adjustment(scheme: str, counted: float) -> float:
    """The counter already counts µops."""
    return counted


def memory_operands(scheme: str) -> list[tuple[str, int]]:
    """(access, width in bits) of every memory operand in a uops.info-style scheme name, e.g.
    ``add RW:GPR:16, word ptr R:MEM(16)`` → ``[("R", 16)]``."""
    return [(m.group(1), int(m.group(2))) for m in _MEM.finditer(scheme)]


def zenplus_postulate_6_5(scheme: str, counted: float) -> float:
    """Postulate 6.5 (Zen+ counts macro-ops): +1 per memory operand ≤ 128 bits, +2 per 256-bit
    one, not for ``lea`` nor for a ``mov`` that loads."""
    mnemonic = scheme.split(None, 1)[0].lower() if scheme.strip() else ""
    extra = 0
    for access, width in memory_operands(scheme):
        if mnemonic == "lea" or (mnemonic == "mov" and access == "R"):
            continue
        extra += 2 if width >= 256 else 1
    return counted + extra


HOOKS: dict[str, UopHook] = {"none": no_adjustment, "zenplus": zenplus_postulate_6_5}


def get_hook(name: str | UopHook | None) -> UopHook:
    """A hook by name (``none``, ``zenplus``), or the given callable itself."""
    if name is None:
        return no_adjustment
    if callable(name):
        return name
    try:
        return HOOKS[name]
    except KeyError:
        raise UnknownNameError(f"unknown µop-count hook {name!r}: choose one of {', '.join(HOOKS)}") from None
