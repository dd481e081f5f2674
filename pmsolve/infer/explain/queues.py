"""Scheduling queues in front of a port set, chosen on the measurements the inference made anyway
(no experiment of its own; the rule is :mod:`pmsolve.queues`).

A port mapping lets every µop wait for any of its ports. Where µops are placed into one of several
queues as they are renamed (the Zen 4's four vector pipes: two queues of two), an experiment that
mixes µops confined to one queue with µops that more than one could take runs slower than the port
bound, and no port mapping reproduces it (RESULTS §1.18: a shuffle beside a flexible µop, 0.667
cycles where every mapping of the two says 0.5). For every port set of four that a µop of the
model uses, the stage tries each split into two queues of two on the measured experiments where
the split matters, predicting each as max(the model's tp⁻¹, the queues' simulated time), and
keeps the split that predicts them best, if it beats the model without queues clearly: a lower
mean error over those experiments, and at least twice as many of them predicted better by 5 %
of their time as predicted worse by 5 %. On a machine without queues a split only raises
predictions that the ports already get right, so none is kept (the simulation gate checks that).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from pmsolve.model import Experiment, sort_ports
from pmsolve.modelled import ModelledMapping
from pmsolve.queues import Queues

#: experiments (where a split matters) scored per split, and cycles simulated for each: bounded so
#: that the stage takes seconds on a whole-ISA store
SAMPLE = 800
CYCLES = 2000
BETTER = 0.05


def splits(ports: frozenset[str]) -> list[tuple[frozenset[str], frozenset[str]]]:
    """The three ways of splitting four ports into two queues of two."""
    a, *rest = sort_ports(ports)
    return [(frozenset({a, b}), ports - {a, b}) for b in rest]


def find(model: ModelledMapping, measured: Mapping[Experiment, float], r_max: float | None,
         say: Callable[[str], None]) -> dict[str, Any]:
    """The chosen split with its figures, and every split tried (checkpointable)."""
    width = max(1, round(r_max)) if r_max is not None else 6
    sets = sorted({frozenset(u.ports) for us in model.on_ports.values() for u in us if len(u.ports) == 4},
                  key=sort_ports)
    known = {e: y for e, y in measured.items() if y > 0 and all(i in model.schemes for i in e)}
    tried: list[dict[str, Any]] = []
    best: dict[str, Any] | None = None
    for four in sets:
        for split in splits(four):
            q = Queues(split, width, cycles=CYCLES)
            exps = sorted((e for e in known if q.matters(q.stream(model.ports_for(e), e))), key=str)
            if len(exps) > SAMPLE:
                exps = random.Random(0).sample(exps, SAMPLE)
            if not exps:
                continue
            y = np.array([known[e] for e in exps])
            p = model.evaluate_many(exps, r_max)
            if not np.any(y - p > BETTER * y):    # nothing measured slower than the ports say: nothing to gain
                tried.append({"queues": [sort_ports(x) for x in split], "experiments": len(exps),
                              "mape_before": float((np.abs(p - y) / y).mean()), "mape_after": None,
                              "better": 0, "worse": None, "witnesses": []})
                continue
            s = np.array([float(q.time(model.ports_for(e), e)) for e in exps])
            t = np.maximum(p, s)
            before, after = np.abs(p - y) / y, np.abs(t - y) / y
            row = {"queues": [sort_ports(x) for x in split], "experiments": len(exps),
                   "mape_before": float(before.mean()), "mape_after": float(after.mean()),
                   "better": int(np.sum(after + BETTER < before)), "worse": int(np.sum(before + BETTER < after))}
            row["witnesses"] = [{"experiment": dict(exps[j].items()), "measured": float(y[j]), "ports": float(p[j]),
                                 "queues": float(s[j])} for j in np.argsort(after - before)[:5]
                                if after[j] + BETTER < before[j]]
            tried.append(row)
            if keeps(row) and (best is None or row["mape_after"] - row["mape_before"]
                               < best["mape_after"] - best["mape_before"]):
                best = row
    for row in tried:
        say(f"  queues {row['queues']}: {row['experiments']} measured experiment(s) where they matter, "
            + ("none slower than the ports by 5 %" if row["mape_after"] is None else
               f"mean error {100 * row['mape_before']:.2f} % -> {100 * row['mape_after']:.2f} %, "
               f"{row['better']} better and {row['worse']} worse by 5 %") + ("  <- kept" if row is best else ""))
    if not tried:
        say("  queues: no port set of four with experiments where a split would matter")
    return {"chosen": best, "tried": tried, "width": width}


def keeps(row: Mapping[str, Any]) -> bool:
    """Does a split beat the ports clearly: a lower mean error, and at least twice as many
    experiments 5 % nearer as 5 % farther (one disturbed measurement makes no queues)?"""
    return (row["mape_after"] is not None and row["mape_after"] < row["mape_before"]
            and row["better"] >= 2 * max(row["worse"], 1))


def with_queues(model: ModelledMapping, found: Mapping[str, Any], cycles: int = 4000) -> ModelledMapping:
    """``model`` with the chosen queues, if any (simulated for ``cycles`` cycles per experiment)."""
    row = found.get("chosen")
    if not row:
        return model
    q = Queues(tuple(frozenset(x) for x in row["queues"]), found["width"], cycles=cycles,
               witnesses=tuple((Experiment(w["experiment"]), w["measured"]) for w in row["witnesses"]))
    return ModelledMapping(model.mapping, model.schemes, model.mode, model.shared, model.serial, q)
