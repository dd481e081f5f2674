"""Front-end slots per scheme: how many of the R_max a cycle one copy takes (issue 39).

The front-end limit of the port mapping model caps an experiment at R_max instructions a cycle.
AMD's cores dispatch R_max *macro-ops* a cycle, and some instructions are two: Zen 3's
read-modify-writes (``add m64, r64``), ``cmov r32, m32``, ``blsr``, ``bt r, r`` (AMD's published
macro-op counts say so too). Alone, or beside a few others, that hides behind their ports; in a
mix of five it does not: ``{cmovbe r32, m32, sar r64, 1, vfmsub231pd ymm, vpaddb ymm}`` takes 1.0
cycle on a Zen 3 where ports and a front end of 6 instructions allow 0.667, and 5/6 with
``cmovbe`` as two slots (the remaining 1/6 is dispatch's packing, which no bound sees).

The probe: each scheme once beside R_max copies of a *filler*, blocking instructions chosen so that
their ports leave room (on the Zen 3: 3× ``mov r64, imm32`` [0-3] and 3× ``vpaddd xmm`` [7-10]):
front-end bound at (R_max + s)/R_max cycles for a scheme of s slots. A scheme is given s > 1 slots
when the probe runs slower than every other bound of the model (its ports with the filler's, its
time alone) by more than TOLERANCE, and R_max·(t − 1) is within NEAR of a whole s in
[2, R_max/2]; anything else is not the front end (Zen 3's ``shld``: 12 "slots" by that sum, and
mixes with it run as its ports say) and keeps 1. The probe is the witness.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

from pmsolve.errors import MeasurementError
from pmsolve.model import Experiment, PortMapping
from pmsolve.modelled import ModelledMapping
from pmsolve.throughput import inverse_throughput

#: the probe must exceed every other bound of the model by this much
TOLERANCE = 0.05
#: and its excess, in slots, be this close to a whole number
NEAR = 0.3
#: a scheme name with a memory operand (``add_m64_r64``, ``lea_r64_m``)
MEMORY = re.compile(r"_m(\d+|_|$)")


def filler(blocking: PortMapping, r_max: int) -> dict[str, int]:
    """``r_max`` copies of blocking instructions (one µop each) whose ports leave the most room:
    one at a time, the one that raises the port bound least (ties: the wider port set, then the
    name). Register forms only, while one will do: memory forms meet the probed scheme's own
    memory operands in ways other than ports (docs/memory-layout.md)."""
    chosen: dict[str, int] = {}
    names = sorted(blocking.uops, key=lambda i: (-sum(len(u.ports) * u.count for u in blocking.uops[i]), i))
    for _ in range(r_max):
        def cost(i: str) -> tuple[bool, Fraction, int]:
            return (MEMORY.search(i) is not None, inverse_throughput(blocking, Experiment({**chosen, i: chosen.get(i, 0) + 1})),
                    names.index(i))
        best = min(names, key=cost)
        chosen[best] = chosen.get(best, 0) + 1
    return chosen


def probes(model: ModelledMapping, fill: Mapping[str, int], names: Sequence[str]) -> dict[str, Experiment]:
    """Each scheme's probe: the scheme once beside the filler."""
    return {i: Experiment({**fill, i: fill.get(i, 0) + 1}) for i in names if i in model.schemes}


def read(model: ModelledMapping, probe: Experiment, scheme: str, t: float, r_max: float) -> int:
    """The slots a measured probe shows for ``scheme`` (module doc); 1 when it shows none."""
    if not (t == t and t > 0):
        return 1
    bound = max(float(model.inverse_throughput(probe, r_max)), float(model.inverse_throughput(Experiment({scheme: 1}), r_max)))
    s = r_max * t - (probe.size - 1)
    k = round(s)
    return k if t > bound * (1 + TOLERANCE) and 2 <= k <= r_max / 2 and abs(s - k) <= NEAR else 1


def measure(oracle: Any, model: ModelledMapping, blocking: PortMapping, r_max: float, names: Sequence[str],
            say: Callable[[str], None], on_chunk: Callable[[], None] = lambda: None, chunk: int = 100) -> dict[str, Any]:
    """The slots stage as a checkpointable value: the filler, and per scheme of more than one
    slot its slots and the probe (``[experiment, cycles]``). Measures in chunks, calling
    ``on_chunk`` after each (the pipeline saves its state there, so an interruption loses none)."""
    fill = filler(blocking, int(r_max))
    todo = probes(model, fill, names)
    say(f"  front-end slots: {len(todo)} probes beside {', '.join(f'{n}× {i}' for i, n in fill.items())}")
    exps = list(todo.values())
    got: dict[Experiment, float] = {}
    for k in range(0, len(exps), chunk):
        got.update(zip(exps[k:k + chunk], _measure(oracle, exps[k:k + chunk])))
        on_chunk()
        if len(exps) > chunk:
            say(f"    {len(got)} of {len(exps)} probes measured")
    found = {}
    for i, e in todo.items():
        k = read(model, e, i, got[e], r_max)
        if k > 1:
            found[i] = {"slots": k, "probe": [dict(e.items()), got[e]]}
    say(f"  {len(found)} scheme(s) take more than one front-end slot")
    return {"filler": fill, "schemes": found}


def _measure(oracle: Any, exps: list[Experiment]) -> list[float]:
    """Cycles of each probe; one whose kernel the harness cannot run (NaN) keeps its scheme at
    one slot, and the rest are asked again without it (the measured ones come from the cache),
    as :func:`~pmsolve.infer.explain.characterise.measurable` does for the characterisation."""
    bad: set[Experiment] = set()
    while True:
        rest = [e for e in exps if e not in bad]
        try:
            got = dict(zip(rest, oracle.measure(rest))) if rest else {}
            return [got.get(e, float("nan")) for e in exps]
        except MeasurementError as err:
            if not set(err.experiments) - bad:
                raise
            bad |= set(err.experiments)


def with_slots(model: ModelledMapping, stage: Mapping[str, Any]) -> ModelledMapping:
    """``model`` with the slots the stage found (each with its probe as the witness)."""
    schemes = dict(model.schemes)
    for i, d in stage.get("schemes", {}).items():
        if i in schemes:
            e, t = d["probe"]
            schemes[i] = replace(schemes[i], slots=int(d["slots"]), slots_witness=(Experiment(e), float(t)))
    return ModelledMapping(model.mapping, schemes, model.mode, model.shared, model.serial, model.queues)
