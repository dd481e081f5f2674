"""Transfers beside three-source forms: a bottleneck the ports cannot state (RESULTS §1.34).

On the Zen 5 a vector store (``vmovdqu32 m128, xmm``: 0.5 cycles alone, on the store-data
ports) beside a form that reads three vector registers (``vpaddd zmm{k}``, merge-masked; 0.27
alone, on the four vector pipes) takes 1.0 cycle a pair where the ports allow 0.5, and each
further copy of either adds 0.5: the two share something of two slots a cycle that neither
needs alone. The same holds for ``vmovd r32, xmm`` and the other moves out of the vector
registers, and for every form with three vector sources (FMAs, ``vpternlog``, ``vpermi2``,
``vpdpwssd``, every merge-masked form): 1,349 of the 4,958 vector forms ran over 0.25 cycles
slower beside the store than the mapping said. It goes away when the third source is the
result of the instruction just before (the bypass network), which points to register-file
read ports.

Found by measurement, as one :class:`~pmsolve.modelled.Shared` resource named ``reads``:

1. the references: the fastest *transfer* (a store of one vector register, one µop) and the
   fastest *three-source* form; the pair ``{transfer: 1, three-source: 1}`` must run nearer the
   sum of their times alone than the model says, else there is no such resource here. The
   transfer holds its time alone; the three-source form the rest of the pair's time.
2. every scheme with a vector register (non-temporal stores aside: their memory decides) beside
   each reference at ``{1, 1}``. One that runs nearer the sum than the model beside the transfer
   holds the pair's time less the transfer's, while a transfer is in the experiment (``beside``).
   One that does so beside the three-source form is a transfer itself (``context``) if it has one
   µop, and holds the pair's time less the three-source form's; or if it is of the first kind as
   well (the Zen 5's ``vblendvps``, merge-masked FMA132 forms), and holds what it holds beside a
   transfer whenever it is in an experiment. A scheme of more µops slow beside the three-source
   form only is no transfer: its data comes from a µop of its own, and in mixes it does not add
   up (``vpmovqw m64, ymm{k}``: 1.0 cycle beside one FMA, and beside two).
3. every member is checked on an experiment not used to place it: a transfer of one µop beside
   two copies of the three-source form, the others beside two transfers; one that misses the
   resource's time and is nearer the model without it leaves. One slow beside both references
   that misses is checked again as a transfer that holds what it added beside the three-source
   form (the Zen 5's 512-bit stores: 2.0 cycles beside one transfer and beside two, as their
   store-data µops say, but 1.5, 1.9 and 2.9 beside one, two and four ``vpavgw zmm{k}``).
   A transfer (and a member of both kinds) holds at most its time alone, so that the resource
   never makes a scheme alone slower than it was measured alone.

4. beside a member of both kinds and no transfer of one kind, the three-source forms add at
   most what the members of both kinds add (``capped``): ``{vfnmadd132ps xmm{k}: 1, vpaddd
   zmm{k}: k}`` takes 1.00 and 1.02 cycles for k = 1 and 2, 1.03 with ``vpsubd zmm{k}`` for the
   second copy, 1.60 and 2.00 for two FMAs beside one and two adds; beside a store each further
   three-source form adds its hold (``{store: 1, vpaddd{k}: 1, vpsubd{k}: 1}`` 1.50).
   Hand-written probes on the Zen 5, 2026-12-07 (RESULTS §1.39); on the 579 and 800 mixes below
   it took a29's τ-b .01 from 0.667 to 0.707 and from 0.891 to 0.898.

Chosen against 579 mixes of transfers and three-source forms and 800 mixes of all schemes, both
measured apart from any inference (RESULTS §1.34): checking every transfer beside two
three-source forms, which takes out the forms of both kinds (a merge-masked FMA takes 1.02 cycles
beside two adds, 1.0 beside one), predicted both sets worse.

The measured pairs ``{1, 1}`` are what mixes of a few schemes hold; with many three-source
copies per transfer the machine does better than the sum (``{store: 1, vpaddd{k}: 8}`` 2.86
cycles for 4.5), which this resource does not say.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pmsolve.infer.explain.options import ExplainOptions
from pmsolve.infer.explain.shared import non_temporal_stores
from pmsolve.infer.explain.stages import simplicity
from pmsolve.infer.explain.units import off
from pmsolve.isa import load_catalogue
from pmsolve.model import Experiment
from pmsolve.modelled import ModelledMapping, Shared, resolved

VECTOR = ("xmm", "ymm", "zmm")
NAME = "reads"


def candidates(names: Iterable[str]) -> dict[str, list[str]]:
    """From the catalogue: ``transfers`` (a store of one vector register and nothing else),
    ``three_source`` (three vector registers read, no memory operand) and ``vector`` (every scheme
    with a vector register, non-temporal stores aside). Names it lacks are in none."""
    cat = load_catalogue(host=False)
    known = [n for n in names if n in cat]
    nt = non_temporal_stores(known)
    out: dict[str, list[str]] = {"transfers": [], "three_source": [], "vector": []}
    for n in known:
        ops = cat[n].operands
        vec_reads = sum(1 for o in ops if o.kind == "reg" and o.cls in VECTOR and o.read)
        if n in nt or not any(o.kind == "reg" and o.cls in VECTOR for o in ops):
            continue
        out["vector"].append(n)
        if cat[n].memory == "store" and len(ops) == 2 and vec_reads == 1 and ops[0].kind == "mem":
            out["transfers"].append(n)
        if vec_reads >= 3 and not any(o.kind == "mem" for o in ops):
            out["three_source"].append(n)
    return out


def _one_uop(model: ModelledMapping, i: str) -> bool:
    us = model.on_ports.get(i, ())
    return len(us) == 1 and us[0].count == 1


def _fastest(names: Iterable[str], alone: Mapping[str, Any], ok: Callable[[str], bool]) -> str | None:
    good = [i for i in names if ok(i) and isinstance(alone.get(i), (int, float)) and alone[i] == alone[i] and alone[i] > 0]
    return min(good, key=lambda i: (alone[i], simplicity(i))) if good else None


def _nearer_sum(e: Experiment, t: float, m: float, total: float, o: ExplainOptions) -> bool:
    """``t`` is off the model ``m`` and nearer the sum ``total`` of the two alone (shared.py's test)."""
    return t == t and off(e, t, m, o) and t - m > (total - m) / 2


def find(measure: Callable[[list[Experiment]], list[float]], model: ModelledMapping, alone: Mapping[str, Any],
         r_max: float | None, o: ExplainOptions, cands: Mapping[str, list[str]],
         say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """The resource (module docstring) as a checkpointable value: ``{"transfer", "three_source",
    "hold", "beside", "context", "witnesses", "left_out", "why"}``; ``hold`` empty: none here.
    ``cands``: :func:`candidates` of the model's schemes."""
    none: dict[str, Any] = {"transfer": None, "three_source": None, "hold": {}, "beside": {}, "context": [],
                            "witnesses": [], "left_out": []}
    d = _fastest(cands.get("transfers", ()), alone, lambda i: _one_uop(model, i))
    k = _fastest(cands.get("three_source", ()), alone, lambda i: i in model.schemes)
    if d is None or k is None:
        return {**none, "why": "no one-µop vector store or no three-source form among the schemes"}
    (t0,) = measure([e0 := Experiment({d: 1, k: 1})])
    m0 = float(model.inverse_throughput(e0, r_max))
    a_d, a_k = float(alone[d]), float(alone[k])
    if not _nearer_sum(e0, t0, m0, a_d + a_k, o):
        return {**none, "transfer": d, "three_source": k,
                "why": f"{e0} = {t0:.4g} cycles, the model {m0:.4g}: no such resource"}
    hold, beside, witnesses = {d: a_d}, {k: t0 - a_d}, [[dict(e0.items()), t0]]
    probe = [x for x in cands.get("vector", ()) if x not in (d, k) and x in model.schemes
             and isinstance(alone.get(x), (int, float)) and alone[x] == alone[x]]
    say(f"  {len(probe)} vector scheme(s) beside {d} and beside {k} ({e0} = {t0:.3g} cycles, the model {m0:.3g})")
    exps = [Experiment({x: 1, d: 1}) for x in probe] + [Experiment({x: 1, k: 1}) for x in probe]
    got = dict(zip(exps, zip(measure(exps), (float(m) for m in model.evaluate_many(exps, r_max)))))
    context, left_out, as_transfer = {d}, [], {}
    for x in probe:
        a = float(alone[x])
        ed, ek = Experiment({x: 1, d: 1}), Experiment({x: 1, k: 1})
        (td, md), (tk, mk) = got[ed], got[ek]
        k_side, d_side = _nearer_sum(ed, td, md, a + a_d, o), _nearer_sum(ek, tk, mk, a + a_k, o)
        if k_side:
            beside[x] = td - a_d
            witnesses.append([dict(ed.items()), td])
        if d_side and (k_side or _one_uop(model, x)):
            context.add(x)
            witnesses.append([dict(ek.items()), tk])
            # at most its time alone: a28's vcvtps2ph m256, zmm (1.0 alone) added 1.5 beside
            # vpavgb{k}, and a hold of that made its single 1.5 (RESULTS §1.38)
            held = min(tk - beside[k], a)
            if not k_side:
                hold[x] = held
            else:   # of both kinds: it holds beside[x] alone too
                beside[x] = min(beside[x], a)
                as_transfer[x] = held
        elif d_side:
            left_out.append([x, f"{ek} = {tk:.4g} (the model {mk:.4g}), but more than one µop: no transfer"])
    left_out += _checked(measure, model, r_max, o, d, k, hold, beside, context, witnesses, as_transfer)
    say(f"  {len(beside) - 1} scheme(s) hold {NAME} beside a transfer, {len(context) - 1} more transfer(s); "
        f"{len(left_out)} left out")
    return {"transfer": d, "three_source": k, "hold": hold, "beside": beside, "context": sorted(context),
            "witnesses": witnesses, "left_out": left_out, "why": f"{e0} = {t0:.4g} cycles, the model {m0:.4g}"}


def _shared(hold: Mapping[str, float], beside: Mapping[str, float], context: Iterable[str],
            witnesses: list = ()) -> Shared:
    return Shared(NAME, {i: resolved(max(t, 0.0)) for i, t in hold.items()},
                  {i: resolved(max(t, 0.0)) for i, t in beside.items()}, frozenset(context),
                  tuple((Experiment(e), t) for e, t in witnesses), capped=True)


def _checked(measure: Callable[[list[Experiment]], list[float]], model: ModelledMapping, r_max: float | None,
             o: ExplainOptions, d: str, k: str, hold: dict[str, float], beside: dict[str, float],
             context: set[str], witnesses: list, as_transfer: Mapping[str, float]) -> list[list[str]]:
    """Step 3: members beside two copies of the reference that did not place them by itself
    (transfers beside the three-source form, the others beside the transfer); one that misses
    the resource and is nearer the model without it leaves. A member of both kinds that misses
    is checked once more as a transfer holding ``as_transfer[x]`` (what it added beside the
    three-source form) and stays if that holds: the Zen 5's 512-bit stores run 2.0 cycles beside
    one transfer and beside two, as their store-data µops say, but add the three-source form's
    hold for each copy beside it (RESULTS §1.37)."""
    todo = sorted((set(hold) | set(beside)) - {d, k})
    failed = _failed(measure, model, r_max, o, d, k, hold, beside, context, witnesses, todo)
    again = [x for x in failed if x in as_transfer]
    for x in again:
        del failed[x]
        beside.pop(x)
        hold[x] = as_transfer[x]
    failed.update(_failed(measure, model, r_max, o, d, k, hold, beside, context, witnesses, again))
    for x in failed:
        hold.pop(x, None)
        beside.pop(x, None)
        context.discard(x)
    return [[x, why] for x, why in failed.items()]


def _failed(measure: Callable[[list[Experiment]], list[float]], model: ModelledMapping, r_max: float | None,
            o: ExplainOptions, d: str, k: str, hold: Mapping[str, float], beside: Mapping[str, float],
            context: set[str], witnesses: list, todo: list[str]) -> dict[str, str]:
    """The members of ``todo`` whose check (:func:`_checked`) misses, with why; the witnesses of
    the others are added to ``witnesses``."""
    checks = [Experiment({x: 1, k if x in hold else d: 2}) for x in todo]
    if not checks:
        return {}
    path = _shared(hold, beside, context)
    out = {}
    for x, e, t, m in zip(todo, checks, measure(checks), (float(v) for v in model.evaluate_many(checks, r_max))):
        want = max(m, float(path.time(e)))
        if t == t and not (off(e, t, want, o) and abs(t - want) >= abs(t - m)):
            witnesses.append([dict(e.items()), t])
        else:
            out[x] = f"{e} = {t:.4g} where {NAME} gives {want:.4g} (the model {m:.4g})"
    return out


def resource(found: Mapping[str, Any]) -> Shared | None:
    """The stage's value as a :class:`Shared` resource (None: none found)."""
    if not found.get("hold"):
        return None
    return _shared(found["hold"], found["beside"], found["context"], found.get("witnesses", []))


def text(found: Mapping[str, Any]) -> str:
    """One line: the references, and how many schemes hold the resource."""
    if not found.get("hold"):
        return f"{NAME}: none ({found.get('why', 'not looked for')})"
    return (f"{NAME}: {found['why']}; {len(found['beside'])} scheme(s) hold it beside a transfer, "
            f"{len(found['context'])} transfer(s)")


__all__ = ["candidates", "find", "resource", "text"]
