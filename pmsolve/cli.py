"""The ``pmsolve`` command line.

Every subcommand is a function ``cmd_NAME(args) -> int`` registered in :func:`build_parser`.
Errors a user can cause (bad files, unknown instructions, missing solvers) are
:class:`~pmsolve.errors.PmsolveError`\\ s: :func:`main` prints them as one line and exits 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from fractions import Fraction
from importlib import resources
from typing import Sequence

from pmsolve import __version__
from pmsolve.harness.cpu import announce_measuring
from pmsolve.errors import PmsolveError, ValidationError
from pmsolve.fileio import atomic_write_text, check_output_path
from pmsolve.formats import (MAPPING_FORMATS, load_experiments, load_mapping, load_measurements,
                             save_mapping)
from pmsolve.data import example_mapping
from pmsolve.model import Experiment, Measurement, PortMapping, sort_ports


def _emit_json(data: object) -> None:
    json.dump(data, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


def _fmt_fraction(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [list(map(str, header))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[j]) for r in cells) for j in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# --------------------------------------------------------------------------- convert

def cmd_convert(args: argparse.Namespace) -> int:
    check_output_path(args.out)
    mapping = load_mapping(args.input)
    save_mapping(mapping, args.out, args.to, arch_name=args.arch_name)
    print(f"wrote {args.out}: {len(mapping.instructions)} instructions, {len(mapping.ports)} ports, "
          f"{mapping.levels}-level, format {args.to}")
    return 0


# --------------------------------------------------------------------------- throughput

def _experiments_from_args(args: argparse.Namespace, mapping: PortMapping) -> list[Experiment]:
    exps = [Experiment.parse(text, known=mapping.instructions) for text in args.experiment or []]
    if args.experiments:
        exps += [m.experiment if isinstance(m, Measurement) else m for m in load_experiments(args.experiments)]
    if not exps:
        raise ValidationError("give at least one --experiment 'insn:count,...' or an --experiments FILE")
    return exps


def cmd_throughput(args: argparse.Namespace) -> int:
    from pmsolve.throughput import bottleneck

    mapping = load_mapping(args.mapping)
    results = []
    for exp in _experiments_from_args(args, mapping):
        b = bottleneck(mapping, exp, args.r_max)
        if args.backend:  # the same number again through a solver; raises if it disagrees
            from pmsolve.throughput import inverse_throughput
            inverse_throughput(mapping, exp, r_max=args.r_max, method="lp", backend=args.backend)
        results.append((exp, b))
    if args.backend:
        print(f"checked by backend {args.backend}: every value agrees with the bottleneck formula",
              file=sys.stderr)
    if args.json:
        _emit_json([{"experiment": dict(e.items()), "inverse_throughput": _fmt_fraction(b.inverse_throughput),
                     "cycles": float(b.inverse_throughput), "cpi": float(b.inverse_throughput / e.size),
                     "bottleneck_ports": sort_ports(b.ports), "frontend_bound": b.frontend_bound}
                    for e, b in results])
        return 0
    rows = [(str(e), _fmt_fraction(b.inverse_throughput), f"{float(b.inverse_throughput):.4f}",
             f"{float(b.inverse_throughput / e.size):.4f}",
             "front end (R_max)" if b.frontend_bound else "{" + ",".join(sort_ports(b.ports)) + "}")
            for e, b in results]
    print(_table(["experiment", "tp⁻¹", "cycles", "CPI", "bottleneck"], rows))
    return 0


# --------------------------------------------------------------------------- evaluate

def cmd_evaluate(args: argparse.Namespace) -> int:
    from pmsolve.leaderboard import heatmaps, predictors_for, score

    measurements = load_measurements(args.measurements)
    predictors = predictors_for(measurements, args.mapping or [], args.palmed or [], args.others, args.r_max)
    if not predictors:
        raise ValidationError("nothing to evaluate: give --mapping, --palmed or --others")
    board = score(measurements, predictors)
    for path, unit in ((args.heatmap, "cycles"), (args.heatmap_ipc, "ipc")):
        if path:
            heatmaps(board, path, unit, title=f"{os.path.basename(args.measurements)} ({unit})")
    if args.json:
        _emit_json({s.name: s.as_dict() for s in board.scores})
    else:
        print(board.table())
        print(f"{board.total} experiments; {board.common} covered by every predictor (the common columns). "
              f"Schemes known per predictor: " + ", ".join(f"{s.name} {s.known}" for s in board.scores
                                                          if s.known))
        for path in (args.heatmap, args.heatmap_ipc):
            if path:
                print(f"heat map: {path}")
    return 0


# --------------------------------------------------------------------------- backends

def cmd_backends(args: argparse.Namespace) -> int:
    from pmsolve.backends import describe, format_table

    rows = describe()
    if args.json:
        _emit_json(rows)
    else:
        print(format_table(rows))
    return 0


# --------------------------------------------------------------------------- encode

def cmd_encode(args: argparse.Namespace) -> int:
    from pmsolve.backends.lpfile import to_lp_format
    from pmsolve.backends.smtlib import to_smtlib2

    if args.export:
        from pmsolve.encodings.examples import export_examples

        paths = export_examples(args.export)
        print(f"wrote {len(paths)} files to {args.export}: " + ", ".join(p.name for p in paths))
        return 0
    if not (args.mapping and args.experiment):
        raise ValidationError("give --export DIR, or --mapping FILE and --experiment 'insn:count,...'")
    if args.out:
        check_output_path(args.out)
    from pmsolve.encodings.lp import throughput_lp
    from pmsolve.encodings.relate import relate_throughput

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


# --------------------------------------------------------------------------- demo

def _memory_role(insn: str) -> str:
    """' (store)' / ' (load)' for the example's memory schemes, by where MEM appears."""
    if "MEM" not in insn:
        return ""
    return " (store)" if "MEM" in insn.split(",")[0] else " (load)"


def cmd_demo(args: argparse.Namespace) -> int:
    from pmsolve.throughput import bottleneck, inverse_throughput

    if args.out:
        check_output_path(args.out)
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
        rows.append((short, _fmt_fraction(b.inverse_throughput), f"{lp:.4f}",
                     "front end" if b.frontend_bound else "{" + ",".join(sort_ports(b.ports)) + "}"))
    print(_table(["experiment", "tp⁻¹", "LP", "bottleneck ports"], rows))
    if args.out:
        save_mapping(mapping, args.out)
        print(f"\nwrote {args.out}")
    return 0


# --------------------------------------------------------------------------- infer (main job)

def cmd_infer_main(args: argparse.Namespace) -> int:
    from pmsolve.jobs.host import DEFAULT_SCHEMES, JobConfig, render, run

    if args.out:
        check_output_path(args.out)
    schemes = [s.strip() for s in args.schemes.split(",") if s.strip()] if args.schemes else DEFAULT_SCHEMES
    config = JobConfig(schemes=tuple(schemes), ports=args.ports, held_out=args.held_out, seed=args.seed,
                       population=args.population, generations=args.generations, workers=args.workers,
                       store=args.store, checkpoint=args.checkpoint, simulated=args.simulated)
    report = run(config, quiet=args.quiet)
    if args.out:
        save_mapping(report.mapping, args.out, "pmsolve")
    if args.json:
        _emit_json(report.as_json())
    else:
        print(render(report))
    return 0


# --------------------------------------------------------------------------- infer pmevo

#: The library's option names as the inference commands spell them (in warnings and hints).
INFER_FLAGS = {"ports": "--ports", "noise_epsilon": "--epsilon", "r_max": "--r-max", "training": "--training",
               "budget_seconds": "--minutes"}


def stderr_progress(event: object) -> None:
    """Progress of an inference algorithm (a ProgressEvent): one line on stderr."""
    print(event, file=sys.stderr, flush=True)


def _ports_arg(text: str) -> int | list[str]:
    """--ports: a count, or the port names separated by commas."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    names = [p.strip() for p in text.split(",")]
    if not all(names):
        raise ValidationError(f"--ports must be a count or comma-separated port names, got {text!r}")
    return names


def cmd_infer_pmevo(args: argparse.Namespace) -> int:
    from pmsolve.harness import open_oracle
    from pmsolve.infer.pmevo import PmevoOptions, infer

    if args.out:
        check_output_path(args.out)
    oracle = open_oracle(args.oracle)
    announce_measuring(oracle)
    lo, _, hi = args.training_sizes.partition("-")
    if not (lo.isdigit() and hi.isdigit() and 1 <= int(lo) <= int(hi)):
        raise ValidationError(f"--training-sizes must look like MIN-MAX (e.g. 3-5), got {args.training_sizes!r}")
    given = {k: getattr(args, k) for k in ("population", "mutation", "volume_weight", "local_search", "patience",
                                           "port_sweeps", "port_top", "memetic_every", "init_uops", "training",
                                           "restarts")
             if getattr(args, k) is not None}
    options = PmevoOptions(ports=_ports_arg(args.ports), preset=args.preset,
                           budget_seconds=None if args.minutes == 0 else 60 * args.minutes,
                           generations=args.generations, seed=args.seed, congruence_epsilon=args.epsilon,
                           r_max=args.r_max, training_sizes=(int(lo), int(hi)), workers=args.workers, **given)
    result = infer(oracle, options, state=args.checkpoint, progress=None if args.quiet else stderr_progress)
    if args.out:
        save_mapping(result.mapping, args.out, args.to)
    if args.json:
        _emit_json({"d_avg": result.d_avg, "volume": result.volume, "experiments": result.n_experiments,
                    "generations": result.evolution.generations, "evaluations": result.evolution.evaluations,
                    "seconds": result.seconds, "classes": result.congruence.classes,
                    "unseen": result.unseen.as_json() if result.unseen else None,
                    "mapping": {i: [{"ports": sort_ports(u.ports), "count": u.count} for u in us]
                                for i, us in result.mapping.uops.items()}})
        return 0
    print(result.table())
    if result.unseen is not None:
        print("\n" + result.unseen.describe(INFER_FLAGS))
    if args.out:
        print(f"\nwrote {args.out}")
    return 0


# --------------------------------------------------------------------------- infer cegis

def _cegis_uops(spec: str | None, oracle: object, kind: str) -> dict[str, int] | None:
    """µop counts for --kind fixed-counts: 'insn:n,...', a mapping file, or 'counter' (the oracle's)."""
    if kind != "fixed-counts":
        return None
    if not spec:
        raise ValidationError("--kind fixed-counts needs --uops 'insn:n,...' | MAPPING.json | counter")
    insns = list(oracle.instructions)  # type: ignore[attr-defined]
    if spec == "counter":
        counts = oracle.uop_counts([Experiment({i: 1}) for i in insns])  # type: ignore[attr-defined]
        return {i: max(1, round(c)) for i, c in zip(insns, counts)}
    if spec.endswith(".json"):
        m = load_mapping(spec)
        return {i: sum(u.count for u in m.uops_of(i)) for i in insns}
    return dict(Experiment.parse(spec, known=insns).items())


def cmd_infer_cegis(args: argparse.Namespace) -> int:
    from pmsolve.harness import open_oracle
    from pmsolve.infer.cegis import CegisOptions, infer
    from pmsolve.infer.common import rename_options

    oracle = open_oracle(args.oracle)
    announce_measuring(oracle)
    state = args.state or (f"{args.out}.cegis-state.json" if args.out else None)
    if args.out:
        check_output_path(args.out)
    if state:
        check_output_path(state, "state file")
    options = CegisOptions(ports=_ports_arg(args.ports), kind=args.kind,
                           uops_per_insn=_cegis_uops(args.uops, oracle, args.kind), max_count=args.max_count,
                           noise_epsilon=Fraction(args.epsilon).limit_denominator(10**6) if args.epsilon else None,
                           r_max=Fraction(args.r_max).limit_denominator(10**6) if args.r_max else None,
                           backend=args.backend, strategy=args.strategy, initial=args.initial,
                           symmetry=not args.no_symmetry, final_bound=args.final_bound, timeout=args.timeout)
    result = infer(oracle, options, state=state, progress=None if args.quiet else stderr_progress)
    if result.mapping is not None and args.out:
        save_mapping(result.mapping, args.out, args.to)
    if args.json:
        from pmsolve.formats import mapping_to_json
        conflict = result.conflict
        _emit_json({"status": result.status, "proof": result.proof, "stats": result.stats,
                    "mapping": mapping_to_json(result.mapping) if result.mapping else None,
                    "measurements": [{"experiment": dict(e.items()), "cycles": _fmt_fraction(t)}
                                     for e, t in result.measurements],
                    "initial": result.initial,
                    "witnesses": [{"experiment": dict(w.experiment.items()), "measured": _fmt_fraction(w.measured),
                                   "ruled_out": [{"mapping": mapping_to_json(m), "predicted": _fmt_fraction(t)}
                                                 for m, t in w.ruled_out]} for w in result.witnesses],
                    "unseen": result.unseen.as_json() if result.unseen else None,
                    "conflict": None if conflict is None else {
                        "experiments": [{"experiment": dict(e.items()), "cycles": _fmt_fraction(t)}
                                        for e, t in conflict.experiments],
                        "instructions": list(conflict.instructions), "constraints": list(conflict.constraints),
                        "hint": rename_options(conflict.hint, INFER_FLAGS) or None}})
        return 0 if result.status == "inferred" else 1
    if result.status == "inconsistent" and result.conflict is not None:
        print(result.conflict.describe(INFER_FLAGS))
        return 1
    print(result.mapping)
    print(f"\n{result.status}: {result.proof}")
    print(f"{len(result.measurements)} measurements ({result.initial} initial, {len(result.added_experiments)} "
          f"counterexamples) in {result.stats.get('seconds', 0):.1f}s on {result.stats.get('backend')}")
    if result.unseen is not None:
        print(result.unseen.describe(INFER_FLAGS))
    if result.witnesses:
        print("\nwhy each counterexample was measured:")
        for w in result.witnesses:
            print(f"  {w.describe()}")
    if args.out:
        print(f"\nwrote {args.out}" + (f" (measurements in {state})" if state else ""))
    return 0


# --------------------------------------------------------------------------- isa list

def cmd_isa_list(args: argparse.Namespace) -> int:
    from pmsolve.isa import load_catalogue

    cat = load_catalogue(host=not args.any_host)
    schemes = cat.filter(args.filter)
    if not args.all:
        schemes = [s for s in schemes if cat.status(s) == "offered"]
    if args.json:
        _emit_json([{**s.to_json(), "status": cat.status(s)} for s in schemes])
        return 0
    rows = [(s.name, s.category, s.extension, s.memory, s.signature()) + ((cat.status(s),) if args.all else ())
            for s in schemes]
    header = ("scheme", "category", "extension", "memory", "operands") + (("status",) if args.all else ())
    print(_table(header, rows))
    print(f"\n{len(schemes)} of {len(cat)} schemes" + ("" if args.all else " (offered on this host; --all shows excluded ones)"))
    return 0


# --------------------------------------------------------------------------- check-strategy

def cmd_check_strategy(args: argparse.Namespace) -> int:
    from pmsolve.strategy import check_strategy, shortcut_gap, smallest_counterexample
    from pmsolve.strategy.exhaustive import check_strategy_exhaustive

    if args.shortcut:
        if args.insns is None:
            raise ValidationError("--shortcut needs --insns N")
        v = shortcut_gap(args.insns, args.ports, max_exp_len=args.max_exp_len, backend=args.backend,
                         timeout=args.timeout)
        _emit_json(v.as_json()) if args.json else print(v.render())
        return 0
    if not args.strategy:
        raise ValidationError("give --strategy pairs|ratio-pairs|uopsinfo:k=RULE|FILE (or --shortcut facile)")
    common = dict(levels=args.levels, max_uops=args.max_uops, max_exp_len=args.max_exp_len)
    if args.smallest:
        def note(v):
            if not args.json:
                print(f"  {len(v.cls.instructions)} instructions × {len(v.cls.ports)} ports: {v.status} "
                      f"({v.seconds:.1f} s)", file=sys.stderr)
        found, tried = smallest_counterexample(args.strategy, max_insns=args.insns or 3, max_ports=args.ports,
                                               backend=args.backend, timeout=args.timeout, progress=note, **common)
        if args.json:
            _emit_json({"smallest": found.as_json() if found else None,
                        "sufficient_classes": [t.bounds() for t in tried if t.status == "sufficient"]})
        else:
            print(found.render() if found else f"no counterexample up to {args.insns or 3} instructions × "
                                               f"{args.ports} ports: sufficient on every class tried")
        return 0
    if args.method == "enumerate":
        v = check_strategy_exhaustive(args.strategy, args.insns, args.ports, **common)
    else:
        given = load_mapping(args.mapping) if args.mapping else None
        v = check_strategy(args.strategy, args.insns, args.ports, backend=args.backend, timeout=args.timeout,
                           symmetry_breaking=not args.no_symmetry_breaking, given=given,
                           encoding=args.encoding, **common)
    _emit_json(v.as_json()) if args.json else print(v.render())
    return 0


# --------------------------------------------------------------------------- prove

def cmd_prove(args: argparse.Namespace) -> int:
    from pmsolve.proofs import CHECKS, PENDING, get

    if args.list:
        for name, c in CHECKS.items():
            print(f"{name:<12} {c.title}  (mutants: {', '.join(c.mutants)})")
        for name, why in PENDING.items():
            print(f"{name:<12} pending: {why}")
        return 0
    if args.all == bool(args.name):
        raise ValidationError("give a check NAME or --all (see `pmsolve prove --list`)")
    names = list(CHECKS) if args.all else [args.name]
    verdicts = []
    for name in names:
        check = get(name)
        verdicts.append(check.run(args.mutant))
        if args.mutants:
            verdicts += [check.run(m) for m in check.mutants]
        if not args.json:
            for v in verdicts[-1 - (len(check.mutants) if args.mutants else 0):]:
                print(v.render() + "\n", flush=True)
    if args.json:
        _emit_json([v.as_json() for v in verdicts])
    elif args.all:
        for name in PENDING:
            print(f"{name}: pending — {PENDING[name]}")
    expected = all(v.holds == (v.mutant is None) for v in verdicts)
    return 0 if expected else 1


# --------------------------------------------------------------------------- parser

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pmsolve",
        description="CPU port mappings as a solved, checkable problem: compute the throughput a "
                    "port mapping implies, infer mappings from measurements (this CPU, simulated or "
                    "recorded), check strategies and theorems, evaluate against measurements, with "
                    "the solver backend of your choice. `pmsolve infer` alone runs the main job.",
        epilog="Mappings are read in any of: " + ", ".join(MAPPING_FORMATS) + " (detected automatically).")
    parser.add_argument("--version", action="version", version=f"pmsolve {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("convert", help="convert a mapping between formats",
                       description="Convert a port mapping file between pmsolve's JSON, PMEvo's "
                                   "Mapping2/Mapping3, the explainable Zen+ format and uops.info port strings.")
    p.add_argument("input", help="mapping file in any supported format")
    p.add_argument("--to", choices=MAPPING_FORMATS, default="pmsolve", help="output format (default: pmsolve)")
    p.add_argument("-o", "--out", required=True, help="output file")
    p.add_argument("--arch-name", default="", help="architecture name to record (pmevo/explainable formats)")
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("throughput", help="inverse throughput and bottleneck ports of experiments",
                       description="Print the inverse throughput (cycles per iteration), CPI and the "
                                   "bottleneck ports that a mapping implies for each experiment.")
    p.add_argument("--mapping", "-m", required=True, help="mapping file")
    p.add_argument("--experiment", "-e", action="append",
                   help="experiment as 'insn:count,insn:count' (';' separates when names contain commas); repeatable")
    p.add_argument("--experiments", help="file of experiments (pmsolve or PMEvo format)")
    p.add_argument("--r-max", type=float, help="front-end cap: at most R_MAX instructions per cycle")
    p.add_argument("--backend", metavar="NAME",
                   help="also solve each experiment with this solver backend (LP, or relateThroughput on "
                        "SMT solvers; see `pmsolve backends`) and check it agrees")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_throughput)

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
    p.add_argument("--r-max", type=float, help="front-end cap for mappings without their own :r_max=")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("backends", help="list solver backends, whether installed, and what each can do",
                       description="List the solver backends (z3, cvc5, pysmt, HiGHS, scipy, SAT, SMT-LIB2), "
                                   "whether each is installed, and its capabilities. Choose one with "
                                   "--backend NAME or $PMSOLVE_BACKEND; 'auto' picks the best installed one.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_backends)

    p = sub.add_parser("infer", help="infer a port mapping from throughput measurements",
                       description="Infer a port mapping from an oracle's throughput measurements. Without an "
                                   "ALGORITHM: the main job - measure ~50 common schemes on this x86-64 machine "
                                   "(hardware oracle, measurement store), detect the peak IPC, infer the mapping with "
                                   "PMEvo and compare it with llvm-mca and OSACA on held-out measured experiments; on "
                                   "other hosts the same on a simulated machine. Rerunning reuses stored measurements.")
    p.add_argument("--schemes", help="comma-separated schemes (default: the built-in set of ~50)")
    p.add_argument("--ports", type=int, default=10, help="number of ports K for PMEvo (default 10)")
    p.add_argument("--held-out", type=int, default=60, help="held-out 4-5-instruction experiments (default 60)")
    p.add_argument("--population", type=int, default=300, help="PMEvo population (default 300)")
    p.add_argument("--generations", type=int, default=50, help="PMEvo generation limit (default 50)")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="processes for PMEvo fitness evaluation (default: all cores)")
    p.add_argument("--store", help="measurement store, SQLite (default: $XDG_CACHE_HOME or ~/.cache "
                                   "/pmsolve/measurements.sqlite)")
    p.add_argument("--checkpoint", metavar="DIR", help="PMEvo checkpoint folder (resume an interrupted inference)")
    p.add_argument("--simulated", action="store_true", help="run the simulated example even on x86-64")
    p.add_argument("-o", "--out", help="write the inferred mapping here")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_infer_main)
    infer_sub = p.add_subparsers(dest="algorithm", metavar="ALGORITHM")
    p = infer_sub.add_parser("pmevo", help="PMEvo: evolutionary inference from singleton and pair experiments",
                             description="PMEvo (dissertation ch. 5): measure singletons, pairs and ratio pairs "
                                         "(and random training experiments), merge congruent schemes, evolve a "
                                         "three-level mapping (DEAP) for a time budget, polish it by local search, "
                                         "check it on unseen experiments. Interrupt and rerun with the same "
                                         "--checkpoint to resume.")
    p.add_argument("--oracle", required=True,
                   help="simulated:MAPPING.json[?r_max=5&noise=0.01&seed=1] or recorded:MEASUREMENTS.json")
    p.add_argument("--ports", required=True, help="number of execution ports K, or their names (a,b,c)")
    p.add_argument("--minutes", type=float, default=2.0,
                   help="time budget of the search in minutes (default 2; 0: no budget, use --generations)")
    p.add_argument("--preset", choices=("best", "paper"), default="best",
                   help="best: the best configuration measured here (default); paper: the PLDI'20 algorithm "
                        "(population 1000, no mutation, volume weight 1, no extensions)")
    p.add_argument("--generations", type=int, help="cap on the generations (default: none, the budget decides)")
    p.add_argument("--population", type=int, help="population size N (best: 200, paper: 1000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (deterministic with --minutes 0)")
    p.add_argument("--workers", type=int, default=1, help="local worker processes for fitness evaluation")
    p.add_argument("--checkpoint", metavar="DIR", help="folder for measurements and per-generation state")
    p.add_argument("--epsilon", type=float, default=0.05,
                   help="congruence filtering tolerance, relative (default 0.05)")
    p.add_argument("--r-max", type=float, help="model a front end of at most R_MAX instructions per cycle")
    p.add_argument("--mutation", type=float, help="mutation probability per child (best: 0.3, paper: 0)")
    p.add_argument("--volume-weight", type=float,
                   help="weight of the normalised µop volume against the normalised error (best: 0.01, paper: 1)")
    p.add_argument("--local-search", type=int, help="polish only this many best distinct individuals (best: 10, "
                                                    "paper: all)")
    p.add_argument("--patience", type=int, help="stop after this many generations without a better error")
    g = p.add_argument_group("extensions beyond the paper (the best preset's values in brackets)")
    g.add_argument("--training", type=int, metavar="N",
                   help="also fit N random experiments, seeded apart from any evaluation set [5000]")
    g.add_argument("--training-sizes", default="3-5", metavar="MIN-MAX", help="their length in schemes (default 3-5)")
    g.add_argument("--init-uops", type=int, help="at most this many µop kinds per scheme in the initial mappings [2]")
    g.add_argument("--memetic-every", type=int, metavar="K",
                   help="local search with compound moves (a µop's port set and count together, add one, "
                        "collapse a scheme into one µop) on the best individuals every K generations [2]")
    g.add_argument("--port-sweeps", type=int, help="passes of port-set search at the end [6]")
    g.add_argument("--port-top", type=int, help="how many of the best mappings port-set search polishes [3]")
    g.add_argument("--restarts", type=int, metavar="R",
                   help="R independent evolutions (seeds SEED..SEED+R-1, one per worker); keep the best fit [1]")
    p.add_argument("-o", "--out", help="write the inferred mapping here")
    p.add_argument("--to", choices=MAPPING_FORMATS, default="pmsolve", help="format of --out (default: pmsolve)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_infer_pmevo)

    p = infer_sub.add_parser("cegis", help="counter-example-guided inference (exact, explainable; small problems)",
                             description="CEGIS (dissertation ch. 4): measure singletons, then repeatedly find a mapping "
                                         "explaining all measurements and a competing one with an experiment telling "
                                         "them apart, until the mapping is provably unique. Measurements persist in "
                                         "--state (default OUT.cegis-state.json); rerun the same command to continue.")
    p.add_argument("--oracle", required=True,
                   help="simulated:MAPPING.json[?r_max=5&noise=0.01&seed=1] or recorded:MEASUREMENTS.json")
    p.add_argument("--ports", required=True, help="number of execution ports K, or their names (a,b,c)")
    from pmsolve.backends import add_backend_argument as _cegis_backend_arg
    _cegis_backend_arg(p)
    p.add_argument("--kind", choices=("two-level", "fixed-counts", "power-set"), default="two-level",
                   help="mapping space (power-set: µops = all port sets; very expensive)")
    p.add_argument("--uops", help="µop counts for fixed-counts: 'insn:n,...', a MAPPING.json, or 'counter'")
    p.add_argument("--max-count", type=int, default=2, help="largest µop count of the power-set space")
    p.add_argument("--epsilon", type=float, default=0.0, help="CPI noise tolerance ε (default 0: exact)")
    p.add_argument("--r-max", type=float, help="front end of at most R_MAX instructions per cycle")
    p.add_argument("--initial", choices=("singletons", "pairs", "none"), default="singletons",
                   help="initial experiments (default singletons)")
    p.add_argument("--strategy", choices=("split", "joint"), default="split",
                   help="findOtherMapping as candidates + screening (split, default) or one solver call (joint, "
                        "the dissertation's)")
    p.add_argument("--no-symmetry", action="store_true", help="no symmetry breaking over port renaming")
    p.add_argument("--final-bound", type=int, default=12, help="size bound of the final distinguishing check")
    p.add_argument("--timeout", type=float, help="seconds per solver check")
    p.add_argument("--state", help="measurement state file (default OUT.cegis-state.json)")
    p.add_argument("-o", "--out", help="write the inferred mapping here")
    p.add_argument("--to", choices=MAPPING_FORMATS, default="pmsolve", help="format of --out (default: pmsolve)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_infer_cegis)
    # further inference algorithms register here: module.add_commands(infer_sub)
    from pmsolve.executor import extend_command as _with_executor
    _with_executor(infer_sub.choices["pmevo"])  # --scheduler/--executor for PMEvo's fitness
    from pmsolve.infer.explain import cli as _explain_cli
    _explain_cli.add_commands(infer_sub)

    p = sub.add_parser("isa", help="the x86-64 instruction-scheme catalogue",
                       description="Instruction schemes generated from iced-x86 (isa/x86_64.json), with the "
                                   "curated exclusions of isa/exclusions.txt and the host's CPUID features applied.")
    isa_sub = p.add_subparsers(dest="isa_command", metavar="ACTION")
    p = isa_sub.add_parser("list", help="list instruction schemes",
                           description="List the schemes offered on this host (or all with --all). FILTER is "
                                       "comma-separated terms key=glob (name, mnemonic, category, extension, memory, "
                                       "encoding, feature, status) or a bare name substring, e.g. "
                                       "'category=vec-fma,name=*ymm*'.")
    p.add_argument("--filter", "-f", help="filter expression")
    p.add_argument("--all", action="store_true", help="include excluded and host-unsupported schemes, with the reason")
    p.add_argument("--any-host", action="store_true", help="ignore the host's CPUID features")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_isa_list)

    p = sub.add_parser("encode", help="export encodings as SMT-LIB2 or LP files for any solver",
                       description="Write the throughput LP (Thm 3.7/3.12) or relateThroughput (Def. 4.5) of "
                                   "a mapping and experiment as SMT-LIB2 or CPLEX-LP text, or export the "
                                   "dissertation's worked examples (--export DIR).")
    p.add_argument("--export", metavar="DIR", help="write all worked examples (.smt2 / .lp) into DIR")
    p.add_argument("--mapping", "-m", help="mapping file")
    p.add_argument("--experiment", "-e", help="experiment as 'insn:count,...'")
    p.add_argument("--encoding", choices=["lp", "relate"], default="lp", help="which encoding (default lp)")
    p.add_argument("--format", choices=["smt2", "lp"], default="smt2", help="output format (default smt2)")
    p.add_argument("--r-max", type=int, help="front-end cap in instructions per cycle")
    p.add_argument("-o", "--out", help="output file (default: standard output)")
    p.set_defaults(func=cmd_encode)

    from pmsolve.backends import add_backend_argument

    p = sub.add_parser("check-strategy", help="does a benchmarking strategy determine the port mapping?",
                       description="Decide, within bounds, whether the experiments of a benchmarking strategy "
                                   "determine every port mapping of a class up to indistinguishability (dissertation "
                                   "ch. 9): either a counterexample (two mappings agreeing on every strategy "
                                   "experiment, and an experiment telling them apart, validated with the exact "
                                   "formula) or a proof of sufficiency within the bounds (unsat). Strategies: pairs "
                                   "(singletons + pairs), ratio-pairs (PMEvo), uopsinfo:k=paper|uops|impl|N (blocking "
                                   "instructions for every port set), or a FILE of experiments.")
    p.add_argument("--strategy", help="pairs | ratio-pairs | uopsinfo:k=RULE | FILE (JSON list or one 'insn:n,...' per line)")
    p.add_argument("--shortcut", choices=["facile"],
                   help="instead: search a mapping where Facile's pairwise-union shortcut differs from the exact formula")
    p.add_argument("--insns", type=int, help="number N of instructions (FILE: default the file's instructions)")
    p.add_argument("--ports", type=int, required=True, help="number K of ports")
    p.add_argument("--levels", type=int, choices=[2, 3], default=2, help="two- or three-level mappings (default 2)")
    p.add_argument("--max-uops", type=int, help="three-level: at most U µops per instruction (default 2)")
    p.add_argument("--max-exp-len", type=int, default=4,
                   help="distinguishing experiments have at most L instructions (default 4)")
    p.add_argument("--smallest", action="store_true",
                   help="search the smallest counterexample: 1..N instructions (default 3), then 1..K ports")
    p.add_argument("--method", choices=["smt", "enumerate"], default="smt",
                   help="smt (default) or enumerate every mapping of the class (tiny classes; a cross-check)")
    p.add_argument("--no-symmetry-breaking", action="store_true", help="do not order ports/instructions of M1")
    p.add_argument("--encoding", choices=["threshold", "max", "relate"], default="threshold",
                   help="throughputs as threshold tests of the bottleneck formula (default), as its real "
                        "maximum, or via relateThroughput (Def. 4.5)")
    p.add_argument("--mapping", metavar="FILE",
                   help="ask about this one mapping (instructions i1..iN, ports 0..K-1): is it determined?")
    p.add_argument("--timeout", type=float, help="solver time limit per check, seconds")
    add_backend_argument(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_check_strategy)

    p = sub.add_parser("prove", help="check the dissertation's theorems on bounded domains",
                       description="Check theorem statements (Thm 3.7/3.12, Remark 3.13, Thm 3.14, 4.4, 5.2, 6.3) "
                                   "exhaustively or by SMT on bounded domains; print statement, bound and verdict. "
                                   "Exit 0 when every statement holds (and every requested mutant is caught).")
    p.add_argument("name", nargs="?", help="the check to run (see --list)")
    p.add_argument("--all", action="store_true", help="run every check")
    p.add_argument("--list", action="store_true", help="list the checks and their mutants")
    p.add_argument("--mutant", help="run this deliberately broken variant instead (it must be caught)")
    p.add_argument("--mutants", action="store_true", help="also run every mutant of the checks")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_prove)

    p = sub.add_parser("demo", help="show the bundled example mapping and the throughputs it implies",
                       description="Print the bundled Zen+ blocking-instruction mapping (dissertation "
                                   "Table 6.2) and evaluate a few experiments on it.")
    p.add_argument("--r-max", type=float, default=5, help="front-end cap (default 5, as on Zen+)")
    p.add_argument("-o", "--out", help="also write the example mapping to this file")
    p.set_defaults(func=cmd_demo)
    # command families that live in their own modules register here: module.add_commands(sub)
    _explain_cli.add_top_commands(sub)
    from pmsolve.anica import cli as anica_cli
    anica_cli.add_commands(sub)
    from pmsolve.anica.predictors import cli as predictors_cli
    predictors_cli.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except PmsolveError as exc:
        print(f"pmsolve: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pmsolve: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
