"""Every command against every class of bad input (issue 18): missing, empty, binary and
non-UTF-8 files, malformed JSON and TOML, the wrong shape, NaN/inf/negative/huge numbers,
unknown names, bad and special output paths, contradictory flags and stale state.

Each case must give exactly one stderr line starting ``pmsolve: error:``, exit code 2, no
traceback, nothing on stdout, and leave every file in the work folder byte-identical (nothing
written, nothing created). The cases run in-process through :func:`pmsolve.cli.main` (fast); a
few run the console script in a subprocess, and a hypothesis fuzz feeds the file readers random
bytes and JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmsolve.anica import config as anica_config
from pmsolve.cli import main
from pmsolve.errors import PmsolveError
from pmsolve.fileio import STATE_FORMAT, STATE_VERSION
from pmsolve.formats import load_experiments, load_mapping, save_experiments, save_mapping
from pmsolve.model import Experiment, Measurement, PortMapping
from pmsolve.strategy.strategies import read_experiment_file

FIG = PortMapping.two_level(["p1", "p2", "p3"], {"mul": ["p1"], "add": ["p1", "p2"], "store": ["p3"]})
BINARY = b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x01\x80\x81"


def _stale_state(kind: str) -> str:
    """A state file of the right kind whose fingerprint belongs to another run."""
    return json.dumps({"format": STATE_FORMAT, "version": STATE_VERSION, "kind": kind,
                       "fingerprint": {"oracle": {"mapping": "0123456789abcdef"}}, "data": {}})


def _experiments(counts: str, cycles: str) -> str:
    return '{"format": "pmsolve.experiments", "version": 1, "experiments": [{"counts": %s, "cycles": %s}]}' % (
        counts, cycles)


#: the work folder's files (name -> text or bytes); directories end in "/"
FILES: dict[str, str | bytes] = {
    "empty.json": "",
    "binary.json": BINARY,
    "latin1.json": '{"format": "pmsolve.mapping", "version": 1, "ports": ["café"]}'.encode("latin-1"),
    "malformed.json": "{oops",
    "list.json": "[1, 2]",
    "dupkey.json": '{"format": "pmsolve.mapping", "version": 1, "ports": ["0"], "ports": ["1"], '
                   '"instructions": {"a": [{"ports": ["0"], "count": 1}]}}',
    "wrongshape.json": '{"format": "pmsolve.mapping", "version": 1, "ports": "01", "instructions": []}',
    "hugecount_map.json": '{"format": "pmsolve.mapping", "version": 1, "ports": ["0"], '
                          '"instructions": {"a": [{"ports": ["0"], "count": 1e300}]}}',
    "nan.json": _experiments('{"add": 1}', "NaN"),
    "inf.json": _experiments('{"add": 1}', "1e999"),
    "infinity.json": _experiments('{"add": 1}', "Infinity"),
    "negative.json": _experiments('{"add": 1}', "-1"),
    "hugecount.json": _experiments('{"add": 1e300}', "1.0"),
    "unknown.json": _experiments('{"div": 1}', "1.0"),
    "out.json": "OLD OUTPUT\n",
    "afile": "a regular file\n",
    "adir/": "",
    "sdir/": "",
    "strategy.txt": "add:1\nadd:-1\n",
    "campaign_list.json": "[]",
    "campaign_nan.toml": "[budget]\nseconds = nan\n",
    "campaign_inf.toml": "[interestingness]\nthreshold = inf\n",
    "campaign_bad.toml": "seed = = 1\n",
    "campaign_binary.toml": BINARY,
    "campaign_unknown.toml": "[budget]\nminutes = 3\n",
    "cegis-stale.json": _stale_state("cegis"),
    "explain-stale.json": _stale_state("explain"),
    "ckpt/": "",
    "ckpt/state.json": _stale_state("pmevo"),
    "explained_bad.json": '{"explanation": {"format": "pmsolve.explanation", "schemes": {"add": {"uops": 3}}}}',
    "camp/": "",
    "camp/state.json": BINARY,
}


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A folder with the good and bad files the cases name; the cases run inside it."""
    save_mapping(FIG, tmp_path / "fig.json", "pmevo")
    exps = [Experiment(c) for c in ({"add": 2, "mul": 1}, {"add": 1}, {"mul": 2}, {"store": 1, "add": 3},
                                    {"mul": 1, "store": 2}, {"add": 1, "mul": 1, "store": 1})]
    save_experiments([Measurement(e, 1.0 + k / 4) for k, e in enumerate(exps)], tmp_path / "exps.json")
    for name, content in FILES.items():
        path = tmp_path / name
        if name.endswith("/"):
            path.mkdir(exist_ok=True)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path below ``root`` with its bytes (None for a directory)."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = None
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = Path(p).read_bytes()
    return out


SIM = "simulated:fig.json"
PMEVO = ["infer", "pmevo", "--oracle", SIM, "--ports", "3", "--minutes", "0", "--generations", "1"]
CEGIS = ["infer", "cegis", "--oracle", SIM, "--ports", "3"]
EXPLAIN = ["infer", "explain", "--oracle", SIM + "?uops=1&r_max=4", "--ports", "3"]
THR = ["throughput", "-m", "fig.json"]

#: (id, argv, a substring the one error line must contain)
CASES = [
    # ---- input files: missing, empty, binary, non-UTF-8, malformed, wrong shape, duplicate keys
    ("mapping-missing", THR[:2] + ["nosuch.json", "-e", "add:1"], "nosuch.json: cannot read"),
    ("mapping-empty", THR[:2] + ["empty.json", "-e", "add:1"], "malformed JSON"),
    ("mapping-binary", THR[:2] + ["binary.json", "-e", "add:1"], "not UTF-8"),
    ("mapping-latin1", THR[:2] + ["latin1.json", "-e", "add:1"], "not UTF-8"),
    ("mapping-malformed", THR[:2] + ["malformed.json", "-e", "add:1"], "malformed JSON"),
    ("mapping-list", THR[:2] + ["list.json", "-e", "add:1"], "not a port mapping"),
    ("mapping-dupkey", THR[:2] + ["dupkey.json", "-e", "add:1"], "duplicate key 'ports'"),
    ("mapping-wrongshape", THR[:2] + ["wrongshape.json", "-e", "add:1"], "wrongshape.json"),
    ("mapping-directory", THR[:2] + ["adir", "-e", "add:1"], "is a directory"),
    ("mapping-hugecount", THR[:2] + ["hugecount_map.json", "-e", "a:1"], "at most 1,000,000,000"),
    ("convert-binary", ["convert", "binary.json", "-o", "new.json"], "not UTF-8"),
    ("encode-binary", ["encode", "-m", "binary.json", "-e", "add:1"], "not UTF-8"),
    ("bridge-binary", ["bridge", "binary.json", "fig.json"], "binary.json"),
    ("explain-file-binary", ["explain", "binary.json"], "not UTF-8"),
    ("explain-file-malformed", ["explain", "malformed.json"], "malformed JSON"),
    ("explain-file-missing", ["explain", "nosuch.json"], "cannot read"),
    ("explain-file-plain-mapping", ["explain", "fig.json"], "no explanation"),
    ("explain-file-damaged", ["explain", "explained_bad.json", "add"], "malformed explanation"),
    ("predict-blocks-binary", ["predict", "-p", "mapping:fig.json", "--blocks", "binary.json"], "not UTF-8"),
    ("predict-blocks-dupkey", ["predict", "-p", "mapping:fig.json", "--blocks", "dupkey.json"], "duplicate key"),
    ("predict-mapping-binary", ["predict", "-p", "mapping:binary.json", "addq %rax, %rbx"], "binary.json"),
    ("oracle-binary", ["infer", "cegis", "--oracle", "simulated:binary.json", "--ports", "3"], "not UTF-8"),
    ("oracle-recorded-binary", ["infer", "cegis", "--oracle", "recorded:binary.json", "--ports", "3"],
     "not UTF-8"),
    ("explain-schemes-binary", EXPLAIN + ["--schemes", "binary.json"], "not UTF-8"),
    # ---- measurement files: NaN, infinity, negative, huge counts, unknown names
    ("measurements-nan", ["evaluate", "-m", "fig.json", "--measurements", "nan.json"], "NaN"),
    ("measurements-inf", ["evaluate", "-m", "fig.json", "--measurements", "inf.json"], "not finite"),
    ("measurements-infinity", ["evaluate", "-m", "fig.json", "--measurements", "infinity.json"], "Infinity"),
    ("measurements-negative", ["evaluate", "-m", "fig.json", "--measurements", "negative.json"],
     "positive finite number"),
    ("measurements-hugecount", ["evaluate", "-m", "fig.json", "--measurements", "hugecount.json"],
     "at most 1,000,000,000"),
    ("measurements-binary", ["evaluate", "-m", "fig.json", "--measurements", "binary.json"], "not UTF-8"),
    ("measurements-not-a-list", ["evaluate", "-m", "fig.json", "--measurements", "fig.json"],
     "not an experiment list"),
    ("experiments-nan", THR + ["--experiments", "nan.json"], "NaN"),
    ("experiments-unknown", THR + ["--experiments", "unknown.json"], "unknown instruction"),
    ("recorded-inf", ["infer", "cegis", "--oracle", "recorded:inf.json", "--ports", "3"], "not finite"),
    ("evaluate-spec-rmax-inf", ["evaluate", "-m", "fig.json:r_max=inf", "--measurements", "exps.json"],
     "r_max must be a finite number > 0, got 'inf'"),
    ("evaluate-spec-rmax-nan", ["evaluate", "-m", "fig.json:r_max=nan", "--measurements", "exps.json"],
     "r_max must be a finite number > 0, got 'nan'"),
    # ---- experiments on the command line
    ("count-negative", THR + ["-e", "add:-1"], "count must be ≥ 0, got -1"),
    ("count-fraction", THR + ["-e", "add:1.5"], "count must be an integer"),
    ("count-huge", THR + ["-e", "add:1e300"], "at most 1,000,000,000"),
    ("count-nan", THR + ["-e", "add:nan"], "count must be an integer"),
    ("empty-item", THR + ["-e", "add:1,,mul:1"], "empty item"),
    ("unknown-insn", THR + ["-e", "div:1"], "unknown instruction"),
    ("encode-empty-item", ["encode", "-m", "fig.json", "-e", "add:1,,mul:1"], "empty item"),
    # ---- numeric options: NaN, infinity, zero, negative, out of range
    ("throughput-rmax-nan", THR + ["-e", "add:1", "--r-max", "nan"], "--r-max: expected a finite number > 0"),
    ("throughput-rmax-inf", THR + ["-e", "add:1", "--r-max", "inf"], "--r-max"),
    ("throughput-rmax-0", THR + ["-e", "add:1", "--r-max", "0"], "got '0'"),
    ("evaluate-rmax-inf", ["evaluate", "-m", "fig.json", "--measurements", "exps.json", "--r-max", "inf"],
     "--r-max"),
    ("encode-rmax-0", ["encode", "-m", "fig.json", "-e", "add:1", "--r-max", "0"], "--r-max"),
    ("demo-rmax-nan", ["demo", "--r-max", "nan"], "--r-max"),
    ("cegis-rmax-0", CEGIS + ["--r-max", "0"], "--r-max"),
    ("cegis-epsilon-nan", CEGIS + ["--epsilon", "nan"], "--epsilon: expected a finite number ≥ 0"),
    ("cegis-epsilon-negative", CEGIS + ["--epsilon", "-0.1"], "--epsilon"),
    ("cegis-timeout-0", CEGIS + ["--timeout", "0"], "--timeout: expected a finite number > 0"),
    ("cegis-timeout-negative", CEGIS + ["--timeout", "-5"], "--timeout"),
    ("cegis-timeout-inf", CEGIS + ["--timeout", "inf"], "--timeout"),
    ("cegis-max-count-0", CEGIS + ["--max-count", "0"], "--max-count"),
    ("pmevo-rmax-0", PMEVO + ["--r-max", "0"], "--r-max"),
    ("pmevo-workers-0", PMEVO + ["--workers", "0"], "--workers: expected an integer ≥ 1"),
    ("pmevo-workers-negative", PMEVO + ["--workers", "-2"], "--workers"),
    ("pmevo-minutes-nan", PMEVO + ["--minutes", "nan"], "--minutes"),
    ("pmevo-mutation-2", PMEVO + ["--mutation", "2"], "≤ 1"),
    ("pmevo-epsilon-inf", PMEVO + ["--epsilon", "inf"], "--epsilon"),
    ("explain-integrality-nan", EXPLAIN + ["--integrality", "nan"], "--integrality"),
    ("explain-rmax-0", EXPLAIN + ["--r-max", "0"], "--r-max"),
    ("explain-runs-0", EXPLAIN + ["--runs", "0"], "--runs"),
    ("explain-timeout-0", EXPLAIN + ["--timeout", "0"], "--timeout"),
    ("strategy-timeout-0", ["check-strategy", "--strategy", "pairs", "--insns", "2", "--ports", "2",
                            "--timeout", "0"], "--timeout"),
    ("strategy-ports-0", ["check-strategy", "--strategy", "pairs", "--ports", "0"], "--ports"),
    ("predict-workers-0", ["predict", "-p", "mapping:fig.json", "--workers", "0", "addq %rax, %rbx"], "--workers"),
    ("anica-workers-0", ["anica", "discover", "-o", "newcamp", "--workers", "0"], "--workers"),
    ("anica-seconds-nan", ["anica", "discover", "-o", "newcamp", "--seconds", "nan"], "--seconds"),
    ("main-job-held-out-0", ["infer", "--simulated", "--held-out", "0"], "--held-out"),
    # ---- oracle specs
    ("oracle-rmax-inf", ["infer", "cegis", "--oracle", SIM + "?r_max=inf", "--ports", "3"], "r_max"),
    ("oracle-rmax-0", ["infer", "cegis", "--oracle", SIM + "?r_max=0", "--ports", "3"], "r_max"),
    ("oracle-noise-nan", ["infer", "cegis", "--oracle", SIM + "?noise=nan", "--ports", "3"], "noise"),
    ("oracle-unknown-kind", ["infer", "cegis", "--oracle", "psychic:fig.json", "--ports", "3"], "unknown oracle kind"),
    ("oracle-unknown-option", ["infer", "cegis", "--oracle", SIM + "?speed=3", "--ports", "3"], "speed"),
    # ---- unknown names
    ("cegis-uops-unknown", CEGIS + ["--kind", "fixed-counts", "--uops", "zz:1"], "'zz'"),
    ("cegis-uops-incomplete", CEGIS + ["--kind", "fixed-counts", "--uops", "add:1"], "no count for"),
    ("explain-unknown-hook", EXPLAIN + ["--uop-hook", "nosuch"], "nosuch"),
    ("explain-unknown-scheme", ["explain", "fig.json", "add"], "no explanation"),
    ("unknown-backend", THR + ["-e", "add:1", "--backend", "nosuch"], "unknown backend 'nosuch'"),
    ("unknown-strategy", ["check-strategy", "--strategy", "nosuch", "--insns", "2", "--ports", "2"],
     "unknown strategy"),
    ("prove-unknown", ["prove", "nosuch"], "nosuch"),
    # ---- strategies and campaign configs
    ("strategy-directory", ["check-strategy", "--strategy", "sdir", "--ports", "2"], "is a directory"),
    ("strategy-binary", ["check-strategy", "--strategy", "binary.json", "--ports", "2"], "not UTF-8"),
    ("strategy-negative-count", ["check-strategy", "--strategy", "strategy.txt", "--ports", "2"],
     "strategy.txt:2"),
    ("campaign-list", ["anica", "discover", "campaign_list.json", "-o", "newcamp"], "got a list"),
    ("campaign-seconds-nan", ["anica", "discover", "campaign_nan.toml", "-o", "newcamp"],
     "max_seconds must be a finite number"),
    ("campaign-threshold-inf", ["anica", "discover", "campaign_inf.toml", "-o", "newcamp"], "finite"),
    ("campaign-malformed", ["anica", "discover", "campaign_bad.toml", "-o", "newcamp"], "campaign_bad.toml"),
    ("campaign-binary", ["anica", "discover", "campaign_binary.toml", "-o", "newcamp"], "not UTF-8"),
    ("campaign-unknown-key", ["anica", "discover", "campaign_unknown.toml", "-o", "newcamp"], "budget.minutes"),
    ("campaign-missing", ["anica", "discover", "nosuch.toml", "-o", "newcamp"], "cannot read"),
    ("generalize-campaign-list", ["anica", "generalize", "campaign_list.json", "--schemes", "add_r64_r64"],
     "got a list"),
    ("anica-report-missing", ["anica", "report", "nosuch"], "no campaign state"),
    ("anica-report-binary-state", ["anica", "report", "camp"], "not UTF-8"),
    # ---- contradictory flags
    ("shortcut-and-strategy", ["check-strategy", "--shortcut", "facile", "--strategy", "pairs", "--insns", "2",
                               "--ports", "2"], "--shortcut and --strategy cannot be combined"),
    ("export-and-out", ["encode", "--export", "newdir", "-o", "x.smt2"], "--export and --out cannot be combined"),
    ("export-and-mapping", ["encode", "--export", "newdir", "-m", "fig.json", "-e", "add:1"], "cannot be combined"),
    ("uops-with-two-level", CEGIS + ["--uops", "add:1"], "--uops applies to --kind fixed-counts only"),
    ("throughput-only-with-hook", EXPLAIN + ["--throughput-only", "--uop-hook", "zenplus"],
     "--throughput-only and --uop-hook cannot be combined"),
    # ---- bad and special output paths (checked before any work)
    ("convert-out-dir", ["convert", "fig.json", "-o", "adir"], "is a directory"),
    ("convert-out-under-file", ["convert", "fig.json", "-o", "afile/x.json"], "not a directory"),
    ("demo-out-dir", ["demo", "-o", "adir"], "is a directory"),
    ("encode-out-dir", ["encode", "-m", "fig.json", "-e", "add:1", "-o", "adir"], "is a directory"),
    ("encode-out-under-file", ["encode", "-m", "fig.json", "-e", "add:1", "-o", "afile/x.smt2"], "not a directory"),
    ("encode-export-file", ["encode", "--export", "afile"], "is a file, not a folder"),
    ("encode-export-under-file", ["encode", "--export", "afile/sub"], "not a writable directory"),
    ("heatmap-dir", ["evaluate", "-m", "fig.json", "--measurements", "exps.json", "--heatmap", "adir"],
     "is a directory"),
    ("heatmap-under-file", ["evaluate", "-m", "fig.json", "--measurements", "exps.json", "--heatmap-ipc",
                            "afile/h.png"], "not a directory"),
    ("predict-cache-dir", ["predict", "-p", "mapping:fig.json", "--cache", "adir", "addq %rax, %rbx"],
     "is a directory"),
    ("cegis-out-dir", CEGIS + ["-o", "adir"], "is a directory"),
    ("cegis-state-dir", CEGIS + ["--state", "adir"], "state file adir: is a directory"),
    ("pmevo-out-dir", PMEVO + ["-o", "adir"], "is a directory"),
    ("pmevo-checkpoint-file", PMEVO + ["--checkpoint", "afile"], "is a file, not a folder"),
    ("pmevo-checkpoint-under-file", PMEVO + ["--checkpoint", "afile/ck"], "not a writable directory"),
    ("explain-out-dir", EXPLAIN + ["-o", "adir"], "is a directory"),
    ("explain-state-dir", EXPLAIN + ["--state", "adir"], "is a directory"),
    ("anica-out-file", ["anica", "discover", "-o", "afile"], "is a file, not a folder"),
    ("anica-out-existing-json", ["anica", "discover", "-o", "out.json"], "is a file, not a folder"),
    ("generalize-out-file", ["anica", "generalize", "--schemes", "add_r64_r64", "-o", "afile"],
     "is a file, not a folder"),
    ("main-job-report-dir", ["infer", "--simulated", "--report", "adir"], "is a directory"),
    ("main-job-out-dir", ["infer", "--simulated", "-o", "adir"], "is a directory"),
    ("main-job-workdir-file", ["infer", "--simulated", "--workdir", "afile"], "is a file, not a folder"),
    ("out-empty-path", ["convert", "fig.json", "-o", ""], "empty path"),
    # ---- stale state: a state file of another run is refused, never mixed
    ("cegis-stale-state", CEGIS + ["--state", "cegis-stale.json"], "belongs to another run"),
    ("cegis-state-of-other-kind", CEGIS + ["--state", "explain-stale.json"], "not a cegis one"),
    ("cegis-state-binary", CEGIS + ["--state", "binary.json"], "cannot read the cegis state file"),
    ("explain-stale-state", EXPLAIN + ["--state", "explain-stale.json"], "belongs to another run"),
    ("pmevo-stale-checkpoint", PMEVO + ["--checkpoint", "ckpt"], "belongs to another run"),
    # ---- argparse's own errors
    ("unknown-command", ["frobnicate"], "invalid choice: 'frobnicate'"),
    ("unknown-flag", THR + ["-e", "add:1", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    ("missing-required", ["infer", "cegis", "--oracle", SIM], "required: --ports"),
    ("bad-choice", ["convert", "fig.json", "--to", "yaml", "-o", "x.json"], "invalid choice: 'yaml'"),
    ("not-an-int", CEGIS + ["--max-count", "two"], "--max-count"),
    # ---- issue 38: two paths that are one file, lists that name nothing, flags that contradict
    ("cegis-state-is-out", CEGIS + ["-o", "same.json", "--state", "same.json"],
     "-o and --state name the same file (same.json)"),
    ("cegis-state-is-out-spelled-apart", CEGIS + ["-o", "out.json", "--state", "./sdir/../out.json"],
     "-o and --state name the same file"),
    ("cegis-out-is-the-oracle-file", CEGIS + ["-o", "fig.json"], "--oracle and -o name the same file"),
    ("cegis-state-is-the-recording", ["infer", "cegis", "--oracle", "recorded:exps.json", "--ports", "3",
                                      "--state", "exps.json"], "--oracle and --state name the same file"),
    ("explain-state-is-out", EXPLAIN + ["-o", "same.json", "--state", "same.json"], "-o and --state name the same"),
    ("explain-out-is-the-scheme-list", EXPLAIN + ["--schemes", "strategy.txt", "-o", "strategy.txt"],
     "--schemes and -o name the same file"),
    ("pmevo-out-in-the-checkpoint", PMEVO + ["--checkpoint", "newck", "-o", "newck/state.json"],
     "-o and --checkpoint name the same file"),
    ("main-job-schemes-unknown-simulated", ["infer", "--simulated", "--schemes", "nosuch,zzz"],
     "--schemes names schemes of this CPU"),
    ("main-job-schemes-empty", ["infer", "--simulated", "--schemes", ""], "--schemes '' names no scheme"),
    # (--simulated everywhere: should the refusal ever go, the case must not measure this CPU)
    ("main-job-schemes-commas", ["infer", "--simulated", "--schemes", " , ,"], "names no scheme"),
    ("main-job-all-and-profile", ["infer", "--simulated", "--all", "--profile", "smoke"],
     "--all and --profile cannot be combined"),
    ("main-job-schemes-and-profile", ["infer", "--simulated", "--schemes", "add_r64_r64", "--profile", "quick"],
     "--schemes and --profile cannot be combined"),
    ("main-job-report-is-out", ["infer", "--simulated", "-o", "r.html", "--report", "r.html"],
     "-o and --report name the same file"),
    ("anica-failed-run-leaves-no-folder", ["anica", "discover", "-o", "newcamp/sub", "-a", "nosuch:x"],
     "nosuch:x"),
    ("generalize-concrete-not-json", ["anica", "generalize", "--concrete", "{oops"], "malformed JSON"),
    ("generalize-concrete-wrong-shape", ["anica", "generalize", "--concrete", '{"forms": [], "values": []}'],
     "not a concrete block"),
    ("generalize-concrete-unknown-form", ["anica", "generalize", "--concrete",
                                          '{"forms": ["nosuch_r64"], "values": [["rax"]]}'], "'nosuch_r64'"),
    ("generalize-concrete-missing-file", ["anica", "generalize", "--concrete", "nosuch.json"], "cannot read"),
    ("long-name-is-capped", THR + ["-e", "x" * 100_000 + ":1"], "…[99,9"),
    ("long-choice-is-capped", ["convert", "fig.json", "--to", "y" * 10_000, "-o", "x.json"], "…["),
]


def check_one_error_line(code: int, out: str, err: str, expected: str) -> None:
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert len(lines[0]) <= 2200, f"{len(lines[0])} characters"   # what a message quotes is capped
    assert lines[0].startswith("pmsolve: error: "), err
    assert expected in lines[0], (expected, err)
    assert code == 2, (code, err)
    assert out == "", out


@pytest.mark.parametrize("argv, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gives_one_line_exit_2_and_touches_nothing(work, capsys, argv, expected):
    before = snapshot(work)
    code = main(argv)
    out, err = capsys.readouterr()
    check_one_error_line(code, out, err, expected)
    assert snapshot(work) == before


def test_case_ids_are_unique():
    ids = [c[0] for c in CASES]
    assert len(ids) == len(set(ids))


# --------------------------------------------------------------------------- the console script

@pytest.mark.parametrize("argv, expected", [
    (["frobnicate"], "invalid choice"),
    (["throughput", "-m", "binary.json", "-e", "add:1"], "not UTF-8"),
    (["throughput", "-m", "fig.json", "-e", "add:1", "--r-max", "nan"], "--r-max"),
    (["convert", "fig.json", "-o", "adir"], "is a directory"),
    (["check-strategy", "--strategy", "sdir", "--ports", "2"], "is a directory"),
], ids=["argparse", "binary", "nan", "out-dir", "strategy-dir"])
def test_console_script_gives_one_line(work, argv, expected):
    before = snapshot(work)
    p = subprocess.run([sys.executable, "-m", "pmsolve.cli", *argv], capture_output=True, text=True, cwd=work,
                       timeout=120)
    check_one_error_line(p.returncode, p.stdout, p.stderr, expected)
    assert snapshot(work) == before


# --------------------------------------------------------------------------- good input still works

def test_missing_output_folders_are_created_by_every_command(work, capsys):
    """One rule for every command: missing parent directories of an output are created."""
    for argv, made in ((["convert", "fig.json", "-o", "new/a/m.json"], "new/a/m.json"),
                       (["demo", "-o", "new/b/demo.json"], "new/b/demo.json"),
                       (["encode", "-m", "fig.json", "-e", "add:1", "-o", "new/c/e.smt2"], "new/c/e.smt2"),
                       (["encode", "--export", "new/d/ex"], "new/d/ex"),
                       (["evaluate", "-m", "fig.json", "--measurements", "exps.json", "--heatmap", "new/e/h.png"],
                        "new/e/h.png"),
                       (CEGIS + ["-o", "new/f/m.json"], "new/f/m.json.cegis-state.json"),
                       (["predict", "-p", "mapping:fig.json", "--cache", "new/g/c.sqlite", "addq %rax, %rbx"],
                        "new/g/c.sqlite"),
                       (PMEVO + ["--quiet", "--checkpoint", "new/h/ck", "-o", "new/i/p.json"], "new/h/ck/state.json"),
                       (PMEVO + ["--quiet", "-o", "new/i/p.json"], "new/i/p.json")):
        assert main(argv) == 0, (argv, capsys.readouterr().err)
        assert (work / made).exists(), made
    capsys.readouterr()


def test_names_with_commas_resolve_against_the_mapping(work, capsys):
    name = "add RW:GPR:16, word ptr R:MEM(16)"
    save_mapping(PortMapping.two_level(["0", "1"], {name: ["0", "1"], "mul": ["0"]}), work / "c.json")
    for text in (f"{name}:2,mul:1", f"{name}:2;mul:1", f"mul:1,{name}:2"):
        assert main(["throughput", "-m", "c.json", "-e", text, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data[0]["experiment"] == {name: 2, "mul": 1} and data[0]["inverse_throughput"] == "3/2"


def test_throughput_auto_backend_is_named(work, capsys):
    assert main(THR + ["-e", "add:2,mul:1", "--backend", "auto", "--json"]) == 0
    out, err = capsys.readouterr()
    used = json.loads(out)[0]["checked_by_backend"]
    assert used and used != "auto" and f"checked by backend {used} (asked: auto)" in err


def test_json_output_is_strict(work, capsys):
    """--json never writes NaN/Infinity: strict parsers must read it."""
    from pmsolve.cli.output import emit_json

    emit_json({"a": float("nan"), "b": [float("inf"), 1.5], "c": (float("-inf"),)})
    out = capsys.readouterr().out
    assert json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in --json output")) == \
        {"a": None, "b": [None, 1.5], "c": [None]}


def test_library_warnings_become_one_note_line(work, capsys):
    """The explainable reader warns about schemes without port usage: one note, no source line."""
    doc = {"ports": ["0"], "data": {"a": {"portusage": [[["0"], 1]]}, "b": {"portusage": []}}}
    (work / "expl.json").write_text(json.dumps(doc))
    assert main(["convert", "expl.json", "-o", "conv.json"]) == 0
    err = capsys.readouterr().err
    assert err == "pmsolve: note: 1 schemes without port usage left out of the mapping\n"


# --------------------------------------------------------------------------- fuzz of the readers

def _bytes_or_json():
    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    doc = st.recursive(scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c,
                                                                                        max_size=4), max_leaves=12)
    keys = st.sampled_from(["format", "version", "ports", "instructions", "kind", "arch", "assignment", "data",
                            "portusage", "experiments", "counts", "cycles", "exps", "iseq", "result", "others"])
    tags = st.sampled_from([("format", "pmsolve.mapping"), ("format", "pmsolve.experiments"), ("kind", "Mapping2"),
                            ("kind", "Mapping3"), ("kind", "ExperimentList"), ("version", 1)])
    shaped = st.builds(lambda tag, rest: {**rest, tag[0]: tag[1]}, tags, st.dictionaries(keys, doc, max_size=5))
    as_text = (doc | shaped).map(lambda d: json.dumps(d))
    return st.binary(max_size=64) | as_text.map(str.encode) | st.text(max_size=40).map(str.encode)


def _readers(path: Path):
    yield load_mapping
    yield load_experiments
    yield anica_config.load
    yield read_experiment_file


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_bytes_or_json(), suffix=st.sampled_from([".json", ".toml", ".txt"]))
def test_file_readers_load_or_raise_the_user_error(tmp_path, data, suffix):
    path = tmp_path / f"input{suffix}"
    path.write_bytes(data)
    for reader in _readers(path):
        try:
            reader(str(path))
        except PmsolveError:
            pass
