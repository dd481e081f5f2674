"""Replay a finished main job's inference on its measurement store, measuring nothing, and score
the result on the job's own held-out experiments: what an inference change does to a real run
without the hardware (or its neighbours) in the loop.

    python benchmarks/replay_job.py WORKDIR [--profile quick|all] [--held-out 300] [--seed 0]
                                    [--again STAGE,...] [--out DIR]

WORKDIR is a ``pmsolve infer --workdir`` folder. Its store and inference state are copied to
``--out`` (default: a temporary folder); the stages named by ``--again`` (prefixes of the state's
stage names, e.g. ``units``) are dropped from the copy and computed again, the others are read
back. The replay stops with the first experiment the store does not hold: the run measured
different ones, so a replay cannot stand in for it. Prints the mapped count, the kinds of
prediction, the held-out MAPE and τ-b (0.01-cycle resolution) over every scheme, mapped schemes
only and with a modelled scheme, and single-scheme predictions against the store's singles.
Run on the CPU that measured the store (the store is keyed by its identity and settings).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pmsolve.harness.cache import CachingOracle  # noqa: E402
from pmsolve.harness.hardware import HardwareOracle, HarnessSettings  # noqa: E402
from pmsolve.harness.store import canonical_experiment  # noqa: E402
from pmsolve.isa import load_catalogue  # noqa: E402
from pmsolve.jobs import profiles  # noqa: E402
from pmsolve.jobs.host import JobConfig, _inference_experiments, _infer, held_out_experiments  # noqa: E402
from pmsolve.metrics import kendall_tau_b, mape  # noqa: E402
from pmsolve.model import Experiment  # noqa: E402
from pmsolve.modelled import PORT_KINDS  # noqa: E402


class _Refuse(HardwareOracle):
    def measure(self, experiments, *a, **k):
        e = list(experiments)
        raise SystemExit(f"replay: the inference asked for {len(e)} experiment(s) the store does not hold "
                         f"(e.g. {e[0]}); this run cannot be replayed with this code")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workdir", type=Path)
    ap.add_argument("--profile", default="quick", choices=profiles.PROFILES)
    ap.add_argument("--held-out", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--again", default="", help="comma-separated stage-name prefixes to compute again")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="pmsolve-replay-"))
    out.mkdir(parents=True, exist_ok=True)
    for f in ("measurements.sqlite", "explain-state.json"):
        shutil.copy(args.workdir / f, out / f)
    state = json.loads((out / "explain-state.json").read_text())
    for name in list(state["data"]["stages"]):
        if any(name.startswith(p) for p in filter(None, args.again.split(","))):
            del state["data"]["stages"][name]
            print(f"computing again: {name}")
    (out / "explain-state.json").write_text(json.dumps(state))

    catalogue = load_catalogue()
    names = profiles.choose(catalogue, args.profile)
    oracle = CachingOracle.in_sqlite(_Refuse(names, HarnessSettings(), on_error="nan"), out / "measurements.sqlite",
                                     on_error="nan")
    singles = dict(zip(names, oracle.measure([Experiment({n: 1}) for n in names])))
    names = [n for n, v in singles.items() if v == v and v > 0]
    config = JobConfig(profile=args.profile, held_out=args.held_out, seed=args.seed, compare_pmevo=False)
    result, mapping, r_max = _infer(oracle, names, catalogue, config, out / "explain-state.json", lambda m: None)
    model = result.model
    result.save(out / "mapping.json")
    held = held_out_experiments(names, args.held_out, args.seed + 7919, _inference_experiments(out / "explain-state.json"))
    db = sqlite3.connect(out / "measurements.sqlite")
    stored = {e: c for e, c in db.execute("select experiment, cycles from measurements")}
    rows = [(e, y, float(model.inverse_throughput(e, r_max))) for e in held
            if (y := stored.get(canonical_experiment(e))) is not None and y == y and y > 0]
    print(f"{len(mapping.uops)} mapped; predictions: "
          + ", ".join(f"{k} {n}" for k, n in model.kind_counts().items()) + f"; output in {out}")

    def score(label: str, part: list) -> None:
        if part:
            p, y = [r[2] for r in part], [r[1] for r in part]
            print(f"  {label:34s} {len(part):4d}  MAPE {100 * mape(p, y):5.2f} %  "
                  f"τ-b .01 {kendall_tau_b(p, y, 0.01):.3f}")
    print(f"held-out ({len(rows)} of {len(held)} drawn found in the store):")
    score("every scheme", rows)
    score("mapped schemes only", [r for r in rows if all(model.schemes[i].kind in PORT_KINDS for i in r[0])])
    score("with a modelled scheme", [r for r in rows if any(model.schemes[i].kind not in PORT_KINDS for i in r[0])])
    own = [(float(model.inverse_throughput(Experiment({i: 1}), r_max)), singles[i]) for i in model.schemes]
    near = sum(abs(p - y) <= 0.1 * y for p, y in own)
    print(f"singles: {near} of {len(own)} predicted within 10 % of the store's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
