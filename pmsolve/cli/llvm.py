"""``pmsolve llvm-report MAPPING --mcpu CPU``: where llvm-mca's model and a measured mapping disagree,
grouped into families, with the measurements that show it (:mod:`pmsolve.jobs.llvm_report`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pmsolve.cli.flags import POSITIVE_INT, add_json_argument, add_quiet_argument, number, oracle_spec, output_file
from pmsolve.cli.output import emit_json, say, strict_json
from pmsolve.errors import ValidationError
from pmsolve.fileio import atomic_write_text
from pmsolve.harness.oracle import open_oracle
from pmsolve.harness.cpu import microarchitecture_named_in
from pmsolve.jobs.llvm_report import llvm_report, read_explained_mapping, remeasure
from pmsolve.predictors.llvm_mca import model_for


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("llvm-report", help="where llvm-mca's model disagrees with a measured mapping, with evidence",
                       description="Compare llvm-mca's -mcpu model with an explained mapping (`pmsolve infer -o`): "
                                   "every scheme alone and every measured experiment stored as a witness is asked "
                                   "of llvm-mca. Schemes where llvm-mca is slower or faster alone, shares other "
                                   "ports than measured, or is held back by its dispatch width are grouped into "
                                   "families as AnICA generalises (mnemonic, category, extension, µops, memory, "
                                   "operands), largest first; each member shows the measured and predicted "
                                   "cycles, llvm-mca's resources, the mapping's ports and the witnesses.",
                       epilog="Only measurements the mapping reproduces count, and a witness counts for a scheme "
                              "only when llvm-mca is right about the rest of it. --remeasure hardware:- measures "
                              "the witnesses again on this CPU (no store: a store would answer from old runs).")
    p.add_argument("mapping", help="an explained mapping written by `pmsolve infer -o` (it holds the witnesses)")
    p.add_argument("--mcpu", help="llvm-mca's -mcpu (default: the best model for the CPU the mapping was measured on)")
    p.add_argument("--llvm-version", type=POSITIVE_INT, help="use llvm-mca of this LLVM version (default: the newest)")
    p.add_argument("--tolerance", type=number(float, low=0, high=1, low_open=True), default=0.10,
                   help="relative difference that counts as a disagreement (default 0.10)")
    p.add_argument("--top", type=POSITIVE_INT, default=20, help="families printed on stdout (default 20; files hold all)")
    p.add_argument("-o", "--out", metavar="BASE", help="write BASE.txt and BASE.json (every family)")
    p.add_argument("--remeasure", type=oracle_spec, metavar="ORACLE",
                   help="measure every witness again with this oracle (hardware:- on this CPU) and say which reproduce")
    add_quiet_argument(p)
    add_json_argument(p, "print the JSON document instead of the text")
    p.set_defaults(func=cmd_llvm_report)


def cmd_llvm_report(args: argparse.Namespace) -> int:
    base = None
    if args.out:
        base = Path(args.out)
        if base.suffix in (".txt", ".json"):
            base = base.with_suffix("")
        for suffix in (".txt", ".json"):
            output_file(str(base) + suffix, "report")
    progress = (lambda m: None) if args.quiet else say
    mapping, explanations, ex = read_explained_mapping(args.mapping)
    mcpu = args.mcpu
    if mcpu is None:
        uarch = microarchitecture_named_in(str(ex.get("oracle", "")))
        choice = model_for(uarch)
        if choice.model is None:
            raise ValidationError(f"give --mcpu: {choice.why}" if uarch else
                                  f"give --mcpu: {args.mapping} does not say which CPU it was measured on")
        mcpu = choice.model
        progress(f"llvm-mca -mcpu={mcpu}: {choice.why}")
    r_max = ex.get("r_max") if isinstance(ex.get("r_max"), (int, float)) else None
    report = llvm_report(mapping, explanations, mcpu, version=args.llvm_version, tolerance=args.tolerance,
                         source=args.mapping, r_max=r_max, say=progress)
    if args.remeasure:
        remeasure(report, open_oracle(args.remeasure), args.remeasure, say=progress)
    doc = report.to_json()
    if base is not None:
        atomic_write_text(str(base) + ".txt", report.render() + "\n")
        atomic_write_text(str(base) + ".json", json.dumps(strict_json(doc), indent=1, ensure_ascii=False) + "\n")
        progress(f"wrote {base}.txt and {base}.json")
    if args.json:
        emit_json(doc)
    else:
        print(report.render(top=args.top))
    return 0
