"""Command line of the explainable inference: ``pmsolve infer explain`` and ``pmsolve explain``.

Registered from :mod:`pmsolve.cli` with :func:`add_commands` (under ``infer``) and
:func:`add_top_commands` (top level).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Any

from pmsolve.harness.cpu import announce_measuring
from pmsolve.errors import FormatError, UnknownNameError, ValidationError

EPILOG = """\
A machine without a µop counter (such as this VM's hardware oracle) cannot tell single-µop
schemes apart; --throughput-only then runs the stages that need no counter: blocking candidates
by throughput (1/tp⁻¹ integral), port-set sizes, Thm 6.3 equivalence classes, CEGIS on them.
The state file (default OUT.explain-state.json) makes an interrupted run resumable: rerun the
same command."""


def add_commands(infer_sub: Any) -> None:
    p = infer_sub.add_parser(
        "explain", help="explainable inference with a µop counter (blocking instructions, witnesses)",
        description="Explainable port mapping inference (dissertation ch. 6): µop counts, blocking candidates, "
                    "port-set sizes, equivalence (Thm 6.3), peak IPC, CEGIS on the blocking instructions, "
                    "every other scheme against the blocking suite, majority vote over runs. The result is a "
                    "pmsolve mapping with witnesses per µop and categorised misfits (see `pmsolve explain`).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--oracle", required=True,
                   help="simulated:MAPPING.json?r_max=5&uops=1[&noise=0.01&seed=1], store:..., or hardware:...")
    p.add_argument("--ports", type=int, required=True, help="number of execution ports K")
    p.add_argument("--schemes", help="only these schemes: a file with one per line")
    p.add_argument("--improper", action="append", default=[], metavar="SCHEME=N",
                   help="an improper blocking instruction with N µops (e.g. a store); repeatable")
    p.add_argument("--no-share", action="store_true",
                   help="do not require improper blocking instructions to share a µop with a proper one")
    p.add_argument("--disjoint", action="append", default=[], metavar="A;B",
                   help="two blocking schemes documented to use disjoint ports; repeatable")
    p.add_argument("--epsilon", type=float, default=0.02, help="CPI tolerance ε (default 0.02)")
    p.add_argument("--r-max", type=float, help="front-end limit (default: measure the peak IPC)")
    p.add_argument("--runs", type=int, default=1, help="characterisation runs for the majority vote (default 1)")
    p.add_argument("--k-rule", default="impl", help="number of blocking copies: impl (default), uops, paper, or N")
    p.add_argument("--integrality", type=float, default=0.3,
                   help="largest distance of a non-evading µop estimate from an integer (default 0.3; "
                        "≥ 0.5: always round, for noisy measurements)")
    p.add_argument("--tolerance", type=float, default=0.0,
                   help="relative slack when a scheme's mapping must reproduce its experiments (default 0: ε only)")
    p.add_argument("--uop-hook", default="none", help="µop-count adjustment: none (default) or zenplus "
                                                      "(Postulate 6.5, for counters that count macro-ops)")
    p.add_argument("--throughput-only", action="store_true",
                   help="no µop counter: stop after CEGIS on the equivalence classes")
    from pmsolve.backends import add_backend_argument
    add_backend_argument(p)
    p.add_argument("--timeout", type=float, help="seconds per solver check")
    p.add_argument("--state", help="state file (default OUT.explain-state.json; none without -o)")
    p.add_argument("-o", "--out", help="write the mapping with its explanation here (pmsolve format)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    p.set_defaults(func=cmd_infer_explain)


def add_top_commands(sub: Any) -> None:
    p = sub.add_parser("explain", help="show the witnesses of a scheme in an explained mapping",
                       description="Print why `pmsolve infer explain` gave a scheme its port usage: per µop the "
                                   "experiments that show it (measured and modelled inverse throughput, the "
                                   "blocking baseline), or why the scheme is a misfit.")
    p.add_argument("mapping", help="a mapping file written by `pmsolve infer explain -o`")
    p.add_argument("insn", nargs="?", help="the scheme (default: a summary of the file)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_explain)


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


def cmd_infer_explain(args: argparse.Namespace) -> int:
    from pmsolve.harness.oracle import open_oracle
    from pmsolve.infer.explain import ExplainOptions, explain

    schemes = None
    if args.schemes:
        try:
            schemes = tuple(x.strip() for x in Path(args.schemes).read_text().splitlines() if x.strip())
        except OSError as exc:
            raise FormatError(f"{args.schemes}: cannot read the scheme list: {exc.strerror}") from None
    options = ExplainOptions(ports=args.ports, epsilon=args.epsilon, r_max=args.r_max, runs=args.runs,
                             k_rule=args.k_rule, uop_hook=args.uop_hook, integrality=args.integrality,
                             tolerance=args.tolerance, improper=_parse_improper(args.improper),
                             improper_share=not args.no_share, disjoint=_parse_disjoint(args.disjoint),
                             throughput_only=args.throughput_only, instructions=schemes,
                             backend=args.backend, timeout=args.timeout)
    from pmsolve.infer.explain.hooks import get_hook
    from pmsolve.strategy import k_rule
    get_hook(args.uop_hook)
    k_rule(args.k_rule)  # validate before measuring anything
    oracle = open_oracle(args.oracle)
    if oracle.has_uop_counter or args.throughput_only:   # else explain() refuses at once
        announce_measuring(oracle)
    state = args.state or (f"{args.out}.explain-state.json" if args.out else None)

    def progress(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)
    result = explain(oracle, options, state=state, progress=None if args.quiet else progress)
    if args.out:
        result.save(args.out)
    stats, counts = result.summary["stats"], result.category_counts()
    if args.json:
        json.dump({"mapped": stats["mapped"], "schemes": stats["schemes"], "misfits": counts,
                   "warnings": result.warnings, "r_max": result.summary["r_max"],
                   "classes": len(result.summary["blocking"]["classes"]), "stats": stats,
                   "out": args.out,
                   "mapping": result.to_json()["instructions"] if not args.out else None},
                  sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    print(f"mapped {stats['mapped']} of {stats['schemes']} schemes with {options.ports} ports; "
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


def load_explained(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise FormatError(f"{path}: cannot read file: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise FormatError(f"{path}: malformed JSON: {exc}") from None
    ex = data.get("explanation") if isinstance(data, dict) else None
    if not isinstance(ex, dict) or ex.get("format") != "pmsolve.explanation":
        raise FormatError(f"{path}: no explanation in this file (write one with `pmsolve infer explain -o`)")
    return ex


def find_scheme(schemes: dict[str, Any], name: str, path: str) -> str:
    if name in schemes:
        return name
    folded = [s for s in schemes if s.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    close = difflib.get_close_matches(name, list(schemes), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise UnknownNameError(f"{path}: no scheme {name!r}{hint}")


def cmd_explain(args: argparse.Namespace) -> int:
    from pmsolve.infer.explain.witnesses import Explanation

    ex = load_explained(args.mapping)
    schemes = ex.get("schemes", {})
    if not args.insn:
        if args.json:
            json.dump({k: v for k, v in ex.items() if k != "schemes"}, sys.stdout, indent=1, ensure_ascii=False)
            sys.stdout.write("\n")
            return 0
        print(f"{len(schemes)} schemes; misfits: " + ", ".join(f"{k} {v}" for k, v in ex.get("misfit_counts", {}).items()))
        print(f"peak IPC {ex.get('r_max')}; blocking suite: " +
              "; ".join(f"{b} [{','.join(q)}]" for b, q in ex.get("blocking", {}).get("suite", [])))
        for w in ex.get("warnings", []):
            print("warning: " + w)
        return 0
    name = find_scheme(schemes, args.insn, args.mapping)
    if args.json:
        json.dump({"scheme": name, **schemes[name]}, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    x = Explanation.from_json(schemes[name])
    counted = f", {x.counted:g} µop(s) counted" if x.counted is not None else ""
    print(f"{name}  ({x.source}{counted})")
    if x.misfit is not None:
        print(f"  misfit: {x.misfit.category} — {x.misfit.reason}")
        for e, t in x.misfit.experiments:
            print(f"    {e}: measured {t:.4g}")
    else:
        for ps, n in x.uops:
            key = ",".join(ps)
            print(f"  {n}× [{key}]")
            for w in x.witnesses.get(key, ()):
                print(f"    {w.kind}: {w.describe()}")
    if x.others:
        print("  no µops stay on the other blocked port sets:")
        for w in x.others:
            print(f"    {w.describe()}")
    return 0
