"""Knobs of the explainable inference (dissertation sec. 6.2-6.3)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pmsolve.errors import ValidationError
from pmsolve.infer.explain.hooks import UopHook


@dataclass(frozen=True)
class ExplainOptions:
    """Options of :func:`pmsolve.infer.explain.infer`.

    * ``ports``: number of execution ports K (named "0" … "K-1" in the result); without a µop
      counter None (the default there): the number is inferred, per component of blocking
      instructions that share ports (:mod:`~pmsolve.infer.explain.structure`), up to ``max_ports``;
    * ``epsilon``: CPI tolerance ε — two throughputs are equal when their cycles per instruction
      differ by at most ε (the Zen+ study used 0.02);
    * ``r_max``: the front-end limit in instructions per cycle; None measures the peak IPC;
    * ``runs``: repetitions of the characterisation stage for the majority vote (sec. 6.3.5);
      run r adds r copies to every blocking experiment, so even an oracle whose answers depend
      only on the experiment gives independent samples;
    * ``k_rule``: the number of blocking instructions (:data:`pmsolve.strategy.K_RULES`; "impl"
      is the uops.info code's rule the dissertation uses);
    * ``uop_hook``: the µop-count adjustment (:mod:`~pmsolve.infer.explain.hooks`);
    * ``improper``: (scheme, µops) blocking instructions with a fixed µop structure, like the
      Zen+ stores; ``improper_share``: each shares one µop with a proper blocking instruction;
    * ``disjoint``: pairs of schemes whose port sets are documented to be disjoint (resolves
      ambiguities the front-end limit leaves, as the dissertation did for the ALU ports);
    * ``throughput_only``: infer without the µop counter even when the oracle has one (the
      counter-free algorithm runs anyway when it has none): blocking candidates are hypotheses
      that pairs, mixes and CEGIS over µop multiplicities (up to ``max_multiplicity``) settle;
      every scheme's µop count comes from the blocking suite (at most ``max_uops``);
    * ``clear``, ``noise`` and ``remeasure``: without a counter, an estimate farther than ``clear``
      from a whole number, or whose standard error (from the spread of its samples, or from the
      relative measurement ``noise`` assumed for one sample) leaves no clear room, is measured again
      with other copy counts, at most ``remeasure`` times; ``budget``: how many samples per
      blocked set it was measured against a scheme may take beyond its first pass (restarts
      with more copies and fresh samples together) before it is judged on what it has;
    * ``cegis_epsilon``: the CPI tolerance of the counter-free CEGIS and pair screening (default ε);
      ``max_cegis_runs``: CEGIS runs per component before the remaining suspects are dropped;
      ``extra_ports``: how many ports beyond the lower bound a component's search tries;
      ``structure_seconds``: after this long (its own work, not its measuring), the structure
      stage tries no more multiplicities for a contradicted candidate and drops it at once (None:
      no limit; on a Zen 4 no such trial succeeded in eight runs, and one run spent 480 s in
      them); past it, no second round for the stand-ins of redundant candidates either;
    * ``max_component``: a component with more blocking candidates than this is split before its
      port search, at the candidate that links its parts (:func:`~pmsolve.infer.explain.structure.
      split_large`; None: never). A port search takes seconds on 4–6 candidates and minutes on
      10–11: on a Zen 4 one 3-port vector broadcast, slow beside the GPR store in one pair, joined
      the memory and vector candidates into 11, and three searches on it took 520 s;
    * ``slow_pairs``: how many pair experiments per blocking candidate the structure stage may
      set aside as slow schedules (slower than the port bound of an overlap that explains the
      candidate's other pair experiments; :mod:`~pmsolve.infer.explain.structure`); default 0:
      on a machine that follows the port model (a simulated one) a slow pair is always evidence
      against a hypothesis — an impostor whose extra µops show in one pair only would be kept;
      on a real CPU schedulers miss the port bound of some small loops, and the main job allows 2;
    * ``rep_order``: schemes to prefer, in this order, as representatives of their class (e.g. a
      pure load before a load that also computes; others follow, register forms first); a dropped
      representative's next class members stand in for it, up to ``max_stand_ins`` times;
      ``not_blocking``: schemes never taken as blocking candidates (e.g. forms that load or store
      besides computing: they bridge unrelated ports); they are characterised like any other;
    * ``min_uops``: (scheme, µops) floors for the first guess of a scheme's µop count without a
      counter (the guess is otherwise 2·tp⁻¹(i)); the host job gives memory forms one µop per
      memory access beside their operation (:func:`pmsolve.jobs.profiles.min_uops`). A guess
      below the µops found costs the scheme a second pass with more copies, one above it only
      more copies, so a floor changes which experiments are measured, not what they show;
    * ``integrality``: how far a non-evading µop estimate may be from an integer before the
      scheme is "outside the model" (0.5 or more: always round — for noisy oracles, where the
      estimate's error grows with k, and the final check below still catches wrong counts);
    * ``tolerance``: relative slack of that final check (the scheme's mapping must reproduce each
      of its measured experiments within max(ε·|e|, tolerance·tp⁻¹)); None (default): 0 with a µop
      counter (ε alone), 0.03 without one, where every check is relative to the measurement's noise;
    * ``layouts``: the classes and structure stages measure each experiment in this many layouts
      (1×, 2×, … its counts, per copy) and, when they disagree, in one more, and take the median
      (:mod:`pmsolve.harness.layouts`): real schedulers sometimes settle into a slower schedule
      than the ports allow, small loops sometimes measure faster than they can run, and one such
      measurement would drop a blocking instruction (default 1: each experiment as it is);
    * ``instructions``: restrict to these schemes (default: all the oracle knows);
    * ``backend``/``timeout``: solver for the CEGIS stage; ``max_conflicts``: how many
      inconsistent blocking instructions to drop before giving up.
    """

    ports: int | None = None
    epsilon: float = 0.02
    r_max: float | None = None
    runs: int = 1
    k_rule: str = "impl"
    uop_hook: str | UopHook = "none"
    improper: tuple[tuple[str, int], ...] = ()
    improper_share: bool = True
    disjoint: tuple[tuple[str, str], ...] = ()
    throughput_only: bool = False
    integrality: float = 0.3
    tolerance: float | None = None
    instructions: tuple[str, ...] | None = None
    backend: str | None = None
    timeout: float | None = None
    max_conflicts: int = 6
    max_ports: int = 16
    extra_ports: int = 2
    max_multiplicity: int = 3
    max_uops: int = 16
    max_cegis_runs: int = 40
    max_stand_ins: int = 3
    rep_order: tuple[str, ...] = ()
    not_blocking: tuple[str, ...] = ()
    min_uops: tuple[tuple[str, int], ...] = ()
    clear: float = 0.25
    noise: float = 0.01
    remeasure: int = 16
    budget: float = 4.0
    cegis_epsilon: float | None = None
    layouts: int = 1
    structure_seconds: float | None = None
    max_component: int | None = None
    slow_pairs: int = 0

    def __post_init__(self) -> None:
        if self.ports is not None and self.ports < 1:
            raise ValidationError(f"explain: ports must be ≥ 1, got {self.ports}")
        if self.cegis_epsilon is None:
            object.__setattr__(self, "cegis_epsilon", self.epsilon)
        if not 0 <= self.epsilon < 1:
            raise ValidationError(f"explain: epsilon must be in [0, 1), got {self.epsilon}")
        if self.layouts < 1:
            raise ValidationError(f"explain: layouts must be ≥ 1, got {self.layouts}")
        if self.max_component is not None and self.max_component < 2:
            raise ValidationError(f"explain: max_component must be ≥ 2, got {self.max_component}")
        if self.slow_pairs < 0:
            raise ValidationError(f"explain: slow_pairs must be ≥ 0, got {self.slow_pairs}")
        if self.budget < 0:
            raise ValidationError(f"explain: budget must be ≥ 0, got {self.budget}")
        if self.runs < 1:
            raise ValidationError(f"explain: runs must be ≥ 1, got {self.runs}")
        if self.r_max is not None and self.r_max <= 0:
            raise ValidationError(f"explain: r_max must be positive, got {self.r_max}")
        for name, n in self.min_uops:
            if n < 1:
                raise ValidationError(f"explain: min_uops of {name!r} must be ≥ 1, got {n}")
        for name, n in self.improper:
            if n < 1:
                raise ValidationError(f"explain: improper blocking instruction {name!r} needs ≥ 1 µop, got {n}")

    def resolved(self, counter: bool) -> "ExplainOptions":
        """These options with the defaults that depend on the µop counter filled in."""
        return self if self.tolerance is not None else replace(self, tolerance=0.0 if counter else 0.03)

    def characterisation_key(self) -> str:
        """The options only the characterisation stage depends on: changing them reruns only it."""
        return (f"k={self.k_rule},int={self.integrality:g},tol={self.tolerance:g},clear={self.clear:g},"
                f"re={self.remeasure},extra={self.budget:g},noise={self.noise:g}")

    def fingerprint(self) -> dict[str, Any]:
        """What a resumed run must share with the state it resumes (``runs`` may grow)."""
        hook = self.uop_hook if isinstance(self.uop_hook, str) else getattr(self.uop_hook, "__name__", "custom")
        return {"ports": self.ports, "epsilon": self.epsilon, "r_max": self.r_max,
                "uop_hook": hook, "improper": [list(x) for x in self.improper],
                "improper_share": self.improper_share, "disjoint": [list(x) for x in self.disjoint],
                "throughput_only": self.throughput_only, "max_ports": self.max_ports,
                "max_multiplicity": self.max_multiplicity, "max_uops": self.max_uops,
                "cegis_epsilon": self.cegis_epsilon, "rep_order": list(self.rep_order),
                "not_blocking": list(self.not_blocking), "layouts": self.layouts,
                "structure_seconds": self.structure_seconds, "max_component": self.max_component,
                "slow_pairs": self.slow_pairs,
                "instructions": list(self.instructions) if self.instructions is not None else None}
