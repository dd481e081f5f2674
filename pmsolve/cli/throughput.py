"""``pmsolve throughput | evaluate | convert | encode | backends``: what a mapping implies, how
predictors score against measurements, and the mapping and encoding files for other tools."""

from __future__ import annotations

import argparse
import os
import sys

from pmsolve.backends import ENV_VAR as BACKEND_ENV_VAR
from pmsolve.backends import choose, describe, format_table, requested_name
from pmsolve.backends.lpfile import to_lp_format
from pmsolve.backends.smtlib import to_smtlib2
from pmsolve.cli.flags import (POSITIVE, POSITIVE_INT, add_json_argument, backend_name, output_dir, output_file,
                               refuse_together)
from pmsolve.cli.output import emit_json, fraction_text, table
from pmsolve.encodings.examples import export_examples
from pmsolve.encodings.lp import throughput_lp
from pmsolve.encodings.relate import relate_throughput
from pmsolve.errors import ValidationError
from pmsolve.fileio import atomic_write_text
from pmsolve.formats import MAPPING_FORMATS, load_experiments, load_mapping, load_measurements, save_mapping
from pmsolve.leaderboard import heatmaps, predictors_for, score
from pmsolve.model import Experiment, Measurement, PortMapping, sort_ports
from pmsolve.modelled import ModelledMapping, load_model
from pmsolve.throughput import inverse_throughput


def add_parsers(sub: argparse._SubParsersAction) -> None:
    _add_throughput(sub)
    _add_evaluate(sub)
    _add_convert(sub)
    _add_encode(sub)
    _add_backends(sub)


# --------------------------------------------------------------------------- throughput

def _add_throughput(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("throughput", help="inverse throughput and bottleneck ports of experiments",
                       description="Print the inverse throughput (cycles per iteration), CPI and the "
                                   "bottleneck ports that a mapping implies for each experiment.")
    p.add_argument("--mapping", "-m", required=True, help="mapping file")
    p.add_argument("--experiment", "-e", action="append",
                   help="experiment as 'insn:count,insn:count' (';' separates when names contain commas); repeatable")
    p.add_argument("--experiments", help="file of experiments (pmsolve or PMEvo format)")
    p.add_argument("--r-max", type=POSITIVE, help="front-end cap: at most R_MAX instructions per cycle")
    p.add_argument("--backend", metavar="NAME", type=backend_name,
                   help="also solve each experiment with this solver backend (LP, or relateThroughput on "
                        "SMT solvers; any case; see `pmsolve backends`) and check it agrees")
    add_json_argument(p)
    p.set_defaults(func=cmd_throughput)


def _experiments_from_args(args: argparse.Namespace, mapping: PortMapping | ModelledMapping) -> list[Experiment]:
    exps = [Experiment.parse(text, known=mapping.instructions) for text in args.experiment or []]
    if args.experiments:
        exps += [m.experiment if isinstance(m, Measurement) else m for m in load_experiments(args.experiments)]
    if not exps:
        raise ValidationError("give at least one --experiment 'insn:count,...' or an --experiments FILE")
    return exps


def _backend_used(requested: str, mapping: PortMapping, exp: Experiment, r_max: float | None) -> str:
    """The backend a --backend request (auto included) runs the throughput LP on, by name."""
    name = requested_name(requested)
    if name != "auto":
        return name
    return choose(throughput_lp(mapping.restrict(exp), exp, r_max).problem, "auto").name


def cmd_throughput(args: argparse.Namespace) -> int:
    model = load_model(args.mapping)
    exps = _experiments_from_args(args, model)
    ported = [e for e in exps if model.is_port_mapping_of(e)]
    backend = _backend_used(args.backend, model.mapping, ported[0], args.r_max) if args.backend and ported else None
    results = []
    for exp in exps:
        b = model.bottleneck(exp, args.r_max)
        if backend and model.is_port_mapping_of(exp):  # the same number again through a solver; raises if it disagrees
            inverse_throughput(model.mapping, exp, r_max=args.r_max, method="lp", backend=backend)
        results.append((exp, b))
    if args.backend:
        asked = f" (asked: {args.backend})" if backend != args.backend else ""
        skipped = len(exps) - len(ported)
        print(f"checked by backend {backend}{asked}: every value agrees with the bottleneck formula"
              + (f" ({skipped} experiment(s) with modelled schemes not checked: no solver models a cost)"
                 if skipped else "") if backend else
              "not checked by a backend: every experiment has a scheme the file models beyond its ports",
              file=sys.stderr)
    kinds = {i: model.schemes[i].kind for e in exps for i in e}
    if args.json:
        rows = [{"experiment": dict(e.items()), "inverse_throughput": fraction_text(b.inverse_throughput),
                 "cycles": float(b.inverse_throughput), "cpi": float(b.inverse_throughput / e.size),
                 "bottleneck_ports": sort_ports(b.ports), "frontend_bound": b.frontend_bound,
                 "cost_of": b.cost_of, "alone": b.alone, "kinds": {i: kinds[i] for i in e},
                 **({"checked_by_backend": backend} if backend and model.is_port_mapping_of(e) else {})}
                for e, b in results]
        emit_json(rows)
        return 0
    rows = [(str(e), fraction_text(b.inverse_throughput), f"{float(b.inverse_throughput):.4f}",
             f"{float(b.inverse_throughput / e.size):.4f}", b.describe()) for e, b in results]
    print(table(["experiment", "tp⁻¹", "cycles", "CPI", "bottleneck"], rows))
    modelled = sorted({i for i, k in kinds.items() if k != "mapped"})
    if modelled:
        print("modelled beyond the port mapping: " + ", ".join(f"{i} ({kinds[i]})" for i in modelled[:8])
              + (f" and {len(modelled) - 8} more" if len(modelled) > 8 else ""))
    return 0


# --------------------------------------------------------------------------- evaluate

def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="leaderboard: accuracy of predictors against measured throughputs",
                       description="Score port mappings, Palmed models and recorded predictors side by side "
                                   "against measured cycles: coverage, MAPE, Pearson's r and Kendall's τ-b in "
                                   "cycles and in IPC, on what each covers and on the common subset; scheme "
                                   "names are bridged between namings (PMEvo, explainable/iwho, Palmed).")
    p.add_argument("--mapping", "-m", action="append", metavar="FILE[:r_max=X][:name=LABEL]",
                   help="mapping file, optionally with its own front-end cap and a label; repeatable")
    p.add_argument("--palmed", action="append", metavar="FILE[:name=LABEL]",
                   help="Palmed resource model (instr_to_class / class_to_resources JSON); repeatable")
    p.add_argument("--measurements", required=True, help="measured experiments (pmsolve or PMEvo ExperimentList)")
    p.add_argument("--others", action="store_true",
                   help="also rank the other predictors recorded in the file (e.g. llvm-mca, IACA)")
    p.add_argument("--heatmap", metavar="PNG", help="write predicted-vs-measured heat maps in cycles")
    p.add_argument("--heatmap-ipc", metavar="PNG", help="write predicted-vs-measured heat maps in IPC")
    p.add_argument("--r-max", type=POSITIVE, help="front-end cap for mappings without their own :r_max=")
    add_json_argument(p)
    p.set_defaults(func=cmd_evaluate)


def cmd_evaluate(args: argparse.Namespace) -> int:
    output_file(args.heatmap, "heat map")
    output_file(args.heatmap_ipc, "heat map")
    measurements = load_measurements(args.measurements)
    predictors = predictors_for(measurements, args.mapping or [], args.palmed or [], args.others, args.r_max)
    if not predictors:
        raise ValidationError("nothing to evaluate: give --mapping, --palmed or --others")
    board = score(measurements, predictors)
    for path, unit in ((args.heatmap, "cycles"), (args.heatmap_ipc, "ipc")):
        if path:
            heatmaps(board, path, unit, title=f"{os.path.basename(args.measurements)} ({unit})")
    if args.json:
        emit_json({s.name: s.to_json() for s in board.scores})
    else:
        print(board.table())
        print(f"{board.total} experiments; {board.common} covered by every predictor (the common columns). "
              f"Schemes known per predictor: " + ", ".join(f"{s.name} {s.known}" for s in board.scores
                                                          if s.known))
        for path in (args.heatmap, args.heatmap_ipc):
            if path:
                print(f"heat map: {path}")
    return 0


# --------------------------------------------------------------------------- convert

def _add_convert(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("convert", help="convert a mapping between formats",
                       description="Convert a port mapping file between pmsolve's JSON, PMEvo's "
                                   "Mapping2/Mapping3, the explainable Zen+ format and uops.info port strings.")
    p.add_argument("input", help="mapping file in any supported format")
    p.add_argument("--to", choices=MAPPING_FORMATS, default="pmsolve", help="output format (default: pmsolve)")
    p.add_argument("-o", "--out", required=True, help="output file")
    p.add_argument("--arch-name", default="", help="architecture name to record (pmevo/explainable formats)")
    p.set_defaults(func=cmd_convert)


def cmd_convert(args: argparse.Namespace) -> int:
    output_file(args.out)
    mapping = load_mapping(args.input)
    save_mapping(mapping, args.out, args.to, arch_name=args.arch_name)
    print(f"wrote {args.out}: {len(mapping.instructions)} instructions, {len(mapping.ports)} ports, "
          f"{mapping.levels}-level, format {args.to}")
    return 0


# --------------------------------------------------------------------------- encode

def _add_encode(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("encode", help="export encodings as SMT-LIB2 or LP files for any solver",
                       description="Write the throughput LP (Thm 3.7/3.12) or relateThroughput (Def. 4.5) of "
                                   "a mapping and experiment as SMT-LIB2 or CPLEX-LP text, or export the "
                                   "dissertation's worked examples (--export DIR).")
    p.add_argument("--export", metavar="DIR", help="write all worked examples (.smt2 / .lp) into DIR")
    p.add_argument("--mapping", "-m", help="mapping file")
    p.add_argument("--experiment", "-e", help="experiment as 'insn:count,...'")
    p.add_argument("--encoding", choices=["lp", "relate"], default="lp", help="which encoding (default lp)")
    p.add_argument("--format", choices=["smt2", "lp"], default="smt2", help="output format (default smt2)")
    p.add_argument("--r-max", type=POSITIVE_INT, help="front-end cap in instructions per cycle")
    p.add_argument("-o", "--out", help="output file (default: standard output)")
    p.set_defaults(func=cmd_encode)


def cmd_encode(args: argparse.Namespace) -> int:
    refuse_together(args, "--export", "--out", "--export writes a folder of files; -o names one encoding's file")
    for flag in ("--mapping", "--experiment"):
        refuse_together(args, "--export", flag, "--export writes the worked examples, not a mapping's encoding")
    if args.export:
        output_dir(args.export, "export folder")
        paths = export_examples(args.export)
        print(f"wrote {len(paths)} files to {args.export}: " + ", ".join(p.name for p in paths))
        return 0
    if not (args.mapping and args.experiment):
        raise ValidationError("give --export DIR, or --mapping FILE and --experiment 'insn:count,...'")
    output_file(args.out)
    mapping = load_mapping(args.mapping)
    exp = Experiment.parse(args.experiment, known=mapping.instructions)
    mapping = mapping.restrict(exp)  # only the µops that take part; raises on unknown names
    if args.encoding == "lp":
        problem = throughput_lp(mapping, exp, args.r_max).problem
    else:
        problem = relate_throughput(mapping, exp, r_max=args.r_max).problem
        problem.name = f"relateThroughput (Def. 4.5) of {exp}"
    text = to_lp_format(problem) if args.format == "lp" else to_smtlib2(problem)
    if args.out:
        atomic_write_text(args.out, text)
        print(f"wrote {args.out}")
    else:
        sys.stdout.write(text)
    return 0


# --------------------------------------------------------------------------- backends

def _add_backends(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("backends", help="list solver backends, whether installed, and what each can do",
                       description="List the solver backends (z3, cvc5, pysmt, HiGHS, scipy, SAT, SMT-LIB2), "
                                   "whether each is installed, and its capabilities. Choose one with "
                                   "--backend NAME or $PMSOLVE_BACKEND; 'auto' picks the best installed one.")
    add_json_argument(p)
    p.set_defaults(func=cmd_backends)


def cmd_backends(args: argparse.Namespace) -> int:
    rows = describe()
    if args.json:
        emit_json(rows)
    else:
        print(format_table(rows))
        print(f"\nchoose with --backend NAME or ${BACKEND_ENV_VAR}; 'auto' picks the first installed "
              "backend that fits the problem")
    return 0
