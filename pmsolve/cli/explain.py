"""``pmsolve explain FILE [SCHEME]``: why ``pmsolve infer explain`` gave a scheme its port usage,
read back from the explanation stored in the mapping file it wrote."""

from __future__ import annotations

import argparse
import difflib
from typing import Any

from pmsolve.cli.flags import add_json_argument
from pmsolve.cli.output import emit_json
from pmsolve.errors import FormatError, PmsolveError, UnknownNameError
from pmsolve.formats import parse_json_text, read_text_file
from pmsolve.infer.explain.reads import text as reads_text
from pmsolve.infer.explain.shared import text as shared_text
from pmsolve.infer.explain.witnesses import Explanation
from pmsolve.jobs.report import queues_chosen


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="show the witnesses of a scheme in an explained mapping",
                       description="Print why `pmsolve infer explain` gave a scheme its port usage: per µop the "
                                   "experiments that show it (measured and modelled inverse throughput, the "
                                   "blocking baseline), or why the scheme is a misfit.")
    p.add_argument("mapping", help="a mapping file written by `pmsolve infer explain -o`")
    p.add_argument("insn", nargs="?", help="the scheme (default: a summary of the file)")
    add_json_argument(p)
    p.set_defaults(func=cmd_explain)


def load_explained(path: str) -> dict[str, Any]:
    """The ``explanation`` object of a mapping file written by ``pmsolve infer explain -o``."""
    data = parse_json_text(read_text_file(path, "mapping file"), path)
    ex = data.get("explanation") if isinstance(data, dict) else None
    if not isinstance(ex, dict) or ex.get("format") != "pmsolve.explanation":
        raise FormatError(f"{path}: no explanation in this file (write one with `pmsolve infer explain -o`)")
    models = data.get("models")
    return {**ex, "models": models if isinstance(models, dict) else {}}


def find_scheme(schemes: dict[str, Any], name: str, path: str) -> str:
    """``name`` as the file spells it (case-insensitively unique), or a refusal with close matches."""
    if name in schemes:
        return name
    folded = [s for s in schemes if s.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    close = difflib.get_close_matches(name, list(schemes), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise UnknownNameError(f"{path}: no scheme {name!r}{hint}")


def cmd_explain(args: argparse.Namespace) -> int:
    try:
        return _show(args, load_explained(args.mapping))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a damaged or hand-edited file
        if isinstance(exc, PmsolveError):
            raise
        raise FormatError(f"{args.mapping}: malformed explanation ({type(exc).__name__}: {exc})") from None


def _show(args: argparse.Namespace, ex: dict[str, Any]) -> int:
    schemes = ex.get("schemes", {})
    if not isinstance(schemes, dict):
        raise FormatError(f"{args.mapping}: malformed explanation (schemes is not an object)")
    if not args.insn:
        if args.json:
            emit_json({k: v for k, v in ex.items() if k != "schemes"})
            return 0
        print(f"{len(schemes)} schemes; misfits: "
              + ", ".join(f"{k} {v}" for k, v in ex.get("misfit_counts", {}).items()))
        if ex.get("certified"):
            print(f"{len(ex['certified'])} misfit(s) whose measurements no port mapping fits: "
                  + ", ".join(ex["certified"][:8]) + (" …" if len(ex["certified"]) > 8 else ""))
        pr = ex.get("predictions")
        if pr:
            print(f"predictions: {pr['predicted']} of {pr['schemes']} schemes: "
                  + ", ".join(f"{k} {n}" for k, n in pr["kinds"].items())
                  + (f"; none for {', '.join(list(pr['unpredicted'])[:5])}" if pr.get("unpredicted") else ""))
        if (ex.get("mode") or {}).get("port") is not None:
            print(f"mode: {ex['mode']['why']} (experiments with one are evaluated so; probes: "
                  + "; ".join(f"{w['experiment']} = {w['measured']:.4g}" for w in ex["mode"]["probes"]) + ")")
        if (ex.get("shared") or {}).get("resources"):
            print("shared resources (schemes hold them for a time per copy, adding up):\n  "
                  + shared_text(ex["shared"]).replace("\n", "\n  "))
        if (ex.get("reads") or {}).get("hold"):
            print(reads_text(ex["reads"]))
        if chosen := queues_chosen(ex.get("queues")):
            print(f"scheduling queues {chosen}")
        print(f"peak IPC {ex.get('r_max')}; blocking suite: " +
              "; ".join(f"{b} [{','.join(q)}]" for b, q in ex.get("blocking", {}).get("suite", [])))
        for w in ex.get("warnings", []):
            print("warning: " + w)
        return 0
    name = find_scheme(schemes, args.insn, args.mapping)
    if args.json:
        emit_json({"scheme": name, **schemes[name]})
        return 0
    x = Explanation.from_json(schemes[name])
    counted = f", {x.counted:g} µop(s) counted" if x.counted is not None else ""
    print(f"{name}  ({x.source}{counted})")
    model = ex.get("models", {}).get(name)
    if model:
        cost = (f", {model['cost']:.4g} cycles per copy on a resource of its own"
                + (f" ({model['alone']:.4g} with nothing beside it)" if model.get("alone") else "")
                if model.get("cost") else "")
        conf = f", confidence {model['confidence']:.2f}" if model.get("confidence") is not None else ""
        ev = (f" ({model['evidence'][0]} of {model['evidence'][1]} measured experiments within 5 %)"
              if model.get("evidence") else "")
        uops = " + ".join(f"{u['count']}×[{','.join(u['ports'])}]" for u in model.get("uops", []))
        print(f"  predicted as: {model['kind']}{cost}{' with µops ' + uops if uops else ''}{conf}{ev}")
        if model.get("slots") and model.get("slots_witness"):
            w = model["slots_witness"]
            probe = ", ".join(f"{n}× {i}" for i, n in w["experiment"].items())
            print(f"  front end: {model['slots']} slots per copy ({probe}: {w['measured']:.4g} cycles)")
    if x.misfit is not None:
        print(f"  misfit: {x.misfit.category} — {x.misfit.reason}")
        for e, t in x.misfit.experiments:
            print(f"    {e}: measured {t:.4g}")
        if x.misfit.certificate:
            (e, t), (e2, t2), *parts = x.misfit.certificate
            print(f"  no port mapping fits: {e} = {t:.4g} cycles, doubled {e2} = {t2:.4g}; parts: "
                  + ", ".join(f"{p} = {tp:.4g}" for p, tp in parts))
    else:
        for ps, n in x.uops:
            key = ",".join(ps)
            print(f"  {n}× [{key}]")
            for w in x.witnesses.get(key, ()):
                print(f"    {w.kind}: {w.describe()}")
        for alt in x.alternatives:
            print("  fits the measurements as well (they cannot tell it apart): "
                  + " + ".join(f"{n}×[{','.join(ps)}]" for ps, n in alt))
    if x.others:
        print("  no µops stay on the other blocked port sets:")
        for w in x.others:
            print(f"    {w.describe()}")
    return 0
