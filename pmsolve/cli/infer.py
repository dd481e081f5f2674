"""``pmsolve infer [pmevo | cegis | explain]``: infer a port mapping from an oracle's measurements.

Without an algorithm ``infer`` runs the main job (:mod:`pmsolve.jobs.host`); each algorithm
reads an oracle spec (:func:`~pmsolve.harness.oracle.open_oracle`) and writes a mapping with
``-o``. Interrupted runs resume from their state file or checkpoint folder.
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from pathlib import Path

from pmsolve.cli.flags import (NON_NEGATIVE, NON_NEGATIVE_INT, POSITIVE, POSITIVE_INT, add_backend_argument,
                               add_json_argument, add_mapping_output, add_oracle_argument, add_quiet_argument,
                               extend_with_executor, name_list, number, output_dir, output_file, refuse_same_file,
                               refuse_together)
from pmsolve.cli.output import EXIT_NO, emit_json, fraction_text, say
from pmsolve.errors import UnknownNameError, ValidationError
from pmsolve.fileio import atomic_write_text
from pmsolve.formats import load_mapping, mapping_to_json, read_text_file, save_mapping
from pmsolve.harness.cpu import announce_measuring
from pmsolve.harness.hardware import available as hardware_available
from pmsolve.harness.oracle import Oracle, open_oracle, parse_spec
from pmsolve.infer.cegis import CegisOptions
from pmsolve.infer.cegis import infer as cegis_infer
from pmsolve.infer.explain import ExplainOptions, infer as explain_infer
from pmsolve.infer.explain.hooks import get_hook
from pmsolve.infer.common import UnseenCheck, rename_options
from pmsolve.infer.pmevo import PmevoOptions
from pmsolve.infer.pmevo.checkpoint import EVOLUTION_FILE, MEASUREMENTS_FILE
from pmsolve.infer.pmevo import infer as pmevo_infer
from pmsolve.jobs.host import JobConfig, render, run
from pmsolve.jobs.report import render_html
from pmsolve.model import Experiment, sort_ports
from pmsolve.strategy import k_rule


def add_parsers(sub: argparse._SubParsersAction) -> None:
    algorithms = _add_main_job(sub)
    _add_pmevo(algorithms)
    _add_cegis(algorithms)
    _add_explain(algorithms)


# --------------------------------------------------------------------------- the main job

def _add_main_job(sub: argparse._SubParsersAction) -> argparse._SubParsersAction:
    p = sub.add_parser("infer", help="infer a port mapping (without an ALGORITHM: the explained mapping of this CPU)",
                       description="Infer a port mapping from throughput measurements. Without an ALGORITHM: the "
                                   "main job - the explained port mapping of the CPU you sit at, without "
                                   "performance counters: measure a profile of the schemes it offers (quick: ~200 "
                                   "common ones, AVX-512 where present; --all: every one), infer the mapping with "
                                   "the counter-free explainable algorithm (witnesses per µop, misfits by "
                                   "category), then measure random 4-5-instruction experiments never used for "
                                   "inference and score pmsolve, llvm-mca, OSACA and PMEvo on them. Measurements "
                                   "and the inference state live in a folder per CPU and profile, so an "
                                   "interrupted run resumes. Away from x86-64 Linux: the same on a simulated "
                                   "Zen-like machine.",
                       epilog="Reports: text (default), --json, and --report FILE.html (one row per scheme with "
                              "its witnesses, misfits by category, the ports picture, the accuracy table). "
                              "`pmsolve explain OUT SCHEME` shows one scheme's witnesses from the -o file.")
    p.add_argument("--profile", choices=("smoke", "quick", "all"),
                   help="which schemes: quick (default, ~200 common ones, ≤ 10 min), all (every offered scheme), "
                        "smoke (a handful, under a minute)")
    p.add_argument("--all", action="store_true", help="same as --profile all")
    p.add_argument("--schemes", help="comma-separated schemes of this CPU's catalogue (`pmsolve isa list`) instead "
                                     "of a profile; not with the simulated machine, which has its own")
    p.add_argument("--method", choices=("explain", "pmevo"), default="explain",
                   help="inference: explain (default, counter-free explainable) or pmevo (for comparison)")
    p.add_argument("--held-out", type=POSITIVE_INT, default=200, help="held-out 4-5-instruction experiments (default 200)")
    p.add_argument("--runs", type=POSITIVE_INT, default=1, help="characterisation runs for the majority vote (default 1)")
    p.add_argument("--no-pmevo", action="store_true", help="do not train PMEvo for the comparison")
    p.add_argument("--pmevo-schemes", type=POSITIVE_INT, default=40,
                   help="PMEvo's comparison trains on a random sample of this many mapped schemes (it measures "
                        "every pair; default 40)")
    p.add_argument("--pmevo-minutes", type=NON_NEGATIVE, default=JobConfig.pmevo_minutes,
                   help="PMEvo's search time for the comparison, on up to two processes; the search ends by "
                        f"then (default {JobConfig.pmevo_minutes:g})")
    p.add_argument("--mcpu", help="llvm-mca -mcpu to compare with (default: the best for this CPU)")
    p.add_argument("--osaca", dest="osaca_arch", help="OSACA model to compare with (default: the nearest one)")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--wait-quiet", type=NON_NEGATIVE, default=0.0, metavar="MINUTES",
                   help="wait up to MINUTES for the reference kernels to run at this CPU's published speeds, "
                        "before measuring and again (the same MINUTES in all) whenever experiments stay noisy "
                        "mid-run (something sharing the core slows every measurement; default 0: measure "
                        "through it, with a warning in the report)")
    p.add_argument("--workdir", help="folder for measurements, state and checkpoints (default: "
                                     "$XDG_CACHE_HOME/pmsolve/host/<cpu>/<profile>)")
    p.add_argument("--simulated", action="store_true", help="run on the simulated machine even on x86-64")
    p.add_argument("--report", metavar="FILE.html", help="write the HTML report here")
    p.add_argument("-o", "--out", help="write the mapping with its explanation here (`pmsolve explain OUT`)")
    add_quiet_argument(p)
    add_json_argument(p)
    # the work folder keeps a hardware run; the simulated machine's run keeps nothing
    p.set_defaults(func=cmd_infer_main, resumes=lambda args: not args.simulated and hardware_available() is None)
    return p.add_subparsers(dest="algorithm", metavar="ALGORITHM")


def _profile(args: argparse.Namespace) -> tuple[str, tuple[str, ...] | None]:
    """The profile and the schemes the main job's flags ask for, contradictions refused."""
    refuse_together(args, "--all", "--profile", "--all is --profile all; give one of them")
    refuse_together(args, "--schemes", "--profile", "--schemes replaces the profile")
    refuse_together(args, "--schemes", "--all", "--schemes replaces the profile")
    schemes = name_list(args.schemes, "--schemes", "scheme")
    if schemes is not None:
        why = "--simulated" if args.simulated else hardware_available()
        if why is not None:
            raise ValidationError(f"--schemes names schemes of this CPU, but the job runs on the simulated "
                                  f"machine ({why}), which has its own")
    return ("all" if args.all else args.profile or "quick"), schemes


def cmd_infer_main(args: argparse.Namespace) -> int:
    profile, schemes = _profile(args)
    output_file(args.out)
    output_file(args.report, "HTML report")
    output_dir(args.workdir, "work folder")
    refuse_same_file(("-o", args.out), ("--report", args.report))
    config = JobConfig(profile=profile, schemes=schemes, method=args.method, held_out=args.held_out,
                       seed=args.seed, runs=args.runs, compare_pmevo=not args.no_pmevo,
                       pmevo_minutes=args.pmevo_minutes, pmevo_schemes=args.pmevo_schemes, workdir=args.workdir,
                       simulated=args.simulated, wait_quiet=args.wait_quiet,
                       mcpu=args.mcpu, osaca_arch=args.osaca_arch)
    report = run(config, say=(lambda m: None) if args.quiet else say)
    doc = report.to_json()
    if args.out:
        if report.result is not None:
            report.result.save(args.out)
        else:
            save_mapping(report.mapping, args.out, "pmsolve")
    if args.report:
        atomic_write_text(args.report, render_html(doc))
    if args.json:
        emit_json(doc)
    else:
        print(render(report))
    return 0


# --------------------------------------------------------------------------- pmevo

#: The library's option names as the inference commands spell them (in warnings and hints).
INFER_FLAGS = {"ports": "--ports", "noise_epsilon": "--epsilon", "r_max": "--r-max", "training": "--training",
               "budget_seconds": "--minutes"}


def stderr_progress(event: object) -> None:
    """Progress of an inference algorithm (a ProgressEvent): one line on stderr."""
    print(event, file=sys.stderr, flush=True)


def _oracle_file(spec: str) -> str | None:
    """The file an oracle spec reads (or, for a hardware store, writes)."""
    path = parse_spec(spec)[1]
    return path if path not in ("", "-") else None


def _ports_arg(text: str) -> int | list[str]:
    """--ports: a count, or the port names separated by commas."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    names = [p.strip() for p in text.split(",")]
    if not all(names):
        raise ValidationError(f"--ports must be a count or comma-separated port names, got {text!r}")
    return names


def _add_pmevo(algorithms: argparse._SubParsersAction) -> None:
    p = algorithms.add_parser("pmevo", help="PMEvo: evolutionary inference from singleton and pair experiments",
                              description="PMEvo (dissertation ch. 5): measure singletons, pairs and ratio pairs "
                                          "(and random training experiments), merge congruent schemes, evolve a "
                                          "three-level mapping (DEAP) for a time budget, polish it by local search, "
                                          "check it on unseen experiments. Interrupt and rerun with the same "
                                          "--checkpoint to resume.")
    add_oracle_argument(p)
    p.add_argument("--ports", required=True, help="number of execution ports K, or their names (a,b,c)")
    p.add_argument("--minutes", type=NON_NEGATIVE, default=2.0,
                   help="time budget of the search in minutes (default 2; 0: no budget, use --generations)")
    p.add_argument("--preset", choices=("best", "paper"), default="best",
                   help="best: the best configuration measured here (default); paper: the PLDI'20 algorithm "
                        "(population 1000, no mutation, volume weight 1, no extensions)")
    p.add_argument("--generations", type=POSITIVE_INT, help="cap on the generations (default: none, the budget decides)")
    p.add_argument("--population", type=POSITIVE_INT, help="population size N (best: 200, paper: 1000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (deterministic with --minutes 0)")
    p.add_argument("--workers", type=POSITIVE_INT, default=1, help="local worker processes for fitness evaluation")
    p.add_argument("--checkpoint", metavar="DIR", help="folder for measurements and per-generation state")
    p.add_argument("--epsilon", type=NON_NEGATIVE, default=0.05,
                   help="congruence filtering tolerance, relative (default 0.05)")
    p.add_argument("--r-max", type=POSITIVE, help="model a front end of at most R_MAX instructions per cycle")
    p.add_argument("--mutation", type=number(float, low=0, high=1), help="mutation probability per child (best: 0.3, paper: 0)")
    p.add_argument("--volume-weight", type=NON_NEGATIVE,
                   help="weight of the normalised µop volume against the normalised error (best: 0.01, paper: 1)")
    p.add_argument("--local-search", type=POSITIVE_INT, help="polish only this many best distinct individuals (best: 10, "
                                                    "paper: all)")
    p.add_argument("--patience", type=POSITIVE_INT, help="stop after this many generations without a better error")
    g = p.add_argument_group("extensions beyond the paper (the best preset's values in brackets)")
    g.add_argument("--training", type=NON_NEGATIVE_INT, metavar="N",
                   help="also fit N random experiments, seeded apart from any evaluation set [5000]")
    g.add_argument("--training-sizes", default="3-5", metavar="MIN-MAX", help="their length in schemes (default 3-5)")
    g.add_argument("--init-uops", type=POSITIVE_INT, help="at most this many µop kinds per scheme in the initial mappings [2]")
    g.add_argument("--memetic-every", type=POSITIVE_INT, metavar="K",
                   help="local search with compound moves (a µop's port set and count together, add one, "
                        "collapse a scheme into one µop) on the best individuals every K generations [2]")
    g.add_argument("--port-sweeps", type=NON_NEGATIVE_INT, help="passes of port-set search at the end [6]")
    g.add_argument("--port-top", type=POSITIVE_INT, help="how many of the best mappings port-set search polishes [3]")
    g.add_argument("--restarts", type=POSITIVE_INT, metavar="R",
                   help="R independent evolutions (seeds SEED..SEED+R-1, one per worker); keep the best fit [1]")
    add_mapping_output(p)
    add_quiet_argument(p)
    add_json_argument(p)
    p.set_defaults(func=cmd_infer_pmevo, resumes=lambda args: bool(args.checkpoint))
    extend_with_executor(p)  # --scheduler/--executor for PMEvo's fitness


def _training_sizes(text: str) -> tuple[int, int]:
    lo, _, hi = text.partition("-")
    if not (lo.isdigit() and hi.isdigit() and 1 <= int(lo) <= int(hi)):
        raise ValidationError(f"--training-sizes must look like MIN-MAX (e.g. 3-5), got {text!r}")
    return int(lo), int(hi)


def cmd_infer_pmevo(args: argparse.Namespace) -> int:
    output_file(args.out)
    output_dir(args.checkpoint, "checkpoint folder")
    kept = [str(Path(args.checkpoint) / name) for name in (MEASUREMENTS_FILE, EVOLUTION_FILE)] if args.checkpoint else []
    refuse_same_file(("--oracle", _oracle_file(args.oracle)), ("-o", args.out),
                     *(("--checkpoint", path) for path in kept))
    oracle = open_oracle(args.oracle)
    announce_measuring(oracle)
    given = {k: getattr(args, k) for k in ("population", "mutation", "volume_weight", "local_search", "patience",
                                           "port_sweeps", "port_top", "memetic_every", "init_uops", "training",
                                           "restarts")
             if getattr(args, k) is not None}
    options = PmevoOptions(ports=_ports_arg(args.ports), preset=args.preset,
                           budget_seconds=None if args.minutes == 0 else 60 * args.minutes,
                           generations=args.generations, seed=args.seed, congruence_epsilon=args.epsilon,
                           r_max=args.r_max, training_sizes=_training_sizes(args.training_sizes),
                           workers=args.workers, **given)
    result = pmevo_infer(oracle, options, state=args.checkpoint, progress=None if args.quiet else stderr_progress)
    if args.out:
        save_mapping(result.mapping, args.out, args.to)
    if args.json:
        emit_json({"d_avg": result.d_avg, "volume": result.volume, "experiments": result.n_experiments,
                   "generations": result.evolution.generations, "evaluations": result.evolution.evaluations,
                   "seconds": result.seconds, "classes": result.congruence.classes,
                   "unseen": result.unseen.to_json() if result.unseen else None,
                   "mapping": {i: [{"ports": sort_ports(u.ports), "count": u.count} for u in us]
                               for i, us in result.mapping.uops.items()}})
        return _known_wrong(result.unseen)
    print(result.table())
    if result.unseen is not None:
        print("\n" + result.unseen.describe(INFER_FLAGS))
    if args.out:
        print(f"\nwrote {args.out}")
    return _known_wrong(result.unseen)


def _known_wrong(unseen: UnseenCheck | None) -> int:
    """A mapping that fails its own check on unseen experiments is written, with the warning,
    but the command exits with EXIT_NO: scripts must not take it for a good one."""
    return EXIT_NO if unseen is not None and not unseen.skipped and not unseen.ok else 0


# --------------------------------------------------------------------------- cegis

def _add_cegis(algorithms: argparse._SubParsersAction) -> None:
    p = algorithms.add_parser("cegis", help="counter-example-guided inference (exact, explainable; small problems)",
                              description="CEGIS (dissertation ch. 4): measure singletons, then repeatedly find a "
                                          "mapping explaining all measurements and a competing one with an experiment "
                                          "telling them apart, until the mapping is provably unique. Measurements "
                                          "persist in --state (default OUT.cegis-state.json); rerun the same command "
                                          "to continue.")
    add_oracle_argument(p)
    p.add_argument("--ports", required=True, help="number of execution ports K, or their names (a,b,c)")
    add_backend_argument(p)
    p.add_argument("--kind", choices=("two-level", "fixed-counts", "power-set"), default="two-level",
                   help="mapping space (power-set: µops = all port sets; very expensive)")
    p.add_argument("--uops", help="µop counts for fixed-counts: 'insn:n,...', a MAPPING.json, or 'counter'")
    p.add_argument("--max-count", type=POSITIVE_INT, default=2, help="largest µop count of the power-set space")
    p.add_argument("--epsilon", type=NON_NEGATIVE, default=0.0, help="CPI noise tolerance ε (default 0: exact)")
    p.add_argument("--r-max", type=POSITIVE, help="front end of at most R_MAX instructions per cycle")
    p.add_argument("--initial", choices=("singletons", "pairs", "none"), default="singletons",
                   help="initial experiments (default singletons)")
    p.add_argument("--strategy", choices=("split", "joint"), default="split",
                   help="findOtherMapping as candidates + screening (split, default) or one solver call (joint, "
                        "the dissertation's)")
    p.add_argument("--no-symmetry", action="store_true", help="no symmetry breaking over port renaming")
    p.add_argument("--final-bound", type=POSITIVE_INT, default=12, help="size bound of the final distinguishing check")
    p.add_argument("--timeout", type=POSITIVE, help="seconds per solver check")
    p.add_argument("--state", help="measurement state file (default OUT.cegis-state.json)")
    add_mapping_output(p)
    add_quiet_argument(p)
    add_json_argument(p)
    p.set_defaults(func=cmd_infer_cegis, resumes=lambda args: bool(args.state or args.out))


def _cegis_uops(spec: str | None, oracle: Oracle, kind: str) -> dict[str, int] | None:
    """µop counts for --kind fixed-counts: 'insn:n,...', a mapping file, or 'counter' (the oracle's)."""
    if kind != "fixed-counts":
        return None
    if not spec:
        raise ValidationError("--kind fixed-counts needs --uops 'insn:n,...' | MAPPING.json | counter")
    insns = list(oracle.instructions)
    if spec == "counter":
        counts = oracle.uop_counts([Experiment({i: 1}) for i in insns])
        return {i: max(1, round(c)) for i, c in zip(insns, counts)}
    if spec.endswith(".json"):
        m = load_mapping(spec)
        return {i: sum(u.count for u in m.uops_of(i)) for i in insns}
    counts = dict(Experiment.parse(spec, known=insns).items())
    unknown = sorted(set(counts) - set(insns))
    if unknown:
        raise UnknownNameError(f"--uops names {', '.join(map(repr, unknown))}, which the oracle does not "
                               f"measure; its instructions: {', '.join(insns[:8])}{' ...' if len(insns) > 8 else ''}")
    missing = [i for i in insns if i not in counts]
    if missing:
        raise ValidationError(f"--uops gives no count for {', '.join(map(repr, missing[:8]))}: give 'insn:n' "
                              f"for every instruction of the oracle, a MAPPING.json, or 'counter'")
    return counts


def cmd_infer_cegis(args: argparse.Namespace) -> int:
    if args.uops and args.kind != "fixed-counts":
        raise ValidationError(f"--uops applies to --kind fixed-counts only, not to --kind {args.kind}")
    state = args.state or (f"{args.out}.cegis-state.json" if args.out else None)
    output_file(args.out)
    output_file(state, "state file")
    refuse_same_file(("--oracle", _oracle_file(args.oracle)), ("-o", args.out), ("--state", state))
    oracle = open_oracle(args.oracle)
    announce_measuring(oracle)
    options = CegisOptions(ports=_ports_arg(args.ports), kind=args.kind,
                           uops_per_insn=_cegis_uops(args.uops, oracle, args.kind), max_count=args.max_count,
                           noise_epsilon=Fraction(args.epsilon).limit_denominator(10**6) if args.epsilon else None,
                           r_max=Fraction(args.r_max).limit_denominator(10**6) if args.r_max else None,
                           backend=args.backend, strategy=args.strategy, initial=args.initial,
                           symmetry=not args.no_symmetry, final_bound=args.final_bound, timeout=args.timeout)
    result = cegis_infer(oracle, options, state=state, progress=None if args.quiet else stderr_progress)
    if result.mapping is not None and args.out:
        save_mapping(result.mapping, args.out, args.to)
    if args.json:
        conflict = result.conflict
        emit_json({"status": result.status, "proof": result.proof, "stats": result.stats,
                   "mapping": mapping_to_json(result.mapping) if result.mapping else None,
                   "measurements": [{"experiment": dict(e.items()), "cycles": fraction_text(t)}
                                    for e, t in result.measurements],
                   "initial": result.initial,
                   "witnesses": [{"experiment": dict(w.experiment.items()), "measured": fraction_text(w.measured),
                                  "ruled_out": [{"mapping": mapping_to_json(m), "predicted": fraction_text(t)}
                                                for m, t in w.ruled_out]} for w in result.witnesses],
                   "unseen": result.unseen.to_json() if result.unseen else None,
                   "conflict": None if conflict is None else {
                       "experiments": [{"experiment": dict(e.items()), "cycles": fraction_text(t)}
                                       for e, t in conflict.experiments],
                       "instructions": list(conflict.instructions), "constraints": list(conflict.constraints),
                       "hint": rename_options(conflict.hint, INFER_FLAGS) or None}})
        return _known_wrong(result.unseen) if result.status == "inferred" else EXIT_NO
    if result.status == "inconsistent" and result.conflict is not None:
        print(result.conflict.describe(INFER_FLAGS))
        return EXIT_NO
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
    return _known_wrong(result.unseen)


# --------------------------------------------------------------------------- explain

EXPLAIN_EPILOG = """\
With a µop counter (a simulated oracle with uops=1) this is the ASPLOS'24 algorithm and --ports
is required. Without one (this VM's hardware oracle, most clouds), or with --throughput-only, the
counter-free algorithm runs: a blocking candidate's single µop is a hypothesis that pairs, mixes
and CEGIS over µop multiplicities settle, the number of ports is inferred (per component of
candidates that share ports), and every scheme's µops, their count included, come from the
blocking suite and are checked on experiments not used to derive them. The state file (default
OUT.explain-state.json) makes an interrupted run resumable: rerun the same command."""


def _add_explain(algorithms: argparse._SubParsersAction) -> None:
    p = algorithms.add_parser(
        "explain", help="explainable inference, with or without a µop counter (blocking instructions, witnesses)",
        description="Explainable port mapping inference (dissertation ch. 6): blocking candidates, port-set sizes, "
                    "equivalence (Thm 6.3), peak IPC, the blocking instructions' port structure (CEGIS), every "
                    "other scheme against the blocking suite, majority vote over runs. The result is a pmsolve "
                    "mapping with witnesses per µop and categorised misfits (see `pmsolve explain`).",
        epilog=EXPLAIN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_oracle_argument(p, "simulated:MAPPING.json?r_max=5&uops=1[&noise=0.01&seed=1], store:..., or hardware:...")
    p.add_argument("--ports", type=POSITIVE_INT, help="number of execution ports K (required with a µop counter; "
                                             "without one the number is inferred)")
    p.add_argument("--schemes", help="only these schemes: a file with one per line")
    p.add_argument("--improper", action="append", default=[], metavar="SCHEME=N",
                   help="an improper blocking instruction with N µops (e.g. a store); repeatable")
    p.add_argument("--no-share", action="store_true",
                   help="do not require improper blocking instructions to share a µop with a proper one")
    p.add_argument("--disjoint", action="append", default=[], metavar="A;B",
                   help="two blocking schemes documented to use disjoint ports; repeatable")
    p.add_argument("--epsilon", type=NON_NEGATIVE, default=0.02, help="CPI tolerance ε (default 0.02)")
    p.add_argument("--r-max", type=POSITIVE, help="front-end limit (default: measure the peak IPC)")
    p.add_argument("--runs", type=POSITIVE_INT, default=1, help="characterisation runs for the majority vote (default 1)")
    p.add_argument("--k-rule", default="impl", help="number of blocking copies: impl (default), uops, paper, or N")
    p.add_argument("--integrality", type=POSITIVE, default=0.3,
                   help="largest distance of a non-evading µop estimate from an integer (default 0.3; "
                        "≥ 0.5: always round, for noisy measurements)")
    p.add_argument("--tolerance", type=NON_NEGATIVE,
                   help="relative slack when a scheme's mapping must reproduce its experiments (default: 0 with a "
                        "µop counter, ε only; 0.03 without one)")
    p.add_argument("--noise", type=NON_NEGATIVE, default=0.01,
                   help="relative measurement noise assumed for one sample without a µop counter (default 0.01): "
                        "estimates are measured again until they are clearly whole numbers")
    p.add_argument("--uop-hook", default="none", help="µop-count adjustment: none (default) or zenplus "
                                                      "(Postulate 6.5, for counters that count macro-ops)")
    p.add_argument("--throughput-only", action="store_true",
                   help="ignore the oracle's µop counter: infer by throughput alone")
    add_backend_argument(p)
    p.add_argument("--timeout", type=POSITIVE, help="seconds per solver check")
    p.add_argument("--state", help="state file (default OUT.explain-state.json; none without -o)")
    p.add_argument("-o", "--out", help="write the mapping with its explanation here (pmsolve format)")
    add_quiet_argument(p)
    add_json_argument(p, "machine-readable summary on stdout")
    p.set_defaults(func=cmd_infer_explain, resumes=lambda args: bool(args.state or args.out))


def _parse_improper(items: list[str]) -> tuple[tuple[str, int], ...]:
    out = []
    for item in items:
        name, sep, n = item.rpartition("=")
        if not sep or not n.strip().isdigit():
            raise ValidationError(f"--improper {item!r}: expected SCHEME=N with N the number of µops")
        out.append((name.strip(), int(n)))
    return tuple(out)


def _parse_disjoint(items: list[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for item in items:
        parts = [x.strip() for x in item.split(";")]
        if len(parts) != 2 or not all(parts):
            raise ValidationError(f"--disjoint {item!r}: expected two schemes separated by ';'")
        out.append((parts[0], parts[1]))
    return tuple(out)


def _scheme_list(path: str | None) -> tuple[str, ...] | None:
    if not path:
        return None
    schemes = tuple(x.strip() for x in read_text_file(path, "scheme list").splitlines() if x.strip())
    if not schemes:
        raise ValidationError(f"{path}: the scheme list names no scheme (one per line)")
    return schemes


def cmd_infer_explain(args: argparse.Namespace) -> int:
    refuse_together(args, "--throughput-only", "--uop-hook", "the hook adjusts µop counts, which "
                                                            "--throughput-only ignores")
    state = args.state or (f"{args.out}.explain-state.json" if args.out else None)
    output_file(args.out)
    output_file(state, "state file")
    refuse_same_file(("--oracle", _oracle_file(args.oracle)), ("--schemes", args.schemes), ("-o", args.out),
                     ("--state", state))
    options = ExplainOptions(ports=args.ports, epsilon=args.epsilon, r_max=args.r_max, runs=args.runs,
                             k_rule=args.k_rule, uop_hook=args.uop_hook, integrality=args.integrality,
                             tolerance=args.tolerance, noise=args.noise, improper=_parse_improper(args.improper),
                             improper_share=not args.no_share, disjoint=_parse_disjoint(args.disjoint),
                             throughput_only=args.throughput_only, instructions=_scheme_list(args.schemes),
                             backend=args.backend, timeout=args.timeout)
    get_hook(args.uop_hook)
    k_rule(args.k_rule)  # validate before measuring anything
    oracle = open_oracle(args.oracle)
    if oracle.has_uop_counter and not args.throughput_only and args.ports is None:
        raise ValidationError("with a µop counter give the number of ports (--ports K); without one "
                              "(or with --throughput-only) it is inferred")
    announce_measuring(oracle)
    result = explain_infer(oracle, options, state=state, progress=None if args.quiet else stderr_progress)
    if args.out:
        result.save(args.out)
    stats, counts = result.summary["stats"], result.category_counts()
    if args.json:
        emit_json({"mapped": stats["mapped"], "schemes": stats["schemes"], "misfits": counts,
                   "warnings": result.warnings, "r_max": result.summary["r_max"],
                   "classes": len(result.summary["blocking"]["classes"]), "stats": stats,
                   "out": args.out,
                   "mapping": result.to_json()["instructions"] if not args.out else None})
        return 0
    print(f"mapped {stats['mapped']} of {stats['schemes']} schemes with {result.summary['ports']} ports; "
          f"{len(result.summary['blocking']['classes'])} blocking classes, peak IPC {result.summary['r_max']}; "
          f"{stats['measurements']} measurements in {stats['seconds']:.0f} s")
    print("misfits: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    for w in result.warnings:
        print("warning: " + w)
    if args.out:
        print(f"wrote {args.out} (see `pmsolve explain {args.out} SCHEME`)")
    elif result.mapping is not None:
        print(result.mapping)
    return 0
