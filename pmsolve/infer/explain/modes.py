"""A port that some schemes switch off for others: the AVX-512 mode of Intel cores (issue 39).

While 512-bit µops are in flight, an Intel core with AVX-512 runs no vector integer µop on port 1
(its vector units serve as the upper half of port 0's 512-bit ones). A port mapping cannot say
that: on an Ice Lake-SP ``vpaddd xmm`` runs on three ports alone and on two beside any zmm
instruction (``{vfmadd231ps zmm:1, vpaddd xmm:12}`` takes 6.47 cycles, 13/3 without the mode),
while ``vcvtdq2ps xmm`` keeps both of its ports (8 copies and the FMA: 4.5). So every zmm scheme
characterised against such a set comes out a misfit, and every mix with one is predicted too fast.

The probes, once the blocking instructions are known: the *trigger* (the 512-bit scheme fastest
alone) once beside k copies of each vector blocking instruction B of two or more ports Q, k large
enough that tp⁻¹ ≈ k/|Q| without a mode and ≈ k/(|Q| − 1) with a port of Q gone (within
TOLERANCE; anything else: no mode). The slowed sets lose a port they share and no unslowed
single-port vector set has; when several ports are left, each candidate c with a blocking
instruction C of its own is probed beside the trigger and a slowed B: C's copies hold up B's
µops unless c is the lost port. Exactly one port, or no mode. Schemes with a 512-bit register
operand are the triggers, schemes with a vector register operand the affected ones
(:func:`vector_kinds`); the probes are the mode's witnesses.

A blocking instruction speaks for its set, but schemes on one set need not agree: on Ice Lake-SP
beside a zmm scheme ``vpslld xmm`` on ports 0 and 1 loses port 1, while ``vcvtdq2ps xmm`` there
moves to ports 0 and 5 ({vcvtdq2ps xmm:2, trigger:1} = 1.5 cycles, 1.0 on {0,1}, 2.0 on {0}).
So each affected scheme with a µop on a set Q that holds the port is probed on its own
(:func:`each`): k copies beside the trigger, k the fewest that set the readings of every place
the µop may run (:func:`options`: Q, Q without the port, or that with another port of the mode's
sets) 25 % apart; the one reading within TOLERANCE of the measurement decides (:func:`refined`),
none leaves the set's rule. The vector blocking instructions are probed so right after the port
is found, beside a register-only trigger taken as one µop on the vector ports the mode leaves
(they must fit its time alone; it is the trigger of every later probe), since the triggers are
characterised against them; every other scheme once all have their µops (stage ``mode schemes``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pmsolve.isa import load_catalogue
from pmsolve.model import Experiment, PortMapping, sort_ports
from pmsolve.modelled import Mode, ModelledMapping
from pmsolve.throughput import inverse_throughput

Suite = list[tuple[str, frozenset[str]]]
#: a slowed probe must be this close (relative) to k/(|Q| − 1)
TOLERANCE = 0.1
#: a probe counts as slowed when it takes longer than this share of the way to k/(|Q| − 1)
SLOWED = 0.5


def vector_kinds(names: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(triggers, affected) among the catalogue's schemes: those with a zmm register operand, and
    those with any vector register operand (names the catalogue lacks are neither)."""
    cat = load_catalogue(host=False)
    regs = {n: {o.cls for o in cat[n].operands if o.kind == "reg"} for n in names if n in cat}
    return (frozenset(n for n, r in regs.items() if "zmm" in r),
            frozenset(n for n, r in regs.items() if r & {"xmm", "ymm", "zmm"}))


def register_only(names: Iterable[str]) -> list[str]:
    """The schemes among ``names`` without a memory operand (those the catalogue knows)."""
    cat = load_catalogue(host=False)
    return [n for n in names if n in cat and all(o.kind != "mem" for o in cat[n].operands)]


def copies(q: int, trigger_tp: float, r_max: float | None) -> int:
    """k with k/(|Q|−1) ≥ f·(k/|Q| + tp⁻¹(trigger)), f = 1 + 1/(2|Q|): a lost port shows whatever
    the trigger's own µops add; at least 4·|Q|, and the front end faster than the ports."""
    f = 1 + 1 / (2 * q)
    k = max(4 * q, math.ceil(f * trigger_tp / (1 / (q - 1) - f / q)))
    if r_max is not None and r_max > q:
        k = max(k, math.ceil(q / (r_max - q)))
    return k


def probes(suite: Suite, vector: Iterable[str], trigger: str, trigger_tp: float,
           r_max: float | None) -> list[tuple[str, frozenset[str], Experiment]]:
    """One probe per vector blocking instruction of two or more ports."""
    vec = set(vector)
    return [(b, q, Experiment({b: copies(len(q), trigger_tp, r_max), trigger: 1}))
            for b, q in suite if b in vec and len(q) >= 2]


def read(found: Sequence[tuple[str, frozenset[str], Experiment, float]], suite: Suite,
         vector: Iterable[str]) -> tuple[list[frozenset[str]], frozenset[str], str]:
    """The slowed sets and the candidate ports from the first probes (blocking instruction, Q,
    experiment, measured), and why, or no sets and why not."""
    vec = set(vector)
    slowed, plain = [], [q for b, q in suite if b in vec and len(q) == 1]
    for b, q, e, t in found:
        lo, hi = e[b] / len(q), e[b] / (len(q) - 1)
        if t > lo + SLOWED * (hi - lo):
            if abs(t - hi) > TOLERANCE * hi:
                return [], frozenset(), f"{b} beside the trigger took {t:.3g} cycles, neither {lo:.3g} nor {hi:.3g}"
            slowed.append(q)
    if not slowed:
        return [], frozenset(), "no vector blocking instruction ran slower beside the trigger"
    ports = frozenset.intersection(*slowed) - frozenset().union(*plain)
    if not ports:
        return [], frozenset(), "the slowed sets share no port that an unslowed vector set lacks"
    return slowed, ports, ""


def detect(measure: Callable[[list[Experiment]], list[float]], blocking: PortMapping, suite: Suite,
           triggers: Iterable[str], vector: Iterable[str], single: Mapping[str, Any], r_max: float | None,
           say: Callable[[str], None] = lambda m: None) -> dict[str, Any]:
    """The mode stage's result: ``{"port": p or None, "sets": [...], "why": ..., "trigger": ...,
    "probes": [...]}``."""
    tps = {i: (single.get(i) or {}).get("tp") for i in triggers}
    tps = {i: t for i, t in tps.items() if t is not None and t == t and t > 0}
    out: dict[str, Any] = {"port": None, "sets": [], "probes": []}
    if not tps:
        return {**out, "why": "no 512-bit scheme measured alone"}
    trigger = min(tps, key=lambda i: (tps[i], i))
    out["trigger"] = trigger
    todo = probes(suite, vector, trigger, tps[trigger], r_max)
    if not todo:
        return {**out, "why": "no vector blocking instruction of two or more ports"}
    got = measure([e for _, _, e in todo])
    found = [(b, q, e, t) for (b, q, e), t in zip(todo, got) if t == t and t > 0]
    out["probes"] = [{"experiment": dict(e.items()), "measured": t} for _, _, e, t in found]
    slowed, ports, why = read(found, suite, vector)
    if len(ports) > 1:
        b, q, e, t = next(x for x in found if x[1] == slowed[0])
        own = {next(iter(q1)): c for c, q1 in suite if len(q1) == 1 and q1 <= ports}
        k = max(1, round(e[b] / (len(q) - 1) / 2))
        cands = sorted(own)
        tries = [Experiment({**dict(e.items()), own[c]: k}) for c in cands]
        held = measure(tries)
        out["probes"] += [{"experiment": dict(x.items()), "measured": y} for x, y in zip(tries, held)]
        lost = [c for c, y in zip(cands, held) if y == y and abs(y - t) <= TOLERANCE * t]
        ports = frozenset(lost) if len(lost) == 1 and len(cands) == len(ports) else frozenset()
        why = "" if ports else f"the lost port is not one of {', '.join(cands)} alone"
    if len(ports) == 1:
        port = next(iter(ports))
        why = f"beside 512-bit schemes port {port} serves no vector µop of {', '.join('{' + ','.join(sorted(q)) + '}' for q in slowed)}"
        out.update(port=port, sets=[sorted(q) for q in slowed])
        # each vector blocking instruction on its own (the triggers are characterised against
        # them), beside a trigger taken as one µop on the vector ports the mode leaves: a
        # register-only one whose time alone fits them, the trigger of every probe from here
        # on (per scheme, shared resources). The fastest trigger may have no µop there: on the
        # Emerald Rapids it was `vpbroadcastd zmm, m32` (0.333, three load ports); beside it a
        # µop that keeps its set reads as one that moves, so the blocking instructions kept
        # their sets and every zmm scheme characterised against them was a misfit (run e4)
        left = frozenset().union(*slowed) - {port}
        fits = sorted((tps[i], i) for i in register_only(tps) if abs(len(left) * tps[i] - 1) <= TOLERANCE)
        if fits:
            trigger = out["trigger"] = fits[0][1]
            mode = mode_of({**out, "why": why}, triggers, vector)
            with_trigger = PortMapping(blocking.ports, {**blocking.uops, trigger: [(left, 1)]})
            out["blockers"] = each(measure, ModelledMapping(with_trigger, {}, mode), trigger, (), r_max)
    say(f"  mode: {why}")
    return {**out, "why": why}


def mode_of(result: Mapping[str, Any], triggers: Iterable[str], affected: Iterable[str]) -> Mode | None:
    """The :class:`Mode` a stage result found (None when it found none), with its blocking
    instructions' own probes."""
    if result.get("port") is None:
        return None
    mode = Mode(str(result["port"]), frozenset(frozenset(q) for q in result["sets"]), frozenset(triggers),
                frozenset(affected), tuple((Experiment(p["experiment"]), float(p["measured"])) for p in result["probes"]))
    return refined(mode, result["blockers"]) if "blockers" in result else mode


class InMode:
    """The oracle as the characterisation of a trigger sees it: an experiment of blocking
    instructions alone (a baseline) is their tp⁻¹ on the narrowed blocking mapping, since alone
    they never run in the mode; everything else is measured."""

    def __init__(self, oracle: Any, blocking: PortMapping, r_max: float | None):
        self.oracle, self.blocking, self.r_max = oracle, blocking, r_max

    @property
    def measured(self) -> int:
        return self.oracle.measured

    def measure(self, experiments: Sequence[Experiment]) -> list[float]:
        exps = list(experiments)
        asked = [e for e in exps if not all(i in self.blocking.uops for i in e)]
        got = dict(zip(asked, self.oracle.measure(asked))) if asked else {}
        return [got[e] if e in got else float(inverse_throughput(self.blocking, e, r_max=self.r_max)) for e in exps]


def narrowed(blocking: PortMapping, suite: Suite, mode: Mode) -> tuple[PortMapping, Suite]:
    """The blocking instructions as a trigger sees them: where the mode runs their µops."""
    return mode.apply(blocking), [(b, mode.narrow(b, q)) for b, q in suite]


def _set(mode: Mode, i: str, q: frozenset[str], new: frozenset[str]) -> Mode:
    """``mode`` with scheme ``i``'s µops on ``q`` running on ``new`` in it."""
    return replace(mode, also=frozenset({x for x in mode.also if x[:2] != (i, q)} | {(i, q, new)}))


def options(mode: Mode, q: frozenset[str]) -> list[frozenset[str]]:
    """Where a µop on ``q`` may run in the mode: all of ``q``, ``q`` without the port, or that with
    another port of the mode's sets instead (the µop moved to another unit of the vector side)."""
    rest = q - {mode.port}
    moved = [rest | {r} for r in sort_ports(frozenset().union(*mode.sets) - q)]
    return [q, rest, *moved]


def _only(model: ModelledMapping, names: Iterable[str]) -> ModelledMapping:
    """``model`` cut down to ``names``: an experiment of them evaluates as in ``model`` (its
    ports, costs and slots are theirs), without rebuilding every other scheme per probe reading."""
    names = list(names)
    mapped = {j: model.mapping.uops[j] for j in names if model.mapping is not None and j in model.mapping.uops}
    return ModelledMapping(PortMapping(model.mapping.ports, mapped) if mapped else None,
                           {j: model.schemes[j] for j in names}, model.mode)


def each(measure: Callable[[list[Experiment]], list[float]], model: ModelledMapping, trigger: str,
         skip: Iterable[str], r_max: float | None, most: int = 32) -> dict[str, Any]:
    """The per-scheme probes (see the module docstring): ``{"probes": [{"scheme", "ports",
    "experiment", "readings": [[new set, tp⁻¹], ...], "measured"}], "unclear": [scheme, ...]}``."""
    mode = model.mode
    assert mode is not None
    skip = set(skip) | mode.triggers
    todo, unclear = [], []
    for i, us in sorted(model.on_ports.items()):
        if i in skip or i not in mode.affected:
            continue
        for q in sorted({u.ports for u in us if mode.port in u.ports and len(u.ports) >= 2}, key=sort_ports):
            two = _only(model, (i, trigger))
            alt = [(new, ModelledMapping(two.mapping, two.schemes, _set(mode, i, q, new))) for new in options(mode, q)]
            for k in range(2, most + 1):
                e = Experiment({i: k, trigger: 1})
                got = [(new, float(m.inverse_throughput(e, r_max))) for new, m in alt]
                ts = sorted(t for _, t in got)
                if all(b - a >= 0.25 * a for a, b in zip(ts, ts[1:])):
                    todo.append((i, q, e, got))
                    break
            else:
                unclear.append(i)
    measured = measure([e for _, _, e, _ in todo]) if todo else []
    return {"probes": [{"scheme": i, "ports": sort_ports(q), "experiment": dict(e.items()),
                        "readings": [[sort_ports(new), r] for new, r in got], "measured": t}
                       for (i, q, e, got), t in zip(todo, measured)], "unclear": sorted(set(unclear))}


def refined(mode: Mode, found: Mapping[str, Any]) -> Mode:
    """``mode`` with every probed scheme's µops where its probe read them (the reading within
    TOLERANCE of the measurement; none: as the mode had them), and those probes among its witnesses."""
    for p in found["probes"]:
        t, i, q = p["measured"], p["scheme"], frozenset(p["ports"])
        near = [frozenset(new) for new, r in p["readings"] if t == t and abs(t - r) <= TOLERANCE * r]
        if len(near) == 1 and near[0] != mode.narrow(i, q):
            mode = replace(_set(mode, i, q, near[0]), witnesses=mode.witnesses + ((Experiment(p["experiment"]), t),))
    return mode


def also_text(mode: Mode) -> str:
    """'; by their own probes 32 scheme(s) move to other ports (vaddpd_xmm_xmm_xmm {0,1} → {0,3}, …),
    16 lose port 1 (…), 1 keep it (…)' or '': what the per-scheme probes changed."""
    moved = sorted((i, sort_ports(q), sort_ports(n)) for i, q, n in mode.also if n - q)
    lost = sorted(i for i, q, n in mode.also if n < q)
    kept = sorted(i for i, q, n in mode.also if n == q)
    parts = []
    if moved:
        i, q, n = moved[0]
        parts.append(f"{len(moved)} scheme(s) move to other ports ({i} {{{','.join(q)}}} → {{{','.join(n)}}}, …)")
    if lost:
        parts.append(f"{len(lost)} lose port {mode.port} ({lost[0]}, …)")
    if kept:
        parts.append(f"{len(kept)} keep it ({kept[0]}, …)")
    return "; by their own probes " + ", ".join(parts) if parts else ""
