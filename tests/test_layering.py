"""The house plan holds: pmsolve's import graph has no cycles, its rooms import only downwards,
argparse stays in the CLI, and library messages name values, not command-line flags.

The graph is read from the source with ``ast`` (nothing is imported), module-level and
function-level imports alike, so an import moved into a function to dodge a cycle still counts.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from pmsolve.cli import build_parser

PACKAGE = Path(__file__).resolve().parents[1] / "pmsolve"

#: Rooms from the bottom up (README, "Architecture"). A room may import rooms of its own layer
#: or below, never above; within a layer the room graph must stay acyclic.
LAYERS: list[set[str]] = [
    # the vocabulary, and helpers that depend on nothing but it
    {"pmsolve", "errors", "interrupts", "model", "symbolic", "fileio", "executor", "metrics", "generate"},
    # solvers, the exact formula, files, the instruction catalogue, bundled data, test strategies
    {"backends", "formula", "formats", "isa", "data", "testing"},
    # the model written once in the IR, and what is computed from it
    {"encodings", "throughput", "strategy", "modelled", "queues"},
    # measuring, inferring, predicting, analysing, checking
    {"harness", "infer", "infer.common", "infer.progress", "infer.cegis", "infer.pmevo", "infer.explain",
     "predictors", "anica", "proofs",
     "leaderboard"},
    # applications that combine the rooms below
    {"jobs"},
    # the command line
    {"cli"},
]
LAYER_OF = {room: k for k, rooms in enumerate(LAYERS) for room in rooms}


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def room(module: str) -> str:
    """``pmsolve.harness.store`` -> ``harness``; the inference algorithms are rooms of their own."""
    parts = module.split(".")[1:]
    if not parts:
        return "pmsolve"
    if parts[0] == "infer" and len(parts) > 1:
        return ".".join(parts[:2])
    return parts[0]


def imports(mods: dict[str, Path]) -> list[tuple[str, str, int]]:
    """(importing module, imported pmsolve module, line) for every import statement anywhere."""
    def resolve(name: str) -> str:
        while name not in mods:
            name = name.rpartition(".")[0]
        return name

    edges = []
    for mod, path in mods.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".")[: len(mod.split(".")) - (node.level - (1 if is_package else 0))]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                targets = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in mods else prefix for a in node.names]
            for t in targets:
                if t.split(".")[0] == "pmsolve" and resolve(t) != mod:
                    edges.append((mod, resolve(t), node.lineno))
    return edges


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def where(mods: dict[str, Path], module: str, line: int) -> str:
    return f"{mods[module].relative_to(PACKAGE.parent)}:{line}"


def test_every_room_has_a_layer():
    unplaced = sorted({room(m) for m in modules()} - set(LAYER_OF))
    assert not unplaced, f"place these rooms in a layer of LAYERS (and in the README): {unplaced}"


def test_no_import_cycles_between_modules_or_rooms():
    edges = imports(modules())
    assert len(edges) > 400, "the import graph looks empty: is the parser still reading pmsolve?"
    between_modules = cycles({(a, b) for a, b, _ in edges})
    assert not between_modules, f"module import cycles: {between_modules}"
    between_rooms = cycles({(room(a), room(b)) for a, b, _ in edges if room(a) != room(b)})
    assert not between_rooms, f"import cycles between rooms: {between_rooms}"


def test_rooms_import_only_their_own_layer_or_below():
    mods = modules()
    upward = [f"{where(mods, a, line)}: {room(a)} (layer {LAYER_OF[room(a)]}) imports {b} "
              f"(layer {LAYER_OF[room(b)]})"
              for a, b, line in imports(mods) if LAYER_OF.get(room(b), 0) > LAYER_OF.get(room(a), 0)]
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_argparse_only_in_the_cli():
    mods = modules()
    found = []
    for mod, path in mods.items():
        if room(mod) == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "argparse" for n in names):
                found.append(where(mods, mod, node.lineno))
    assert not found, "argparse outside pmsolve/cli: " + ", ".join(found)


def _cli_flags() -> set[str]:
    flags: set[str] = set()

    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            flags.update(o for o in action.option_strings if o.startswith("--"))
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub)

    walk(build_parser())
    return flags


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
ARGV_TOKEN = re.compile(r"--[a-z][a-z0-9-]*(=\S*)?")


def test_library_messages_name_no_command_line_flags():
    """A library error says which value is wrong (``workers must be ≥ 1``); only the CLI knows that
    value came from ``--workers``. Docstrings may mention flags, and a literal that is a whole
    argument of another program's command line (``"--json"`` for llvm-mca) is not a message."""
    flags = _cli_flags()
    assert {"--backend", "--workers", "--json", "--ports"} <= flags
    mods = modules()
    found = []
    for mod, path in mods.items():
        if room(mod) == "cli":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                    and not ARGV_TOKEN.fullmatch(node.value.strip())):
                named = sorted(set(FLAG.findall(node.value)) & flags)
                if named:
                    found.append(f"{where(mods, mod, node.lineno)}: {', '.join(named)} in {node.value[:60]!r}")
    assert not found, "library messages that name command-line flags:\n" + "\n".join(found)


#: The libraries a function may import when first used (README, "Architecture"): the solvers, and
#: libraries heavy enough to load only when needed. numpy stays out of `import pmsolve.backends`.
LAZY_LIBRARIES = {"z3", "cvc5", "pysmt", "pysat", "highspy", "scipy", "numpy", "matplotlib", "osaca",
                  "dask", "distributed", "deap", "iced_x86", "hypothesis"}


#: Deliberate exceptions: the console script takes charge of Ctrl-C before the commands (and the
#: solvers they load) are imported, so an interrupt during start-up is one line, not a traceback.
DEFERRED = {("pmsolve.cli", "pmsolve.cli.app")}


def test_function_level_imports_are_only_heavy_optional_libraries():
    """Issue 40: the README said function-level imports remain only for heavy optional
    libraries; there were 17 in pmsolve/, several of them the project's own modules."""
    found = []
    for mod, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    names = [node.module or ""]
                else:
                    continue
                found += [f"{where(modules(), mod, node.lineno)} imports {n}" for n in names
                          if n.split(".")[0] not in LAZY_LIBRARIES and (mod, n) not in DEFERRED]
    assert not found, "\n".join(found)


def test_the_worker_runs_as_a_module_without_importing_itself_first():
    """``python -m pmsolve.harness.worker`` imports the package ``pmsolve.harness`` first; a
    module of that package importing the worker made Python warn on every measuring run (and run
    the worker's module code twice). With its parent gone, it exits quietly."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = subprocess.run([sys.executable, "-m", "pmsolve.harness.worker"], stdin=subprocess.DEVNULL,
                         capture_output=True, env=env, timeout=60)
    assert run.returncode == 0 and b"RuntimeWarning" not in run.stderr, run.stderr.decode()
    proc = subprocess.Popen([sys.executable, "-m", "pmsolve.harness.worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()           # the parent stops reading: the worker's first message breaks the pipe
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in err, err.decode()
