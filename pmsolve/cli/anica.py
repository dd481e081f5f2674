"""``pmsolve anica discover | generalize | report``: where two throughput predictors disagree
(AnICA, dissertation ch. 8), as a resumable campaign with an HTML report."""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from pmsolve.anica import config, report
from pmsolve.anica.campaign import STATE, Campaign, build_universe, load_state, supported_universe
from pmsolve.anica.domain import AbstractBlock, Concrete
from pmsolve.anica.sampler import to_block
from pmsolve.cli.flags import (NON_NEGATIVE_INT, POSITIVE, POSITIVE_INT, add_executor_arguments, add_json_argument,
                               add_quiet_argument, executor_from_args, output_dir)
from pmsolve.cli.output import strict_json
from pmsolve.errors import FormatError, PmsolveError, ValidationError
from pmsolve.formats import parse_json_text, read_text_file
from pmsolve.harness.cpu import announce_measuring
from pmsolve.isa import load_catalogue
from pmsolve.predictors import open_predictor


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("anica", help="AnICA: find and summarise where throughput predictors disagree",
                       description="Differential testing of basic-block throughput predictors with abstract "
                                   "blocks (dissertation ch. 8).")
    actions = p.add_subparsers(dest="anica_cmd", metavar="ACTION", required=True)
    d = actions.add_parser("discover", help="run (or resume) a campaign and write its report",
                           description="Sample blocks, keep the interesting ones, generalise them into abstract "
                                       "blocks (Alg. 8.1) until the budget is spent; rerun to resume.")
    _common(d)
    d.add_argument("-o", "--out", required=True, help="campaign folder (state.json, report.html, report.json)")
    d.add_argument("--discoveries", type=NON_NEGATIVE_INT, help="stop after this many discoveries (0: no limit)")
    d.add_argument("--seconds", type=POSITIVE, help="time budget")
    d.set_defaults(func=cmd_discover, resumes=lambda args: True)   # its campaign folder
    g = actions.add_parser("generalize", help="generalise one interesting block (Alg. 8.2)",
                           description="Generalise one concrete block on which the predictors disagree into "
                                       "abstract blocks, printing each order's kept expansions.")
    _common(g)
    src = g.add_mutually_exclusive_group(required=True)
    src.add_argument("--schemes", help="comma-separated scheme names, e.g. bsf_r64_r64,add_r64_r64")
    src.add_argument("--concrete", metavar="JSON|FILE",
                     help="a concrete block as JSON text, e.g. '{\"forms\": [...], \"values\": [...]}' (report.json: "
                          "discoveries[k].minimal.concrete), or a file holding it")
    g.add_argument("-o", "--out", default=None, help="folder for the predictor-support state (default: temp)")
    g.set_defaults(func=cmd_generalize)
    r = actions.add_parser("report", help="write report.html and report.json of a campaign folder",
                           description="Write the report of a (possibly unfinished) campaign folder again.")
    r.add_argument("campaign", help="campaign folder")
    add_json_argument(r)
    r.set_defaults(func=cmd_report)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", nargs="?", help="campaign config (TOML or JSON; see pmsolve.anica.config)")
    p.add_argument("-a", help="first predictor (overrides the config), e.g. llvm-mca:znver3")
    p.add_argument("-b", help="second predictor, e.g. osaca:ZEN3")
    p.add_argument("--seed", type=int, help="random seed (overrides the config)")
    p.add_argument("--workers", type=POSITIVE_INT, help="parallel predictor calls per predictor")
    add_executor_arguments(p, workers=False)
    add_quiet_argument(p)
    add_json_argument(p)


def _config(args: argparse.Namespace) -> config.Config:
    cfg = config.load(args.config) if args.config else config.Config()
    return cfg.replace(a=args.a, b=args.b, seed=args.seed, workers=args.workers,
                       max_discoveries=getattr(args, "discoveries", None),
                       max_seconds=getattr(args, "seconds", None))


def _progress(args: argparse.Namespace):
    return (lambda msg: None) if args.quiet else None


@contextlib.contextmanager
def _campaign(args: argparse.Namespace, cfg: config.Config) -> Iterator[Campaign]:
    """The campaign in ``args.out`` with its predictors (sharing one SQLite cache) and executor,
    all closed on the way out. A folder this call created is removed again when the run fails
    before the campaign kept any state (a bad predictor, a missing tool): no empty campaign
    folder is left behind. An interrupted run keeps it (its cached predictions resume)."""
    folder = Path(args.out)
    created = [d for d in (folder, *folder.absolute().parents) if not d.exists()]
    cache = str(folder / "predictions.sqlite")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with _opened(args, cfg, cache) as camp:
            yield camp
    except PmsolveError:
        if created and not (folder / STATE).exists():
            shutil.rmtree(created[-1], ignore_errors=True)
        raise


@contextlib.contextmanager
def _opened(args: argparse.Namespace, cfg: config.Config, cache: str) -> Iterator[Campaign]:
    ex = executor_from_args(args, workers=cfg.workers, optional=True)
    try:
        camp = Campaign(cfg, args.out, open_predictor(cfg.a, cache=cache), open_predictor(cfg.b, cache=cache),
                        progress=_progress(args), executor=ex)
        announce_measuring(camp.a, camp.b)
        try:
            yield camp
        finally:
            camp.pair.close()
    finally:
        if ex is not None:
            ex.close()


def _dumps(data: object) -> str:
    return json.dumps(strict_json(data), default=str, allow_nan=False)


def cmd_discover(args: argparse.Namespace) -> int:
    output_dir(args.out, "campaign folder")
    cfg = _config(args)
    with _campaign(args, cfg) as camp:
        st = camp.run()
    html_path, json_path = report.write(st, camp.universe, args.out)
    summary = {"discoveries": len(st.final()), "found": len(st.discoveries), "sampled": st.sampled,
               "interesting": st.interesting, "seconds": round(st.elapsed, 1),
               "report": str(html_path), "json": str(json_path)}
    print(_dumps(summary) if args.json else
          f"{summary['discoveries']} discoveries ({summary['found']} before filtering) from "
          f"{st.sampled} sampled blocks, {st.interesting} interesting, {st.elapsed:.0f} s\n"
          f"report: {html_path}\njson:   {json_path}")
    return 0


def _concrete(text: str) -> Concrete:
    """``--concrete``: JSON text (what the help shows) or a file holding it; its shape and its
    forms (catalogue schemes, maybe "lock "-prefixed) are checked before any predictor runs."""
    where = "--concrete"
    if not text.lstrip().startswith("{"):
        where, text = text, read_text_file(text, "concrete block")
    doc = parse_json_text(text, where)
    try:
        c = Concrete.from_json(doc)
        ok = (c.forms and len(c.forms) == len(c.values) and all(isinstance(f, str) for f in c.forms))
    except PmsolveError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FormatError(f"{where}: not a concrete block ({type(exc).__name__}: {exc})") from None
    if not ok:
        raise FormatError(f"{where}: not a concrete block: give 'forms' (scheme names) and as many 'values' "
                          f"(operand lists), e.g. report.json's discoveries[k].minimal.concrete")
    catalogue = load_catalogue()
    for form in c.forms:
        catalogue[form.removeprefix("lock ")]   # an unknown name is refused here, naming similar ones
    return c


def cmd_generalize(args: argparse.Namespace) -> int:
    output_dir(args.out, "predictor-support folder")
    concrete = _concrete(args.concrete) if args.concrete else None
    if args.out:
        return _generalize_in(args, concrete)
    with tempfile.TemporaryDirectory(prefix="anica-gen-") as tmp:
        args.out = tmp
        return _generalize_in(args, concrete)


def _generalize_in(args: argparse.Namespace, concrete: Concrete | None) -> int:
    cfg = _config(args)
    with _campaign(args, cfg) as camp:
        return _generalize(args, cfg, camp, concrete)


def _generalize(args: argparse.Namespace, cfg: config.Config, camp: Campaign, concrete: Concrete | None) -> int:
    u = camp.universe
    rng = random.Random(cfg.seed)
    if concrete is not None:
        c = concrete
        for k in c.forms:
            u.form(k)
    else:
        forms = [f.strip() for f in args.schemes.split(",") if f.strip()]
        excluded = set(camp.state.unsupported or ())
        for k in forms:
            if k in excluded:
                raise ValidationError(f"instruction form {k!r} is excluded from the AnICA universe: {cfg.a} or "
                                      f"{cfg.b} cannot predict it alone (filter_unsupported = false in [isa] keeps it)")
            u.form(k)
        vals = camp.sampler._operands(AbstractBlock.top(len(forms)), forms, rng)
        if vals is None:
            raise ValidationError(f"cannot allocate operands for {forms}")
        c = Concrete(tuple(forms), vals)
    blk = to_block(u, c)
    if not camp.generalizer.interesting_concrete(c):
        raise ValidationError("the block is not interesting for these predictors:\n" + blk.asm)
    results = []
    for order in range(cfg.orders):
        ab, tree, score = camp.generalizer.generalize(c, rng)
        results.append({"order": order, "block": ab.to_json(), "describe": ab.describe(), "score": score,
                        "tree": [n.to_json() for n in tree]})
    if args.json:
        print(_dumps({"block": blk.lines, "results": results}))
    else:
        print("block:\n  " + "\n  ".join(blk.lines))
        for r in results:
            kept = sum(1 for n in r["tree"] if n["accepted"]) - 1
            print(f"order {r['order']}: {kept} expansions kept of {len(r['tree']) - 1} tried; score {r['score']:.3g}")
            print("  " + "\n  ".join(r["describe"]))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    st = load_state(args.campaign)
    u = supported_universe(build_universe(st.config), st.unsupported or [])
    html_path, json_path = report.write(st, u, args.campaign)
    if args.json:
        print(_dumps({"report": str(html_path), "json": str(json_path), "discoveries": len(st.final())}))
    else:
        print(f"{len(st.final())} discoveries{'' if st.finished else ' (campaign not finished)'}\n"
              f"report: {html_path}\njson:   {json_path}")
    return 0
