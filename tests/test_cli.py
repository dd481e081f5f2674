"""The command line: outputs, --json, and one clear line with exit code 2 for bad input."""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pmsolve.cli import build_parser, main
from pmsolve.cli.flags import add_backend_argument, extend_with_executor
from pmsolve.executor import PoolExecutor, current_executor
from pmsolve.formats import load_mapping, save_experiments, save_mapping
from pmsolve.generate import random_experiment, random_mapping
from pmsolve.model import Measurement, PortMapping
from pmsolve.throughput import inverse_throughput

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"
FIG = PortMapping.two_level(["p1", "p2", "p3"], {"mul": ["p1"], "add": ["p1", "p2"], "store": ["p3"]})


@pytest.fixture
def fig_file(tmp_path):
    path = tmp_path / "fig31.json"
    save_mapping(FIG, path, "pmevo")
    return path


def run(capsys, *argv):
    code = main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return code, out, err


def _commands(parser, path=("pmsolve",)):
    """(command path, its parser, the help line its parent shows) for every (sub)command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            shown = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield path + (name,), sub, shown.get(name)
                yield from _commands(sub, path + (name,))


def test_help_explains_every_command_and_flag():
    parser = build_parser()
    text = parser.format_help()
    commands = list(_commands(parser))
    assert len(commands) >= 20
    for path, sub, shown in commands:
        assert shown, f"{' '.join(path)} has no help line"
        assert sub.description, f"{' '.join(path)} has no description"
        if len(path) == 2:
            assert path[1] in text
        for action in sub._actions:
            if action.option_strings or not isinstance(action, argparse._SubParsersAction):
                assert action.help, f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}: no help"


def test_console_script_runs_as_module():
    res = subprocess.run([sys.executable, "-m", "pmsolve.cli", "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "throughput" in res.stdout


def test_backend_flag_defaults_to_the_environment(monkeypatch, capsys):
    """No --backend: the library reads $PMSOLVE_BACKEND (in any spelling), else auto."""
    monkeypatch.setenv("PMSOLVE_BACKEND", "CVC5")
    code, out, _ = run(capsys, "check-strategy", "--strategy", "pairs", "--insns", 2, "--ports", 2, "--json")
    assert code == 0 and json.loads(out)["backend"] == "cvc5"
    parser = argparse.ArgumentParser()
    add_backend_argument(parser)
    assert parser.parse_args(["--backend", "Z3"]).backend == "z3"
    assert parser.parse_args(["--backend", "pysmt"]).backend == "pysmt:z3"
    assert parser.parse_args(["--backend", "SMT-LIB2"]).backend == "smtlib:z3"


def test_an_unknown_backend_is_one_line_naming_the_known_ones(monkeypatch, capsys, fig_file):
    """Issue 40: `--backend pysmt` (the README's name) was refused; an unknown name, by flag or
    by $PMSOLVE_BACKEND, is one line that lists the names that exist."""
    code, _, err = run(capsys, "throughput", "-m", fig_file, "-e", "add:1", "--backend", "gurobi")
    assert code == 2 and err.count("\n") == 1 and "unknown backend 'gurobi'" in err
    assert "pysmt:z3 (or pysmt)" in err and "smtlib:z3 (or smtlib" in err
    code, _, err = run(capsys, "throughput", "-m", fig_file, "-e", "add:1", "--backend", "PySMT")
    assert code == 0 and "checked by backend pysmt:z3" in err
    monkeypatch.setenv("PMSOLVE_BACKEND", "nope")
    code, _, err = run(capsys, "check-strategy", "--strategy", "pairs", "--insns", 2, "--ports", 2)
    assert code == 2 and "unknown backend 'nope' (from $PMSOLVE_BACKEND)" in err and err.count("\n") == 1


def test_executor_flags_make_the_asked_executor_ambient():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=1)
    seen = []
    parser.set_defaults(func=lambda args: seen.append(current_executor()) or 0)
    extend_with_executor(parser)
    for argv in ([], ["--workers", "2"], ["--executor", "pool", "--workers", "2"]):
        args = parser.parse_args(argv)
        assert args.func(args) == 0
    assert seen[:2] == [None, None]  # not asked: the command's own behaviour
    assert isinstance(seen[2], PoolExecutor) and seen[2].workers == 2 and seen[2]._pool is None  # closed
    assert current_executor() is None


def test_throughput_text_and_json(capsys, fig_file):
    code, out, _ = run(capsys, "throughput", "-m", fig_file, "-e", "add:2,mul:1,store:1")
    assert code == 0 and "3/2" in out and "{p1,p2}" in out
    code, out, _ = run(capsys, "throughput", "-m", fig_file, "-e", "add:2,mul:1,store:1", "-e", "store:3",
                       "--json")
    data = json.loads(out)
    assert data[0]["inverse_throughput"] == "3/2" and data[0]["cpi"] == 0.375
    assert data[1]["bottleneck_ports"] == ["p3"] and data[1]["cycles"] == 3.0


@pytest.mark.parametrize("backend", ["z3", "cvc5", "pysmt:cvc5", "highs", "scipy"])
def test_throughput_through_a_backend(capsys, fig_file, backend):
    code, out, err = run(capsys, "throughput", "-m", fig_file, "-e", "add:2,mul:1,store:1", "--backend", backend)
    assert code == 0 and "3/2" in out and f"checked by backend {backend}" in err


@pytest.mark.parametrize("argv, msg", [
    (["throughput", "-m", "{fig}", "-e", "add:1", "--backend", "nosuch"], "unknown backend 'nosuch'"),
    (["throughput", "-m", "{fig}", "-e", "add:1", "--backend", "sat"], "cannot do what this problem needs"),
    (["throughput", "-m", "{fig}", "-e", "div:1"], "unknown instruction(s) ['div']"),
    (["throughput", "-m", "{bad}", "-e", "add:1"], "malformed JSON"),
    (["throughput", "-m", "/nonexistent.json", "-e", "add:1"], "cannot read file"),
    (["throughput", "-m", "{fig}"], "give at least one --experiment"),
    (["throughput", "-m", "{fig}", "-e", "add:1", "--r-max", "-1"], "--r-max: expected a finite number > 0, got '-1'"),
    (["evaluate", "-m", "{fig}", "--measurements", "{fig}"], "not an experiment list"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, fig_file, argv, msg):
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    argv = [a.format(fig=fig_file, bad=bad) for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("pmsolve: error: ") and err.count("\n") == 1 and msg in err


def test_evaluate_against_own_truth_and_heatmap(capsys, tmp_path):
    rng = np.random.default_rng(1)
    truth = random_mapping(rng, 6, 12, max_uops=3, max_ports_per_uop=3)
    other = random_mapping(rng, 6, 12, max_uops=3, max_ports_per_uop=3)
    exps = [random_experiment(rng, truth.instructions, 5) for _ in range(200)]
    save_mapping(truth, tmp_path / "truth.json")
    save_mapping(other, tmp_path / "other.json", "explainable")
    save_experiments([Measurement(e, float(inverse_throughput(truth, e)), {"const": 2.0}) for e in exps],
                     tmp_path / "meas.json")
    code, out, _ = run(capsys, "evaluate", "-m", tmp_path / "truth.json", "-m", tmp_path / "other.json",
                       "--measurements", tmp_path / "meas.json", "--others", "--json",
                       "--heatmap", tmp_path / "h.png")
    data = json.loads(out)
    assert code == 0 and set(data) == {str(tmp_path / "truth.json"), str(tmp_path / "other.json"), "const"}
    assert data[str(tmp_path / "truth.json")]["mape"] == 0.0
    assert data[str(tmp_path / "truth.json")]["kendall_tau_b"] == pytest.approx(1.0)
    assert data[str(tmp_path / "other.json")]["mape"] > 0
    assert (tmp_path / "h.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_convert_round_trip(capsys, tmp_path, fig_file):
    for fmt in ("pmsolve", "pmevo", "explainable"):
        code, out, _ = run(capsys, "convert", fig_file, "--to", fmt, "-o", tmp_path / f"{fmt}.json")
        assert code == 0 and f"format {fmt}" in out
    renamed = FIG.rename_ports({"p1": "1", "p2": "2", "p3": "3"})
    save_mapping(renamed, tmp_path / "short.json")
    assert run(capsys, "convert", tmp_path / "short.json", "--to", "uopsinfo", "-o", tmp_path / "u.json")[0] == 0
    assert load_mapping(tmp_path / "u.json") == renamed
    assert load_mapping(tmp_path / "explainable.json") == FIG
    code, _, err = run(capsys, "convert", fig_file, "--to", "uopsinfo", "-o", tmp_path / "x.json")
    assert code == 2 and "one-character port names" in err


def test_backends_lists_every_family(capsys):
    code, out, _ = run(capsys, "backends", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert code == 0 and {"z3", "cvc5", "highs", "scipy", "sat"} <= set(rows)
    assert "lp" in rows["highs"]["capabilities"] and rows["scipy"]["installed"]
    code, out, _ = run(capsys, "backends")
    assert code == 0 and "installed" in out.splitlines()[0]


def test_encode_exports_runnable_smtlib(capsys, tmp_path, fig_file):
    import shutil

    code, out, _ = run(capsys, "encode", "-m", fig_file, "-e", "add:2,mul:1,store:1", "--encoding", "relate",
                       "-o", tmp_path / "r.smt2")
    assert code == 0
    z3 = shutil.which("z3") or str(Path(sys.executable).with_name("z3"))
    res = subprocess.run([z3, str(tmp_path / "r.smt2")], capture_output=True, text=True, timeout=60)
    assert res.stdout.startswith("sat") and "(t (/ 3.0 2.0))" in res.stdout.replace("\n", " ")
    code, out, _ = run(capsys, "encode", "-m", fig_file, "-e", "add:1", "--format", "lp")
    assert code == 0 and "minimize" in out.lower()
    code, out, _ = run(capsys, "encode", "--export", tmp_path / "ex")
    assert code == 0 and (tmp_path / "ex" / "ex3_8_lp.smt2").exists()


def test_demo_runs(capsys, tmp_path):
    code, out, _ = run(capsys, "demo", "-o", tmp_path / "ex.json")
    assert code == 0 and "4/3" in out and "{0,1,3}" in out
    assert len(load_mapping(tmp_path / "ex.json").instructions) == 12


@pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/reference not present")
@pytest.mark.parametrize("arch, mape, tau", [("ZEN", 13.7, 0.75), ("SKL", 14.7, 0.72), ("A72", 21.3, 0.62)])
def test_reproduces_published_pmevo_figures(capsys, arch, mape, tau):
    base = REFERENCE / "pmevo" / arch
    code, out, _ = run(capsys, "evaluate", "-m", base / "mapping_pmevo.json",
                       "--measurements", base / "exps_eval_small_annotated.json", "--json")
    acc = json.loads(out)["mapping"]
    assert code == 0 and acc["n"] == 2000
    assert round(100 * acc["mape"], 1) == mape and round(acc["kendall_tau_b"], 2) == tau


ASCII_CHILD = r"""
import argparse, json, sys
from pmsolve.cli import build_parser, main

def commands(parser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield path + (name,)
                yield from commands(sub, path + (name,))

runs = [list(p) + ["--help"] for p in commands(build_parser())] + json.loads(sys.argv[1])
codes = [main(argv) for argv in runs]
sys.stderr.write("CODES " + json.dumps(codes) + "\n")
"""


@pytest.mark.parametrize("env", [{"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
                                 {"PYTHONIOENCODING": "ascii"}], ids=["C-locale", "ascii-io"])
def test_an_ascii_terminal_gets_ascii_not_a_traceback(tmp_path, fig_file, env):
    """`LC_ALL=C pmsolve demo` ended in a UnicodeEncodeError: every command's output, help text
    and error line is spelled in ASCII there (µ → u, τ → tau, ≤ → <=, tp⁻¹ → tp^-1)."""
    import os

    runs = [["demo"], ["throughput", "-m", str(fig_file), "-e", "add:2,mul:1"],
            ["throughput", "-m", str(fig_file), "-e", "add:-1"],                     # "count must be ≥ 0"
            ["infer", "cegis", "--oracle", f"simulated:{fig_file}", "--ports", "3", "--quiet"]]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONUTF8", "PYTHONIOENCODING"))}
    root = str(Path(__file__).resolve().parents[1])
    p = subprocess.run([sys.executable, "-c", ASCII_CHILD, json.dumps(runs)], capture_output=True, cwd=tmp_path,
                       env={**base, **env, "PYTHONPATH": root})
    out, err = p.stdout.decode("ascii"), p.stderr.decode("ascii")   # ASCII through and through
    assert p.returncode == 0 and "Traceback" not in err, err[-3000:]
    codes = json.loads(err.splitlines()[-1].removeprefix("CODES "))
    assert codes[-4:] == [0, 0, 2, 0] and set(codes[:-4]) == {0}
    assert "tp^-1" in out and "4x add" in out                                     # the demo's table
    assert "count must be >= 0, got -1" in err
    assert "explainable inference, with or without a uop counter" in out           # a help text


def test_every_command_says_what_it_is_for_and_names_its_page():
    """Issue 40: `pmsolve --help` and each command's help say in one line what the command is
    for and point to the page of docs/ that explains it."""
    from pmsolve.cli.app import commands

    root = Path(__file__).resolve().parents[1]
    parser = build_parser()
    assert "docs/" in parser.format_help()
    for name, (line, sub) in commands(parser).items():
        text = " ".join(sub.format_help().split())
        assert line and sub.description, f"pmsolve {name}: no one-line help or description"
        pages = re.findall(r"Documentation: (docs/[\w.-]+\.md)", text)
        assert len(pages) == 1 and (root / pages[0]).is_file(), f"pmsolve {name}: {pages}"
