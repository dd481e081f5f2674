"""Solve through SMT-LIB2 text piped to an external solver binary (here: `z3 -in`).

This route checks that the exported text means what the IR means: the same `to_smtlib2` output
that is written to files is solved, and the values the solver prints are parsed back and
validated like any other model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from fractions import Fraction
from typing import Any

from pmsolve.backends import capabilities as C
from pmsolve.backends import result as R
from pmsolve.backends.base import Backend, RawResult, ReplayEngine
from pmsolve.backends.smtlib import label, symbol, to_smtlib2, unquote
from pmsolve.errors import SolverError
from pmsolve.symbolic.problem import Problem

COMMANDS = {"z3": ["z3", "-in", "-smt2"]}


def find_program(name: str) -> str | None:
    """The program next to this Python (a venv's bin/, where pip puts z3) or on PATH."""
    here = os.path.dirname(sys.executable)
    return shutil.which(name, path=os.pathsep.join([here, os.environ.get("PATH", "")]))


def parse_sexprs(text: str) -> list[Any]:
    """A minimal s-expression reader (lists, atoms, |quoted| symbols, "strings")."""
    out: list[Any] = []
    stack: list[list[Any]] = [out]
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == "(":
            stack.append([])
            i += 1
        elif ch == ")":
            if len(stack) == 1:
                raise SolverError(f"unbalanced ')' in solver output: {text[:200]!r}")
            done = stack.pop()
            stack[-1].append(done)
            i += 1
        elif ch == "|":
            j = text.index("|", i + 1)
            stack[-1].append(text[i:j + 1])
            i = j + 1
        elif ch == '"':
            j = i + 1
            while j < len(text) and not (text[j] == '"' and text[j - 1] != '\\'):
                j += 1
            stack[-1].append(text[i:j + 1])
            i = j + 1
        elif ch == ";":
            while i < len(text) and text[i] != "\n":
                i += 1
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in "()":
                j += 1
            stack[-1].append(text[i:j])
            i = j
    return out


def value_of(sx: Any) -> Any:
    """An SMT-LIB2 value (true, 3, 1.5, (- 2), (/ 1.0 3.0)) as bool / int / Fraction."""
    if isinstance(sx, str):
        if sx in ("true", "false"):
            return sx == "true"
        if "." in sx:
            return Fraction(sx)
        return int(sx)
    if sx and sx[0] == "-" and len(sx) == 2:
        return -value_of(sx[1])
    if sx and sx[0] == "/" and len(sx) == 3:
        return Fraction(value_of(sx[1])) / Fraction(value_of(sx[2]))
    raise SolverError(f"cannot read solver value {sx!r}")


class SmtlibProcessBackend(Backend):
    def __init__(self, solver: str) -> None:
        super().__init__()
        self.solver = solver
        self.name = f"smtlib:{solver}"
        self.summary = f"SMT-LIB2 text piped to the `{solver}` binary"
        self.command = COMMANDS[solver]
        self.capabilities = frozenset({C.SMT, C.SAT, C.UNSAT_CORE, C.OPTIMIZE, C.TIMEOUT})
        self.pip = ("z3-solver",) if solver == "z3" else ()

    def extra_check(self) -> str | None:
        program = find_program(self.command[0])
        if program is None:
            return f"the `{self.command[0]}` program is not on PATH"
        self.command = [program] + self.command[1:]
        return None

    def engine(self, timeout: float | None, options: dict[str, Any]) -> ReplayEngine:
        def once(problem: Problem, core: bool) -> RawResult:
            return self.run(problem, core, timeout)

        return ReplayEngine(once)

    def run(self, problem: Problem, core: bool, timeout: float | None) -> RawResult:
        script = to_smtlib2(problem, comments=False)
        if core:
            script += "(get-unsat-core)\n"
        cmd = list(self.command)
        if timeout is not None:
            cmd.append(f"-t:{max(1, int(timeout * 1000))}")
        try:
            proc = subprocess.run(cmd, input=script, capture_output=True, encoding="utf-8", start_new_session=True,
                                  timeout=None if timeout is None else timeout + 10)
        except subprocess.TimeoutExpired:
            return RawResult(R.UNKNOWN, reason="solver process timed out")
        replies = parse_sexprs(proc.stdout)
        first = next((k for k, r in enumerate(replies) if r in ("sat", "unsat", "unknown")), None)
        if first is None or first > 0:  # errors before check-sat mean the script is wrong
            raise SolverError(f"{self.name}: unexpected output {proc.stdout[:300]!r} "
                              f"{proc.stderr[:200]!r}")
        status = replies[0]
        if status == "sat":
            names = {unquote(symbol(v.name)): v.name for v in problem.variables()}
            model = {}
            for reply in replies[1:]:
                if isinstance(reply, list) and reply and isinstance(reply[0], list):
                    for pair in reply:
                        if len(pair) == 2 and unquote(pair[0]) in names:
                            model[names[unquote(pair[0])]] = value_of(pair[1])
            return RawResult(R.SAT, model)
        if status == "unsat":
            named: tuple[str, ...] = ()
            if core:
                names = {unquote(label(c.name)): c.name for c in problem.constraints if c.name}
                for reply in replies[1:]:
                    if isinstance(reply, list) and all(isinstance(x, str) for x in reply) \
                            and reply and reply[0] != "error":
                        named = tuple(names[unquote(x)] for x in reply if unquote(x) in names)
            return RawResult(R.UNSAT, core=named)
        return RawResult(R.UNKNOWN, reason="solver said unknown")
