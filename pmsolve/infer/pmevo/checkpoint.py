"""A PMEvo checkpoint folder: ``state.json`` (a fingerprinted :class:`~pmsolve.fileio.StateFile`
with every measurement) and ``evolution.json`` (the last completed generation; with restarts
one per ``restart-k`` subfolder), each written atomically, so a killed run resumes from its last
completed generation without measuring anything again.

Both are plain data. Checkpoint folders are shared and downloaded with results, so nothing read
back from one may run code: the generation is JSON, checked field by field before use (a
genome keeps its µops in order, as ``[mask, count]`` pairs, because recombination draws from
that order), and a pickle left by an older pmsolve is refused unread.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pmsolve.errors import FormatError
from pmsolve.fileio import atomic_write_text
from pmsolve.formats import parse_json_text, read_text_file

MEASUREMENTS_FILE = "state.json"
EVOLUTION_FILE = "evolution.json"
LEGACY_FILE = "evolution.pickle"  # written by pmsolve before 2026-11-26; never unpickled

Genome = list[dict[int, int]]


def _genome_to_json(genome: Genome) -> list[list[list[int]]]:
    return [[[mask, count] for mask, count in insn.items()] for insn in genome]


def save_state(folder: str | Path, state: dict[str, Any]) -> None:
    """Write one generation: ``population`` as genomes, ``rng`` as ``random.getstate()``, the
    rest (numbers, strings, lists and dicts of them) as it is."""
    doc = dict(state)
    doc["population"] = [_genome_to_json(g) for g in state["population"]]
    version, internal, gauss = state["rng"]
    doc["rng"] = [version, list(internal), gauss]
    atomic_write_text(Path(folder) / EVOLUTION_FILE, json.dumps(doc, separators=(",", ":")), "PMEvo checkpoint")


class _Bad(Exception):
    pass


def _int(x: Any, what: str) -> int:
    if type(x) is not int:
        raise _Bad(f"{what} is not an integer")
    return x


def _number(x: Any, what: str) -> float:
    if type(x) not in (int, float):
        raise _Bad(f"{what} is not a number")
    return float(x)


def _list(x: Any, what: str) -> list:
    if not isinstance(x, list):
        raise _Bad(f"{what} is not a list")
    return x


def _genome(x: Any, k: int) -> Genome:
    out: Genome = []
    for i, insn in enumerate(_list(x, f"genome {k}")):
        uops: dict[int, int] = {}
        for pair in _list(insn, f"genome {k}, instruction {i}"):
            if not isinstance(pair, list) or len(pair) != 2:
                raise _Bad(f"genome {k}, instruction {i}: a µop is not a [mask, count] pair")
            mask, count = _int(pair[0], "a µop mask"), _int(pair[1], "a µop count")
            if mask <= 0 or count <= 0 or mask in uops:
                raise _Bad(f"genome {k}, instruction {i}: µop {pair} is not a new positive mask and count")
            uops[mask] = count
        if not uops:
            raise _Bad(f"genome {k}, instruction {i} has no µop")
        out.append(uops)
    return out


def _rng(x: Any) -> tuple:
    parts = _list(x, "rng")
    if len(parts) != 3:
        raise _Bad("rng is not [version, state, gauss]")
    internal = tuple(_int(v, "an rng word") for v in _list(parts[1], "rng state"))
    gauss = None if parts[2] is None else _number(parts[2], "rng gauss")
    return _int(parts[0], "rng version"), internal, gauss


def _decode(doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise _Bad("not a JSON object")
    for key in ("version", "fingerprint", "generation", "converged", "population", "objectives", "rng",
                "evaluations", "logbook"):
        if key not in doc:
            raise _Bad(f"no {key!r}")
    state = dict(doc)
    state["generation"] = _int(doc["generation"], "generation")
    state["evaluations"] = _int(doc["evaluations"], "evaluations")
    if not isinstance(doc["converged"], bool):
        raise _Bad("converged is not true or false")
    state["population"] = [_genome(g, k) for k, g in enumerate(_list(doc["population"], "population"))]
    objectives = _list(doc["objectives"], "objectives")
    if len(objectives) != len(state["population"]):
        raise _Bad("one objective pair per individual is needed")
    state["objectives"] = [tuple(_number(v, "an objective") for v in _list(o, "objectives")) for o in objectives]
    state["rng"] = _rng(doc["rng"])
    if not all(isinstance(row, dict) for row in _list(doc["logbook"], "logbook")):
        raise _Bad("a logbook row is not an object")
    return state


def load_state(folder: str | Path) -> dict[str, Any] | None:
    """The last saved generation, or None if the folder has none. A legacy pickle, or a file
    that is not a checkpoint, is refused in one :class:`FormatError` line without being run."""
    folder = Path(folder)
    if (folder / LEGACY_FILE).exists():
        raise FormatError(f"{folder / LEGACY_FILE}: a PMEvo checkpoint in the old pickle format, which pmsolve no "
                          f"longer reads (a pickle can run code); delete it to start this run afresh")
    path = folder / EVOLUTION_FILE
    if not path.exists():
        return None
    doc = parse_json_text(read_text_file(path, "PMEvo checkpoint"), str(path))
    try:
        return _decode(doc)
    except _Bad as exc:
        raise FormatError(f"{path}: not a PMEvo checkpoint ({exc})") from None
