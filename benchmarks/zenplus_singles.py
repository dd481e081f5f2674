"""A Zen or Zen+ host's measured singles beside singles measured by others on a Zen+ (a check
against measurements this project did not take).

    python benchmarks/zenplus_singles.py REPORT.json [--mapping OUT.json] [--worst 15]

REPORT.json is the host job's ``--json`` output (``pmsolve infer --json``): its ``singles`` are
the harness's measured inverse throughputs per catalogue scheme. They are matched by scheme
(``pmsolve.isa.bridge``) with two public Zen+ sets in ``../shared/reference``: PMEvo's 310
singletons, measured on a Ryzen 5 2600X (``pmevo/ZEN/exps_singletons.json``), and the measured
``itp`` of the explainable Zen+ mapping (``zenplus/explainable_port_mapping.json``, ASPLOS'24).
Zen+ is the 12 nm shrink of the Zen core: the same pipes, so singles should agree unless a
harness places operands differently (or an operand-dependent unit such as the divider runs on
other values). With ``--mapping`` the job's mapping predicts each matched single too, so a
wrong µop shows beside a wrong measurement. Prints per set: matched schemes, median relative
difference, the share within 5 % and 10 %, and the largest differences.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pmsolve.isa.bridge import translator  # noqa: E402
from pmsolve.model import Experiment  # noqa: E402
from pmsolve.modelled import ModelledMapping  # noqa: E402

REF = Path(__file__).resolve().parents[2] / "shared" / "reference"


def public_sets() -> dict[str, tuple[str, dict[str, float]]]:
    """Set label -> (naming, scheme -> measured inverse throughput)."""
    pmevo = json.loads((REF / "pmevo/ZEN/exps_singletons.json").read_text())
    explainable = json.loads((REF / "zenplus/explainable_port_mapping.json").read_text())["data"]
    return {"PMEvo singletons (Ryzen 5 2600X)": ("pmevo", {e["iseq"][0]: e["result"]["cycles"] for e in pmevo["exps"]
                                                           if len(e["iseq"]) == 1}),
            "explainable Zen+ itp": ("explainable", {k: v["itp"] for k, v in explainable.items() if v.get("itp")})}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report", type=Path)
    ap.add_argument("--mapping", type=Path)
    ap.add_argument("--worst", type=int, default=15)
    args = ap.parse_args()
    if not REF.is_dir():
        print(f"no public reference data at {REF}", file=sys.stderr)
        return 2
    singles: dict[str, float] = json.loads(args.report.read_text())["singles"]
    model, r_max = None, None
    if args.mapping:
        doc = json.loads(args.mapping.read_text())
        model, r_max = ModelledMapping.from_json(doc, str(args.mapping)), doc["explanation"]["r_max"]
    for label, (naming, theirs) in public_sets().items():
        to_host = translator(singles, naming, "catalogue")
        rows = []
        for name, cycles in theirs.items():
            host = to_host(name)
            if host is not None:   # the translator answers with names of the host's singles only
                pred = model.inverse_throughput(Experiment({host: 1}), r_max) if model and host in model.instructions else None
                rows.append((host, float(cycles), singles[host], pred))
        hits = Counter(r[0] for r in rows)   # several of theirs on one scheme: forms the catalogue lacks
        collapsed = sorted(h for h, k in hits.items() if k > 1)
        rows = [r for r in rows if hits[r[0]] == 1]
        print(f"\n{label}: {len(rows)} of the host's {len(singles)} measured singles matched"
              + (f" ({sum(hits[h] for h in collapsed)} of theirs left out: several forms on one scheme, "
                 f"{', '.join(collapsed)})" if collapsed else ""))
        if not rows:
            continue
        diff = [abs(h / t - 1) for _, t, h, _ in rows]
        print(f"  host measured vs theirs: median {statistics.median(diff):.1%}, within 5 % {sum(d <= .05 for d in diff)}, "
              f"within 10 % {sum(d <= .10 for d in diff)} of {len(rows)}")
        preds = [(p, t) for _, t, _, p in rows if p is not None]
        if preds:
            pd = [abs(float(p) / t - 1) for p, t in preds]
            print(f"  host mapping's prediction vs theirs: median {statistics.median(pd):.1%}, "
                  f"within 10 % {sum(d <= .10 for d in pd)} of {len(pd)}")
        rows.sort(key=lambda r: -abs(r[2] / r[1] - 1))
        for host, t, h, p in rows[:args.worst]:
            ps = f"  predicted {float(p):.3f}" if p is not None else ""
            print(f"    {host:<28} theirs {t:7.3f}  host {h:7.3f}  ({h / t - 1:+.0%}){ps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
