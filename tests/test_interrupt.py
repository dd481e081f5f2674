"""Ctrl-C at any moment: one line, exit 130, the work kept; and a resumed run answers like an
uninterrupted one, byte for byte (issue 38, items 2 and 3).

Each case runs ``pmsolve`` in a child process and interrupts it at a known point, never after a
guessed delay: while a given module is imported (start-up), after the k-th call of a method
(a measurement), inside the k-th finaliser of a z3 term (where Python drops a KeyboardInterrupt
as "Exception ignored"), or while a solver check runs (the check is made hard, the child says
when it is inside it, the parent then sends SIGINT). The parent checks the exit status and the
whole of stderr, then reruns the command in-process and compares the result with an
uninterrupted run's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pmsolve.cli import main
from pmsolve.formats import save_mapping
from pmsolve.model import PortMapping

ROOT = Path(__file__).resolve().parents[1]
RESUME = "pmsolve: interrupted; run the same command again to resume\n"
PLAIN = "pmsolve: interrupted\n"
MEASURE = "pmsolve.harness.simulated:SimulatedOracle.measure"

CHILD = r"""
import importlib, os, signal, sys
mode, spec, k, ready = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
calls = [0]

def interrupt():
    signal.raise_signal(signal.SIGINT)

def owner_of(spec):
    module, _, attr = spec.partition(":")
    owner, _, method = attr.partition(".")
    return getattr(importlib.import_module(module), owner), method

if mode == "import":            # start-up: while pmsolve imports module `spec`
    import importlib.abc
    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == spec:
                sys.meta_path.remove(self)
                interrupt()
            return None
    sys.meta_path.insert(0, Finder())
elif mode == "call":            # right after the k-th call of module:Class.method computed its answer
    owner, method = owner_of(spec)
    real = getattr(owner, method)
    def wrapped(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        calls[0] += 1
        if calls[0] == k:
            interrupt()
        return out
    setattr(owner, method, wrapped)
elif mode == "finaliser":       # inside the k-th finaliser of a z3 term
    import z3
    real = z3.AstRef.__del__
    def __del__(self):
        calls[0] += 1
        if calls[0] == k:
            interrupt()
        real(self)
    z3.AstRef.__del__ = __del__
elif mode == "check":           # the k-th solver check gets 12 pigeons in 11 holes; `ready` says it runs
    from pmsolve.symbolic import And, BoolVar, Not, Or
    from pmsolve.symbolic.problem import Constraint
    owner, method = owner_of(spec)
    real = getattr(owner, method)
    def wrapped(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] == k:
            x = [[BoolVar(f"php.{i}.{j}") for j in range(11)] for i in range(12)]
            for i in range(12):
                self.add(Constraint(Or(*x[i])))
            for j in range(11):
                for a in range(12):
                    for b in range(a + 1, 12):
                        self.add(Constraint(Not(And(x[a][j], x[b][j]))))
            open(ready, "w").close()
        return real(self, *args, **kwargs)
    setattr(owner, method, wrapped)
elif mode in ("enter", "hold"):  # `ready` says the k-th call of module:Class.method has begun
    import time                     # (hold: and waits before doing anything)
    owner, method = owner_of(spec)
    real = getattr(owner, method)
    def wrapped(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] == k:
            open(ready, "w").close()
            if mode == "hold":
                time.sleep(120)
        return real(self, *args, **kwargs)
    setattr(owner, method, wrapped)
elif mode == "solve":           # no command: backend `spec` on a hard problem, under the CLI's handling
    from pmsolve import interrupts
    from pmsolve.backends import open_session
    from pmsolve.symbolic import And, Bool, Int, Not, Or, Problem, Sum
    import random
    p = Problem()
    if spec == "sat":           # 12 pigeons, 11 holes
        x = [[Bool(f"x{i}.{j}") for j in range(11)] for i in range(12)]
        for i in range(12):
            p.add(Or(*x[i]))
        for j in range(11):
            for a in range(12):
                for b in range(a + 1, 12):
                    p.add(Not(And(x[a][j], x[b][j])))
    else:                       # a market split problem: hard for branch and bound
        rng = random.Random(3)
        x = [Int(f"x{i}", 0, 1) for i in range(45)]
        for _ in range(5):
            c = [rng.randint(0, 99) for _ in x]
            p.add(Sum(a * v for a, v in zip(c, x)).eq(sum(c) // 2))
    with interrupts.handling():
        session = open_session(spec, problem=p)
        session.add([c.formula for c in p.constraints])
        open(ready, "w").close()
        try:
            print(session.check().status)
        except KeyboardInterrupt:
            print("interrupted")
            sys.exit(130)
    sys.exit(0)
from pmsolve.cli import main
sys.exit(main(sys.argv[5:]))
"""


def _run_for(pid: int, seconds: float) -> None:
    """Wait until process ``pid`` has run ``seconds`` of CPU time more: on a busy machine (CI's
    hardware tests leave a loaded VM) a wall-clock pause ended before the child was inside its
    native call, SIGINT came while Python could still see it, and the run took another path."""
    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime + stime
    start, deadline = cpu(), time.monotonic() + 60
    while cpu() - start < seconds and time.monotonic() < deadline:
        time.sleep(0.02)


def run_interrupted(mode: str, spec: str, k: int, argv: list[str], tmp: Path, *,
                    group: bool = False) -> subprocess.CompletedProcess:
    """``pmsolve argv`` in a child, interrupted as ``mode`` says (see the module doc). ``group``:
    the child leads a process group and SIGINT goes to all of it, as a terminal's Ctrl-C does."""
    ready = tmp / "inside-the-check"
    ready.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, mode, spec, str(k), str(ready), *argv], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=group)
    try:
        if mode in ("check", "enter", "hold", "solve"):
            while not ready.exists():
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.05)
            if mode in ("check", "solve"):
                _run_for(proc.pid, 0.3)   # into the native call (it runs for minutes)
            else:
                time.sleep(0.3)
            (os.killpg if group else os.kill)(proc.pid, signal.SIGINT)
        elif group:
            raise ValueError("group applies to the modes that wait for `ready`")
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


TRUTH = PortMapping.two_level(["0", "1", "2"], {"a": ["0"], "b": ["0", "1"], "c": ["1", "2"], "d": ["2"],
                                                "e": ["0", "1", "2"]})


@pytest.fixture
def truth(tmp_path) -> str:
    save_mapping(TRUTH, tmp_path / "t.json")
    return f"simulated:{tmp_path / 't.json'}"


def _cegis(truth: str, out: Path, *extra: str) -> list[str]:
    return ["infer", "cegis", "--oracle", truth, "--ports", "3", "--quiet", *extra, "-o", str(out)]


def _uninterrupted(argv: list[str], capsys) -> None:
    assert main(argv) == 0
    capsys.readouterr()


# --------------------------------------------------------------------------- moments

# z3's moments need z3 asked for: CEGIS's default (the clauses encoding) runs on the SAT backend
@pytest.mark.parametrize("mode, spec, k, expected, backend", [
    ("import", "pmsolve.cli.infer", 0, PLAIN, ()),                 # start-up: a traceback before
    ("call", MEASURE, 2, RESUME, ()),                               # after the first counterexample's measurement
    ("finaliser", "", 300, RESUME, ("--backend", "z3")),            # swallowed before: the run went on, exit 0
    ("check", "pmsolve.backends.z3_backend:Z3Engine._check", 2, RESUME, ("--backend", "z3")),  # exit 2 before
], ids=["start-up", "measurement", "finaliser", "z3-check"])
def test_sigint_in_cegis_is_one_line_exit_130_and_resumes(tmp_path, capsys, truth, mode, spec, k, expected, backend):
    """Ctrl-C at each moment: exit 130 and exactly one line on stderr (nothing else: no
    traceback, no "Exception ignored"); the rerun finishes with the uninterrupted mapping."""
    whole, out = tmp_path / "whole.json", tmp_path / "out.json"
    _uninterrupted(_cegis(truth, whole, *backend), capsys)
    p = run_interrupted(mode, spec, k, _cegis(truth, out, *backend), tmp_path)
    assert (p.returncode, p.stderr, p.stdout) == (130, expected, "")
    assert not out.exists()
    _uninterrupted(_cegis(truth, out, *backend), capsys)
    assert out.read_bytes() == whole.read_bytes()


def test_sigint_in_a_cvc5_check_ends_the_process_at_once(tmp_path, capsys, truth):
    """cvc5 holds the interpreter and cannot be cancelled: SIGINT's default action ends the
    process during its check (status 130 by the signal) instead of after the check (minutes
    here); nothing is printed, and the rerun resumes to the uninterrupted mapping."""
    pytest.importorskip("cvc5")
    whole, out = tmp_path / "whole.json", tmp_path / "out.json"
    _uninterrupted(_cegis(truth, whole, "--backend", "cvc5"), capsys)
    p = run_interrupted("check", "pmsolve.backends.cvc5_backend:Cvc5Engine._check", 2,
                        _cegis(truth, out, "--backend", "cvc5"), tmp_path)
    assert (p.returncode, p.stderr, p.stdout) == (-signal.SIGINT, "", "")
    _uninterrupted(_cegis(truth, out, "--backend", "cvc5"), capsys)
    assert out.read_bytes() == whole.read_bytes()


@pytest.mark.parametrize("backend", ["sat", "highs"])
def test_sigint_in_a_threaded_solver_check_is_an_interrupt(tmp_path, backend):
    """python-sat and HiGHS release the interpreter but would run to their end (minutes here):
    they solve in a helper thread that Ctrl-C cancels, and the caller gets KeyboardInterrupt."""
    pytest.importorskip({"sat": "pysat", "highs": "highspy"}[backend])
    p = run_interrupted("solve", backend, 0, [], tmp_path)
    assert (p.returncode, p.stdout.splitlines()[-1:]) == (130, ["interrupted"]), p.stderr[-2000:]


@pytest.mark.parametrize("mode", ["hold", "enter"], ids=["workers-idle", "workers-busy"])
def test_ctrl_c_of_a_terminal_reaches_pool_workers_silently(tmp_path, truth, mode):
    """A terminal's Ctrl-C goes to the whole process group, pool workers included: they leave
    it to pmsolve (no "Process ForkProcess-2: Traceback" from an idle worker) and a busy pool
    is ended at once. The third fitness evaluation is where the signal lands."""
    argv = ["infer", "pmevo", "--oracle", truth, "--ports", "3", "--minutes", "0", "--generations", "50",
            "--population", "400", "--workers", "2", "--quiet", "--checkpoint", str(tmp_path / "ck")]
    p = run_interrupted(mode, "pmsolve.infer.pmevo.evolution:Evolution._evaluate", 3, argv, tmp_path, group=True)
    assert (p.returncode, p.stderr) == (130, RESUME), p.stderr[-2000:]


@pytest.mark.parametrize("command, k", [
    (["infer", "explain", "--ports", "3", "--quiet", "-o", "{out}"], 3),
    (["infer", "pmevo", "--ports", "3", "--minutes", "0", "--generations", "3", "--quiet",
      "--checkpoint", "{tmp}/ck", "-o", "{out}"], 2),
    (["infer", "cegis", "--ports", "3", "--quiet"], 2),     # no state file: nothing to resume
], ids=["explain", "pmevo", "cegis-without-state"])
def test_sigint_in_a_measurement_says_whether_a_rerun_resumes(tmp_path, truth, command, k):
    oracle = truth + ("?uops=1&r_max=4" if command[1] == "explain" else "")
    argv = [a.format(out=tmp_path / "out.json", tmp=tmp_path) for a in command] + ["--oracle", oracle]
    p = run_interrupted("call", MEASURE, k, argv, tmp_path)
    resumes = "-o" in argv or "--checkpoint" in argv
    assert (p.returncode, p.stderr, p.stdout) == (130, RESUME if resumes else PLAIN, "")


# --------------------------------------------------------------------------- item 3: the same answer

#: four ports behind a front end of 2 instructions per cycle: several mappings explain every
#: measurement, and which one CEGIS returns depends on its solver's history
HIDDEN = PortMapping.two_level(["0", "1", "2", "3"], {"i0": ["0", "1", "3"], "i1": ["0", "2", "3"],
                                                      "i2": ["0", "2", "3"], "i3": ["3"], "i4": ["2"],
                                                      "i5": ["0", "1", "2", "3"]})


@pytest.mark.parametrize("how", ["sigint", "sigkill"])
def test_a_resumed_cegis_run_writes_the_uninterrupted_mapping_byte_for_byte(tmp_path, capsys, how):
    """Interrupted in its check on unseen experiments (call 3: the mapping is known) and resumed.
    Before the fix the resumed run asserted the stored counterexample at once, its solver took
    another path and returned another of the mappings the front end hides."""
    import sigkill

    save_mapping(HIDDEN, tmp_path / "t.json")
    argv = ["infer", "cegis", "--oracle", f"simulated:{tmp_path / 't.json'}?r_max=2", "--ports", "4",
            "--r-max", "2", "--final-bound", "6", "--quiet", "-o"]
    whole, out = tmp_path / "whole.json", tmp_path / "out.json"
    _uninterrupted(argv + [str(whole)], capsys)
    if how == "sigkill":
        sigkill.run_killed(MEASURE, 3, tmp_path / "log.txt", argv + [str(out)])
    else:
        p = run_interrupted("call", MEASURE, 3, argv + [str(out)], tmp_path)
        assert (p.returncode, p.stderr) == (130, RESUME)
    assert not out.exists()
    state = json.loads((tmp_path / "out.json.cegis-state.json").read_text())
    assert state["data"]["witnesses"]                       # resumed mid-way, not from scratch
    _uninterrupted(argv + [str(out)], capsys)
    assert out.read_bytes() == whole.read_bytes()


@pytest.mark.parametrize("backend", ["z3", "pysmt:z3", "sat"])
def test_a_solvers_own_timeout_stays_a_timeout(backend):
    """Only Ctrl-C is an interrupt: a check cut short by ``timeout`` answers "unknown" and raises
    nothing, although z3 calls it "canceled" as it calls Ctrl-C (with named constraints, whose
    tracking literals are assumptions: as in CEGIS)."""
    from pmsolve.backends import open_session
    from pmsolve.backends.registry import get
    from pmsolve.symbolic import And, Bool, Not, Or

    if not get(backend).installed:
        pytest.skip(f"{backend} is not installed")
    x = [[Bool(f"x{i}.{j}") for j in range(11)] for i in range(12)]
    session = open_session(backend, timeout=0.2)
    for i in range(12):
        session.add(Or(*x[i]), name=f"pigeon{i}")
    for j in range(11):
        for a in range(12):
            for b in range(a + 1, 12):
                session.add(Not(And(x[a][j], x[b][j])))
    res = session.check()
    session.close()
    assert not res.feasible and not res.infeasible


def test_a_sigint_in_a_finaliser_is_raised_at_the_next_call_outside_it():
    """Not a moment later (a re-sent signal once let a 0.2 s run finish on a loaded machine and
    exit 130 after printing its whole result): the very next call after the finaliser raises,
    whatever the machine's load, and nothing is left pending once :func:`handling` ends."""
    from pmsolve import interrupts

    class Interrupts:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)

    steps: list[str] = []
    with interrupts.handling():
        with pytest.raises(KeyboardInterrupt):
            obj = Interrupts()
            del obj
            steps.append("went on")
        assert interrupts.seen()
    assert steps == [] and sys.getprofile() is None
    with interrupts.handling():   # one still waiting when the command settles is dropped
        obj = Interrupts()
        del obj
        assert interrupts.settle()
    time.sleep(0.1)
    assert sys.getprofile() is None
