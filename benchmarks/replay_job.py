"""Replay a finished main job's inference on its measurement store and score the result on the
job's own held-out experiments: what an inference change does to a real run without the
hardware (or its neighbours) in the loop.

    python benchmarks/replay_job.py WORKDIR [--profile quick|all] [--held-out 300] [--seed 0]
                                    [--again STAGE,...] [--out DIR] [--measure-missing] [--split REGEX]

WORKDIR is a ``pmsolve infer --workdir`` folder. Its store and inference state are copied to
``--out`` (default: a temporary folder); the stages named by ``--again`` (prefixes of the state's
stage names, e.g. ``units``) are dropped from the copy and computed again, the others are read
back. The replay stops with the first experiment the store does not hold (the code asks for
experiments the run did not measure), unless ``--measure-missing`` measures them on this CPU into
the copy; it then says how many it measured. Prints the mapped count, the kinds of
prediction, the held-out MAPE and τ-b (0.01-cycle resolution) over every scheme, mapped schemes
only and with a modelled scheme (with ``--split``: also with and without a scheme whose name
matches, e.g. ``zmm``), and single-scheme predictions against the store's singles.
Run on the CPU that measured the store (the store is keyed by its identity and settings).
"""

from __future__ import annotations

import argparse
import json
import re
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
from pmsolve.jobs.host import (JobConfig, _inference_experiments, _infer, by_prediction,  # noqa: E402
                               held_out_experiments)
from pmsolve.metrics import kendall_tau_b, mape  # noqa: E402
from pmsolve.model import Experiment  # noqa: E402


class _Refuse(HardwareOracle):
    """Answers nothing: the store answers or the replay stops. Both routes a caching oracle may
    take to the hardware refuse (it streams through ``measure_iter`` where the oracle has one)."""

    def measure(self, experiments, *a, **k):
        e = list(experiments)
        raise SystemExit(f"replay: the inference asked for {len(e)} experiment(s) the store does not hold "
                         f"(e.g. {e[0]}); rerun with --measure-missing to measure them on this CPU")

    measure_iter = measure


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workdir", type=Path)
    ap.add_argument("--profile", default="quick", choices=profiles.PROFILES)
    ap.add_argument("--held-out", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--again", default="", help="comma-separated stage-name prefixes to compute again")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--split", default=None, metavar="REGEX",
                    help="also score the mixes with and without a scheme whose name matches REGEX")
    ap.add_argument("--measure-missing", action="store_true",
                    help="measure on this CPU what the store lacks (into the copy), and say how many")
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
    inner = (HardwareOracle if args.measure_missing else _Refuse)(names, HarnessSettings(), on_error="nan")
    oracle = CachingOracle.in_sqlite(inner, out / "measurements.sqlite", on_error="nan")
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
    if args.measure_missing:
        inner.close()
        print(f"{oracle.measured} experiment(s) the store lacked were measured now")
    print(f"{len(mapping.uops)} mapped; predictions: "
          + ", ".join(f"{k} {n}" for k, n in model.kind_counts().items()) + f"; output in {out}")

    def score(label: str, part: list) -> None:
        if part:
            p, y = [r[2] for r in part], [r[1] for r in part]
            print(f"  {label:34s} {len(part):4d}  MAPE {100 * mape(p, y):5.2f} %  "
                  f"τ-b .01 {kendall_tau_b(p, y, 0.01):.3f}")
    print(f"held-out ({len(rows)} of {len(held)} drawn found in the store):")
    score("every scheme", rows)
    if args.split:
        hit = re.compile(args.split)
        score(f"without /{args.split}/", [r for r in rows if not any(hit.search(i) for i in r[0])])
        score(f"with /{args.split}/", [r for r in rows if any(hit.search(i) for i in r[0])])
    for label, js in by_prediction(model, [r[0] for r in rows]).items():
        score(label, [rows[j] for j in js])
    own = [(float(model.inverse_throughput(Experiment({i: 1}), r_max)), singles[i]) for i in model.schemes]
    near = sum(abs(p - y) <= 0.1 * y for p, y in own)
    print(f"singles: {near} of {len(own)} predicted within 10 % of the store's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
