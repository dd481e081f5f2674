"""Majority vote over repeated characterisation runs (sec. 6.3.5: "only report the port usage
for an instruction if at least two of the runs agree")."""

from __future__ import annotations

from collections import Counter

from pmsolve.infer.explain.witnesses import Explanation, Misfit


def describe_key(key: tuple) -> str:
    if key[0] == "misfit":
        return f"misfit ({key[1]})"
    return " + ".join(f"{n}×[{','.join(ps)}]" for ps, n in key[1]) or "no µops"


def majority(runs: list[Explanation]) -> Explanation:
    """The answer more than half of the runs agree on (the first such run's explanation, with its
    witnesses), else an "unstable" misfit listing what each run found."""
    if not runs:
        raise ValueError("majority of no runs")
    votes = Counter(r.key() for r in runs)
    key, n = votes.most_common(1)[0]
    if 2 * n > len(runs):
        return next(r for r in runs if r.key() == key)
    found = "; ".join(f"run {j + 1}: {describe_key(r.key())}" for j, r in enumerate(runs))
    exps = tuple((w.experiment, w.measured) for r in runs for ws in r.witnesses.values() for w in ws
                 if w.kind == "blocking")
    return Explanation(misfit=Misfit("unstable", f"no majority among {len(runs)} runs — {found}", exps),
                       counted=runs[0].counted)


def vote(per_run: list[dict[str, Explanation]]) -> dict[str, Explanation]:
    """Majority per scheme over runs (schemes missing from a run do not vote there)."""
    insns = list(dict.fromkeys(i for run in per_run for i in run))
    return {i: majority([run[i] for run in per_run if i in run]) for i in insns}
