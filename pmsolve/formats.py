"""Reading and writing mappings and experiment lists in every format pmsolve understands.

Mapping formats (detected automatically when reading):

``pmsolve``
    pmsolve's own JSON::

        {"format": "pmsolve.mapping", "version": 1, "ports": ["0", "1", "2"],
         "instructions": {"add": [{"ports": ["0", "1"], "count": 1}],
                          "store": [{"ports": ["2"], "count": 1}, {"ports": ["0", "1"], "count": 1}]}}

``pmevo``
    PMEvo's ``Mapping2`` (one port list per instruction) and ``Mapping3`` (a list of µops per
    instruction; a repeated µop is issued more than once), with an ``arch`` object.
``explainable``
    The explainable-mapping format of the Zen+ reference: ``{"ports": [...], "data": {insn:
    {"portusage": [[[ports], count], ...], ...}}}``; schemes with empty port usage are skipped.
``uopsinfo``
    A JSON object ``{insn: "1*p0156+1*p23"}``: uops.info-style port strings (one character per
    port name; a bare ``p06`` counts once).

Experiment lists: pmsolve's own ``{"format": "pmsolve.experiments", "version": 1,
"experiments": [{"counts": {"add": 2}, "cycles": 1.5, "others": {"llvm-mca": 1.7}}]}``
(``cycles`` and ``others`` optional) and PMEvo's ``ExperimentList``.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path
from typing import Any, Iterable

from pmsolve.errors import FormatError, PmsolveError
from pmsolve.fileio import atomic_write_text
from pmsolve.model import Experiment, Measurement, PortMapping, Uop, sort_ports

MAPPING_FORMATS = ("pmsolve", "pmevo", "explainable", "uopsinfo")


def read_text_file(path: str | Path, what: str = "file") -> str:
    """The UTF-8 text of an input file, or one :class:`FormatError` line (missing, a directory,
    unreadable, not UTF-8) instead of an OSError or UnicodeDecodeError."""
    try:
        data = Path(path).read_bytes()
    except IsADirectoryError:
        raise FormatError(f"{path}: is a directory; give the {what}'s path") from None
    except OSError as exc:
        raise FormatError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path}: {what} is not UTF-8 text (byte {exc.start}: {data[exc.start]:#04x})") from None


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise FormatError(f"duplicate key {key!r} (each key may appear once per object)")
        out[key] = value
    return out


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise FormatError(f"number {text} is too large (not finite)")
    return value


def _no_constant(name: str) -> Any:
    raise FormatError(f"{name} is not a number JSON allows (write a finite number or null)")


def parse_json_text(text: str, source: str = "") -> Any:
    """Strict JSON: a duplicate key, NaN/Infinity or a number too large for a float is refused
    (Python's json would keep the last key and accept them), as is malformed text; every
    refusal is one :class:`FormatError` naming ``source``."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_float=_finite,
                          parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise FormatError(_where(source, f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")) from None
    except FormatError as exc:
        raise FormatError(_where(source, str(exc))) from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise FormatError(_where(source, f"malformed JSON: {exc}")) from None
    except RecursionError:
        raise FormatError(_where(source, "JSON nested too deeply")) from None


def _read_json(path: str | Path) -> Any:
    return parse_json_text(read_text_file(path), str(path))


def _write_text(path: str | Path, text: str) -> None:
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise FormatError(f"{path}: cannot write file: {exc.strerror or exc}") from None


def _where(source: str, detail: str) -> str:
    return f"{source}: {detail}" if source else detail


# --------------------------------------------------------------------------- mappings

def detect_mapping_format(data: Any) -> str:
    """Name the mapping format of parsed JSON, or raise :class:`FormatError`."""
    if isinstance(data, dict):
        if data.get("format") == "pmsolve.mapping":
            return "pmsolve"
        if data.get("kind") in ("Mapping2", "Mapping3"):
            return "pmevo"
        if isinstance(data.get("data"), dict) and "ports" in data:
            return "explainable"
        if data and all(isinstance(v, str) for v in data.values()):
            return "uopsinfo"
    raise FormatError("not a port mapping in a known format (pmsolve, PMEvo Mapping2/Mapping3, "
                      "explainable, uops.info port strings)")


def mapping_from_json(data: Any, source: str = "") -> PortMapping:
    """Build a mapping from parsed JSON in any supported format."""
    try:
        fmt = detect_mapping_format(data)
    except FormatError as exc:
        raise FormatError(_where(source, str(exc))) from None
    try:
        return _READERS[fmt](data)
    except PmsolveError as exc:
        raise type(exc)(_where(source, str(exc))) from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FormatError(_where(source, f"malformed {fmt} mapping: {type(exc).__name__}: {exc}")) from None


def _read_pmsolve(data: dict) -> PortMapping:
    if data.get("version", 1) != 1:
        raise FormatError(f"unsupported pmsolve mapping version {data.get('version')!r}")
    uops = {}
    for insn, entries in data["instructions"].items():
        if not isinstance(entries, list):
            raise FormatError(f"instruction {insn!r}: expected a list of µops")
        uops[insn] = [(e["ports"], e.get("count", 1)) for e in entries]
    return PortMapping(data["ports"], uops)


def _read_pmevo(data: dict) -> PortMapping:
    assignment = data["assignment"]
    if "ports" in data["arch"]:
        ports = [str(p) for p in data["arch"]["ports"]]
    else:  # newer PMEvo exports (e.g. its Zen+ mapping in pmtestbench) list no ports: use the ones named
        named = {str(p) for v in assignment.values() for u in (v if isinstance(v, list) else [])
                 for p in (u if isinstance(u, list) else [u])}
        ports = sorted(named, key=lambda p: (len(p), p))
    if data["kind"] == "Mapping2":
        return PortMapping.two_level(ports, {i: [str(p) for p in ps] for i, ps in assignment.items()})
    uops = {}
    for insn, uop_list in assignment.items():
        if not isinstance(uop_list, list):
            raise FormatError(f"instruction {insn!r}: expected a list of µops")
        uops[insn] = [([str(p) for p in ps], 1) for ps in uop_list]
    return PortMapping(ports, uops)


def _read_explainable(data: dict) -> PortMapping:
    """Schemes with an empty ``portusage`` are those the study could not explain (micro-coded,
    outside the model): they have no port mapping, so they are left out, with a warning."""
    ports = [str(p) for p in data["ports"]]
    uops = {insn: [([str(p) for p in ps], n) for ps, n in entry["portusage"]]
            for insn, entry in data["data"].items() if entry["portusage"]}
    skipped = len(data["data"]) - len(uops)
    if skipped:
        warnings.warn(f"{skipped} schemes without port usage left out of the mapping", stacklevel=4)
    return PortMapping(ports, uops)


_UOPS_INFO_TERM = re.compile(r"^\s*(?:(\d+)\s*\*\s*)?p([0-9A-Za-z]+)\s*$")


def parse_port_string(text: str) -> list[tuple[list[str], int]]:
    """Parse a uops.info port string ``1*p0156+1*p23`` into ``[(ports, count), ...]``."""
    uops = []
    for term in text.split("+"):
        m = _UOPS_INFO_TERM.match(term)
        if not m:
            raise FormatError(f"bad uops.info port term {term.strip()!r} in {text!r} (expected like 2*p015)")
        uops.append((list(m.group(2)), int(m.group(1) or 1)))
    return uops


def port_string(uops: Iterable[Uop]) -> str:
    """Format µops as a uops.info port string; needs one-character port names."""
    terms = []
    for u in uops:
        if any(len(p) != 1 for p in u.ports):
            raise FormatError(f"uops.info port strings need one-character port names, got {sort_ports(u.ports)}")
        terms.append(f"{u.count}*p{''.join(sort_ports(u.ports))}")
    return "+".join(terms)


def _read_uopsinfo(data: dict) -> PortMapping:
    uops = {insn: parse_port_string(s) for insn, s in data.items()}
    ports = sort_ports({p for us in uops.values() for ps, _ in us for p in ps})
    return PortMapping(ports, uops)


_READERS = {"pmsolve": _read_pmsolve, "pmevo": _read_pmevo,
            "explainable": _read_explainable, "uopsinfo": _read_uopsinfo}


def mapping_to_json(mapping: PortMapping, fmt: str = "pmsolve", arch_name: str = "") -> Any:
    """The mapping as JSON-ready data in format ``fmt`` (see module docstring)."""
    def ports_of(u: Uop) -> list[str]:
        return sort_ports(u.ports)

    if fmt == "pmsolve":
        return {"format": "pmsolve.mapping", "version": 1, "levels": mapping.levels,
                "ports": list(mapping.ports),
                "instructions": {i: [{"ports": ports_of(u), "count": u.count} for u in us]
                                 for i, us in mapping.uops.items()}}
    if fmt == "pmevo":
        arch = {"kind": "Architecture", "insns": list(mapping.instructions),
                "ports": list(mapping.ports), "name": arch_name}
        if mapping.is_two_level:
            return {"kind": "Mapping2", "arch": arch,
                    "assignment": {i: ports_of(us[0]) for i, us in mapping.uops.items()}}
        return {"kind": "Mapping3", "arch": arch,
                "assignment": {i: [ports_of(u) for u in us for _ in range(u.count)]
                               for i, us in mapping.uops.items()}}
    if fmt == "explainable":
        return {"uarchname": arch_name, "ports": list(mapping.ports),
                "data": {i: {"portusage": [[ports_of(u), u.count] for u in us],
                             "numuops": sum(u.count for u in us)} for i, us in mapping.uops.items()}}
    if fmt == "uopsinfo":
        return {i: port_string(us) for i, us in mapping.uops.items()}
    raise FormatError(f"unknown mapping format {fmt!r}: choose one of {', '.join(MAPPING_FORMATS)}")


def load_mapping(path: str | Path) -> PortMapping:
    """Read a mapping file in any supported format."""
    return mapping_from_json(_read_json(path), str(path))


def save_mapping(mapping: PortMapping, path: str | Path, fmt: str = "pmsolve", arch_name: str = "") -> None:
    """Write a mapping file in format ``fmt``."""
    _write_text(path, json.dumps(mapping_to_json(mapping, fmt, arch_name), indent=1) + "\n")


# --------------------------------------------------------------------------- experiments

def experiments_from_json(data: Any, source: str = "") -> list[Measurement | Experiment]:
    """Experiments from parsed JSON; entries with a measured cycle count become
    :class:`Measurement`, the others plain :class:`Experiment`."""
    try:
        if isinstance(data, dict) and data.get("kind") == "ExperimentList":
            items = [(e["iseq"], (e.get("result") or {}).get("cycles"),
                      {o["id"]: o["cycles"] for o in e.get("other_results", []) if o.get("cycles") is not None})
                     for e in data["exps"]]
        elif isinstance(data, dict) and data.get("format") == "pmsolve.experiments":
            items = [(e["counts"], e.get("cycles"), e.get("others", {})) for e in data["experiments"]]
        else:
            raise FormatError("not an experiment list (pmsolve.experiments or PMEvo ExperimentList)")
        out: list[Measurement | Experiment] = []
        for k, (counts, cycles, others) in enumerate(items):
            try:
                exp = Experiment(counts)
                out.append(Measurement(exp, cycles, dict(others)) if cycles is not None else exp)
            except PmsolveError as exc:
                raise type(exc)(f"experiment {k + 1}: {exc}") from None
        return out
    except PmsolveError as exc:
        raise type(exc)(_where(source, str(exc))) from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FormatError(_where(source, f"malformed experiment list: {type(exc).__name__}: {exc}")) from None


def load_experiments(path: str | Path) -> list[Measurement | Experiment]:
    """Read an experiment list (pmsolve or PMEvo format)."""
    return experiments_from_json(_read_json(path), str(path))


def load_measurements(path: str | Path) -> list[Measurement]:
    """Read an experiment list in which every experiment carries measured cycles."""
    items = load_experiments(path)
    bare = [i for i, m in enumerate(items) if not isinstance(m, Measurement)]
    if bare:
        raise FormatError(f"{path}: experiment {bare[0] + 1} has no measured cycles")
    return items  # type: ignore[return-value]


def experiments_to_json(items: Iterable[Measurement | Experiment]) -> dict:
    """pmsolve's experiment-list JSON."""
    rows = []
    for it in items:
        if isinstance(it, Measurement):
            row: dict[str, Any] = {"counts": dict(it.experiment.items()), "cycles": it.cycles}
            if it.others:
                row["others"] = dict(it.others)
        else:
            row = {"counts": dict(it.items())}
        rows.append(row)
    return {"format": "pmsolve.experiments", "version": 1, "experiments": rows}


def save_experiments(items: Iterable[Measurement | Experiment], path: str | Path) -> None:
    _write_text(path, json.dumps(experiments_to_json(items), indent=1) + "\n")
