"""``pmsolve isa list`` and ``pmsolve bridge``: the x86-64 scheme catalogue, and how its names
meet those of other namings (explainable/iwho, PMEvo)."""

from __future__ import annotations

import argparse

from pmsolve.cli.flags import add_json_argument
from pmsolve.cli.output import emit_json, table
from pmsolve.isa import load_catalogue
from pmsolve.isa.bridge import NAMINGS, bridge, names_of


def add_parsers(sub: argparse._SubParsersAction) -> None:
    _add_isa(sub)
    _add_bridge(sub)


# --------------------------------------------------------------------------- isa list

def _add_isa(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("isa", help="the x86-64 instruction-scheme catalogue",
                       description="Instruction schemes generated from iced-x86 (isa/x86_64.json), with the "
                                   "curated exclusions of isa/exclusions.txt and the host's CPUID features applied.")
    actions = p.add_subparsers(dest="isa_command", metavar="ACTION", required=True)
    p = actions.add_parser("list", help="list instruction schemes",
                           description="List the schemes offered on this host (or all with --all). FILTER is "
                                       "comma-separated terms key=glob (name, mnemonic, category, extension, memory, "
                                       "encoding, feature, status) or a bare name substring, e.g. "
                                       "'category=vec-fma,name=*ymm*'.")
    p.add_argument("--filter", "-f", help="filter expression")
    p.add_argument("--all", action="store_true", help="include excluded and host-unsupported schemes, with the reason")
    p.add_argument("--any-host", action="store_true", help="ignore the host's CPUID features")
    add_json_argument(p)
    p.set_defaults(func=cmd_isa_list)


def cmd_isa_list(args: argparse.Namespace) -> int:
    cat = load_catalogue(host=not args.any_host)
    schemes = cat.filter(args.filter)
    if not args.all:
        schemes = [s for s in schemes if cat.status(s) == "offered"]
    if args.json:
        emit_json([{**s.to_json(), "status": cat.status(s)} for s in schemes])
        return 0
    rows = [(s.name, s.category, s.extension, s.memory, s.signature()) + ((cat.status(s),) if args.all else ())
            for s in schemes]
    header = ("scheme", "category", "extension", "memory", "operands") + (("status",) if args.all else ())
    print(table(header, rows))
    print(f"\n{len(schemes)} of {len(cat)} schemes"
          + ("" if args.all else " (offered on this host; --all shows excluded ones)"))
    return 0


# --------------------------------------------------------------------------- bridge

def _add_bridge(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bridge", help="match instruction-scheme names of two naming schemes, with coverage",
                       description="Pair names that denote the same x86-64 scheme across pmsolve's catalogue "
                                   "(add_r64_i8), the explainable/iwho names (add RW:GPR:64, IMM(8)) and PMEvo's "
                                   "(ADD_((REG:RW:G:64)),_((IMM:8))); report how many found a partner.")
    p.add_argument("a", help="catalogue | catalogue:offered | a mapping or experiment file")
    p.add_argument("b", help="the same, for the other side")
    p.add_argument("--naming-a", choices=NAMINGS, help="default: detected")
    p.add_argument("--naming-b", choices=NAMINGS, help="default: detected")
    add_json_argument(p, "coverage figures and pairs as JSON")
    p.set_defaults(func=cmd_bridge)


def cmd_bridge(args: argparse.Namespace) -> int:
    b = bridge(names_of(args.a), names_of(args.b), args.naming_a, args.naming_b)
    if args.json:
        emit_json({"naming_a": b.naming_a, "naming_b": b.naming_b, **b.coverage(), "pairs": b.pairs,
                   "unmatched_a": b.unmatched_a, "unmatched_b": b.unmatched_b})
    else:
        print(b.report())
    return 0
