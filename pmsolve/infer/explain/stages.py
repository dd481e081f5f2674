"""The measuring stages before CEGIS (dissertation sec. 6.2.1, 6.2.3, 6.3.1-6.3.3).

Each function takes the (cached) oracle and earlier stages' JSON data and returns its own JSON
data, so :mod:`~pmsolve.infer.explain.pipeline` can store it in the checkpoint as it is.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from pmsolve.errors import ValidationError
from pmsolve.harness.layouts import scaled
from pmsolve.harness.peak import detect_peak_ipc
from pmsolve.infer.explain.hooks import UopHook
from pmsolve.infer.explain.options import ExplainOptions
from pmsolve.model import Experiment

Progress = Callable[[str], None]


def singletons(oracle: Any, insns: list[str], hook: UopHook, use_counter: bool) -> dict[str, Any]:
    """Stage 1: every scheme alone — inverse throughput and (adjusted) µop count."""
    exps = [Experiment({i: 1}) for i in insns]
    tps = oracle.measure(exps)
    counted = oracle.uop_counts(exps) if use_counter else [None] * len(exps)
    return {i: {"tp": t, "counted": c, "uops": (hook(i, c) if c is not None else None)}
            for i, t, c in zip(insns, tps, counted)}


def candidates(single: dict[str, Any], o: ExplainOptions) -> dict[str, Any]:
    """Stages 2-3: single-µop schemes are blocking candidates; 1/tp⁻¹ is the size of their port
    set. Schemes whose singleton already contradicts the model become misfits here."""
    sizes: dict[str, int] = {}
    misfits: dict[str, dict[str, Any]] = {}
    improper = {n for n, _ in o.improper}
    for i, s in single.items():
        t, n = s["tp"], s["uops"]
        e = {"experiment": {i: 1}, "measured": t}
        if n is not None:
            if abs(n - round(n)) > 0.01:
                misfits[i] = _misfit("outside the model", f"µop count {n:g} is not an integer", [e])
                continue
            if round(n) == 0:
                misfits[i] = _misfit("outside the model", "no µops counted: it executes without "
                                     "execution ports (e.g. an eliminated move or nop)", [e])
                continue
            if t < round(n) / o.ports - o.epsilon:
                misfits[i] = _misfit("outside the model", f"{round(n)} µop(s) at inverse throughput {t:.4g}: "
                                     f"faster than {o.ports} ports allow", [e])
                continue
            if round(n) != 1 or i in improper:
                continue
        elif i in improper:
            continue
        if t > 1 + o.epsilon:
            if n is not None:
                misfits[i] = _misfit("outside the model", f"one µop but inverse throughput {t:.4g} > 1 cycle: "
                                     "slower than any port mapping allows (e.g. a division)", [e])
            continue
        size = round(1 / t)
        limit = o.ports or o.max_ports
        if size < 1 or size > limit or abs(t - 1 / size) > o.epsilon:
            if n is not None:
                misfits[i] = _misfit("outside the model", f"one µop at inverse throughput {t:.4g}, which is "
                                     f"not 1/s for a port count s ≤ {limit}", [e])
            continue
        sizes[i] = size
    return {"sizes": sizes, "misfits": misfits}


def simplicity(name: str) -> tuple:
    """Order in which candidates become class representatives: register-only forms before
    memory forms (``..._m64_...``: a load or store µop besides the operation), fewer operands
    first. Only an order: what a representative is, experiments decide."""
    parts = name.split("_")
    memory = sum(1 for x in parts[1:] if x == "m" or (x[:1] == "m" and x[1:].isdigit()))
    return (memory, len(parts), name)


def equivalence_classes(oracle: Any, single: dict[str, Any], sizes: dict[str, int], o: ExplainOptions,
                        progress: Progress, r_max: float | None = None, check_pairs: int = 0,
                        seed: int = 0, probes: list | None = None) -> dict[str, Any]:
    """Stage 4 (Thm 6.3): equally sized candidates i, j block the same ports iff
    tp⁻¹({i,j}) = tp⁻¹({i}) + tp⁻¹({j}). One batch per class: the first remaining candidate of
    a size (in :func:`simplicity` order) becomes the representative, every other one is paired
    with it.

    Thm 6.3 holds for single-µop instructions. Without a µop counter a representative may be
    several µops (a load and an operation: then loads *and* operations are additive with it),
    so ``check_pairs`` random pairs of its members are tested too; when one of them runs faster
    than the two one after the other (they use different µops of the representative), the
    representative joins the candidates no longer (it is characterised like any other scheme)
    and its members are classified again. A pair *slower* than that is outside the model (on a
    Zen 4 two mask-register writers, ``{kmovw k, m16: 1, vcmpps k, ymm: 1}`` = 1.044 where they
    add up to 1.0) and says nothing about the representative: the two leave the class. Sizes
    a front end of ``r_max`` instructions per cycle hides (2/s ≤ 2/r_max) form no classes
    (sec. 6.2.3).

    ``probes`` (the peak stage's measured mixes, ``[counts, tp⁻¹]``) pick the representative
    among equivalent candidates: a member that ran in a probe is measured there once more with
    the representative in its place, and when that runs slower, the representative has µops
    beyond the class's set and the member represents the class instead (a probe ``{add: 3,
    load: 1}`` runs 4 per cycle; with ``addm``, a load and an add, in the load's place it takes
    1.33 cycles: ``addm`` would block the load's port as one µop and hide the add's)."""
    rng = random.Random(seed)
    demoted: set[str] = set()
    classes: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    by_size: dict[int, list[str]] = {}
    first = {name: n for n, name in enumerate(o.rep_order)}
    excluded = set(o.not_blocking)
    for i in sorted(sizes, key=lambda i: (first.get(i, len(first)), simplicity(i))):
        if (r_max is not None and sizes[i] >= r_max - 1e-9) or i in excluded:
            continue
        by_size.setdefault(sizes[i], []).append(i)

    def additive(e: Experiment, t: float, a: str, b: str) -> bool:
        return abs(t - (single[a]["tp"] + single[b]["tp"])) <= o.epsilon * e.size

    def slower(e: Experiment, t: float, a: str, b: str) -> bool:   # than the two one after the other
        return t > single[a]["tp"] + single[b]["tp"] + o.epsilon * e.size

    for size in sorted(by_size):
        left = by_size[size]
        while left:
            rep, rest = left[0], left[1:]
            pairs = [Experiment({rep: 1, c: 1}) for c in rest]
            values = oracle.measure(pairs)
            members, left = [], []
            for c, e, t in zip(rest, pairs, values):
                if additive(e, t, rep, c):
                    members.append({"insn": c, "experiment": dict(e.items()), "measured": t,
                                    "additive": single[rep]["tp"] + single[c]["tp"]})
                else:
                    left.append(c)
            if check_pairs and len(members) >= 2:
                picks = [tuple(rng.sample(members, 2)) for _ in range(check_pairs)]
                picks = list({frozenset((a["insn"], b["insn"])): (a, b) for a, b in picks}.values())   # each pair once
                checks = [Experiment({a["insn"]: 1, b["insn"]: 1}) for a, b in picks]
                slow: set[str] = set()
                for (a, b), e, t in zip(picks, checks, oracle.measure(checks)):
                    if slower(e, t, a["insn"], b["insn"]):
                        # slower than both together: no port mapping does that, whatever the
                        # representative is (tp⁻¹ is subadditive); the two leave the class
                        progress(f"  {a['insn']} and {b['insn']} leave the class of {rep}: together slower than "
                                 f"alone one after the other ({e} = {t:.4g}), outside the model")
                        slow |= {a["insn"], b["insn"]}
                        continue
                    if not additive(e, t, a["insn"], b["insn"]):
                        progress(f"  {rep} is no representative: {a['insn']} and {b['insn']} are additive with "
                                 f"it but not with each other ({e} = {t:.4g})")
                        rejected.append({"insn": rep, "size": size, "experiment": dict(e.items()), "measured": t})
                        left = sorted((m["insn"] for m in members),
                                      key=lambda i: (first.get(i, len(first)), simplicity(i))) + left
                        members = None
                        break
                if members is None:
                    continue
                members = [m for m in members if m["insn"] not in slow]
            better = _better_representative(oracle, rep, [m["insn"] for m in members], probes or [], o,
                                            demoted, progress)
            if better is not None:
                demoted.add(rep)
                left = [better, rep] + [m["insn"] for m in members if m["insn"] != better] + left
                continue
            classes.append({"rep": rep, "size": size, "members": members})
            progress(f"  class of {rep} ({size} port(s)): {len(members) + 1} scheme(s)")
    return {"classes": classes, "rejected": rejected}


def _better_representative(oracle: Any, rep: str, members: list[str], probes: list, o: ExplainOptions,
                           demoted: set[str], progress: Progress) -> str | None:
    """The member that represents the class better than ``rep`` (see :func:`equivalence_classes`),
    or None: ``rep`` in a member's place in a measured probe runs slower than the member did."""
    trials = []
    for counts, t in probes:
        for m in members:
            if m in counts and rep not in counts and m not in demoted:
                swapped = {n: c for n, c in counts.items() if n != m}
                swapped[rep] = counts[m]
                trials.append((m, Experiment(counts), t, Experiment(swapped)))
    if not trials:
        return None
    values = oracle.measure([x for *_, x in trials])
    for (m, e, t, x), tx in zip(trials, values):
        if tx > t + o.epsilon * e.size:
            # confirmed on fresh samples of both (every count doubled): under 1 % noise two equal
            # singletons differ by 3 % now and then, and a swap on that made a 3-µop scheme the
            # representative of a one-port class
            t2, tx2 = oracle.measure([scaled(e, 2), scaled(x, 2)])
            if tx2 <= t2 + o.epsilon * 2 * e.size:
                continue
            progress(f"  {m} represents the class instead of {rep}: {x} = {tx:.4g} where {e} = {t:.4g} "
                     f"(doubled: {tx2:.4g} and {t2:.4g})")
            return m
    return None


def peak_probes(sizes: dict[str, int], per_size: int = 3) -> list[dict[str, Any]]:
    """A few candidates of every size (in :func:`simplicity` order), register and memory forms
    each, to measure the peak IPC with, in the shape of classes: without a counter the peak comes
    before the classes. Memory forms come last in that order, and a load is what fills the ports
    the others leave idle: cut with the register forms, four two-port register candidates left
    no load to climb with, and R_max came out 4 on a 5-wide machine (every scheme downstream wrong)."""
    by_size: dict[tuple[int, bool], list[str]] = {}
    for i in sorted(sizes, key=simplicity):
        by_size.setdefault((sizes[i], simplicity(i)[0] > 0), []).append(i)
    return [{"rep": i, "size": s, "members": []} for (s, _), xs in sorted(by_size.items()) for i in xs[:per_size]]


def peak_ipc(oracle: Any, single: dict[str, Any], classes: list[dict[str, Any]], o: ExplainOptions,
             improper_sizes: list[int] = (), warn: bool = True) -> dict[str, Any]:
    """Stage 5 (sec. 6.2.3): the front-end limit, measured with the unique blocking instructions
    (or given), and the warning when a blocking instruction's port set is as wide as the limit:
    then the equivalence test and the non-evading formula cannot see beyond it."""
    probes: list = []
    if o.r_max is not None:
        ipc, exp, used = float(o.r_max), None, float(o.r_max)
    else:
        reps = [c["rep"] for c in classes]
        if not reps:
            raise ValidationError("explain: no blocking instruction candidates to measure the peak IPC with")
        try:
            peak = detect_peak_ipc(oracle, {r: single[r]["tp"] for r in reps}, reps)
        except ValidationError:
            return {"ipc": None, "r_max": None, "experiment": None,
                    "warning": "no blocking instruction runs faster than 1 cycle: no front-end limit measured"}
        ipc, exp = peak.ipc, dict(peak.experiment.items())
        probes = [[dict(e.items()), t] for e, t in peak.probes]
        # front ends issue a whole number of instructions per cycle; noise blurs the measured one
        used = float(round(ipc)) if abs(ipc - round(ipc)) <= 0.05 * ipc else ipc
    widest = max([c["size"] for c in classes] + list(improper_sizes), default=0)
    warning = None
    if warn and widest and used is not None and widest >= used - 1e-9:
        warning = (f"a blocking instruction uses {widest} ports but the peak is {used:g} instructions per cycle: "
                   f"equivalence tests among such instructions always succeed and their µops cannot be "
                   f"characterised (sec. 6.2.3); results may be wrong")
    return {"ipc": ipc, "r_max": used, "experiment": exp, "warning": warning, "probes": probes}


def _misfit(category: str, reason: str, experiments: list[dict[str, Any]]) -> dict[str, Any]:
    return {"category": category, "reason": reason, "experiments": experiments}
