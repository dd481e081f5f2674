"""``pmsolve export MAPPING --to osaca -o FILE.yml``: a mapping as a machine model of another tool
(:mod:`pmsolve.predictors.osaca_export`), checked in that tool when it is installed."""

from __future__ import annotations

import argparse
import importlib.util
from typing import Any

from pmsolve.cli.flags import POSITIVE, add_json_argument, add_quiet_argument, output_file
from pmsolve.cli.output import emit_json, say
from pmsolve.errors import ValidationError
from pmsolve.formats import load_mapping, parse_json_text, read_text_file
from pmsolve.harness.cpu import microarchitecture_named_in
from pmsolve.infer.explain.units import ports_of
from pmsolve.predictors.osaca import available_models, model_for
from pmsolve.predictors.osaca_export import check_osaca_model, export_osaca, write_osaca_model

TARGETS = ("osaca",)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="write a mapping as an OSACA machine model",
                       description="Write a port mapping as an OSACA machine model (YAML): one instruction form "
                                   "per mapped scheme (mnemonic and operand classes as OSACA matches them), "
                                   "port_pressure from its µops, throughput from the mapping; units as extra ports "
                                   "and the front-end limit as the pseudo-port FE. pmsolve measures no latency: "
                                   "it is copied from OSACA's model of the mapping's CPU for the forms it knows. "
                                   "The file's header says what was merged, left out or defaulted. With OSACA "
                                   "installed the file is then loaded in it and every form checked.",
                       epilog="Use the file with OSACA's Python API (MachineModel(path_to_yaml=FILE), "
                              "Frontend(path_to_yaml=FILE)), `pmsolve predict -p osaca:FILE.yml`, or copy it "
                              "to ~/.osaca/data/zen3.yml so that `osaca --arch ZEN3` uses it instead of the "
                              "shipped model.")
    p.add_argument("mapping", help="a mapping file in any format pmsolve reads (an explained mapping from "
                                   "`pmsolve infer -o` brings its R_max, units and CPU)")
    p.add_argument("--to", choices=TARGETS, required=True, help="the tool: osaca")
    p.add_argument("-o", "--out", required=True, metavar="FILE.yml", help="the machine model to write")
    p.add_argument("--r-max", type=POSITIVE, help="front-end limit in instructions per cycle (default: the "
                                                  "explained mapping's peak IPC; none for other files)")
    p.add_argument("--latency-from", default="auto", metavar="ARCH",
                   help="OSACA model to copy latencies from (ZEN3, ZEN4, SKX, ...), or none; default auto: the "
                        "nearest model to the CPU the explained mapping was measured on, none when unknown")
    p.add_argument("--arch-code", default="PMSOLVE", help="the model's arch_code (default PMSOLVE)")
    p.add_argument("--no-check", action="store_true", help="do not load the written file in OSACA to check it")
    add_quiet_argument(p)
    add_json_argument(p, "print the export's summary as JSON")
    p.set_defaults(func=cmd_export)


def explanation_of(path: str) -> dict[str, Any]:
    """The ``explanation`` object of a mapping file written by ``pmsolve infer``, or {}."""
    try:
        data = parse_json_text(read_text_file(path, "mapping file"), path)
    except ValidationError:
        return {}
    ex = data.get("explanation") if isinstance(data, dict) else None
    return ex if isinstance(ex, dict) else {}


def cmd_export(args: argparse.Namespace) -> int:
    output_file(args.out, "machine model")
    progress = (lambda m: None) if args.quiet or args.json else say
    mapping = load_mapping(args.mapping)
    ex = explanation_of(args.mapping)
    r_max = args.r_max if args.r_max is not None else ex.get("r_max")
    if r_max is not None and not (isinstance(r_max, (int, float)) and r_max > 0):
        raise ValidationError(f"{args.mapping}: the explanation's r_max {r_max!r} is not a positive number; "
                              "give --r-max")
    units = [p for u in ex.get("units", []) if isinstance(u, dict) and u.get("port") for p in ports_of(u)]
    latency_from = _latency_model(args.latency_from, ex, progress)
    progress(f"exporting {len(mapping.uops)} schemes"
             + (f", latencies from OSACA {latency_from}" if latency_from else ", without latencies"))
    model = export_osaca(mapping, r_max=r_max, units=units, latency_from=latency_from, arch_code=args.arch_code,
                         source=args.mapping)
    write_osaca_model(model, args.out)
    summary = model.summary()
    problems: list[str] | None = None
    if not args.no_check and importlib.util.find_spec("osaca") is not None:
        progress(f"checking {args.out} in OSACA: every form's instance must get its port pressure")
        problems = check_osaca_model(model, args.out)
    summary["checked"] = problems is not None
    summary["problems"] = problems or []
    if args.json:
        emit_json({"out": args.out, **summary})
    else:
        print(f"wrote {args.out}: {summary['forms']} OSACA forms for {summary['schemes']} mapped schemes on "
              f"{len(model.osaca_ports)} ports ({', '.join(model.osaca_ports)})"
              + (f"; units {', '.join(model.units)}" if model.units else ""))
        print(f"  latency: {model.latency_note}")
        print(f"  {len(model.merged)} shared form(s) with differing usage, {len(model.left_out)} scheme(s) left out "
              "(listed in the file's header)")
        if problems is None:
            print("  not checked in OSACA" + (" (--no-check)" if args.no_check else " (OSACA is not installed)"))
        elif problems:
            print(f"  OSACA disagrees on {len(problems)} form(s):")
            for line in problems[:10]:
                print(f"    {line}")
        else:
            print("  OSACA loads it and gives every form's instance exactly its port pressure")
    return 1 if problems else 0


def _latency_model(choice: str, ex: dict[str, Any], progress) -> str | None:
    if choice.lower() == "none":
        return None
    if choice.lower() != "auto":
        if choice.upper() not in available_models():
            raise ValidationError(f"--latency-from {choice}: OSACA has no such model (installed: "
                                  f"{', '.join(sorted(available_models())) or 'none, OSACA is not installed'})")
        return choice.upper()
    uarch = microarchitecture_named_in(str(ex.get("oracle", "")))
    if uarch is None:
        progress("no latencies: the file does not say which CPU it was measured on (give --latency-from ARCH)")
        return None
    choice_ = model_for(uarch)
    if choice_.model is None:
        progress(f"no latencies: {choice_.why}")
    return choice_.model
