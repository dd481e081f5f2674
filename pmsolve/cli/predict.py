"""``pmsolve predict``: basic blocks through any predictors (:mod:`pmsolve.predictors`), side by side."""

from __future__ import annotations

import argparse
import sys

from pmsolve.cli.flags import POSITIVE_INT, add_executor_arguments, add_json_argument, executor_from_args, output_file
from pmsolve.cli.output import emit_json
from pmsolve.errors import FormatError, ValidationError
from pmsolve.formats import parse_json_text, read_text_file
from pmsolve.harness.cpu import announce_measuring
from pmsolve.predictors import open_predictor, predict_many
from pmsolve.predictors.block import Block


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predict", help="basic-block throughput from llvm-mca, OSACA, a mapping, this CPU, ...",
                       description="Cycles per iteration of each block as a loop body, from every predictor "
                                   "given. Specs: llvm-mca:CPU[?iterations=100&noalias=true], osaca:ARCH[?lcd=true], "
                                   "mapping:FILE[?r_max=5&names=explainable], hardware, cmd:COMMAND, "
                                   "python:MODULE:FUNCTION, factory:MODULE:ATTR. Failures are printed per block, "
                                   "never abort the run.")
    p.add_argument("block", nargs="*", help="AT&T instructions separated by ';'")
    p.add_argument("--blocks", help="JSON file: a list of blocks, each a list of {scheme, asm}")
    p.add_argument("-p", "--predictor", action="append", required=True, help="a predictor spec (repeatable)")
    p.add_argument("--cache", help="SQLite file caching predictions across runs")
    p.add_argument("--workers", type=POSITIVE_INT, default=2, help="threads running predictor calls (default 2)")
    add_executor_arguments(p, workers=False)
    add_json_argument(p)
    p.set_defaults(func=cmd_predict)


def _blocks(args: argparse.Namespace) -> list[Block]:
    blocks = []
    for text in args.block or []:
        blocks.append(Block.parse(text))
    if args.blocks:
        data = parse_json_text(read_text_file(args.blocks, "block file"), args.blocks)
        items = data.get("blocks") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise FormatError(f"{args.blocks}: expected a list of blocks or {{\"blocks\": [...]}}")
        blocks += [Block.from_json(b, f"{args.blocks}: block {k}") for k, b in enumerate(items)]
    if not blocks:
        raise ValidationError("give blocks: 'addq %rax, %rbx; imulq %rcx, %rdx' or --blocks FILE")
    return blocks


def cmd_predict(args: argparse.Namespace) -> int:
    output_file(args.cache, "prediction cache")
    blocks = _blocks(args)
    predictors = [open_predictor(s, cache=args.cache) for s in args.predictor]
    announce_measuring(*predictors)
    total = len(predictors) * len({b.key for b in blocks})
    done: dict[str, int] = {}

    def progress(name: str, n: int, of: int) -> None:
        done[name] = n
        if not args.json and total > 200:
            print(f"\rpmsolve: {sum(done.values())}/{total} predictions", end="", file=sys.stderr, flush=True)

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
        emit_json({"predictors": names,
                   "blocks": [{"asm": b.lines, "key": b.key,
                               **{n: {"cycles": out[n][i].cycles, "error": out[n][i].error} for n in names}}
                              for i, b in enumerate(blocks)]})
        return 0
    for i, b in enumerate(blocks):
        print("; ".join(b.lines))
        for n in names:
            p = out[n][i]
            print(f"  {n:<32} " + (f"{p.cycles:.3f} cycles/iteration" if p.ok else str(p.error)))
    return 0
