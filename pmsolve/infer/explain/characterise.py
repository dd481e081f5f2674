"""Stage 7 (sec. 6.1, 6.2.2, 6.3.5): every other scheme against the blocking suite.

For a blocking instruction B of port set Q (in topological order) and k copies of it, the µops
of scheme i that cannot evade Q each add 1/|Q| cycles:

    non-evading(i, Q) = (tp⁻¹({B↦k, i↦1}) − tp⁻¹({B↦k})) · |Q|

Those are the µops whose port set lies inside Q; subtracting the µops already found on proper
subsets of Q leaves the µops that use exactly Q (Alg. 6.1, lines 6-11).

k must flood Q: k ≥ |Q|·µops(i) suffices (Constraint 6.1; with fewer copies µops that could
evade are pushed onto Q and the estimate comes out too high, never too low).

* **With a µop counter** k follows the chosen rule (:data:`pmsolve.strategy.K_RULES`) and the
  found µops are checked against the count.
* **Without one** the count is what is being found. Pass 1 guesses µops(i) from tp⁻¹(i) (and
  ``min_uops``); a pass whose µops total exceeds its guess is repeated with that total
  (estimates only fall as k grows, so this settles in two passes), and the final estimates are
  taken with k tight to the total, because the estimate's noise grows with k. An estimate that
  is not clearly a whole number is measured again with other k (fresh experiments) and
  averaged. The µops found must then reproduce the singleton and experiments that were *not*
  used to derive them (the scheme with blocking instructions of the sets it uses, at other
  ratios); the margins of the estimates give a confidence per scheme.

Misfits carry the experiments that show why.
"""

from __future__ import annotations

import functools
import math
import random
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from itertools import combinations, product
from typing import Any

import numpy as np

from pmsolve.errors import MeasurementError
from pmsolve.harness.layouts import scaled
from pmsolve.infer.explain.options import ExplainOptions
from pmsolve.infer.explain.stages import simplicity
from pmsolve.infer.explain.witnesses import Explanation, Misfit, Witness, uop_key
from pmsolve.model import Experiment, PortMapping, Uop, bottleneck_of, peak_load, sort_ports
from pmsolve.strategy import k_rule
from pmsolve.throughput import batch_inverse_throughput

Progress = Callable[[str], None]
Suite = list[tuple[str, frozenset[str]]]


def flooding_copies(q: int, uops: int, per_copy: int, r_max: float | None) -> int:
    """Copies of a blocking instruction (``per_copy`` µops on Q each) that flood Q against
    ``uops`` µops: |Q|·uops µops on Q (Constraint 6.1), and enough that the blocked ports, not
    the front end, set the pace: k/|Q| > (k+1)/R_max."""
    k = max(1, math.ceil(q * uops / per_copy))
    if r_max is not None and q * per_copy < r_max:
        k = max(k, math.floor(q / (r_max / per_copy - q)) + 1)
    return k


#: how much longer than the scheme alone its blocking copies must run: a slow scheme runs slower
#: in a mix than alone (Zen 4's ``vsqrtpd ymm``: 8.4 cycles alone, 9.0 beside any blocking
#: instruction), and copies that do not outlast it leave its own bottleneck in charge (17 copies
#: of ``bt r64, i8`` beside it gave 1.0 µops on two ALUs it does not use)
OUTLAST = 1.25
#: a scheme with no µop found whose tp⁻¹ alone exceeds this many front-end cycles gets a second sample
BARE = 1.5


def tight_copies(q: frozenset[str], found: dict[frozenset[str], int], tp: float, per_copy: int,
                 r_max: float | None) -> int:
    """Fewer copies that still flood Q, given the µops found: with x µops inside Q and p µops
    whose sets meet Q without lying inside it, k + x ≥ |Q|·(tp⁻¹(i) + p) keeps Q the bottleneck
    (a set S ⊋ Q adds at most |S∖Q|·tp⁻¹(i) µops of the scheme's own and the p squeezed ones),
    which for schemes far from Q is much less than |Q|·µops(i), and so is the noise."""
    x = sum(n for s, n in found.items() if s <= q)
    partial = sum(n for s, n in found.items() if s & q and not s <= q)
    k = math.ceil((len(q) * (tp + partial) - x) / per_copy - 1e-9)
    return max(k, flooding_copies(len(q), 1, per_copy, r_max))


def whole_cycles(q: int, per_copy: int) -> int:
    """The fewest copies whose µops fill whole cycles of Q: the step between a probe's samples.
    A copy count off that grid leaves Q part of a cycle idle per iteration, which a scheme with
    its own slow unit fills or not by its phase (Zen 4's ``btc m32, i8`` beside k copies of
    ``bt r64, i8``: 2.0 µops at even k, 3.0 at odd k; ``shld`` beside the four ALUs' blocking
    instruction: 4, 7, 6, 5 by k mod 4), so a ladder of one copy more each time averages a
    pattern, never settles, and measures up to ``remeasure`` samples in vain."""
    return q // math.gcd(q, per_copy)


@dataclass
class Probe:
    """One scheme against one blocking set: its samples ``(experiment, baseline, t, t0)``.

    The baseline of a sample is the blocking copies alone. With ``rate`` (the fitted tp⁻¹ of one
    blocking copy, from all of that instruction's baselines) the estimate uses k·rate instead of
    the one measured baseline, which halves its variance."""

    blocker: str
    q: frozenset[str]
    samples: list[tuple[Experiment, Experiment, float, float]] = field(default_factory=list)
    rate: float | None = None

    def copies(self, n: int = -1) -> int:
        return dict(self.samples[n][1].items())[self.blocker]

    def estimates(self) -> list[float]:
        if self.rate is None:
            return [(t - t0) * len(self.q) for _, _, t, t0 in self.samples]
        return [(t - self.copies(j) * self.rate) * len(self.q) for j, (_, _, t, _) in enumerate(self.samples)]

    @property
    def x(self) -> float:
        return float(np.mean(self.estimates()))

    def margin(self) -> float:
        """How clearly the estimate is a whole number: 1 at an integer, 0 halfway between."""
        return max(0.0, 1 - 2 * abs(self.x - round(self.x)))

    def stderr(self) -> float:
        """The standard error of :attr:`x` from the spread of its samples (0 below three)."""
        xs = self.estimates()
        return float(np.std(xs, ddof=1) / math.sqrt(len(xs))) if len(xs) >= 3 else 0.0

    def settled(self, n: int, clear: float, noise: float) -> bool:
        """Is ``n`` clearly the whole number the samples estimate: within ``clear`` of it, with
        three standard errors of room before the next number? Below three samples the standard
        error is the one a relative measurement noise ``noise`` gives: (k·tp⁻¹(B) + n)·|Q|·noise."""
        d = abs(self.x - n)
        if d > clear:
            return False
        prior = noise * (self.copies() * (self.rate or 0) + n / len(self.q)) * len(self.q)
        se = max(self.stderr(), prior / math.sqrt(len(self.samples)))
        return d + 3 * se < 0.5

    def undecided(self, clear: float, noise: float) -> bool:
        """Could more samples still make the estimate clearly whole? Not when three standard
        errors already keep it farther than ``clear`` from every whole number: it lies between
        two, and more samples only waste measurements. Nor when it already is clearly a whole
        number: if the fit puts another number on Q, the scheme's probes disagree with each
        other, which more samples of this one do not mend."""
        if self.settled(round(self.x), clear, noise):
            return False
        d = abs(self.x - round(self.x))
        return len(self.samples) < 3 or d - 3 * self.stderr() <= clear

    def misses(self, n: int, limit: float) -> bool:
        """Is the estimate clearly not ``n``: farther than ``limit`` and than four standard errors
        (thousands of estimates are judged: three would flag a few by chance)?"""
        d = abs(self.x - n)
        return d > limit and d > 4 * self.stderr()


@dataclass
class _Scheme:
    """A scheme's characterisation without a counter: the phase (flooded copies for ``guess``
    µops, then tight copies for the µops ``found``), its probes by blocked set, the sets known
    to hold none of its µops, the sets it was ever ``measured`` against and the samples ``spent``
    beyond its first pass (restarts and fresh samples: ``ExplainOptions.budget`` per set)."""

    guess: int
    phase: str = "flooded"
    restarts: int = 0
    spent: int = 0
    measured: set[frozenset[str]] = field(default_factory=set)
    probes: dict[frozenset[str], Probe] = field(default_factory=dict)
    empty: set[frozenset[str]] = field(default_factory=set)
    found: dict[frozenset[str], int] = field(default_factory=dict)

    def within(self, budget: float) -> bool:
        """May it take more samples? Past its budget a scheme is judged on the samples it has (on
        a Zen 4, misfits took 18 samples each where mapped schemes took 9, and 41 compress-stores
        195); a restart begun within it measures all its sets."""
        return self.spent < budget * len(self.measured)

    def ordered(self, sets: list[frozenset[str]]) -> list[Probe]:
        """The probes in the suite's (topological) order, which the fit needs."""
        return [self.probes[q] for q in sets if q in self.probes]


def plan(insns: list[str], suite: Suite, single: dict[str, Any], o: ExplainOptions,
         run: int) -> dict[str, list[tuple[str, frozenset[str], int]]]:
    """(blocking instruction, Q, k) per scheme with a µop count; run r adds r copies."""
    rule = k_rule(o.k_rule)
    n_ports = o.ports or len({p for _, q in suite for p in q})
    out = {}
    for i in insns:
        tp = Fraction(single[i]["tp"]).limit_denominator(1000)
        n = max(1, round(single[i]["uops"]))
        out[i] = [(b, q, rule(len(q), n_ports, tp, n) + run) for b, q in suite]
    return out


def characterise(oracle: Any, insns: list[str], blocking: PortMapping, suite: Suite, single: dict[str, Any],
                 r_max: float | None, o: ExplainOptions, run: int, progress: Progress, chunk: int = 200,
                 on_chunk: Callable[[], None] | None = None) -> dict[str, Explanation]:
    """One run of the characterisation over ``insns``; measurements in batches of ``chunk``
    schemes (``on_chunk`` is called after each, to checkpoint)."""
    counted = all(single[i].get("uops") is not None for i in insns)
    plans = plan(insns, suite, single, o, run) if counted else {}
    out: dict[str, Explanation] = {}

    def with_counter(part: list[str]) -> dict[str, Explanation]:
        exps = [e for i in part for b, _, k in plans[i] for e in (Experiment({b: k, i: 1}), Experiment({b: k}))]
        oracle.measure(exps)  # one batch; the values are read back from the cache below
        return {i: _counted(oracle, i, plans[i], blocking, single[i], r_max, o) for i in part}

    t0, done0 = time.monotonic(), 0
    for lo in range(0, len(insns), chunk):
        part, before = insns[lo:lo + chunk], getattr(oracle, "measured", None)   # a CachingOracle's count
        out.update(measurable(part, with_counter if counted else
                              lambda p: _uncounted(oracle, p, blocking, suite, single, r_max, o, run)))
        if on_chunk:
            on_chunk()
        done = min(lo + chunk, len(insns))
        if before is not None and oracle.measured == before:
            t0, done0 = time.monotonic(), done    # answered from the store (a resumed run): no pace to learn from
        progress(f"  run {run + 1}: {done}/{len(insns)} schemes characterised"
                 + pace(time.monotonic() - t0, done - done0, len(insns) - done0))
    derived, wrong = at_port_rate(oracle, derived_blockers(out, suite, o) if not counted else {}, suite, blocking,
                                  r_max, o, progress)
    for i, misfit in wrong.items():
        out[i] = Explanation(misfit=misfit, others=out[i].others)
    for b, _ in derived:
        out[b] = replace(out[b], source="derived blocking")
    if derived:
        # second pass: the schemes that may hide µops on those sets, against the suite with them
        more = sorted(suite + derived, key=lambda bq: len(bq[1]))     # by size: subsets first
        extended = PortMapping(blocking.ports, {**blocking.uops, **{b: [(q, 1)] for b, q in derived}})
        names = {b for b, _ in derived} | set(wrong)    # a candidate turned down stays a misfit
        again = hiding(oracle, [i for i in insns if i not in names], out, extended, derived,
                       {q for _, q in suite}, single, r_max, o)
        progress(f"  run {run + 1}: {len(again)} scheme(s) again with the derived blocking instruction(s) "
                 + ", ".join(f"{b} [{','.join(sort_ports(q))}]" for b, q in derived))
        for lo in range(0, len(again), chunk):
            out.update(measurable(again[lo:lo + chunk],
                                  lambda p: _uncounted(oracle, p, extended, more, single, r_max, o, run)))
            if on_chunk:
                on_chunk()
            progress(f"  run {run + 1}: {min(lo + chunk, len(again))}/{len(again)} schemes characterised again")
    return out


def pace(seconds: float, done: int, total: int) -> str:
    """`` (12 min so far, about 1 h 40 min left at this pace)`` for a progress line; empty when
    nothing is left."""
    def span(s: float) -> str:
        m = round(s / 60)
        return f"{m // 60} h {m % 60} min" if m >= 60 else f"{m} min" if m else f"{round(s)} s"
    if done >= total or done <= 0:
        return f" ({span(seconds)})" if done > 0 else ""
    return f" ({span(seconds)} so far, about {span(seconds * (total - done) / done)} left at this pace)"


def measurable(part: list[str], work: Callable[[list[str]], dict[str, Explanation]]) -> dict[str, Explanation]:
    """``work(part)``; a scheme in an experiment the harness cannot run (it faulted the worker)
    becomes an "unmeasurable" misfit, and the chunk runs again without it (what was measured
    comes from the cache), so one bad kernel does not stop a run of hours, nor its resumption."""
    out: dict[str, Explanation] = {}
    while part:
        try:
            return {**out, **work(part)}
        except MeasurementError as err:
            bad = {i: [e for e in err.experiments if i in dict(e.items())] for i in part}
            bad = {i: es for i, es in bad.items() if es}
            if not bad:
                raise
            for i, es in bad.items():
                out[i] = Explanation(misfit=Misfit("unmeasurable", f"{len(es)} experiment(s) with it could not be "
                                                   f"run: {'; '.join(map(str, es[:3]))} ({str(err)[:200]})"))
            part = [i for i in part if i not in bad]
    return out


def derived_blockers(out: dict[str, Explanation], suite: Suite,
                     o: ExplainOptions) -> dict[frozenset[str], list[str]]:
    """Schemes placed as one µop on a set no blocking instruction isolates (a complement, see
    :func:`complement_candidates`), per such set in the order they are tried as its blocking
    instruction (:func:`at_port_rate`): register forms first, like the blocking candidates.
    Other schemes' µops on a blocked superset may lie in that set but go unseen when another
    bottleneck hides them (``{[2,3]: 1, [4,5]: 2}`` alone runs like ``{[0..3]: 1, [4,5]: 2}``);
    against the derived blocking instruction, they cannot evade it."""
    sets = {q for _, q in suite}
    avoid = set(o.not_blocking)
    cands: dict[frozenset[str], list[str]] = {}
    for i in sorted(out, key=lambda i: (i in avoid, simplicity(i))):
        x = out[i]
        if x.misfit is None and len(x.uops) == 1 and x.uops[0][1] == 1:
            q = frozenset(x.uops[0][0])
            if q not in sets:
                cands.setdefault(q, []).append(i)
    return dict(sorted(cands.items(), key=lambda kv: (len(kv[0]), sort_ports(kv[0]))))


def at_port_rate(oracle: Any, cands: dict[frozenset[str], list[str]], suite: Suite, blocking: PortMapping,
                 r_max: float | None, o: ExplainOptions, progress: Progress,
                 tries: int = 3) -> tuple[Suite, dict[str, Misfit]]:
    """Of each set's derived blocking candidates (at most ``tries``), the first that behaves as
    a blocking instruction of C must: k copies alone take k/|C| cycles (k = 2, 4 and 8 times
    |C|), and 2|C| copies beside one cycle of each blocking instruction take what the blocking
    mapping with one µop on C says. The characterisation placed the scheme from experiments
    with one copy of it, and a placement can be wrong where one copy hides it:
    * a scheme can run slower in a row than any port explains (Zen 4's masked shuffle
      ``vshufpd xmm{k}``: 16 copies take 6.33 cycles where three ports allow 5.33);
    * a load can go unseen (Zen 4's ``vpminud xmm, m128`` beside three GPR loads ran faster
      than the loads alone, so no load µop was found, and its singleton, bound by the vector
      loads at 0.5, was explained by a µop on two of the four vector pipes instead); beside the
      vector loads' blocking instruction its copies take 1.5 times what that placement says.
    As a blocking instruction such a scheme makes schemes measured against it misfits and sends
    thousands of them into a second pass (an ``--all`` run named 4,832 with the shuffle, 2,706
    with the load). An experiment that misses is measured once more, doubled, and counts only
    when it misses the same way again. Returns the chosen (scheme, C), and a misfit for each
    candidate turned down: its µops do not reproduce these experiments either."""
    alone = dict(zip((b for b, _ in suite),
                     batch_inverse_throughput([(blocking, Experiment({b: 1})) for b, _ in suite], r_max)))
    trials: list[tuple[frozenset[str], str, list[Experiment]]] = []
    for q, names in cands.items():
        for i in names[:tries]:
            es = [Experiment({i: k * len(q)}) for k in (2, 4, 8)]
            es += [Experiment({i: 2 * len(q), b: max(1, round(1 / float(alone[b])))}) for b, _ in suite]
            trials.append((q, i, es))
    if not trials:
        return [], {}
    exps = [e for _, _, es in trials for e in es]
    try:
        measured = dict(zip(exps, oracle.measure(exps)))
    except MeasurementError as err:
        progress(f"  no derived blocking instruction: its rate could not be measured ({str(err)[:160]})")
        return [], {}

    def apart(t: float, m: float) -> bool:
        return abs(t - m) > max(o.epsilon, o.tolerance * m)

    models = {i: PortMapping(blocking.ports, {**blocking.uops, i: [(q, 1)]}) for q, i, _ in trials}
    mod = {(i, e): float(m) for q, i, es in trials
           for e, m in zip(es, batch_inverse_throughput([(models[i], e) for e in es], r_max))}
    # a miss counts only when a fresh sample (every count doubled) misses the same way: one
    # measurement off by 7 % turned Zen 4's imul r64 down in an --all run, and re-measured it fit
    first = {(i, e) for q, i, es in trials for e in es if apart(measured[e], mod[i, e])}
    again = sorted({scaled(e, 2) for _, e in first}, key=str)
    try:
        fresh = dict(zip(again, oracle.measure(again))) if again else {}
    except MeasurementError as err:
        progress(f"  derived blocking candidates not measured again ({str(err)[:160]})")
        fresh = {}

    def again_off(e: Experiment, m: float) -> bool:   # not measured again: the first sample stands
        t2 = fresh.get(scaled(e, 2))
        return t2 is None or (apart(t2 / 2, m) and (t2 / 2 > m) == (measured[e] > m))

    chosen: dict[frozenset[str], str] = {}
    wrong: dict[str, Misfit] = {}
    for q, i, es in trials:
        if q in chosen:
            continue
        off = [(e, measured[e], mod[i, e]) for e in es if (i, e) in first and again_off(e, mod[i, e])]
        if off:
            progress(f"  {i} is no blocking instruction of [{','.join(sort_ports(q))}]: "
                     + "; ".join(f"{e} = {t:.4g} where one µop on it gives {m:.4g}" for e, t, m in off[:2]))
            wrong[i] = Misfit("unsatisfiable", f"one µop on [{','.join(sort_ports(q))}] does not reproduce "
                              f"{len(off)} experiment(s) of copies of it, alone or beside a blocking instruction "
                              f"(modelled {', '.join(f'{m:.4g}' for _, _, m in off[:4])})",
                              tuple((e, t) for e, t, _ in off))
        else:
            chosen[q] = i
    return [(i, q) for q, i in chosen.items()], wrong


def _hidden_sets(x: Explanation, derived: list[frozenset[str]], sets: set[frozenset[str]]) -> list[frozenset[str]]:
    """The derived sets C the scheme could have µops on: only where µops stay on the smallest
    blocked sets around C (a µop inside C evades none of them): on a Zen 4 every ALU scheme holds
    µops on the four ALUs, and only those on the two around imul's one need measuring again."""
    held = {frozenset(ps) for ps, _ in x.uops} | {frozenset(w.ports) for w in x.others
                                                  if w.kind == "blocking" and (w.non_evading or 0) >= 0.5}
    out = []
    for c in derived:
        around = [q for q in sets if c < q]
        if any(q in held for q in around if not any(r < q for r in around)):
            out.append(c)
    return out


def hiding(oracle: Any, cands: list[str], out: dict[str, Explanation], extended: PortMapping, derived: Suite,
           sets: set[frozenset[str]], single: dict[str, Any], r_max: float | None,
           o: ExplainOptions) -> list[str]:
    """Of the schemes that may hide µops on derived sets (:func:`_hidden_sets`), those to
    characterise again: every misfit, and each mapped scheme whose screening experiment
    ``{i: 1, B_C: k}`` (the derived
    blocking instruction alone ~2 cycles or more) its µops do not reproduce; µops on C that the
    first pass put on a superset cannot evade B_C there and slow it down. One experiment per
    scheme and set instead of a whole characterisation: on a Zen 4 a shuffle placed on three of
    the four vector pipes made 4,832 schemes candidates, every one with µops on the four."""
    blocker = {q: b for b, q in derived}
    hidden = {i: hs for i in cands if (hs := _hidden_sets(out[i], list(blocker), sets))}
    tests: list[tuple[str, Experiment]] = []
    for i, hs in hidden.items():
        if out[i].misfit is None and out[i].uops:
            cycles = max(2.0, 2 * single[i]["tp"])      # the blocker alone: 2 cycles, or twice the scheme
            tests += [(i, Experiment({i: 1, blocker[q]: max(1, round(len(q) * cycles))})) for q in hs]
    missed = {i for i, _ in tests}
    if tests:
        try:
            measured = oracle.measure([e for _, e in tests])
        except MeasurementError:
            measured = None    # all of them again: the characterisation finds which ones cannot run
        if measured is not None:
            models = [PortMapping(extended.ports, {**{b: extended.uops[b] for b in e if b != i},
                                                   i: [(frozenset(ps), n) for ps, n in out[i].uops]})
                      for i, e in tests]
            modelled = batch_inverse_throughput([(m, e) for m, (_, e) in zip(models, tests)], r_max)
            missed = {i for (i, e), t, m in zip(tests, measured, modelled)
                      if abs(t - float(m)) > max(o.epsilon * e.size, o.tolerance * t)}
    return [i for i in hidden if out[i].misfit is not None or not out[i].uops or i in missed]


def _found(probes: list[Probe]) -> tuple[dict[frozenset[str], int], Misfit | None]:
    """µops per exact port set (Alg. 6.1 lines 6-11) from rounded estimates, or why not."""
    found: dict[frozenset[str], int] = {}
    for p in probes:
        n = round(p.x)
        surplus = n - sum(m for q, m in found.items() if q < p.q)
        if surplus < 0:
            e, base, t, t0 = p.samples[-1]
            return found, Misfit("outside the model", f"fewer µops stay on [{','.join(sort_ports(p.q))}] ({n}) than "
                                 f"on its subsets ({n - surplus})", ((e, t), (base, t0)))
        if surplus > 0:
            found[p.q] = surplus
    return found, None


def _counted(oracle: Any, i: str, steps: list[tuple[str, frozenset[str], int]], blocking: PortMapping,
             single: dict[str, Any], r_max: float | None, o: ExplainOptions) -> Explanation:
    counted = round(single["uops"])
    probes = []
    for b, q, k in steps:
        e, base = Experiment({b: k, i: 1}), Experiment({b: k})
        t, t0 = oracle.measure([e, base])
        probes.append(Probe(b, q, [(e, base, t, t0)]))
    problem = next((Misfit("outside the model", f"{p.x:.3g} µops cannot evade [{','.join(sort_ports(p.q))}]: "
                           "not a whole number", ((p.samples[0][0], p.samples[0][2]), (p.samples[0][1], p.samples[0][3])))
                    for p in probes if abs(p.x - round(p.x)) > o.integrality), None)
    found, misfit = _found(probes)
    problem = problem or misfit
    total = sum(found.values())
    singleton = Experiment({i: 1})
    if problem is None and total > counted:
        problem = Misfit("micro-coded", f"{total} µops on blocked ports but the counter reports {counted}",
                         tuple((p.samples[0][0], p.samples[0][2]) for p in probes if p.q in found))
    if problem is None and total < counted:
        problem = Misfit("outside the model", f"the counter reports {counted} µops but only {total} stay on "
                         "the ports of a blocking instruction: the others evade every one",
                         ((singleton, single["tp"]),))
    if problem is not None:
        return Explanation(misfit=problem, counted=counted, others=tuple(_witness(p, None, None) for p in probes))
    return run_checks({i: _checking(i, found, probes, blocking, single, r_max, o, [], counted)}, None)[i]


def run_checks(checks: dict[str, Generator], oracle: Any) -> dict[str, Explanation]:
    """Drive many schemes' :func:`_checking` in lockstep, so that each round of re-measurements
    is one batch (one scheme at a time, the harness would measure them one per call, ~20× slower)."""
    out: dict[str, Explanation] = {}
    asks: dict[str, list[Experiment]] = {}

    def step(i: str, values: list[float] | None) -> None:
        try:
            asks[i] = checks[i].send(values)
        except StopIteration as done:
            out[i] = done.value

    for i in checks:
        step(i, None)
    while asks:
        exps = [e for es in asks.values() for e in es]
        values = dict(zip(exps, oracle.measure(exps)))
        todo, asks = asks, {}
        for i, es in todo.items():
            step(i, [values[e] for e in es])
    return out


#: misses of a scheme's checks measured again per round (:func:`_checking`)
RECHECK = 4


def _checking(i: str, found: dict[frozenset[str], int], probes: list[Probe], blocking: PortMapping,
              single: dict[str, Any], r_max: float | None, o: ExplainOptions,
              held: list[tuple[Experiment, float]], counted: int | None,
              stand: dict[frozenset[str], str] | None = None,
              strict: frozenset[Experiment] = frozenset()) -> Generator[list[Experiment], list[float], Explanation]:
    """The scheme's mapping must reproduce everything measured about it: the experiments it
    was derived from and the ``held`` ones it was not. With ``stand`` (the blocking instruction
    that is one µop on each set), an experiment that misses is measured once more as a fresh
    sample (every count doubled, which doubles tp⁻¹ in the model: yielded, the values sent
    back), and then, if it misses again, with the scheme's µops replaced by their blocking
    instructions (:func:`stand_in`); the worst :data:`RECHECK` misses first, and the next ones
    only if none of those stands. It counts as missed only when the stand-in does not share
    the miss: a slow schedule of the CPU's, which the blocking instructions themselves run into
    (on a Zen 4 ``{vaesdec ×2, vbroadcastss ymm}`` takes 1.2 cycles where the ports allow 1),
    is no evidence against µops that behave exactly like theirs. On a port-model machine a
    stand-in measures what the model says, so it never excuses a miss there.
    The ``strict`` experiments (:func:`full_check`: many instructions, where ε per instruction
    would hide the µop they are built to show) miss beyond the relative tolerance alone.
    A generator for :func:`run_checks`; returns the explanation."""
    uops = [(q, n) for q, n in found.items()]
    singleton = Experiment({i: 1})
    involved = {p.blocker for p in probes} | {b for e, _ in held for b in e if b != i}
    m = PortMapping(blocking.ports, {**{b: blocking.uops[b] for b in involved}, i: uops})
    derived = [(singleton, single["tp"])] + [(x, v) for p in probes for e, b, t, t0 in p.samples
                                              for x, v in ((e, t), (b, t0))]
    exps = [e for e, _ in derived + held]
    modelled = [float(v) for v in batch_inverse_throughput([(m, e) for e in exps], r_max)]
    mod = dict(zip(exps, modelled))

    shared: list[Witness] = []

    def apart(e: Experiment, t: float, t2: float) -> bool:
        return abs(t - t2) > (o.tolerance * t if e in strict else max(o.epsilon * e.size, o.tolerance * t))

    def off(e: Experiment, t: float) -> bool:
        return apart(e, t, mod[e])

    def missed(items: list[tuple[Experiment, float]]) -> Generator[list[Experiment], list[float], list]:
        # the worst misses first, a few at a time: one that stands is enough to reject the µops
        # (a misfit's wrong µops miss dozens of experiments, each measured again in vain before)
        bad = sorted(((e, t) for e, t in items if off(e, t)), key=lambda et: -abs(et[1] - mod[et[0]]) / mod[et[0]])
        if not bad or stand is None:
            return bad
        out: list[tuple[Experiment, float]] = []
        for lo in range(0, len(bad), RECHECK):
            part = bad[lo:lo + RECHECK]
            again = yield [scaled(e, 2) for e, _ in part]
            part = [(e, t) for (e, t), t2 in zip(part, again) if off(e, t2 / 2)]
            subs = {e: x for e, _ in part if (x := stand_in(e, i, found, stand)) is not None}
            seen = dict(zip(subs.values(), (yield list(subs.values())))) if subs else {}
            for e, t in part:
                x = subs.get(e)
                if x is None or not off(e, seen[x]) or (seen[x] > mod[e]) != (t > mod[e]) or apart(e, t, seen[x]):
                    out.append((e, t))
                else:
                    shared.append(Witness("stand-in", e, t, mod[e], x, seen[x], mod[e]))
            if out:
                return out
        return out

    canon = _canonical_uops(found)
    if held and (yield from missed([(singleton, single["tp"])])):
        slower = single["tp"] > mod[singleton]
        why = ("slower than its µops explain: a bottleneck other than the ports (e.g. an unpipelined unit or "
               "microcode)" if slower else "faster than its µops allow")
        return Explanation(misfit=Misfit("outside the model", f"alone it runs at {single['tp']:.4g} cycles, "
                                         f"{why}; the blocked ports hold {_fmt(uops)} (modelled {mod[singleton]:.4g})",
                                         ((singleton, single["tp"]),), canon if slower else (), found=canon),
                           counted=counted, others=tuple(_witness(p, None, None) for p in probes))
    bad = yield from missed(derived)
    if bad:
        return Explanation(misfit=Misfit("unsatisfiable", f"the µops {_fmt(uops)} found with the blocking "
                                         f"instructions do not reproduce {len(bad)} measured experiment(s)",
                                         tuple(bad), found=canon), counted=counted)
    bad = yield from missed(held)
    if bad:
        return Explanation(misfit=Misfit("unsatisfiable", f"the µops {_fmt(uops)} do not reproduce {len(bad)} "
                                         f"experiment(s) not used to derive them (modelled "
                                         f"{', '.join(f'{mod[e]:.4g}' for e, _ in bad)})", tuple(bad), found=canon),
                           counted=counted, others=tuple(_witness(p, None, None) for p in probes))
    witnesses = {uop_key(p.q): tuple(_witness(p, mod[e], mod[b]) for e, b, _, _ in p.samples[-1:])
                 for p in probes if p.q in found}
    sw = Witness("singleton", singleton, single["tp"], mod[singleton])
    witnesses = {k: (sw,) + v for k, v in witnesses.items()}
    checks = tuple(Witness("check", e, t, mod[e]) for e, t in held) + tuple(shared)
    # a µop on a set no blocking instruction isolates (a complement, see complement_candidates):
    # the singleton, the blocked sets it cannot evade and the checks that place it
    witnesses.update({uop_key(q): (sw,) + tuple(_witness(p, mod[p.samples[-1][0]], mod[p.samples[-1][1]])
                                                for p in probes if q < p.q) + checks
                      for q in found if uop_key(q) not in witnesses})
    others = tuple(_witness(p, mod[p.samples[-1][0]], mod[p.samples[-1][1]]) for p in probes
                   if p.q not in found) + checks
    confidence = min((p.margin() for p in probes), default=1.0) if counted is None else None
    return Explanation(canon, witnesses, others, None, counted, "characterised", confidence)


# ---------------------------------------------------------------------------- without a µop counter

def _uncounted(oracle: Any, part: list[str], blocking: PortMapping, suite: Suite, single: dict[str, Any],
               r_max: float | None, o: ExplainOptions, run: int) -> dict[str, Explanation]:
    """Rounds over a chunk of schemes, each round one measurement batch (see the module doc).

    The flooding count starts from a guess (2·tp⁻¹(i) µops, at least ``min_uops``); when the
    µops found exceed the guess, the scheme is measured again with that many (earlier samples
    may have pushed evading µops onto Q and are discarded). Sets are measured from the largest
    down: no µop of the scheme lies inside a subset of a set where none stays, so a set is
    measured only once every blocked set containing it holds µops of the scheme. A probe whose
    estimate is not clearly the number of µops the fit puts on Q gets fresh samples
    (:func:`whole_cycles` more copies each time) while more samples can still decide it, up to
    ``remeasure``; the estimate is their mean."""
    on_q = {(b, q): sum(int(n) for u, n in blocking.uop_masses(Experiment({b: 1})).items() if u <= q)
            for b, q in suite}
    blocker = dict((q, b) for b, q in suite)
    stand = {q: b for b, q in suite if blocking.uops[b] == (Uop(q, 1),)}
    sets = [q for _, q in suite]                        # topological: subsets first
    supersets = {q: [s for s in sets if q < s] for q in sets}
    per_copy = {q: on_q[(b, q)] for b, q in suite}
    step = {q: whole_cycles(len(q), per_copy[q]) for q in sets}    # between a probe's samples

    def sample(i: str, s: _Scheme, p: Probe, k: int) -> None:
        s.spent += bool(s.restarts or p.samples)
        s.measured.add(p.q)
        p.samples.append((Experiment({p.blocker: k, i: 1}), Experiment({p.blocker: k}), math.nan, math.nan))

    def copies(i: str, q: frozenset[str], s: _Scheme) -> int:
        k = flooding_copies(len(q), s.guess, per_copy[q], r_max)
        if s.phase == "tight":
            k = min(k, tight_copies(q, s.found, single[i]["tp"], per_copy[q], r_max))
        # and outlast the scheme alone: |Q|·µops(i) copies do not when its own slow unit sets its pace
        k = max(k, step[q] * math.ceil(len(q) * single[i]["tp"] * OUTLAST / per_copy[q] / step[q]))
        return k + run * step[q]

    def descend(i: str, s: _Scheme) -> list[Probe]:
        """New probes for the sets all of whose measured supersets hold µops of the scheme."""
        new = []
        for q in sets:
            if q in s.probes or q in s.empty or any(t in s.empty for t in supersets[q]):
                continue
            if all(t in s.probes and not math.isnan(s.probes[t].x) and round(s.probes[t].x) >= 1
                   for t in supersets[q]):
                s.probes[q] = p = Probe(blocker[q], q)
                sample(i, s, p, copies(i, q, s))
                new.append(p)
        return new

    def restart(i: str, s: _Scheme, phase: str, keep: Iterable[frozenset[str]] = ()) -> list[Probe]:
        # a set settled at zero stays empty: too few copies only push µops onto Q, never off it
        s.empty |= {q for q, p in s.probes.items() if round(p.x) == 0 and p.settled(0, o.clear, o.noise)}
        s.phase, s.restarts, s.probes = phase, s.restarts + 1, {q: s.probes[q] for q in keep}
        return descend(i, s)

    # a ladder of copy counts per blocking instruction, for its rate (the baselines the probes
    # need cluster at a few copy counts, whose noise would otherwise bias every estimate alike)
    ladder = [Experiment({b: k}) for b, _ in suite for k in range(1, 33)]
    ladder_values = dict(zip(ladder, oracle.measure(ladder)))
    floor = dict(o.min_uops)
    state = {i: _Scheme(min(o.max_uops, max(1, round(2 * single[i]["tp"]), floor.get(i, 1)))) for i in part}
    pending = [p for i in part for p in descend(i, state[i])]
    for _ in range(4 * (o.remeasure + len(sets))):
        exps = [x for p in pending for e, b, t, _ in p.samples if t != t for x in (e, b)]
        values = dict(zip(exps, oracle.measure(exps)))
        for p in pending:
            p.samples = [(e, b, values[e], values[b]) if t != t else (e, b, t, t0) for e, b, t, t0 in p.samples]
        _fit_rates([p for s in state.values() for p in s.probes.values()], ladder_values)
        pending = []
        for i in part:
            s = state[i]
            s.found = fit_uops(s.ordered(sets))
            new = descend(i, s)
            if new:
                pending += new
                continue
            total = max(1, sum(s.found.values()))
            on = {q: sum(n for u, n in s.found.items() if u <= q) for q in s.probes}
            if total > s.guess and total <= o.max_uops and s.restarts < 4 and s.within(o.budget):
                # more µops than the copies were meant for: they may have been pushed onto Q,
                # so measure again with |Q|·µops copies (Constraint 6.1)
                s.guess = total
                pending += restart(i, s, "flooded")
                continue
            if s.phase == "flooded":
                s.guess = total
                unsettled = {q for q, p in s.probes.items() if not p.settled(on[q], o.clear, o.noise)}
                if not unsettled or not s.within(o.budget):
                    # already clear (the tight copies would add nothing), or past the budget
                    s.phase = "tight"
                else:
                    # Q was flooded for every µop found: now that the µops are known, measure the
                    # unsettled sets again with the copies they need (tight_copies), because an
                    # estimate's noise grows with k; the settled ones keep their samples
                    pending += restart(i, s, "tight", keep=s.probes.keys() - unsettled)
                    continue
            # nothing found, yet alone the scheme outlasts the front end: it holds ports, so one
            # sample that read no µop may be a glitch (on the Ice Lake-SP one too-fast sample,
            # 1.30 for 1.51, left `vaddpd xmm` with no µop at all): one more sample of each
            bare = not s.found and r_max is not None and single[i]["tp"] * r_max > BARE
            for q, p in s.probes.items():
                if (s.within(o.budget) and not p.settled(on[q], o.clear, o.noise) and len(p.samples) <= o.remeasure
                        and p.undecided(o.clear, o.noise)) or (bare and len(p.samples) < 2):
                    # noise: fresh samples, each with whole cycles of Q more copies
                    sample(i, s, p, p.copies() + step[q])
                    pending.append(p)
        if not pending:
            break
    found = {i: s.found for i, s in state.items()}
    held = {i: _held_out(i, found[i], suite, on_q, r_max, run) for i in part}
    full = {i: full_check(i, found[i], suite, blocking, r_max, o) for i in part}
    for i, (e, _, _) in full.items():
        if e is not None:
            held[i].append(e)

    def strict(i: str) -> frozenset[Experiment]:
        return frozenset([full[i][0]]) if full[i][0] is not None else frozenset()
    exps = [e for hs in held.values() for e in hs]
    values = dict(zip(exps, oracle.measure(exps)))
    out, checks = {}, {}
    for i in part:
        ps, f = state[i].ordered(sets), found[i]
        problem = next((Misfit("outside the model", f"{p.x:.3g} µops cannot evade [{','.join(sort_ports(p.q))}], "
                               f"but the µops found put {sum(n for q, n in f.items() if q <= p.q)} there "
                               f"({len(p.samples)} measurement(s))",
                               tuple((x, v) for e, b, t, t0 in p.samples for x, v in ((e, t), (b, t0))),
                               found=_canonical_uops(f))
                        for p in ps if p.misses(sum(n for q, n in f.items() if q <= p.q), o.integrality)), None)
        if problem is None and not f:
            problem = Misfit("outside the model", "no µop stays on the ports of any blocking instruction: it runs "
                             "on no port (an eliminated move or idiom) or only on ports no blocking instruction "
                             "isolates", ((Experiment({i: 1}), single[i]["tp"]),))
        if problem is not None:
            out[i] = Explanation(misfit=problem, others=tuple(_witness(p, None, None) for p in ps))
            continue
        checks[i] = _checking(i, f, ps, blocking, single[i], r_max, o, [(e, values[e]) for e in held[i]], None, stand,
                              strict(i))
    out.update(run_checks(checks, oracle))
    out.update(_missed_uops(oracle, part, out, found, full, held, values, state, sets, suite, blocking, single,
                            r_max, o, stand))
    for i, (_, _, left) in full.items():
        if out[i].misfit is None and left:
            out[i] = replace(out[i], unchecked=tuple(tuple(sort_ports(q)) for q in left))
    # a placement the complement search proposes gets a full check of its own (the first one
    # was filled for the µops before the move, and may load the moved ones' ports unevenly)
    refine = {i: [(f, es, full_check(i, f, suite, blocking, r_max, o))
                  for f, es in complement_candidates(i, found[i], suite, blocking, single[i]["tp"], r_max, o)]
              for i in part if out[i].misfit is not None and found[i]}
    exps = [e for cands in refine.values() for _, es, (fc, _, _) in cands for e in es + ([fc] if fc else [])]
    values.update(zip(exps, oracle.measure(exps)))
    for n in range(max((len(c) for c in refine.values()), default=0)):   # the n-th candidates of all, at once
        tried = {i: cands[n] for i, cands in refine.items() if len(cands) > n and out[i].misfit is not None}
        got = run_checks({i: _checking(i, f, state[i].ordered(sets), blocking, single[i], r_max, o,
                                       [(h, values[h]) for h in held[i] + es + ([fc] if fc else [])], None, stand,
                                       strict(i) | ({fc} if fc else set()))
                          for i, (f, es, (fc, _, _)) in tried.items()}, oracle)
        out.update({i: replace(x, unchecked=tuple(tuple(sort_ports(q)) for q in tried[i][2][2]))
                    for i, x in got.items() if x.misfit is None})
    return out


def _missed_uops(oracle: Any, part: list[str], out: dict[str, Explanation], found: dict[str, dict[frozenset[str], int]],
                 full: dict[str, tuple[Experiment | None, frozenset[str], list[frozenset[str]]]],
                 held: dict[str, list[Experiment]], values: dict[Experiment, float], state: dict[str, _Scheme],
                 sets: list[frozenset[str]], suite: Suite, blocking: PortMapping, single: dict[str, Any],
                 r_max: float | None, o: ExplainOptions, stand: dict[frozenset[str], str]) -> dict[str, Explanation]:
    """Schemes whose :func:`full_check` ran slower than their µops: the µops it shows are placed
    where the blocking instructions say (:func:`missed_candidates`), or the scheme stays the
    misfit its checks made it. Every placement kept must reproduce everything measured about the
    scheme, the experiments that chose it too."""
    tried: dict[str, tuple[dict[frozenset[str], int], list[Experiment]]] = {}
    ambiguous: dict[str, list[dict[frozenset[str], int]]] = {}
    pools = {}
    for i in part:
        e, u, _ = full[i]
        if e is None or out[i].misfit is None or not found[i] or e not in values:
            continue
        cands, pool = missed_candidates(i, found[i], e, values[e], u, suite, blocking, single[i]["tp"], r_max, o)
        if cands:
            pools[i] = (cands, pool)
    exps = sorted({x for _, pool in pools.values() for x in pool} - set(values), key=str)
    values.update(zip(exps, oracle.measure(exps)))
    for i, (cands, pool) in pools.items():
        # the placements that fit every experiment, and of those the ones as good as the best
        # within the noise of one measurement (under noise a wrong one may fit within tolerance)
        rests: dict[Experiment, dict[frozenset[str], int]] = {}
        errs = [_worst_error(blocking, i, f, pool, values, r_max, rests, o.tolerance) for f in cands]
        best = min(errs)
        fits = [f for f, err in zip(cands, errs) if err <= o.tolerance and err <= best + o.noise]
        groups = twins(blocking.ports, sets)
        if fits and len({canonical(f, groups) for f in fits}) == 1:
            tried[i] = (fits[0], pool)
        elif fits:
            # placements none of these experiments tells apart: the widest, when it holds every
            # other one's set, is what the blocking instructions say (they cannot narrow it)
            widest = max(fits, key=lambda f: (len(set().union(*f)), sum(len(q) for q in f)))
            extra = [q for q in widest if q not in found[i]]
            if extra and all(all(q <= extra[0] for q in f if q not in found[i]) for f in fits):
                tried[i] = (widest, pool)
                shapes = {canonical(widest, groups)}
                for f in fits:   # one per shape, the mapped one's left out
                    if canonical(f, groups) not in shapes:
                        shapes.add(canonical(f, groups))
                        ambiguous.setdefault(i, []).append(f)
    got = run_checks({i: _checking(i, f, state[i].ordered(sets), blocking, single[i], r_max, o,
                                   [(h, values[h]) for h in held[i] + es], None, stand,
                                   frozenset(es) | {full[i][0]})
                      for i, (f, es) in tried.items()}, oracle)
    return {i: replace(x, alternatives=tuple(_canonical_uops(f) for f in ambiguous.get(i, ())))
            for i, x in got.items() if x.misfit is None}


def _worst_error(blocking: PortMapping, i: str, f: dict[frozenset[str], int], pool: list[Experiment],
                 values: dict[Experiment, float], r_max: float | None,
                 rests: dict[Experiment, dict[frozenset[str], int]], limit: float) -> float:
    """The largest relative error of i with the µops f over ``pool``, or the first one over
    ``limit``: a placement is kept only within ``limit`` of every experiment, so the rest of a
    pool it already misses decides nothing (most placements miss early: the errors of every
    placement over its whole pool were a quarter of a replay's characterisation)."""
    worst = 0.0
    for x in pool:
        err = abs(values[x] - _time(blocking, i, f, x, r_max, rests)) / values[x]
        if err > limit:
            return err
        worst = max(worst, err)
    return worst


def _time(blocking: PortMapping, i: str, f: dict[frozenset[str], int], e: Experiment, r_max: float | None,
          rests: dict[Experiment, dict[frozenset[str], int]]) -> float:
    """tp⁻¹ of an experiment of i and blocking instructions, i with the µops f: Thm 5.2 on the µop
    masses (the blocking instructions' part of each experiment kept in ``rests``), not a model
    compiled per placement (that took a quarter of an ``--all`` characterisation's analysis)."""
    rest = rests.get(e)
    if rest is None:
        others = {b: n for b, n in e.items() if b != i}
        rest = rests[e] = blocking.uop_masses(Experiment(others)) if others else {}
    mass, a = dict(rest), e[i]
    for q, n in f.items():
        mass[q] = mass.get(q, 0) + a * n
    return max(peak_load(mass), float(e.size / r_max) if r_max else 0.0)


def missed_candidates(i: str, found: dict[frozenset[str], int], check: Experiment, measured: float,
                      u: frozenset[str], suite: Suite, blocking: PortMapping, tp: float, r_max: float | None,
                      o: ExplainOptions, max_ports: int = 10,
                      max_uops: int = 3) -> tuple[list[dict[frozenset[str], int]], list[Experiment]]:
    """Where the µops a :func:`full_check` shows can be: n µops on a set S inside the parts U it
    loads but inside no blocked set (a µop inside one would have been counted there), such that
    the scheme's µops with them reproduce the check and the singleton; one per renaming of ports
    no blocked set tells apart. With the experiments that tell them apart: each blocking
    instruction beside the scheme at two ratios, and the check without one part's filling (a
    µop on [0,1,2] of a machine blocked at [0], [1,2] and [3,4,5] slows the full check of a
    scheme on [3,4,5] as much as two on all six ports would, and the check without [3,4,5]'s
    filling tells them apart)."""
    sets = {q for _, q in suite}
    if len(u) > max_ports:
        return [], []
    # Thm 5.2 on the µop masses (_time), not a compiled model per candidate: there are thousands
    counts = dict(check.items())
    others = {b: n for b, n in counts.items() if b != i}
    rest = blocking.uop_masses(Experiment(others)) if others else {}
    a = counts[i]
    alone, rests = Experiment({i: 1}), {check: rest}

    def fits(f: dict[frozenset[str], int]) -> bool:
        if abs(_time(blocking, i, f, alone, r_max, rests) - tp) > max(o.epsilon, o.tolerance * tp):
            return False
        return abs(_time(blocking, i, f, check, r_max, rests) - measured) <= o.tolerance * measured

    # one candidate per shape, the fit checked first (the shape of every candidate cost the
    # Emerald Rapids `--all` replay most of its time): renaming twins changes neither time when
    # the twins are also whole in the check's other µops (an improper blocker's may not be)
    groups = twins(blocking.ports, sets | set(rest))
    ports = sort_ports(u)
    seen, fit = set(), []
    for size in range(2, len(ports) + 1):
        for c in map(frozenset, combinations(ports, size)):
            if any(c <= q for q in sets):
                continue
            for f in _with_uops_on(found, c, max_uops):
                if not fits(f):
                    continue
                shape = canonical(f, groups)
                if shape not in seen:
                    seen.add(shape)
                    fit.append(f)
    if not fit:
        return [], []
    level = bottleneck_of(found)[0]
    per_copy = {q: sum(x.count for x in blocking.uops[b] if x.ports <= q) for b, q in suite}
    pool = []
    for b, q in suite:
        for scale in (1, 2):
            k = math.ceil(scale * a * level * len(q) / max(1, per_copy[q]))
            pool.append(Experiment({i: a, b: max(1, k)}))
    for b, q in suite:
        if b in counts and b != i:
            rest = {x: c for x, c in counts.items() if x != b}
            if len(rest) > 1:
                pool.append(Experiment(rest))
    # every part of U but one loaded to twice the level: that one has room, and a µop that may
    # use it does not slow the check down (the scheme's own µops keep a part at their level)
    blocker = {q: b for b, q in suite}
    involved = [q for q in parts(suite) if q <= u]
    for keep in involved:
        more = {i: a}
        for q in involved:
            need = (1 if q == keep else 2) * a * level * len(q) - a * sum(n for f, n in found.items() if f <= q)
            if need > 0:
                more[blocker[q]] = math.ceil(need / max(1, per_copy[q]))
        pool.append(Experiment(more))
    return fit, list(dict.fromkeys(pool))


def _with_uops_on(found: dict[frozenset[str], int], c: frozenset[str], max_uops: int) -> list[dict[frozenset[str], int]]:
    """The scheme's µops with 1..``max_uops`` more on c, and also with some of those found on a
    subset of c moved there: a µop on c whose probes ran with too few copies to flood a subset
    (copies counted for the µops found so far) reads as one on the subset (with 1 % noise, a
    µop on [0,1,2,4] beside 6 copies of the [0,1,2] blocker estimated 0.71 µops there)."""
    out = []
    subsets = [q for q in found if q < c]
    for moved in product(*(range(found[q] + 1) for q in subsets)):
        taken = dict(zip(subsets, moved))
        f = {q: n - taken.get(q, 0) for q, n in found.items() if n > taken.get(q, 0)}
        for n in range(0 if any(moved) else 1, max_uops + 1):
            if n + sum(moved):
                out.append({**f, c: f.get(c, 0) + n + sum(moved)})
    return out


def complement_candidates(i: str, found: dict[frozenset[str], int], suite: Suite,
                          blocking: PortMapping, tp: float, r_max: float | None,
                          o: ExplainOptions) -> list[tuple[dict[frozenset[str], int], list[Experiment]]]:
    """Port usages that move µops of a blocked set Q to a set C ⊂ Q no blocking instruction
    isolates, where the scheme alone is slower than its µops on Q explain; each with the
    experiments that tell the candidates apart.

    The paper assumes a blocking instruction for every port set in use; real CPUs break it (on a
    Zen 4 the shifts use two of the four ALUs, a pair no instruction blocks alone, and shuffles
    three of the four vector pipes). A µop that cannot evade Q lies inside Q; it evades every
    blocked R ⊂ Q whose probe found none, so C ⊄ R; and the singleton fixes how many ports its
    µops need. Which such C it is shows with each blocking instruction B_R beside it:
    ``{i ↦ a, B_R ↦ b}`` (each part alone ~2 cycles) runs at the time of either part only if C
    misses R, and slower the more C and R share. Experiments are chosen until every two
    candidates differ in one of them by more than the tolerance; candidates that none tells
    apart (ports the blocking instructions cannot tell apart either) are all dropped, and a
    candidate is accepted only when it reproduces every experiment of the scheme, these too."""
    sets = {q for _, q in suite}
    singleton = Experiment({i: 1})

    def times(f: dict[frozenset[str], int], es: list[Experiment]) -> list[float]:
        m = PortMapping(blocking.ports, {**{b: blocking.uops[b] for b, _ in suite}, i: list(f.items())})
        return [float(v) for v in batch_inverse_throughput([(m, e) for e in es], r_max)]

    slack = max(o.epsilon, o.tolerance * tp)
    if tp <= times(found, [singleton])[0] + slack:    # not slower than its µops explain
        return []
    cands: list[dict[frozenset[str], int]] = []
    for q, n in sorted(found.items(), key=lambda kv: (len(kv[0]), sort_ports(kv[0]))):
        inner = [r for r in sets if r < q]
        for size in range(1, len(q)):
            for c in map(frozenset, combinations(sort_ports(q), size)):
                if c in sets or any(c <= r for r in inner):
                    continue
                for m in range(1, n + 1):
                    f = {**found, q: n - m}
                    f[c] = f.get(c, 0) + m
                    f = {x: k for x, k in f.items() if k}
                    if abs(tp - times(f, [singleton])[0]) <= slack:
                        cands.append(f)
                        break
    if not cands:
        return []
    alone = dict(zip((b for b, _ in suite), times(found, [Experiment({b: 1}) for b, _ in suite])))
    split = {q for f in cands for q in found if f.get(q, 0) < found[q]}
    pool = [Experiment({i: max(1, round(2 / tp)), b: max(1, round(2 / alone[b]))})
            for b, r in suite if any(r & q and not q <= r for q in split)]
    pred = [times(f, pool) for f in cands]

    def apart(a: int, b: int, k: int) -> bool:
        return abs(pred[a][k] - pred[b][k]) > 2 * max(o.epsilon * pool[k].size, o.tolerance * pred[a][k])

    pairs = {(a, b) for a in range(len(cands)) for b in range(a + 1, len(cands))}
    unresolved = {p for p in pairs if not any(apart(*p, k) for k in range(len(pool)))}
    pairs -= unresolved
    # candidates that a renaming of ports no blocked set tells apart maps onto each other are
    # one answer (Zen 4's imul: one of two ALUs that only ever appear together); keep the first
    shape = [canonical(f, twins(blocking.ports, sets)) for f in cands]
    mirrored = {b for a, b in unresolved if shape[a] == shape[b]}
    unresolved = {(a, b) for a, b in unresolved if shape[a] != shape[b]}
    chosen: list[int] = []
    while pairs:    # greedy: the experiment that tells the most remaining pairs apart
        k = max(range(len(pool)), key=lambda k: (sum(apart(a, b, k) for a, b in pairs), -k))
        chosen.append(k)
        pairs = {(a, b) for a, b in pairs if not apart(a, b, k)}
    if not chosen:    # one candidate: the experiment of the blocking instruction it overlaps most
        chosen = [max(range(len(pool)), key=lambda k: (abs(pred[0][k] - times(found, [pool[k]])[0]), -k))] \
            if pool else []
    ambiguous = {x for p in unresolved for x in p} | mirrored
    exps = [pool[k] for k in sorted(chosen)]
    return [(f, exps) for a, f in enumerate(cands) if a not in ambiguous][:4]


def twins(ports: Sequence[str], sets: Iterable[frozenset[str]]) -> list[list[str]]:
    """Groups of ports that every blocked set holds all or none of: no experiment with the
    blocking instructions tells them apart, so which of them is which is a naming choice."""
    sets = list(sets)
    groups: dict[frozenset[frozenset[str]], list[str]] = {}
    for p in ports:
        groups.setdefault(frozenset(s for s in sets if p in s), []).append(p)
    return [sorted(g) for g in groups.values() if len(g) > 1]


def canonical(f: dict[frozenset[str], int], groups: list[list[str]], limit: int = 5040) -> tuple:
    """The least form of a port usage over the renamings within ``groups`` (each permuted
    freely); usages with equal forms are the same up to naming ports no blocked set tells
    apart. More than ``limit`` renamings: the usage itself (nothing is identified).

    Ports of a group that lie in the same sets of ``f`` (the unused ones, above all) swap
    without changing it, so only the distinct arrangements of their columns are tried: the
    ``--all`` characterisation spent over half its time here trying every permutation. Schemes
    share their candidate usages and the groups, so forms are cached (a pure function)."""
    return _canonical(frozenset(f.items()), tuple(map(tuple, groups)), limit)


@functools.lru_cache(maxsize=1 << 16)
def _canonical(f_items: frozenset[tuple[frozenset[str], int]], all_groups: tuple[tuple[str, ...], ...],
               limit: int) -> tuple:
    f = dict(f_items)
    used = set().union(*f) if f else set()
    groups = [list(g) for g in all_groups if used & set(g)]
    rank = {p: k for k, p in enumerate(sort_ports(used.union(*map(set, groups))))}
    items = list(f.items())

    def form(sets: Iterable[tuple[Iterable[str], int]]) -> tuple:
        return tuple(sorted((tuple(sorted(q, key=rank.__getitem__)), n) for q, n in sets))

    if math.prod(math.factorial(len(g)) for g in groups) > limit:
        return form(items)
    moving = set().union(*map(set, groups))
    fixed = [q - moving for q, _ in items]
    # a port's column: which of f's sets hold it; a renaming puts each column on some port
    columns = [[frozenset(j for j, (q, _) in enumerate(items) if p in q) for p in g] for g in groups]
    best = None
    for arrangement in product(*(_arrangements(c) for c in columns)):
        sets = [set(x) for x in fixed]
        for g, cols in zip(groups, arrangement):
            for port, col in zip(g, cols):
                for j in col:
                    sets[j].add(port)
        shape = form((q, n) for q, (_, n) in zip(sets, items))
        best = shape if best is None else min(best, shape)
    return best


def _arrangements(labels: list) -> Iterator[tuple]:
    """The distinct orderings of a multiset (each once, however often a label repeats)."""
    counts: dict = {}
    for x in labels:
        counts[x] = counts.get(x, 0) + 1
    out: list = []

    def rec() -> Iterator[tuple]:
        if len(out) == len(labels):
            yield tuple(out)
            return
        for x in counts:
            if counts[x]:
                counts[x] -= 1
                out.append(x)
                yield from rec()
                out.pop()
                counts[x] += 1
    return rec()


def _fit_rates(probes: list[Probe], extra: dict[Experiment, float] | None = None) -> None:
    """Each blocking instruction's tp⁻¹ per copy: the median over its distinct measured baselines
    (``extra``: more of them, e.g. a ladder of copy counts measured for this purpose)."""
    seen: dict[Experiment, float] = dict(extra or {})
    for p in probes:
        for _, base, _, t0 in p.samples:
            if t0 == t0:
                seen[base] = t0
    ratios: dict[str, list[float]] = {}
    for base, t0 in seen.items():
        (b, k), = base.items()
        ratios.setdefault(b, []).append(t0 / k)
    for p in probes:
        p.rate = float(np.median(ratios[p.blocker])) if p.blocker in ratios else None


def fit_uops(probes: list[Probe]) -> dict[frozenset[str], int]:
    """Whole µop counts per blocked set that best explain all of a scheme's estimates at once:
    the estimate for Q should be the µops on Q and its subsets. Weighted least squares (an
    estimate's noise grows with the copies k; more samples shrink it) from Alg. 6.1's rounded
    subset chain, improved by ±1 steps while the error falls."""
    sets = [p.q for p in probes]
    xs = [p.x for p in probes]
    w = [len(p.samples) / (p.copies() + max(p.x, 0)) ** 2 for p in probes]
    subs = [[b for b, qb in enumerate(sets) if qb <= qa] for qa in sets]
    n = [0] * len(sets)
    for a in range(len(sets)):   # topological order: every subset of a set comes first
        n[a] = max(0, round(xs[a] - sum(n[b] for b in subs[a] if b != a)))

    def err(v: list[int]) -> float:
        return sum(wa * (xa - sum(v[b] for b in sa)) ** 2 for wa, xa, sa in zip(w, xs, subs))

    best = err(n)
    improved = True
    while improved:
        improved = False
        for a in range(len(sets)):
            for d in (-1, 1):
                if n[a] + d < 0:
                    continue
                n[a] += d
                e = err(n)
                if e < best - 1e-12:
                    best, improved = e, True
                else:
                    n[a] -= d
    return {q: c for q, c in zip(sets, n) if c > 0}


def parts(suite: Suite) -> list[frozenset[str]]:
    """The maximal blocked sets (none inside another), smallest first."""
    sets = {q for _, q in suite}
    return sorted((q for q in sets if not any(q < s for s in sets)), key=lambda q: (len(q), sort_ports(q)))


def full_check(i: str, found: dict[frozenset[str], int], suite: Suite, blocking: PortMapping, r_max: float | None,
               o: ExplainOptions, max_copies: int = 8) -> tuple[Experiment | None, frozenset[str], list[frozenset[str]]]:
    """An experiment that shows any µop the characterisation missed, wherever it hides inside the
    parts it loads, and the parts the front end keeps it from loading.

    A µop on a set that lies inside no blocked set evades every probe (a µop on all four ports
    of a machine whose blocking instructions hold [0,1] and [2,3] stays on neither). Filled so
    that every port of the parts U holding the scheme's µops, and of as many other parts as the
    front end lets it load, carries the same work as the scheme's own bottleneck, the
    experiment keeps all of U busy: a missed µop anywhere in U adds 1/|U| cycles per copy,
    and the found µops alone run at exactly that level (``{i00: 1, [2,3]-blocker: 4}``: 2.0
    cycles for 4×[0,1], 2.5 with two more µops on [0..3]). A part whose filling would make
    the front end the bottleneck is left out and returned: that the scheme has no µop across it
    and the rest stays unchecked. Returns (experiment or None, U, parts left out)."""
    if not found:
        return None, frozenset(), []
    blocker = {q: b for b, q in suite}
    per_copy = {q: sum(u.count for u in blocking.uops[b] if u.ports <= q) for b, q in suite}
    level = bottleneck_of({q: n for q, n in found.items()})[0]       # the scheme's port bound, cycles per copy
    ps = parts(suite)
    mine = [q for q in ps if any(f <= q for f in found)]
    if not mine:
        return None, frozenset(), []

    def build(involved: list[frozenset[str]]) -> Experiment | None:
        for a in range(1, max_copies + 1):
            counts = {i: a}
            for q in involved:
                need = a * level * len(q) - a * sum(n for f, n in found.items() if f <= q)
                if need.denominator != 1 or int(need) % per_copy[q]:
                    break
                if need:
                    counts[blocker[q]] = counts.get(blocker[q], 0) + int(need) // per_copy[q]
            else:
                return Experiment(counts)
        return None

    def shows(e: Experiment, u: frozenset[str]) -> bool:
        """Does one more µop on U per copy of the scheme change the modelled time clearly?"""
        base = {b: blocking.uops[b] for b in e if b != i}
        m0 = PortMapping(blocking.ports, {**base, i: list(found.items())})
        m1 = PortMapping(blocking.ports, {**base, i: list(found.items()) + [(u, 1)]})
        t0, t1 = (float(v) for v in batch_inverse_throughput([(m0, e), (m1, e)], r_max))
        return t1 - t0 > 1.5 * o.tolerance * t0

    involved, left = list(mine), []
    best = build(involved)
    if best is None or not shows(best, frozenset().union(*involved)):
        return None, frozenset(), ps
    for q in ps:
        if q in mine:
            continue
        e = build(involved + [q])
        if e is not None and shows(e, frozenset().union(*involved, q)):
            involved.append(q)
            best = e
        else:
            left.append(q)
    return best, frozenset().union(*involved), left


def _held_out(i: str, found: dict[frozenset[str], int], suite: Suite, on_q: dict, r_max: float | None,
              run: int) -> list[Experiment]:
    """Two experiments per scheme that its characterisation does not use: two copies of it with
    half the flooding of a set it uses, and one copy with one of two blocking instructions."""
    rng = random.Random(f"{i}/{run}")
    used = [(b, q) for b, q in suite if q in found] or suite
    b, q = rng.choice(used)
    n = sum(found.values()) or 1
    k = max(1, flooding_copies(len(q), n, on_q[(b, q)], r_max) // 2)
    out = [Experiment({b: k, i: 2})]
    others = [x for x, _ in suite if x != b]
    if others:
        out.append(Experiment({i: 1, b: 1, rng.choice(others): 1}))
    return out


def stand_in(e: Experiment, i: str, found: dict[frozenset[str], int],
             stand: dict[frozenset[str], str]) -> Experiment | None:
    """``e`` with scheme ``i`` replaced by its µops as blocking instructions (``stand``: one per
    port set, one µop on exactly it), or None when a µop's set has none or ``e`` is without the
    scheme (a blocking instruction's baseline: in the second pass a derived one can miss)."""
    if not found or i not in dict(e.items()) or any(q not in stand for q in found):
        return None
    counts = {n: c for n, c in e.items() if n != i}
    for q, n in found.items():
        counts[stand[q]] = counts.get(stand[q], 0) + n * dict(e.items())[i]
    return Experiment(counts)


def _canonical_uops(found: dict[frozenset[str], int]) -> tuple[tuple[tuple[str, ...], int], ...]:
    return tuple(sorted(((tuple(sort_ports(q)), n) for q, n in found.items()), key=lambda x: (len(x[0]), x[0])))


def _witness(p: Probe, mod: float | None, mod0: float | None) -> Witness:
    e, base, t, t0 = p.samples[-1]
    return Witness("blocking", e, t, mod, base, t0, mod0, tuple(sort_ports(p.q)), round(p.x, 4))


def _fmt(uops: list[tuple[frozenset[str], int]]) -> str:
    return " + ".join(f"{n}×[{','.join(sort_ports(q))}]" for q, n in uops) or "(none)"
