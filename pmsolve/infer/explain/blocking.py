"""Stage 6 (sec. 6.2.1 step 4, 6.3.4): the port mapping of the unique blocking instructions, by
CEGIS (:mod:`pmsolve.infer.cegis`) in the three-level space with fixed µop counts: one µop per
proper blocking instruction with its known port-set size, the user's improper ones (stores) with
their fixed µop count, each sharing one µop with a proper one.

When the measurements contradict the model (an unsat core), the offending blocking instruction
with the smallest equivalence class is dropped — its whole class becomes "unsatisfiable" misfits
with the core's experiments — and CEGIS runs again, as the Zen+ study did for imul, vpmuldq and
vmovd.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pmsolve.errors import SolverError, ValidationError
from pmsolve.formats import mapping_to_json
from pmsolve.infer.cegis import CegisOptions, infer
from pmsolve.infer.explain.options import ExplainOptions
from pmsolve.model import Experiment, PortMapping, sort_ports
from pmsolve.symbolic import And, Iff, Not, Or
from pmsolve.throughput import bottleneck

Progress = Callable[[str], None]


def dropped_candidate(insn: str, reason: str, experiments) -> dict[str, Any]:
    """A candidate dropped from the blocking instructions, JSON-ready: why, and the measured
    ``(experiment, t)`` pairs that show it."""
    return {"insn": insn, "reason": reason,
            "experiments": [{"experiment": dict(e.items()), "measured": float(t)} for e, t in experiments]}


def port_names(k: int) -> list[str]:
    return [str(p) for p in range(k)]


def _constraints(proper: list[str], improper: dict[str, int], o: ExplainOptions):
    def build(mv):
        if o.improper_share:
            for i, n in improper.items():
                yield Or(*[And(*[Iff(mv.port(i, p, r), mv.port(j, p, 1)) for p in mv.ports])
                           for j in proper for r in range(1, n + 1)])
        for a, b in o.disjoint:
            for x in (a, b):
                if x not in proper and x not in improper:
                    raise ValidationError(f"explain: a disjoint pair names {x!r}, which is not a blocking instruction "
                                          f"(representatives: {', '.join(proper[:6])}{' …' if len(proper) > 6 else ''})")
            for ra in range(1, mv.uops(a) + 1):
                for rb in range(1, mv.uops(b) + 1):
                    for p in mv.ports:
                        yield Not(And(mv.port(a, p, ra), mv.port(b, p, rb)))
    return build


def infer_blocking(oracle: Any, classes: list[dict[str, Any]], r_max: float | None, o: ExplainOptions,
                   state_prefix: str | None, progress: Progress) -> dict[str, Any]:
    """CEGIS on the class representatives (+ improper ones); JSON-ready result."""
    size_of = {c["rep"]: c["size"] for c in classes}
    class_size = {c["rep"]: 1 + len(c["members"]) for c in classes}
    improper = dict(o.improper)
    for name in improper:
        if name not in oracle.instructions:
            raise ValidationError(f"explain: improper blocking instruction {name!r} is not known to the oracle")
    proper = sorted(size_of)
    dropped: list[dict[str, Any]] = []
    for attempt in range(o.max_conflicts + 1):
        if not proper:
            raise ValidationError("explain: no blocking instructions left for CEGIS")
        insns = proper + sorted(improper)
        opts = CegisOptions(ports=port_names(o.ports), instructions=insns, kind="fixed-counts",
                            uops_per_insn={**{i: 1 for i in proper}, **improper},
                            noise_epsilon=o.epsilon or None, r_max=r_max,
                            port_set_sizes={i: [size_of[i]] for i in proper},
                            constraints=_constraints(proper, improper, o) if (improper or o.disjoint) else None,
                            constraints_symmetric=True, backend=o.backend, timeout=o.timeout, check_experiments=0)
        state = f"{state_prefix}.cegis{attempt}.json" if state_prefix else None
        progress(f"CEGIS on {len(proper)} blocking instruction(s) + {len(improper)} improper, {o.ports} ports")
        res = infer(oracle, opts, state=state, progress=lambda event: progress("  " + event.message))
        if res.status == "inferred" and res.mapping is not None:
            return {"status": "inferred", "mapping": mapping_to_json(res.mapping), "proof": res.proof,
                    "equivalent": [mapping_to_json(m) for m in res.equivalent],
                    "measurements": [[dict(e.items()), float(t)] for e, t in res.measurements],
                    "added_experiments": len(res.added_experiments), "dropped": dropped,
                    "seconds": res.stats.get("seconds")}
        if res.status != "inconsistent" or res.conflict is None:
            raise SolverError(f"explain: CEGIS on the blocking instructions stopped ({res.status}: {res.proof})")
        core = res.conflict
        culprits = [i for i in core.instructions if i in proper] or [i for i in core.instructions if i in improper]
        if not culprits:
            raise SolverError(f"explain: {core.describe()}")
        victim = min(culprits, key=lambda i: (class_size.get(i, 0), i))
        progress(f"  inconsistent: {core.describe()}; dropping {victim}")
        dropped.append(dropped_candidate(victim, core.describe(), core.experiments))
        if victim in improper:
            del improper[victim]
        else:
            proper.remove(victim)
    raise SolverError(f"explain: more than {o.max_conflicts} blocking instructions contradict the model; "
                      f"last: {dropped[-1]['reason']}")


def blockers(mapping: PortMapping, improper: list[str]) -> list[tuple[str, frozenset[str]]]:
    """The blocking suite in topological order (port sets by size, so every subset of Q comes
    before Q): proper ones block their µop's ports; an improper one blocks the bottleneck ports
    of copies of itself when exactly one of its µop kinds lies inside them (so the blocked ports
    can share the load of an added µop evenly) and no proper one blocks the same set."""
    suite: dict[frozenset[str], str] = {}
    for i, us in mapping.uops.items():
        if i not in improper and len(us) == 1 and us[0].count == 1:
            suite.setdefault(us[0].ports, i)
    for i in improper:
        if i not in mapping.uops:
            continue
        q = bottleneck(mapping, Experiment({i: 1})).ports
        inside = [u for u in mapping.uops[i] if u.ports <= q]
        if q and len(inside) == 1 and inside[0].ports == q and q not in suite:
            suite[q] = i
    return sorted(((b, q) for q, b in suite.items()), key=lambda x: (len(x[1]), sort_ports(x[1])))
