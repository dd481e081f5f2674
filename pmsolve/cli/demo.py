"""``pmsolve demo``: the bundled example mapping and the throughputs it implies, in one screen."""

from __future__ import annotations

import argparse

from pmsolve.cli.output import fraction_text, table
from pmsolve.data import example_mapping
from pmsolve.errors import PmsolveError
from pmsolve.cli.flags import POSITIVE, output_file
from pmsolve.formats import save_mapping
from pmsolve.model import Experiment, sort_ports
from pmsolve.throughput import bottleneck, inverse_throughput


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="show the bundled example mapping and the throughputs it implies",
                       description="Print the bundled Zen+ blocking-instruction mapping (dissertation "
                                   "Table 6.2) and evaluate a few experiments on it.")
    p.add_argument("--r-max", type=POSITIVE, default=5, help="front-end cap (default 5, as on Zen+)")
    p.add_argument("-o", "--out", help="also write the example mapping to this file")
    p.set_defaults(func=cmd_demo)


def _memory_role(insn: str) -> str:
    """' (store)' / ' (load)' for the example's memory schemes, by where MEM appears."""
    if "MEM" not in insn:
        return ""
    return " (store)" if "MEM" in insn.split(",")[0] else " (load)"


def cmd_demo(args: argparse.Namespace) -> int:
    output_file(args.out)
    mapping = example_mapping()
    print("Bundled example: the blocking instructions of AMD Zen+ as inferred in the dissertation "
          "(Table 6.2), ports renamed like the documentation.\n")
    print(mapping)
    names = {i.split()[0] + _memory_role(i).replace(" (", "_").rstrip(")"): i
             for i in mapping.instructions}
    demo = [{names["add"]: 4}, {names["add"]: 4, names["mov_store"]: 2},
            {names["vpaddd"]: 2, names["vminps"]: 2, names["vpslld"]: 1},
            {names["vmovapd_store"]: 1, names["mov_store"]: 1, names["mov_load"]: 2},
            {names["vpor"]: 3, names["vroundps"]: 2, names["vaddps"]: 2}]
    print("\nThroughput the mapping implies (exact bottleneck formula, cross-checked by the LP):\n")
    rows = []
    for counts in demo:
        e = Experiment(counts)
        b = bottleneck(mapping, e, args.r_max)
        lp = float(inverse_throughput(mapping, e, r_max=args.r_max, method="lp"))
        if abs(lp - float(b.inverse_throughput)) > 1e-7:
            raise PmsolveError(f"internal check failed: LP {lp} != formula {b.inverse_throughput} on {e}")
        short = ", ".join(f"{n}× {i.split()[0]}{_memory_role(i)}" for i, n in e.items())
        rows.append((short, fraction_text(b.inverse_throughput), f"{lp:.4f}",
                     "front end" if b.frontend_bound else "{" + ",".join(sort_ports(b.ports)) + "}"))
    print(table(["experiment", "tp⁻¹", "LP", "bottleneck ports"], rows))
    if args.out:
        save_mapping(mapping, args.out)
        print(f"\nwrote {args.out}")
    return 0
