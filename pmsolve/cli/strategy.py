"""``pmsolve check-strategy | prove``: does a benchmarking strategy pin a mapping down, and do the
dissertation's theorems hold on bounded domains."""

from __future__ import annotations

import argparse
import sys
import threading
import time

from pmsolve.cli.flags import (POSITIVE, POSITIVE_INT, add_backend_argument, add_json_argument, add_quiet_argument,
                               refuse_together)
from pmsolve.cli.output import EXIT_NO, emit_json, say
from pmsolve.errors import ValidationError
from pmsolve.formats import load_mapping
from pmsolve.proofs import CHECKS, PENDING
from pmsolve.proofs import get as get_check
from pmsolve.strategy import check_strategy, shortcut_gap, smallest_counterexample
from pmsolve.strategy.checker import MAX_PORTS
from pmsolve.strategy.exhaustive import check_strategy_exhaustive


def add_parsers(sub: argparse._SubParsersAction) -> None:
    _add_check_strategy(sub)
    _add_prove(sub)


# --------------------------------------------------------------------------- check-strategy

def _add_check_strategy(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check-strategy", help="does a benchmarking strategy determine the port mapping?",
                       description="Decide, within bounds, whether the experiments of a benchmarking strategy "
                                   "determine every port mapping of a class up to indistinguishability (dissertation "
                                   "ch. 9): either a counterexample (two mappings agreeing on every strategy "
                                   "experiment, and an experiment telling them apart, validated with the exact "
                                   "formula) or a proof of sufficiency within the bounds (unsat). Strategies: pairs "
                                   "(singletons + pairs), ratio-pairs (PMEvo), uopsinfo:k=paper|uops|impl|N (blocking "
                                   "instructions for every port set), or a FILE of experiments.")
    p.add_argument("--strategy",
                   help="pairs | ratio-pairs | uopsinfo:k=RULE | FILE (JSON list or one 'insn:n,...' per line)")
    p.add_argument("--shortcut", choices=["facile"],
                   help="instead: search a mapping where Facile's pairwise-union shortcut differs from the "
                        "exact formula")
    p.add_argument("--insns", type=POSITIVE_INT, help="number N of instructions (FILE: default the file's instructions)")
    p.add_argument("--ports", type=POSITIVE_INT, required=True, help="number K of ports")
    p.add_argument("--levels", type=int, choices=[2, 3], default=2, help="two- or three-level mappings (default 2)")
    p.add_argument("--max-uops", type=POSITIVE_INT, help="three-level: at most U µops per instruction (default 2)")
    p.add_argument("--max-exp-len", type=POSITIVE_INT, default=4,
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
    p.add_argument("--timeout", type=POSITIVE, help="solver time limit per check, seconds")
    p.add_argument("--fail-on-counterexample", action="store_true",
                   help=f"exit {EXIT_NO} when a counterexample is found (to gate CI on a strategy); "
                        "0 otherwise, also when the answer is unknown")
    add_backend_argument(p)
    add_quiet_argument(p)
    add_json_argument(p)
    p.set_defaults(func=cmd_check_strategy)


class Heartbeat:
    """Progress of a long check on stderr: each step as it starts, and while one step (a solver
    call can take minutes) goes on, a line every ``every`` seconds saying so."""

    def __init__(self, every: float = 30.0):
        self.every = every
        self._step: tuple[str, float] | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="pmsolve-heartbeat", daemon=True)

    def __call__(self, message: str) -> None:
        say("check-strategy: " + message)
        self._step = (message.strip(), time.monotonic())
        if not self._thread.is_alive():
            self._thread.start()

    def _beat(self) -> None:
        while not self._done.wait(self.every):
            step = self._step
            if step is not None:
                say(f"check-strategy:   ... still working ({time.monotonic() - step[1]:.0f} s into this step)")

    def __enter__(self) -> "Heartbeat":
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()


def _exit(args: argparse.Namespace, counterexample: bool) -> int:
    return EXIT_NO if counterexample and args.fail_on_counterexample else 0


def cmd_check_strategy(args: argparse.Namespace) -> int:
    refuse_together(args, "--shortcut", "--strategy", "--shortcut facile searches its own question, "
                                                      "it checks no strategy; give one of them")
    if args.shortcut:
        if args.insns is None:
            raise ValidationError("--shortcut needs --insns N")
        v = shortcut_gap(args.insns, args.ports, max_exp_len=args.max_exp_len, backend=args.backend,
                         timeout=args.timeout)
        emit_json(v.to_json()) if args.json else print(v.render())
        return _exit(args, v.status == "gap")   # a mapping where the shortcut is wrong
    if not args.strategy:
        raise ValidationError("give --strategy pairs|ratio-pairs|uopsinfo:k=RULE|FILE (or --shortcut facile)")
    if args.ports > MAX_PORTS:
        raise ValidationError(f"--ports {args.ports}: the encodings enumerate every non-empty port subset "
                              f"(2^{args.ports} - 1 of them); at most {MAX_PORTS} ports")
    common = dict(levels=args.levels, max_uops=args.max_uops, max_exp_len=args.max_exp_len)
    if args.smallest:
        def note(v):
            if not (args.json or args.quiet):
                print(f"  {len(v.cls.instructions)} instructions × {len(v.cls.ports)} ports: {v.status} "
                      f"({v.seconds:.1f} s)", file=sys.stderr)
        found, tried = smallest_counterexample(args.strategy, max_insns=args.insns or 3, max_ports=args.ports,
                                               backend=args.backend, timeout=args.timeout, progress=note, **common)
        if args.json:
            emit_json({"smallest": found.to_json() if found else None,
                       "sufficient_classes": [t.bounds() for t in tried if t.status == "sufficient"]})
        else:
            print(found.render() if found else f"no counterexample up to {args.insns or 3} instructions × "
                                               f"{args.ports} ports: sufficient on every class tried")
        return _exit(args, found is not None)
    if args.method == "enumerate":
        v = check_strategy_exhaustive(args.strategy, args.insns, args.ports, **common)
    else:
        given = load_mapping(args.mapping) if args.mapping else None
        with Heartbeat() as beat:
            v = check_strategy(args.strategy, args.insns, args.ports, backend=args.backend, timeout=args.timeout,
                               symmetry_breaking=not args.no_symmetry_breaking, given=given,
                               encoding=args.encoding, progress=None if args.quiet else beat, **common)
    emit_json(v.to_json()) if args.json else print(v.render())
    return _exit(args, v.status == "counterexample")


# --------------------------------------------------------------------------- prove

def _add_prove(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prove", help="check the dissertation's theorems on bounded domains",
                       description="Check theorem statements (Thm 3.7/3.12, Remark 3.13, Thm 3.14, 4.4, 5.2, 6.3) "
                                   "exhaustively or by SMT on bounded domains; print statement, bound and verdict. "
                                   "Exit 0 when every statement holds (and every requested mutant is caught).")
    p.add_argument("name", nargs="?", help="the check to run (see --list)")
    p.add_argument("--all", action="store_true", help="run every check")
    p.add_argument("--list", action="store_true", help="list the checks and their mutants")
    p.add_argument("--mutant", help="run this deliberately broken variant instead (it must be caught)")
    p.add_argument("--mutants", action="store_true", help="also run every mutant of the checks")
    add_json_argument(p)
    p.set_defaults(func=cmd_prove)


def cmd_prove(args: argparse.Namespace) -> int:
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
        check = get_check(name)
        verdicts.append(check.run(args.mutant))
        if args.mutants:
            verdicts += [check.run(m) for m in check.mutants]
        if not args.json:
            for v in verdicts[-1 - (len(check.mutants) if args.mutants else 0):]:
                print(v.render() + "\n", flush=True)
    if args.json:
        emit_json([v.to_json() for v in verdicts])
    elif args.all:
        for name in PENDING:
            print(f"{name}: pending — {PENDING[name]}")
    expected = all(v.holds == (v.mutant is None) for v in verdicts)
    return 0 if expected else EXIT_NO
