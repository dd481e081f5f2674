"""Schemes mapped as port hogs that in fact serialise (past the paper's model).

Microcode that nothing overlaps (Ice Lake-SP's ``btc m64, r64``) takes its time alone plus the
rest's beside anything. Beside blocking instructions, whose µops are all on ports, that is what
µops on every port for its whole time would give: the characterisation maps such a scheme as a
*hog*, and none of its own experiments disagree. A scheme slower than its ports (a cost of its
own, or a unit) tells them apart: µops on ports overlap it (the longer of the two), microcode does
not (the sum: ``ms`` of tests/test_shared.py beside the divider reads 10 cycles, the hog says 6).

So every mapped scheme of a cycle or more whose µops hold every port (units aside) is measured
once beside the slowest such scheme; one nearer the sum than the longer becomes a misfit
("outside the model"), which the cost model prices and the shared stage's serial probe
(:mod:`~pmsolve.infer.explain.shared`) then tells whether it serialises. One experiment per hog.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from pmsolve.infer.explain.options import ExplainOptions
from pmsolve.infer.explain.units import off
from pmsolve.infer.explain.witnesses import Explanation, Misfit
from pmsolve.model import Experiment, PortMapping
from pmsolve.throughput import inverse_throughput


def _time(alone: Mapping[str, Any], i: str) -> float:
    t = alone.get(i)
    return float(t) if isinstance(t, (int, float)) and t == t and t > 0 else 0.0


def candidates(mapping: PortMapping, alone: Mapping[str, Any], units: frozenset[str]) -> list[str]:
    """Mapped schemes of a cycle or more whose µops cover every port but the units'."""
    ports = set(mapping.ports) - units
    return sorted(i for i, us in mapping.uops.items()
                  if _time(alone, i) >= 1 and ports <= {p for u in us for p in u.ports})


def _partner(mapping: PortMapping, explanations: Mapping[str, Explanation], alone: Mapping[str, Any],
             units: frozenset[str], hogs: list[str]) -> str | None:
    """The slowest scheme slower than its ports: a misfit that runs steadily, or one with a µop
    on a unit."""
    slow = [i for i, x in explanations.items() if i not in hogs and _time(alone, i) > 0
            and (x.misfit is not None and x.misfit.category not in ("unmeasurable", "unstable")
                 or any(set(u.ports) & units for u in mapping.uops.get(i, ())))]
    return max(slow, key=lambda i: (_time(alone, i), i), default=None)


def probe(measure: Callable[[list[Experiment]], list[float]], mapping: PortMapping | None,
          explanations: Mapping[str, Explanation], alone: Mapping[str, Any], o: ExplainOptions,
          units: frozenset[str] = frozenset()) -> dict[str, Explanation]:
    """The hogs that read nearer the sum beside the slowest scheme, as misfits (module doc)."""
    if mapping is None:
        return {}
    hogs = candidates(mapping, alone, units)
    partner = _partner(mapping, explanations, alone, units, hogs) if hogs else None
    if partner is None:
        return {}
    x = explanations[partner]
    theirs = [(u.ports, u.count) for u in mapping.uops[partner]] if partner in mapping.uops else \
        [(frozenset(ps), n) for ps, n in (x.misfit.found or x.misfit.uops) if set(ps) <= set(mapping.ports)]
    exps = [Experiment({i: 1, partner: 1}) for i in hogs]
    out = {}
    for i, e, t in zip(hogs, exps, measure(exps)):
        pair = {i: [(u.ports, u.count) for u in mapping.uops[i]], **({partner: theirs} if theirs else {})}
        ports = float(inverse_throughput(PortMapping(mapping.ports, pair), Experiment({n: 1 for n in pair})))
        longer = max(_time(alone, i), _time(alone, partner), ports)
        whole = _time(alone, i) + _time(alone, partner)
        if t == t and off(e, whole, longer, o) and t - longer > (whole - longer) / 2:
            why = (f"its µops hold every port, yet beside {partner} it takes {t:.3g} cycles: nearer the sum of "
                   f"their times alone ({whole:.3g}) than the longer its µops allow ({longer:.3g}); "
                   "nothing overlaps it (microcode)")
            out[i] = replace(explanations[i], misfit=Misfit("outside the model", why, ((e, t),)))
    return out
