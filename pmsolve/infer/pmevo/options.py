"""Every knob of a PMEvo run (:class:`PmevoOptions`), its presets and its time budget.

The defaults are PMEvo's **best configuration** measured here (preset ``"best"``): a small
population with mutation, a memetic port-set search with compound moves every two generations,
5,000 random 3–5-scheme training experiments beside the paper's singletons and pairs, initial
mappings with at most two µop kinds per scheme, and six final port-set sweeps — run for a
**time budget** (``budget_seconds``) rather than a number of generations (``generations`` stays
an optional cap). docs/algorithms.md and benchmarks/RESULTS.md (§5) give the figures.
``preset="paper"`` is the algorithm of PLDI'20 (sec. 5.1): no mutation, equal weights of error
and volume, local search from every distinct final individual, only singletons, pairs and ratio
pairs — with population 1,000 instead of the paper's 100,000, which the paper treats as the
user's trade-off.

A field left at :data:`PRESET` takes the preset's value; any value given overrides it. With a
budget the result depends on the machine's speed; for a reproducible run give ``generations``
and ``budget_seconds=None`` (runs are then deterministic under ``seed``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from pmsolve.errors import ValidationError
from pmsolve.infer.pmevo.evolution import EvolutionConfig
from pmsolve.infer.pmevo.parallel import MapFn


class _Preset:
    def __repr__(self) -> str:
        return "PRESET"

    def __reduce__(self) -> str:  # one object, also across pickling
        return "PRESET"


#: "The preset's value" (the default of the fields a preset sets).
PRESET: Any = _Preset()

#: The values each preset gives the fields left at PRESET.
PRESETS: dict[str, dict[str, Any]] = {
    "best": {"population": 200, "mutation": 0.3, "volume_weight": 0.01, "local_search": 10, "patience": None,
             "port_sweeps": 6, "port_top": 3, "memetic_every": 2, "init_uops": 2, "training": 5000,
             "restarts": 1},
    "paper": {"population": 1000, "mutation": 0.0, "volume_weight": 1.0, "local_search": None, "patience": None,
              "port_sweeps": 0, "port_top": 2, "memetic_every": 0, "init_uops": None, "training": 0,
              "restarts": 1},
}

#: The share of the budget the evolution gets; the final local search gets the rest (and
#: whatever an evolution that converged early left).
EVOLUTION_SHARE = 0.85


@dataclass(frozen=True)
class PmevoOptions:
    """The options of :func:`~pmsolve.infer.pmevo.infer` (see the module doc for the presets).

    * ``ports``: a count K (ports "0" … "K-1") or the port names; ``instructions``: the schemes
      to infer (default: every scheme the oracle knows);
    * ``budget_seconds``: wall time of the search (evolution, then local search; measuring is
      not counted), the main knob; ``generations``: an optional cap (None: none);
    * ``congruence_epsilon``: the relative tolerance of congruence filtering (sec. 5.1.2: two
      schemes whose pairs measure within it are merged); ``r_max``: the front end's limit in
      instructions per cycle, modelled as in sec. 5.1.3;
    * ``training``: random experiments of ``training_sizes`` schemes added to the fitness (an
      extension; they also split congruence classes that pairs merged wrongly);
    * the evolution (:class:`~pmsolve.infer.pmevo.evolution.EvolutionConfig`): ``population``,
      ``mutation``, ``volume_weight``, ``local_search``, ``patience``, ``port_sweeps``,
      ``port_top``, ``memetic_every``, ``init_uops``;
    * ``restarts``: independent evolutions (seeds ``seed`` … ``seed+R-1``), one per worker; the
      best training fit wins; ``seed``: every random choice derives from it;
    * ``workers``: local processes for the fitness; ``executor``: any map (a
      :class:`pmsolve.executor.Executor`) instead (None: the ambient one of
      :func:`pmsolve.executor.use_executor`, else a pool of ``workers``);
    * ``check_experiments``: unseen random experiments the result is checked on afterwards;
      the check fails when their mean relative error exceeds ``check_tolerance``.
    """

    ports: int | Sequence[str]
    instructions: Sequence[str] | None = None
    preset: str = "best"
    budget_seconds: float | None = 120.0
    generations: int | None = None
    congruence_epsilon: float = 0.05
    r_max: float | None = None
    seed: int = 0
    training: int = PRESET
    training_sizes: tuple[int, int] = (3, 5)
    population: int = PRESET
    mutation: float = PRESET
    volume_weight: float = PRESET
    local_search: int | None = PRESET
    patience: int | None = PRESET
    port_sweeps: int = PRESET
    port_top: int = PRESET
    memetic_every: int = PRESET
    init_uops: int | None = PRESET
    restarts: int = PRESET
    workers: int = 1
    executor: MapFn | None = None
    check_experiments: int = 8
    check_tolerance: float = 0.1

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ValidationError(f"unknown PMEvo preset {self.preset!r}: choose {', '.join(PRESETS)}")
        for name in ("budget_seconds", "congruence_epsilon", "r_max", "check_tolerance"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ValidationError(f"PMEvo: {name} must be a finite number ≥ 0, got {v!r}")
        if self.r_max is not None and not self.r_max > 0:
            raise ValidationError(f"PMEvo: r_max must be positive, got {self.r_max}")
        if self.budget_seconds is not None and not self.budget_seconds > 0:
            raise ValidationError(f"PMEvo: budget_seconds must be positive, got {self.budget_seconds}")
        if self.workers < 1:
            raise ValidationError(f"PMEvo: workers must be at least 1, got {self.workers}")
        lo, hi = self.training_sizes
        if not 1 <= lo <= hi:
            raise ValidationError(f"PMEvo: training_sizes must be (MIN, MAX) with 1 ≤ MIN ≤ MAX, got {self.training_sizes}")
        r = self.value("restarts")
        if r < 1:
            raise ValidationError(f"PMEvo: restarts must be at least 1, got {r}")
        if self.value("training") < 0:
            raise ValidationError(f"PMEvo: training must be ≥ 0, got {self.value('training')}")
        if self.check_experiments < 0:
            raise ValidationError(f"PMEvo: check_experiments must be ≥ 0, got {self.check_experiments}")
        self.evolution()  # validates the evolution's knobs

    def value(self, name: str) -> Any:
        """A field's value, the preset's where the field is left at :data:`PRESET`."""
        v = getattr(self, name)
        return PRESETS[self.preset][name] if v is PRESET else v

    def resolved(self) -> "PmevoOptions":
        """These options with every :data:`PRESET` field replaced by the preset's value."""
        return replace(self, **{f.name: self.value(f.name) for f in fields(self) if getattr(self, f.name) is PRESET})

    def evolution(self, time_limit: float | None = None) -> EvolutionConfig:
        """The evolution's configuration (``time_limit``: seconds of evolution)."""
        return EvolutionConfig(population=self.value("population"), generations=self.generations, seed=self.seed,
                               mutation=self.value("mutation"), local_search=self.value("local_search"),
                               patience=self.value("patience"), volume_weight=self.value("volume_weight"),
                               port_sweeps=self.value("port_sweeps"), port_top=self.value("port_top"),
                               memetic_every=self.value("memetic_every"), time_limit=time_limit,
                               init_uops=self.value("init_uops"))

    def fingerprint(self, port_names: Sequence[str], instructions: Sequence[str]) -> dict[str, Any]:
        """What a checkpoint of these options depends on: everything but the budget, the
        generation cap, patience, the final local search and where the work runs (those may
        change on resume)."""
        keep = ("congruence_epsilon", "r_max", "seed", "training", "training_sizes", "population", "mutation",
                "volume_weight", "port_top", "memetic_every", "init_uops", "restarts")
        return {"ports": list(port_names), "instructions": list(instructions),
                **{k: self.value(k) for k in keep}}
