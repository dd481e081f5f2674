"""The counter-free inference's own compute, without measuring: a stored quick job replayed offline.

    python benchmarks/replay_inference.py STORE [--repeat 2]

STORE is the ``measurements.sqlite`` of a quick-profile ``pmsolve infer`` run (its work folder).
Its measurements are replayed through a recorded oracle (which refuses anything not stored) with
the options the host job uses, into a fresh state file each time, and the seconds and a digest of
the mapping are printed. Run it from two checkouts to compare their compute on
the same measurements, each checkout's copy of this file (it puts its own checkout first on the
path; benchmarks/RESULTS.md §1.27): the digests must agree. Unlike ``replay_job.py``, which reads
the run's later stages back and recomputes the ones it is told to (its state copy holds every
measurement of the run, so recomputing the early stages asks for experiments the run never
made), this computes every stage from a fresh state, as the run did.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pmsolve.formats import mapping_to_json  # noqa: E402
from pmsolve.harness.recorded import RecordedOracle  # noqa: E402
from pmsolve.harness.store import MeasurementStore  # noqa: E402
from pmsolve.infer.explain import infer  # noqa: E402
from pmsolve.isa import load_catalogue  # noqa: E402
from pmsolve.jobs import profiles  # noqa: E402
from pmsolve.jobs.host import JobConfig, explain_options  # noqa: E402
from pmsolve.model import Measurement  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    rows = [r for r in MeasurementStore(args.store).rows() if r.ok]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # repeated rows: the median, as the recorded oracle says
        oracle = RecordedOracle([Measurement(r.experiment, r.cycles) for r in rows], args.store)
    catalogue = load_catalogue()
    names = profiles.choose(catalogue, "quick")
    options = explain_options(catalogue, names, JobConfig())
    print(f"{len(rows)} stored measurements, {len(names)} schemes")
    for k in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            res = infer(oracle, options, state=str(Path(tmp) / "state.json"))
            seconds = time.perf_counter() - t
        text = json.dumps(mapping_to_json(res.mapping), sort_keys=True)
        print(f"replay {k + 1}: {seconds:.1f} s, {len(res.mapping.uops)} schemes with µops, "
              f"mapping {hashlib.sha256(text.encode()).hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
