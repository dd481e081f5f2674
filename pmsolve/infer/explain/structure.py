"""The port structure of the blocking instructions without a µop counter (sec. 6.2.1 step 4,
counter-free).

With a counter, a blocking candidate is known to be one µop. By throughput alone, "one µop on
s ports" is only a hypothesis: k µops on a k·s-port set, or µops on several small sets, look
the same in isolation. Here the hypotheses meet experiments that can refute them:

1. **pairs** — every two class representatives i, j run together as ``{i↦1, j↦1}`` and balanced
   as ``{i↦s_i, j↦s_j}`` (each alone would need one cycle). Disjoint port sets give the larger
   of the parts (or the front-end limit); anything slower shows that i and j interact;
2. **components** — representatives linked by interactions form components; components use
   disjoint ports, so each is solved alone and gets its own, *inferred*, number of ports. A
   component larger than ``max_component`` is split at the candidate that links its parts
   (:func:`split_large`; that candidate is characterised like any scheme);
3. **ports** — per component, CEGIS (:mod:`pmsolve.infer.cegis`, fixed µop counts, port-set
   sizes s) runs with P = P_lo, P_lo + 1, … ports; the first P whose space explains every
   measurement (pairs, random mixes of the component's candidates, whatever CEGIS adds) is the
   component's port count. P_lo is the largest total size of representatives that are pairwise
   disjoint (they need that many ports between them); P_hi is P_lo + ``extra_ports`` (at most
   the sum of the sizes), and the search stops early when the unsat core has room for any
   arrangement of its instructions already;
4. **multiplicities** — when no P up to P_hi explains the measurements, the most suspect
   instruction of the unsat core is tried as k µops on one k·s-port set (k = 2, 3, …), again
   with the smallest sufficient P (in the pair screening, a multiplicity stands only after
   :func:`confirmations`);
5. **slow schedules** — a contradicted pair that some overlap explains once the pair experiments
   *slower* than that overlap's bound are set aside is kept: real schedulers do not always reach
   the port bound of a small loop (on a Zen 4 ``{imul r64: 1, mov r64, imm: 4}`` takes 1.62
   cycles where the ports allow 1.25, and a GPR load with a vector load 0.75 cycles in the
   ``{1, 1}`` pair while their balanced pair fits an overlap of two ports exactly). The set-aside
   experiments are reported as outside the model, never fed to CEGIS; a hardware never beats its
   port bound, so a pair *faster* than every overlap is no slow schedule. At most
   ``slow_pairs`` such pairs per candidate: a candidate slow with many partners is a wrong
   hypothesis, not a bad day of the scheduler. Likewise a component whose unsat core rests on
   its random mixes is solved without them, and the mixes the mapping found predicts faster
   than measured (at most ``slow_pairs``) are set aside;
6. **drops** — a suspect no multiplicity rescues is dropped from the blocking instructions with
   the core that contradicts it (its class members are characterised like any other scheme);
   the rest go on. Never does a failing class stop the others. A candidate dropped in the
   pair screening comes back when the candidates left contradict it only by slow schedules
   within the budget: the greedy order may drop it before the impostor it clashed with. Whom to
   drop is weighed by :func:`weights`; blocking instructions that span fewer ports than the
   peak experiment ran instructions per cycle are inferred again with the peak's members last.

The result has the shape of :func:`pmsolve.infer.explain.blocking.infer_blocking`'s.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from itertools import combinations, permutations
from typing import Any

from pmsolve.formats import mapping_to_json
from pmsolve.errors import SolverError
from pmsolve.infer.cegis import CegisOptions, infer
from pmsolve.infer.explain.blocking import dropped_candidate
from pmsolve.infer.explain.options import ExplainOptions
from pmsolve.infer.explain.stages import simplicity
from pmsolve.model import Experiment, PortMapping
from pmsolve.throughput import batch_inverse_throughput

Progress = Callable[[str], None]


def pair_experiments(reps: list[str], size: dict[str, int]) -> list[Experiment]:
    """``{i↦1, j↦1}``, the balanced ``{i↦s_i, j↦s_j}`` and the flooding ``{i↦s_i, j↦1}`` and
    ``{i↦1, j↦s_j}`` (:func:`flooding`) for every two representatives."""
    out: dict[Experiment, None] = {}
    for a, b in combinations(reps, 2):
        for e in ({a: 1, b: 1}, {a: size[a], b: size[b]}, {a: size[a], b: 1}, {a: 1, b: size[b]}):
            out[Experiment(e)] = None
    return list(out)


def confirmations(reps: list[str], size: dict[str, int], mult: dict[str, int]) -> list[Experiment]:
    """``{j↦2·s_j, i↦1}`` for every candidate i posed as several µops on one set (``mult``) and
    every other j. The pair experiments tell that hypothesis from the truth by a third of a cycle
    at most: a 2-µop scheme with one µop confined to j's 3 ports and one on 4 reads 1.33 in
    ``{j↦3, i↦1}`` where "2 µops on 4 ports" says 1.25, inside ε per instruction with 1 % noise.
    With j's set filled twice the confined µop costs 1/s_j on top of 2 cycles (2.33 against
    2.0), beyond any tolerance."""
    return [Experiment({j: 2 * size[j], i: 1}) for i in sorted(mult) for j in reps if j != i]


def flooding(e: Experiment, size: dict[str, int]) -> bool:
    """Is e a pair ``{i↦s_i, j↦1}``: one candidate's copies fill its port set, and one copy of the
    other either evades them or adds one µop to them? That is the experiment the blocking suite
    exists for (the characterisation measures every scheme so), and it tells whether j's set lies
    inside i's. The other pair experiments tell how much the two sets overlap, and there a real
    scheduler can fall short of the port bound with every partner: on a Zen 3 a GPR load beside
    an ALU operation takes 0.43 cycles where disjoint sets allow 0.33, and the balanced pair
    {4 ALU, 3 loads} 1.64 where they allow 1.0, while four ALU operations and a load take 1.0."""
    c = dict(e.items())
    return len(c) == 2 and any(c[x] == size.get(x) and c[y] == 1 for x, y in permutations(c))


def disjoint_prediction(e: Experiment, size: dict[str, int], r_max: float | None) -> float:
    """tp⁻¹ of e if every instruction in it were one µop on its own s ports, disjoint from the others."""
    t = max(n / size[i] for i, n in e.items())
    return max(t, e.size / r_max) if r_max else t


def interacts(e: Experiment, t: float, size: dict[str, int], r_max: float | None, o: ExplainOptions) -> bool:
    """Is the measured ``t`` clearly slower than disjoint port sets allow?"""
    d = disjoint_prediction(e, size, r_max)
    return t > d + max(o.epsilon * e.size, o.tolerance * d)


def pair_bound(e: Experiment, i: str, j: str, width: dict[str, int], mult: dict[str, int], union: int,
               r_max: float | None) -> float:
    """tp⁻¹ of a pair experiment e when i and j are each ``mult`` µops on one set of ``width``
    ports and the two sets span ``union`` ports (two sets: the bottleneck is one of them or both)."""
    c = dict(e.items())
    a, b = c.get(i, 0) * mult.get(i, 1), c.get(j, 0) * mult.get(j, 1)
    return max(a / width[i], b / width[j], (a + b) / union, e.size / r_max if r_max else 0.0)


def slack(e: Experiment, t: float, o: ExplainOptions) -> float:
    """How far a measured ``t`` of ``e`` may be from a structure's prediction: ε per instruction
    or ``tolerance`` relative to t, whichever is larger."""
    return max(o.cegis_epsilon * e.size, o.tolerance * t)


def slow_summary(slow: list[dict[str, Any]], shown: int = 3) -> str:
    """The set-aside slow schedules in one line, the first ``shown`` with measurement and bound."""
    return "; ".join(f"{Experiment(a['experiment'])} = {a['measured']:.4g} (bound {a['bound']:.4g})"
                     for a in slow[:shown]) + ("; …" if len(slow) > shown else "")


def pair_consistent(i: str, j: str, exps: list[tuple[Experiment, float]], width: dict[str, int],
                    mult: dict[str, int], r_max: float | None, o: ExplainOptions) -> bool:
    """Can i and j, each ``mult`` µops on one port set of ``width`` ports, explain their pair
    experiments with *some* overlap of the two sets? (No solver needed: :func:`pair_bound`.)"""
    for overlap in range(0, min(width[i], width[j]) + 1):
        union = width[i] + width[j] - overlap
        if all(abs(t - pair_bound(e, i, j, width, mult, union, r_max))
               <= slack(e, t, o) for e, t in exps):
            return True
    return False


def slow_schedules(i: str, j: str, exps: list[tuple[Experiment, float]], width: dict[str, int],
                   mult: dict[str, int], r_max: float | None, o: ExplainOptions) -> list[tuple[Experiment, float, float]]:
    """The pair experiments to set aside as slow schedules, as (experiment, measured, bound), when
    some overlap of the two sets (the largest first) reproduces at least one of them and no
    measurement is faster than its bound; [] when there is no such overlap. Once one experiment
    of the pair is slow, so is a flooding one (:func:`flooding`, the experiment that says whether
    one set lies inside the other) that runs slower than its bound by more than the relative
    ``tolerance``, while another experiment still fits: ε per instruction is how far a fit may be,
    not evidence that a flooding experiment 7 % over its bound fits.
    On the Zen 5 ``{mov r64, m64: 4, vmovdqa xmm, m128: 1}`` (bound 1.25) voted 1.42 in some runs
    and 1.34 in others (1.42, 1.36 and 1.26 in three layouts, GPR and vector loads slowing each
    other as no port does, RESULTS §1.35), within ε·5 = 0.1 of 1.25; kept as a fit beside the
    pair's slow {1, 1} and {4, 2}, it joined the two in one component whose random mixes no
    mapping explained, and ``mov r64, m64`` was dropped from the blocking instructions (three of
    eight ``--all`` runs, each 1.3 points of held-out MAPE worse; RESULTS §1.39)."""
    size = {x: width[x] // mult.get(x, 1) for x in (i, j)}
    for overlap in range(min(width[i], width[j]), -1, -1):
        union = width[i] + width[j] - overlap
        fit, slow = [], []
        for e, t in exps:
            pred = pair_bound(e, i, j, width, mult, union, r_max)
            tol = slack(e, t, o)
            if t < pred - tol:
                break
            (slow if t > pred + tol else fit).append((e, t, pred))
        else:
            over = ([x for x in fit if x[1] > x[2] * (1 + o.tolerance) and flooding(x[0], size)]
                    if slow and o.tolerance else [])
            if len(over) < len(fit):      # never the last experiment that fits
                slow += over
                fit = [x for x in fit if x not in over]
            if fit:
                return slow
    return []


def screen(reps: list[str], size: dict[str, int], class_size: dict[str, float], values: dict[Experiment, float],
           r_max: float | None, o: ExplainOptions, progress: Progress
           ) -> tuple[list[str], dict[str, int], list[dict], list[dict]]:
    """Pairwise screening before any solver runs: a pair no overlap of two µop port sets explains
    contradicts the single-µop hypothesis of one of the two. The representative in most such
    contradictions is tried as k µops on a k·s set (k = 2, …); failing that, pairs that only a
    slow schedule contradicts are set aside (at most ``o.slow_pairs`` per candidate; step 5 of
    the module doc); failing that, the lightest cover of the contradicted pairs leaves the
    blocking instructions. Repeat until every pair is consistent; then a dropped candidate that
    the ones left contradict only by slow schedules comes back (on a Zen 4 ``mov r64, m64`` went
    for its pairs with a zmm load that went after it). Returns the active candidates, their
    multiplicities, the dropped ones and the set-aside experiments. ``class_size`` weighs the
    candidates (:func:`weights`)."""
    by_pair: dict[frozenset[str], list[tuple[Experiment, float]]] = {}
    for e, t in values.items():
        by_pair.setdefault(frozenset(e), []).append((e, t))
    active, mult, dropped, aside = list(reps), {}, [], []
    slow_count: dict[str, int] = {}

    def width() -> dict[str, int]:
        return {i: size[i] * mult.get(i, 1) for i in reps}

    def bad_pairs(members: list[str], w: dict[str, int], m: dict[str, int]) -> list[frozenset[str]]:
        return [pair for pair in by_pair if pair <= set(members)
                and not pair_consistent(*sorted(pair), by_pair[pair], w, m, r_max, o)]

    def charged(pair: frozenset[str], slow: list[tuple[Experiment, float, float]]) -> bool:
        """Does setting ``slow`` aside spend the pair's budget? Not when the pair's flooding
        experiments all fit (:func:`flooding`): then only how much the sets overlap is in doubt."""
        anchors = [e for e, _ in by_pair[pair] if flooding(e, size)]
        return not anchors or any(flooding(e, size) for e, _, _ in slow)

    def put_aside(i: str, j: str, slow: list[tuple[Experiment, float, float]]) -> None:
        pair = frozenset((i, j))
        spend = charged(pair, slow)
        for e, t, bound in slow:
            progress(f"  {e} = {t:.4g} is slower than the port bound {bound:.4g} of the overlap of {i} "
                     f"and {j} that fits their other pair experiments: set aside as a slow schedule")
            aside.append({"experiment": dict(e.items()), "measured": float(t), "bound": float(bound),
                          "pair": [i, j]})
        gone = {e for e, _, _ in slow}
        by_pair[pair] = [x for x in by_pair[pair] if x[0] not in gone]
        if spend:
            slow_count[i], slow_count[j] = slow_count.get(i, 0) + 1, slow_count.get(j, 0) + 1

    def reinstate() -> bool:
        """Bring back the first dropped candidate whose contradictions with the candidates left
        are all slow schedules within everyone's budget: it was dropped for pairs with a
        candidate dropped after it (an impostor that, dropped first, would have spared it)."""
        if not o.slow_pairs:
            return False
        for k, d in enumerate(dropped):
            x = d["insn"]
            mine = [p for p in bad_pairs(active + [x], width(), mult) if x in p]
            slows = [slow_schedules(*sorted(p), by_pair[p], width(), mult, r_max, o) for p in mine]
            if not all(slows):
                continue
            spent = [p for p, slow in zip(mine, slows) if charged(p, slow)]
            if slow_count.get(x, 0) + len(spent) > o.slow_pairs or any(
                    slow_count.get(y, 0) + 1 > o.slow_pairs for p in spent for y in p - {x}):
                continue
            progress(f"  {x} is a blocking candidate again: the candidates left contradict it only by "
                     f"{len(mine)} slow schedule(s)")
            for p, slow in zip(mine, slows):
                put_aside(*sorted(p), slow)
            active.append(x)
            del dropped[k]
            return True
        return False

    while True:
        bad = bad_pairs(active, width(), mult)
        if not bad:
            if reinstate():
                continue
            return sorted(active), mult, dropped, aside
        score: dict[str, int] = {}
        for pair in bad:
            for i in pair:
                score[i] = score.get(i, 0) + 1
        top = max(score.values())
        tied = sorted((i for i in score if score[i] == top), key=lambda i: (size[i], [-x for x in simplicity(i)[:2]], i))
        rescued = None
        for cand in (i for i in tied if i not in mult):
            for k in range(2, o.max_multiplicity + 1):
                if size[cand] * k > o.max_ports:
                    break
                trial = {**mult, cand: k}
                w = {i: size[i] * trial.get(i, 1) for i in reps}
                if not [p for p in bad_pairs(active, w, trial) if cand in p]:
                    progress(f"  {cand}: {k} µops on {k * size[cand]} ports explain its pairs")
                    rescued = trial
                    break
            if rescued:
                break
        if rescued:
            mult = rescued
            continue
        set_aside = False
        before = dict(slow_count)
        plans = {pair: slow_schedules(*sorted(pair), by_pair[pair], width(), mult, r_max, o) for pair in bad}
        free = {pair for pair, slow in plans.items() if slow and not charged(pair, slow)}
        cost = {x: score[x] - sum(1 for p in free if x in p) for x in score}   # contradictions that spend
        for pair in sorted(bad, key=lambda p: (sum(score[x] for x in p), sorted(p))):
            i, j = sorted(pair)
            # only a candidate whose every contradiction fits in its budget: the budget of a good
            # candidate is not spent on the pairs of an impostor
            if not o.slow_pairs or not plans[pair] or (pair not in free and any(
                    cost[x] + before.get(x, 0) > o.slow_pairs for x in (i, j))):
                continue
            put_aside(i, j, plans[pair])
            set_aside = True
        if not set_aside:
            # the lightest set of candidates whose removal leaves no contradicted pair: on a Zen 4
            # the greedy choice (most contradictions first) kept 512-bit candidates in one run and
            # lost every 128/256-bit vector class to them; the cover keeps the classes that stand
            # for the most schemes (and the same ones from run to run)
            drop = lightest_cover(bad, class_size)
            tied = sorted((i for i in score if i in drop), key=lambda i: -score[i])
            top = score[tied[0]]
            worst = min((i for i in tied if score[i] == top),
                        key=lambda i: (class_size.get(i, 1), [-x for x in simplicity(i)[:2]], i))
            exps = [x for pair in bad if worst in pair for x in by_pair[pair]]
            reason = (f"one µop on {size[worst]} port(s) contradicts {score[worst]} pair(s) with other blocking "
                      f"candidates, and so do 2–{o.max_multiplicity} µops on one set")
            progress(f"  dropping {worst}: {reason}")
            dropped.append(dropped_candidate(worst, reason, exps))
            active.remove(worst)
            mult.pop(worst, None)


def lightest_cover(pairs: list[frozenset[str]], weight: dict[str, float], limit: int = 200_000) -> set[str]:
    """A least-weight set of candidates that meets every pair (weight: the schemes a candidate's
    class stands for), by branching on an uncovered pair; after ``limit`` branches the best found."""
    best: list = [None, float("inf")]
    edges = [tuple(sorted(p)) for p in pairs]
    steps = [0]

    def go(left: list[tuple[str, str]], cover: frozenset[str], w: float) -> None:
        steps[0] += 1
        if w >= best[1] or steps[0] > limit:
            return
        if not left:
            best[0], best[1] = cover, w
            return
        for x in sorted(left[0], key=lambda i: weight.get(i, 1)):
            go([e for e in left if x not in e], cover | {x}, w + weight.get(x, 1))

    go(edges, frozenset(), 0)
    return set(best[0] if best[0] is not None else {i for e in edges for i in e})


def components(reps: list[str], interacting: set[frozenset[str]]) -> list[list[str]]:
    """Connected components of the interaction graph, each sorted, largest first."""
    parent = {r: r for r in reps}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pair in interacting:
        a, b = sorted(pair)
        parent[find(a)] = find(b)
    groups: dict[str, list[str]] = {}
    for r in reps:
        groups.setdefault(find(r), []).append(r)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g))


def split_large(comp: list[str], interacting: set[frozenset[str]], class_size: dict[str, float],
                limit: int) -> tuple[list[list[str]], list[str]]:
    """A component of more than ``limit`` candidates, split at the candidates that link its parts:
    the one whose removal leaves the smallest largest part (then the smaller class, the simpler
    scheme) goes, until every part is within the limit or no single candidate splits what is
    left. A port search grows steeply with the component, and a link is often one slow pair.
    Returns the parts (largest first) and the candidates that went, in order."""
    todo, out, gone = [comp], [], []
    while todo:
        c = todo.pop(0)
        best = None
        for v in c if len(c) > limit else ():
            rest = [x for x in c if x != v]
            parts = components(rest, {p for p in interacting if p <= set(rest)})
            key = (max(map(len, parts)), class_size.get(v, 1), [-x for x in simplicity(v)[:2]], v)
            if len(parts) > 1 and (best is None or key < best[0]):
                best = (key, v, parts)
        if best is None:
            out.append(c)
        else:
            gone.append(best[1])
            todo = best[2] + todo
    return sorted(out, key=lambda g: (-len(g), g)), gone


def port_lower_bound(comp: list[str], size: dict[str, int], mult: dict[str, int],
                     interacting: set[frozenset[str]]) -> int:
    """Pairwise non-interacting representatives have disjoint port sets: the largest total
    size of such a set (greedy, largest first) is a lower bound on the component's ports."""
    width = {i: size[i] * mult.get(i, 1) for i in comp}
    best = max(width.values())
    for start in comp:
        chosen = [start]
        for i in sorted(comp, key=lambda x: -width[x]):
            if i not in chosen and all(frozenset((i, c)) not in interacting for c in chosen):
                chosen.append(i)
        best = max(best, sum(width[c] for c in chosen))
    return best


def random_mixes(comp: list[str], size: dict[str, int], n: int, seed: int) -> list[Experiment]:
    """``n`` mixes of three or four of the component's representatives, about balanced."""
    rng = random.Random(seed)
    out: dict[Experiment, None] = {}
    if len(comp) < 3:
        return []
    for _ in range(20 * n):
        if len(out) >= n:
            break
        picked = rng.sample(comp, min(len(comp), rng.choice((3, 4))))
        out[Experiment({i: max(1, size[i] + rng.choice((-1, 0, 0, 1))) for i in picked})] = None
    return list(out)


def infer_structure(oracle: Any, classes: list[dict[str, Any]], single: dict[str, Any], r_max: float | None,
                    o: ExplainOptions, progress: Progress, peak: frozenset[str] = frozenset(),
                    peak_ipc: float | None = None) -> dict[str, Any]:
    """Port structure of the class representatives; JSON-ready (see the module doc).

    A dropped or redundant representative may be the wrong one of a sound class (a load that
    also computes is additive with the pure loads of its class): its next member stands in for
    it, up to ``o.max_stand_ins`` times per class, and the structure is inferred again.

    ``peak``/``peak_ipc``: the members of the peak experiment and the instructions per cycle it
    ran at. Every instruction is at least one µop, so the machine has at least that many ports
    when no member is eliminated; blocking instructions spanning fewer have lost some to
    impostors (a 1-cycle scheme of several µops posing as one port, of a larger class than the
    2-port blocking instruction it clashed with). Then the screening runs again with the peak's
    members dropped only when nothing else resolves a clash, and the result with more ports
    stands."""
    t0 = time.perf_counter()
    got = _screened(oracle, classes, r_max, o, progress, peak, False)
    ports = len(got["mapping"]["ports"]) if got.get("mapping") else 0
    if peak and peak_ipc and ports < math.floor(peak_ipc + 0.25):
        progress(f"  the blocking instructions span {ports} port(s), but the peak experiment ran {peak_ipc:.3g} "
                 f"instructions per cycle: screening again with its members ({', '.join(sorted(peak))}) kept first")
        again = _screened(oracle, classes, r_max, o, progress, peak, True)
        if again.get("mapping") and len(again["mapping"]["ports"]) > ports:
            got = again
    got["seconds"] = time.perf_counter() - t0
    return got


def weights(classes: list[dict[str, Any]], peak: frozenset[str], protect: bool) -> dict[str, float]:
    """What dropping a candidate costs, wherever one must go (the cover of contradicted pairs,
    the blame in an unsat core, the split of a large component): the schemes its class stands
    for, and for a member of the peak experiment a bonus, below one scheme in all (a tie-break:
    the peak's members ran together at the peak IPC, so between them they hold that many
    ports), or with ``protect`` above all other candidates together."""
    size = {c["rep"]: 1 + len(c["members"]) for c in classes}
    bonus = sum(size.values()) + 1 if protect else 1 / (len(size) + 1)
    return {i: n + bonus * (i in peak) for i, n in size.items()}


class Metered:
    """The oracle, timed: :meth:`working` is the seconds since it was wrapped that were not spent
    measuring. ``structure_seconds`` bounds the stage's own work (port searches, multiplicity
    trials), not the measuring: beside a neighbour on the core the Zen 3 measured 2-5 experiments
    a second, the stage's pairs alone took longer than the budget, and a run dropped its
    contradicted candidates without trying a multiplicity, where a quiet run tried them."""

    def __init__(self, oracle: Any):
        self.oracle, self.t0, self.measuring = oracle, time.perf_counter(), 0.0

    def measure(self, experiments: Sequence[Experiment]) -> list[float]:
        t = time.perf_counter()
        try:
            return self.oracle.measure(experiments)
        finally:
            self.measuring += time.perf_counter() - t

    def working(self) -> float:
        return time.perf_counter() - self.t0 - self.measuring

    def past(self, seconds: float | None) -> bool:
        """More than ``seconds`` of work so far (never, for None: no budget)."""
        return seconds is not None and self.working() > seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(self.oracle, name)


def _screened(oracle: Any, classes: list[dict[str, Any]], r_max: float | None, o: ExplainOptions,
              progress: Progress, peak: frozenset[str], protect: bool) -> dict[str, Any]:
    """One pass of :func:`infer_structure`: pairs, screening, stand-ins, components, with the
    candidates weighed by :func:`weights`."""
    oracle = budget = Metered(oracle)
    spare = {c["rep"]: [m["insn"] for m in c["members"]][:o.max_stand_ins] for c in classes}
    reps = [c["rep"] for c in classes]
    size = {c["rep"]: c["size"] for c in classes}
    class_size = weights(classes, peak, protect)

    def stand_in(gone: list[str]) -> bool:
        swaps = [(i, spare[i][0]) for i in gone if spare.get(i)]
        for rep, member in swaps:
            progress(f"  {member} stands in for {rep} as the blocking candidate of its class")
            reps[reps.index(rep)] = member
            spare[member] = spare.pop(rep)[1:]
            size[member], class_size[member] = size[rep], class_size[rep]
        return bool(swaps)

    for _ in range(2):   # a second round only when a redundant candidate's class has a stand-in
        values: dict[Experiment, float] = {}
        while True:      # pairs and screening are cheap: stand-ins are tried until none is left
            pairs = [e for e in pair_experiments(sorted(reps), size) if e not in values]
            progress(f"{len(pairs)} pair experiment(s) among {len(reps)} blocking candidate(s)")
            values.update(zip(pairs, oracle.measure(pairs)))
            active, mult, dropped, aside = screen(sorted(reps), size, class_size, values, r_max, o, progress)
            more = [e for e in confirmations(sorted(reps), size, mult) if e not in values]
            if more:     # a multiplicity stands only once its confirmations are measured
                progress(f"{len(more)} experiment(s) to confirm {', '.join(sorted(mult))} as several µops on "
                         f"one set")
                values.update(zip(more, oracle.measure(more)))
                continue
            if not stand_in([d["insn"] for d in dropped]):
                break
        slow = {Experiment(a["experiment"]) for a in aside}
        got = _structure(oracle, active, mult, dropped, size, class_size,
                         {e: t for e, t in values.items() if e not in slow}, r_max, o, progress, budget)
        got["slow_schedules"] = aside + got["slow_schedules"]
        late = budget.past(o.structure_seconds)
        if late and got.get("redundant") and any(spare.get(i) for i in got["redundant"]):
            progress("  past the structure stage's time budget: no second round for the stand-ins of redundant "
                     "candidates")
        if late or not stand_in(got.get("redundant", [])):
            break
    return got


def _structure(oracle: Any, active: list[str], mult: dict[str, int], dropped: list[dict[str, Any]],
               size: dict[str, int], class_size: dict[str, float], values: dict[Experiment, float],
               r_max: float | None, o: ExplainOptions, progress: Progress,
               budget: "Metered | None" = None) -> dict[str, Any]:
    """Components, their port counts and structure (steps 2-5) for the screened candidates."""
    dropped = list(dropped)
    interacting = {frozenset(e) for e, t in values.items()
                   if set(e) <= set(active) and interacts(e, t, size, r_max, o)}

    def split(comps: list[list[str]]) -> list[list[str]]:
        if o.max_component is None:
            return comps
        out = []
        for c in comps:
            parts, gone = split_large(c, interacting, class_size, o.max_component)
            for x in gone:
                links = [(e, t) for e, t in values.items() if set(e) <= set(c) and x in e
                         and frozenset(e) in interacting]
                reason = (f"it links {' and '.join(str(len(p)) for p in parts)} other blocking candidates into a "
                          f"component of {len(c)}, more than {o.max_component} for one port search")
                progress(f"  dropping {x} from the blocking instructions: {reason}")
                dropped.append(dropped_candidate(x, reason, links))
            out += parts
        return out

    work = split(components(active, interacting))
    progress(f"{len(work)} independent component(s): " + "; ".join(", ".join(c) for c in work))
    mapping: dict[str, list] = {}
    ports: list[str] = []
    summary: list[dict[str, Any]] = []
    measurements: list[list] = []
    slow: list[dict[str, Any]] = []
    added = 0
    while work:
        comp = work.pop(0)
        cid = len(summary)
        got = _solve_component(oracle, cid, comp, size, class_size, values, interacting, r_max, o, progress,
                               {i: mult[i] for i in comp if i in mult}, budget)
        if got["dropped"] is not None:      # one victim left: what remains may fall apart
            dropped.append(got["dropped"])
            rest = [i for i in comp if i != got["dropped"]["insn"]]
            parts = split(components(rest, {x for x in interacting if x <= set(rest)}))
            work = parts + work
            continue
        summary.append({k: v for k, v in got.items() if k not in ("mapping", "measurements", "dropped",
                                                                  "slow_schedules")})
        slow += got["slow_schedules"]
        measurements += got["measurements"]
        added += got["added_experiments"]
        m: PortMapping = got["mapping"]
        names = {p: str(len(ports) + k) for k, p in enumerate(m.ports)}
        ports += list(names.values())
        for i, us in m.uops.items():
            mapping[i] = [(frozenset(names[p] for p in u.ports), u.count) for u in us]
    # a candidate taken as k µops on one set is a hypothesis the other candidates could not refute;
    # where a single-µop candidate blocks the same set, it is not needed: characterise it instead
    single_sets = {us[0][0] for us in mapping.values() if len(us) == 1 and us[0][1] == 1}
    redundant = sorted(i for i, us in mapping.items() if not (len(us) == 1 and us[0][1] == 1)
                       and all(q in single_sets for q, _ in us))
    for i in redundant:
        progress(f"  {i} ({' + '.join(f'{n}×{len(q)} ports' for q, n in mapping[i])}) is not needed as a "
                 "blocking instruction: it will be characterised like any scheme")
        del mapping[i]
    if not mapping:
        return {"status": "none", "mapping": None, "proof": "no blocking instruction survived", "dropped": dropped,
                "components": summary, "measurements": measurements, "added_experiments": added,
                "equivalent": [], "slow_schedules": slow}
    result = PortMapping(ports, mapping)
    proofs = "; ".join(f"component {s['component']}: {s['proof']}" for s in summary if s.get("proof"))
    return {"status": "inferred", "mapping": mapping_to_json(result), "proof": proofs, "equivalent": [],
            "measurements": measurements, "added_experiments": added, "dropped": dropped, "components": summary,
            "redundant": redundant, "slow_schedules": slow,
            "ports": len(ports), "multiplicities": {i: len(us) for i, us in mapping.items() if len(us) > 1 or
                                                   us[0][1] > 1}}


def _solve_component(oracle: Any, cid: int, comp: list[str], size: dict[str, int], class_size: dict[str, float],
                     pair_values: dict[Experiment, float], interacting: set[frozenset[str]], r_max: float | None,
                     o: ExplainOptions, progress: Progress, mult: dict[str, int],
                     budget: "Metered | None" = None) -> dict[str, Any]:
    """Ports and multiplicities for one component (steps 3-4 of the module doc), or the one
    instruction to drop (step 5) under ``dropped``. Past the ``budget`` (``structure_seconds`` of
    the stage's own work) no multiplicity is tried: the suspect is dropped at once."""
    mixes = random_mixes(comp, size, min(12, 2 * len(comp)), seed=len(comp))
    mixed = dict(zip(mixes, oracle.measure(mixes)))
    extra = [e for e in pair_values if set(e) <= set(comp)] + mixes
    res, core, runs = _port_search(oracle, cid, comp, size, mult, extra, interacting, r_max, o, progress)
    aside: list[dict[str, Any]] = []
    if res is None and core is not None and o.slow_pairs:
        res, aside, n, last = _without_slow_mixes(oracle, cid, comp, size, mult, extra, mixed, core, interacting,
                                                  r_max, o, progress)
        runs += n
        core = last or core
    if res is None:
        # blame order: a multiplicity is itself a hypothesis, then small classes, then memory forms
        blame = lambda i: (-mult.get(i, 1), class_size.get(i, 1), [-x for x in simplicity(i)[:2]], i)  # noqa: E731
        suspects = sorted((i for i in (core.instructions if core else comp) if i in comp), key=blame)
        late = budget is not None and budget.past(o.structure_seconds)
        if late:
            progress(f"  component {cid}: past the structure stage's time budget, no multiplicity is tried")
        if not late and (not suspects or suspects[0] not in mult):
            for victim in suspects[:1]:    # the most suspect one only: each trial is a port search
                for k in range(2, o.max_multiplicity + 1):
                    if size[victim] * k > o.max_ports or runs >= o.max_cegis_runs:
                        break
                    trial = {**mult, victim: k}
                    progress(f"  component {cid}: trying {victim} as {k} µops on {k * size[victim]} ports")
                    res, _, n = _port_search(oracle, cid, comp, size, trial, extra, interacting, r_max, o, progress)
                    runs += n
                    if res is not None:
                        mult = trial
                        break
                if res is not None:
                    break
        if res is None:
            victim = (suspects or sorted(comp, key=blame))[0]
            reason = core.describe() if core else f"no port structure with at most {o.max_ports} ports explains it"
            progress(f"  component {cid}: dropping {victim} from the blocking instructions ({reason})")
            return {"dropped": dropped_candidate(victim, reason, core.experiments if core else ())}
    return {"component": cid, "instructions": comp, "ports": len(res.mapping.ports), "proof": res.proof,
            "multiplicities": dict(mult), "cegis_runs": runs, "dropped": None, "mapping": res.mapping,
            "slow_schedules": aside,
            "measurements": [[dict(e.items()), float(t)] for e, t in res.measurements],
            "added_experiments": len(res.added_experiments)}


def _without_slow_mixes(oracle: Any, cid: int, comp: list[str], size: dict[str, int], mult: dict[str, int],
                        extra: list[Experiment], mixed: dict[Experiment, float], core: Any,
                        interacting: set[frozenset[str]], r_max: float | None, o: ExplainOptions,
                        progress: Progress) -> tuple[Any, list[dict[str, Any]], int, Any]:
    """Step 5 for a component: the random mixes in the unsat core are left out and the ports
    searched again, core after core (at most half the mixes); the mapping found stands only if
    it reproduces each mix left out or predicts it faster than measured (a slow schedule, set
    aside; never a mix faster than its bound), and sets aside at most ``o.slow_pairs``. A core
    names the mixes of one contradiction, not which of them is slow: the budget counts those
    the mapping found does not reproduce, not every mix left out on the way. Returns (CEGIS
    result, set-aside experiments, CEGIS runs, core), or (None, [], runs, core) when that does not
    work out, with the last core found: once the mixes are out, what still contradicts is what to
    blame (a core of pairs names the instructions of the contradiction left)."""
    out: list[Experiment] = []
    runs = 0
    res = None
    while res is None:
        more = [e for e, _ in core.experiments if e in mixed and e not in out] if core is not None else []
        if not more or len(out) + len(more) > max(o.slow_pairs, len(mixed) // 2):
            progress(f"  component {cid}: leaving out {len(out)} mix(es) did not explain it "
                     f"({'no more mixes in the core' if not more else 'too many mixes'})")
            return None, [], runs, core
        out += more
        res, core, n = _port_search(oracle, cid, comp, size, mult, [e for e in extra if e not in set(out)],
                                    interacting, r_max, o, progress)
        runs += n
    bounds = batch_inverse_throughput([(res.mapping, e) for e in out], r_max)
    aside = []
    for e, bound in zip(out, bounds):
        t = mixed[e]
        tol = slack(e, t, o)
        if t < float(bound) - tol:     # faster than the ports allow: the mapping is wrong
            return None, [], runs, core
        if t > float(bound) + tol:     # slower: a slow schedule (a mix it reproduces stays as it is)
            aside.append({"experiment": dict(e.items()), "measured": float(t), "bound": float(bound),
                          "component": sorted(comp)})
    if len(aside) > o.slow_pairs:
        progress(f"  component {cid}: the mapping that explains the rest leaves {len(aside)} slow mix(es), "
                 f"more than the budget of {o.slow_pairs}")
        return None, [], runs, core
    for a in aside:
        progress(f"  component {cid}: {Experiment(a['experiment'])} = {a['measured']:.4g} is slower than the "
                 f"port bound {a['bound']:.4g} of the mapping that explains everything else: set aside as a "
                 "slow schedule")
    return res, aside, runs, core


def _cegis_options(ports: list[str], comp: list[str], size: dict[str, int], mult: dict[str, int],
                   extra: list[Experiment], r_max: float | None, o: ExplainOptions, **kw: Any) -> CegisOptions:
    counts = {i: mult.get(i, 1) for i in comp}
    sizes = {i: [size[i] * counts[i]] * counts[i] for i in comp}
    shared = tuple(((i, 1), (i, r)) for i in comp for r in range(2, counts[i] + 1))
    return CegisOptions(ports=ports, instructions=comp, kind="fixed-counts", uops_per_insn=counts,
                        port_set_sizes=sizes, shared_uops=shared, noise_epsilon=o.cegis_epsilon, r_max=r_max,
                        extra_initial=tuple(extra), backend=o.backend, timeout=o.timeout, check_experiments=0, **kw)


def _needs_no_more_ports(oracle: Any, core: Any, size: dict[str, int], mult: dict[str, int],
                         r_max: float | None, o: ExplainOptions) -> bool:
    """Is the unsat core contradictory with room for any arrangement of its instructions (as
    many ports as their sets have together)? Then more ports cannot help. A small solver call."""
    insns = sorted(i for i in core.instructions if i in size)
    width = sum(size[i] * mult.get(i, 1) for i in insns)
    opts = _cegis_options([f"q{k}" for k in range(width)], insns, size, mult,
                          [e for e, _ in core.experiments if set(e) <= set(insns)], r_max, o,
                          initial="none", max_iterations=0, core="none")
    try:
        return infer(oracle, opts).status == "inconsistent"
    except SolverError:
        return False


def _port_search(oracle: Any, cid: int, comp: list[str], size: dict[str, int], mult: dict[str, int],
                 extra: list[Experiment], interacting: set[frozenset[str]], r_max: float | None,
                 o: ExplainOptions, progress: Progress):
    """The smallest port count whose space explains the measurements: (CEGIS result, None, runs),
    or (None, the last unsat core, runs). Stops early when the core needs no more ports."""
    lo = port_lower_bound(comp, size, mult, interacting)
    hi = min(o.max_ports, sum(size[i] * mult.get(i, 1) for i in comp), lo + o.extra_ports)
    core = None
    runs = 0
    for p in range(lo, hi + 1):
        try:
            res = infer(oracle, _cegis_options([f"c{cid}p{k}" for k in range(p)], comp, size, mult, extra, r_max, o,
                                               core="solver"))
        except SolverError as exc:     # a check that ran out of time: this port count stays open
            progress(f"  component {cid}: CEGIS gave no answer at {p} ports ({exc})")
            runs += 1
            continue
        runs += 1
        if res.status == "inferred" and res.mapping is not None:
            progress(f"  component {cid} ({len(comp)} instruction(s)): {p} ports; {res.proof}")
            return res, None, runs
        if res.status != "inconsistent":
            progress(f"  component {cid}: CEGIS stopped at {p} ports ({res.status}: {res.proof})")
        core = res.conflict
        if core is not None and p < hi and _needs_no_more_ports(oracle, core, size, mult, r_max, o):
            break
    return None, core, runs
