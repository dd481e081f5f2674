"""The one shape every encoder returns: ``Encoding(problem, t, decode, vars)``.

    enc = relate_throughput(mapping, experiment)       # plain PortMapping / Experiment objects
    r = solve(enc.problem, backend="z3")
    r[enc.t]                                           # the throughput term's value
    enc.decode(r)                                      # what the encoding is about, read back
    r[enc.port("add", "p0")]                           # a variable by handle, never by name

Variables are reached through handles (``vars``, ``port``, ``count``, ``Problem.var``), so a
misspelt or mis-prefixed name raises instead of silently creating a fresh, unconstrained
variable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Iterable, Mapping, TypeVar

from pmsolve.errors import UnknownNameError
from pmsolve.symbolic import Formula, Lin, Problem

D = TypeVar("D")


def model_of(answer: Any) -> Mapping[str, Any]:
    """The variable assignment in a solver Result, or the assignment itself."""
    model = getattr(answer, "model", None)
    return model if model is not None else answer


@dataclass(frozen=True)
class Encoding(Generic[D]):
    """What an encoder built.

    * ``problem`` -- the IR problem; solve it with :func:`pmsolve.backends.solve`, or add its
      ``constraints`` to an incremental session;
    * ``t`` -- the throughput term when the encoding has one (``None`` otherwise);
    * ``decode`` -- reads the answer back from a Result or model (a mapping, an experiment, ...);
    * ``vars`` -- the variables by family, e.g. ``vars["q"]["p0"]``; mapping encodings also
      answer :meth:`port` and :meth:`count`, experiment encodings :meth:`count` of an instruction.
    * ``stats`` -- sizes worth reporting (e.g. how many strategy experiments were encoded).
    """

    problem: Problem
    t: Lin | None
    decode: Callable[[Any], D]
    vars: Mapping[str, Any] = field(default_factory=dict)
    stats: Mapping[str, int] = field(default_factory=dict)

    @property
    def constraints(self) -> tuple[Formula, ...]:
        """The problem's formulas, to add to another problem or session."""
        return tuple(c.formula for c in self.problem.constraints)

    def var(self, family: str, key: Any) -> Any:
        """The variable of `family` (a key of ``vars``) at `key`; unknown ones raise."""
        group = self.vars.get(family)
        if group is None:
            raise UnknownNameError(f"{self.problem.name}: no variables {family!r} "
                                   f"(it has: {', '.join(self.vars) or 'none'})")
        try:
            return group[key]
        except KeyError:
            raise UnknownNameError(f"{self.problem.name}: no variable {family}[{key}]") from None

    def _mapping(self) -> Any:
        m = self.vars.get("mapping")
        if m is None:
            raise UnknownNameError(f"{self.problem.name} encodes no symbolic mapping")
        return m

    def port(self, insn: str, port: str, uop: int = 1) -> Any:
        """The boolean "µop `uop` of `insn` may run on `port`" of the encoded mapping."""
        return self._mapping().port(insn, port, uop)

    def count(self, insn: str, ports: Iterable[str]) -> Any:
        """The integer "how many µops with exactly these ports `insn` has" (power-set mappings)."""
        return self._mapping().count(insn, ports)

