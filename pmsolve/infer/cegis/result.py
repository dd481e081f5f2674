"""What a CEGIS run returns: the mapping, its witnesses, or the conflict that rules out every
mapping, and the check on unseen experiments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pmsolve.infer.common import UnseenCheck, rename_options
from pmsolve.model import Experiment, PortMapping, sort_ports


def compact(m: PortMapping) -> str:
    """A mapping on one line: `add→{p0,p1} st→{p2}+{p0,p1}` (µop counts as `2×{…}`)."""
    def uop(u: Any) -> str:
        return ("" if u.count == 1 else f"{u.count}×") + "{" + ",".join(sort_ports(u.ports)) + "}"
    return " ".join(f"{i}→" + "+".join(uop(u) for u in m.uops_of(i)) for i in m.instructions)


@dataclass(frozen=True)
class Refutation:
    """One measured experiment and the candidate mapping(s) its measurement ruled out."""

    experiment: Experiment
    measured: Fraction
    kept: PortMapping | None
    ruled_out: tuple[tuple[PortMapping, Fraction], ...]  # (mapping, the tp⁻¹ it predicted)

    def describe(self) -> str:
        outs = "; ".join(f"[{compact(m)}] (predicted {float(t):.4g})" for m, t in self.ruled_out) or "nothing"
        return f"{self.experiment} measured {float(self.measured):.4g} rules out {outs}"


@dataclass(frozen=True)
class Conflict:
    """Measurements no mapping of the space explains: a (minimised) unsat core, and a hint at
    the likely cause in terms of the options (`noise_epsilon`, `ports`, `r_max`)."""

    experiments: tuple[tuple[Experiment, Fraction], ...]
    instructions: tuple[str, ...]
    constraints: tuple[str, ...] = ()
    hint: str = ""

    def describe(self, names: Mapping[str, str] | None = None) -> str:
        """One line; ``names`` renames the options in the hint (the command line passes its flags)."""
        exps = "; ".join(f"{e} = {float(t):.4g}" for e, t in self.experiments)
        extra = f" together with constraints {', '.join(self.constraints)}" if self.constraints else ""
        hint = f". Hint: {rename_options(self.hint, names)}" if self.hint else ""
        return (f"no port mapping explains these measurements{extra}: {exps} "
                f"(instructions {', '.join(self.instructions)}){hint}")


def conflict_hint(measured: Sequence[tuple[Experiment, Fraction]], noise_epsilon: Fraction | None, ports: int) -> str:
    """Why measurements may contradict the model, judged from the values: a port mapping gives
    simple fractions of a cycle (µop mass / |port set|), so a value far from every simple
    fraction is noise."""
    def off(e: Experiment, t: Fraction) -> Fraction:  # distance to the nearest simple fraction, per instruction
        return abs(t - t.limit_denominator(max(12, 2 * ports))) / e.size

    worst = max(measured, key=lambda x: off(*x), default=None)
    noise = off(*worst) if worst is not None else Fraction(0)
    more = "the space may need more `ports` or a front-end limit (`r_max`), or the machine is outside the port-mapping model"
    if worst is not None and noise > (noise_epsilon or Fraction(1, 10**6)):
        shown = f"{worst[0]} = {float(worst[1]):.6g} is {float(noise):.3g} cycles per instruction from a simple fraction"
        if noise_epsilon:
            return (f"the measurements look noisier than the tolerance ε = {float(noise_epsilon):g} ({shown}): "
                    f"raise `noise_epsilon`; otherwise {more}")
        return (f"the measurements look noisy ({shown}) and the inference is exact: allow for noise with "
                f"`noise_epsilon` (e.g. 0.02 cycles per instruction)")
    if noise_epsilon:
        return f"if the noise exceeds the tolerance ε = {float(noise_epsilon):g}, raise `noise_epsilon`; otherwise {more}"
    return more[0].upper() + more[1:]


@dataclass
class CegisResult:
    """``status`` "inferred" (``mapping`` explains every measurement and no other mapping of the
    space does, within the bounds: ``proof``), "inconsistent" (no mapping explains them:
    ``conflict``) or "stopped" (``max_iterations``). ``measurements`` in order, the first
    ``initial`` of them the initial experiments; ``witnesses`` say why each later one was
    measured; ``equivalent`` mappings no bounded experiment tells apart from ``mapping``;
    ``unseen``: the check on experiments the inference did not use (None: not asked)."""

    status: str
    mapping: PortMapping | None
    measurements: list[tuple[Experiment, Fraction]]
    initial: int
    witnesses: list[Refutation] = field(default_factory=list)
    conflict: Conflict | None = None
    equivalent: list[PortMapping] = field(default_factory=list)
    proof: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    unseen: UnseenCheck | None = None

    @property
    def added_experiments(self) -> list[Experiment]:
        """The experiments measured beyond the initial ones (Fig. 4.6 (b) counts them)."""
        return [e for e, _ in self.measurements[self.initial:]]
