"""``pmsolve predict`` (blocks through any predictors) and ``pmsolve bridge`` (scheme-name coverage)."""

from __future__ import annotations

import argparse
import json
import sys

from pmsolve.harness.cpu import announce_measuring
from pmsolve.errors import FormatError, ValidationError


def _blocks(args: argparse.Namespace):
    from pmsolve.predictors.block import Block

    blocks = []
    for text in args.block or []:
        lines = [ln.strip() for ln in text.replace(";", "\n").splitlines() if ln.strip()]
        if not lines:
            raise ValidationError(f"empty block {text!r}")
        blocks.append(Block.of([("", ln) for ln in lines]))
    if args.blocks:
        try:
            with open(args.blocks) as f:
                data = json.load(f)
        except OSError as exc:
            raise FormatError(f"{args.blocks}: cannot read: {exc.strerror}") from None
        except ValueError as exc:
            raise FormatError(f"{args.blocks}: not JSON: {exc}") from None
        items = data.get("blocks") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise FormatError(f"{args.blocks}: expected a list of blocks or {{\"blocks\": [...]}}")
        blocks += [Block.from_json(b, f"{args.blocks}: block {k}") for k, b in enumerate(items)]
    if not blocks:
        raise ValidationError("give blocks: 'addq %rax, %rbx; imulq %rcx, %rdx' or --blocks FILE")
    return blocks


def cmd_predict(args: argparse.Namespace) -> int:
    from pmsolve.predictors import open_predictor, predict_many

    blocks = _blocks(args)
    predictors = [open_predictor(s, cache=args.cache) for s in args.predictor]
    announce_measuring(*predictors)
    total = len(predictors) * len({b.key for b in blocks})
    done: dict[str, int] = {}

    def progress(name: str, n: int, of: int) -> None:
        done[name] = n
        if not args.json and total > 200:
            print(f"\rpmsolve: {sum(done.values())}/{total} predictions", end="", file=sys.stderr, flush=True)

    from pmsolve.executor import executor_from_args

    ex = executor_from_args(args, optional=True)
    try:
        out = predict_many(predictors, blocks, workers=args.workers, progress=progress, executor=ex)
    finally:
        if ex is not None:
            ex.close()
        for p in predictors:
            close = getattr(p, "close", None)
            if close:
                close()
    if not args.json and total > 200:
        print(file=sys.stderr)
    names = [p.name for p in predictors]
    if args.json:
        json.dump({"predictors": names,
                   "blocks": [{"asm": b.lines, "key": b.key,
                               **{n: {"cycles": out[n][i].cycles, "error": out[n][i].error} for n in names}}
                              for i, b in enumerate(blocks)]}, sys.stdout, indent=1)
        print()
        return 0
    for i, b in enumerate(blocks):
        print("; ".join(b.lines))
        for n in names:
            p = out[n][i]
            print(f"  {n:<32} " + (f"{p.cycles:.3f} cycles/iteration" if p.ok else str(p.error)))
    return 0


def cmd_bridge(args: argparse.Namespace) -> int:
    from pmsolve.isa.bridge import bridge, names_of

    b = bridge(names_of(args.a), names_of(args.b), args.naming_a, args.naming_b)
    if args.json:
        json.dump({"naming_a": b.naming_a, "naming_b": b.naming_b, **b.coverage(), "pairs": b.pairs,
                   "unmatched_a": b.unmatched_a, "unmatched_b": b.unmatched_b}, sys.stdout, indent=1)
        print()
    else:
        print(b.report())
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("predict", help="basic-block throughput from llvm-mca, OSACA, a mapping, this CPU, ...",
                       description="Cycles per iteration of each block as a loop body, from every predictor "
                                   "given. Specs: llvm-mca:CPU[?iterations=100&noalias=true], osaca:ARCH[?lcd=true], "
                                   "mapping:FILE[?r_max=5&names=explainable], hardware, cmd:COMMAND, "
                                   "python:MODULE:FUNCTION, factory:MODULE:ATTR. Failures are printed per block, never abort the run.")
    p.add_argument("block", nargs="*", help="AT&T instructions separated by ';'")
    p.add_argument("--blocks", help="JSON file: a list of blocks, each a list of {scheme, asm}")
    p.add_argument("-p", "--predictor", action="append", required=True, help="a predictor spec (repeatable)")
    p.add_argument("--cache", help="SQLite file caching predictions across runs")
    p.add_argument("--workers", type=int, default=2, help="threads running predictor calls (default 2)")
    from pmsolve.executor import add_executor_arguments
    add_executor_arguments(p, workers=False)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("bridge", help="match instruction-scheme names of two naming schemes, with coverage",
                       description="Pair names that denote the same x86-64 scheme across pmsolve's catalogue "
                                   "(add_r64_i8), the explainable/iwho names (add RW:GPR:64, IMM(8)) and PMEvo's "
                                   "(ADD_((REG:RW:G:64)),_((IMM:8))); report how many found a partner.")
    p.add_argument("a", help="catalogue | catalogue:offered | a mapping or experiment file")
    p.add_argument("b", help="the same, for the other side")
    p.add_argument("--naming-a", choices=("catalogue", "explainable", "pmevo"), help="default: detected")
    p.add_argument("--naming-b", choices=("catalogue", "explainable", "pmevo"), help="default: detected")
    p.add_argument("--json", action="store_true", help="coverage figures and pairs as JSON")
    p.set_defaults(func=cmd_bridge)
