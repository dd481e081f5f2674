"""Misfits no port mapping can fit, certified by measurements (beyond the paper's model).

Every port mapping's inverse throughput, with any ports and µops and with or without a
front-end cap, is subadditive and monotone: max(tp⁻¹(a), tp⁻¹(b)) ≤ tp⁻¹(a + b) ≤ tp⁻¹(a) +
tp⁻¹(b). So an experiment measured slower than the sum of two measured parts it splits into (one
scheme's copies and the rest), or faster than the slower part, contradicts every port mapping:
the scheme is not just a misfit of the mapping found, no mapping at all fits its measurements.
(A mapped scheme may meet such an experiment too, ``vmovdqa xmm, m128`` beside a 512-bit load:
its characterisation and checks did not.) On the Zen 4,
``{add m64, r64; mov m64, r64}`` runs at 2.0 cycles where ``add m64, r64`` alone takes 1.0 and
the store 0.5 (every read-modify-write form beside a store), and ``{vpaddq zmm, m512; vmovdqa
xmm, m128}`` at 2.0 where the parts take 1.0 and 0.5.

Every measured experiment with a misfit is searched, split into the misfit's copies and the
rest, where both parts were measured already (the singletons, the blocking instructions
alone); an experiment that contradicts its parts is measured again doubled, and only when both
measurements contradict them does the certificate stand (one measurement is not enough: a
disturbed sample can read 20 % fast). Certified misfits are ``outside the model`` whatever
they were before, with the four measurements in the reason and in ``Misfit.certificate``.
:mod:`pmsolve.jobs.misses` uses the same test on the held-out misses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pmsolve.harness.layouts import scaled
from pmsolve.infer.explain.witnesses import Explanation
from pmsolve.model import Experiment

#: how far (relative) a measurement must pass the bound: clear of the ±1 % noise and the few
#: per cent a layout's schedule moves a measurement (pmsolve.harness.layouts)
MARGIN = 0.05
#: contradicting experiments of one misfit measured again doubled
TRIES = 3
#: misfit categories a certificate replaces (unstable and unmeasurable ones say something else)
CERTIFIED = ("outside the model", "unsatisfiable")


def splits(e: Experiment) -> list[tuple[Experiment, Experiment]]:
    """The splits of ``e`` into the rest and the copies of one scheme (none for one scheme)."""
    if len(e.counts) < 2:
        return []
    return [(Experiment({m: c for m, c in e.items() if m != n}), Experiment({n: k})) for n, k in e.items()]


def excess(times: Sequence[float], a: float, b: float) -> float:
    """How far the measurements of a whole (``times``) pass what every port mapping allows given
    its parts' ``a`` and ``b``: above 1 when all of them are slower than a + b or all faster
    than max(a, b) (0 when some value is not a positive number)."""
    if not all(x == x and x > 0 for x in (*times, a, b)):
        return 0.0
    return max(min(times) / (a + b), max(a, b) / max(times))


def contradicted(times: Sequence[float], parts: Sequence[tuple[float, float]], margin: float) -> int | None:
    """The index of the first pair of part measurements that ``times`` contradict beyond
    ``margin`` for every port mapping (module doc), or None."""
    return next((j for j, (a, b) in enumerate(parts) if excess(times, a, b) > 1 + margin), None)


def certify(oracle: Any, known: Sequence[Experiment], explanations: dict[str, Explanation],
            say: Callable[[str], None], margin: float = MARGIN) -> dict[str, Explanation]:
    """The misfits among ``explanations`` that no port mapping fits, with their certificates
    (module doc). Every ``known`` experiment with a misfit and other schemes whose two parts
    (the misfit's copies, the rest) are known too is a candidate; the clearest ``TRIES`` per
    misfit are measured again doubled, in one batch."""
    misfits = {i for i, x in explanations.items() if x.misfit is not None and x.misfit.category in CERTIFIED}
    have = set(known)
    split = {(e, next(iter(b))): (a, b) for e in known for a, b in splits(e)
             if next(iter(b)) in misfits and a in have and b in have}
    need = list(dict.fromkeys(x for (e, _), ab in split.items() for x in (e, *ab)))
    value = dict(zip(need, oracle.measure(need))) if need else {}

    def over(e: Experiment, n: str, *more: float) -> float:
        a, b = split[e, n]
        return excess((value[e], *more), value[a], value[b])

    cands: dict[str, list[Experiment]] = {}
    for e, n in split:
        if over(e, n) > 1 + margin:
            cands.setdefault(n, []).append(e)
    first = {n: sorted(es, key=lambda e: (-over(e, n), str(e)))[:TRIES] for n, es in cands.items()}
    again = list(dict.fromkeys(scaled(e, 2) for es in first.values() for e in es))
    if not again:
        return {}
    say(f"  {len(first)} misfit(s) with experiments that contradict every port mapping: "
        f"{len(again)} measured again doubled")
    doubled = dict(zip(again, oracle.measure(again)))
    out: dict[str, Explanation] = {}
    for n, es in sorted(first.items()):
        for e in es:
            t, d = value[e], doubled[scaled(e, 2)] / 2
            if over(e, n, d) <= 1 + margin:
                continue
            a, b = split[e, n]
            m = explanations[n].misfit
            why = (f"no port mapping fits its measurements: {e} = {t:.3g} cycles (doubled {d:.3g}) where its "
                   f"parts take {value[a]:.3g} ({a}) and {value[b]:.3g} ({b}), and every port mapping's "
                   f"tp⁻¹ is subadditive and monotone; {m.reason}")
            out[n] = replace(explanations[n], misfit=replace(
                m, category="outside the model", reason=why,
                certificate=((e, t), (scaled(e, 2), 2 * d), (a, value[a]), (b, value[b]))))
            break
    say(f"  {len(out)} misfit(s) whose measurements no port mapping fits")
    return out
