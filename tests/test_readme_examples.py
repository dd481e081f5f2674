"""The README's examples run as written and print what the README says they print (issue 18,
item 8; issue 40), so the README cannot drift from the code.

Every fenced ``sh``, ``console`` and ``python`` block of README.md runs, in the order of the
README, in one scratch folder (the pages under ``docs/`` likewise, each in a folder of its own):

* ``sh`` blocks run with ``bash -e``; they claim nothing about their output;
* ``console`` blocks are ``$ command`` lines (a line ending in ``\\`` continues) each followed by
  the output it must print on standard output; ``...`` stands for any text (doctest's ELLIPSIS);
* ``python`` blocks are doctest sessions (``>>>``), run in one namespace shared by the file's
  blocks: every expression's value is compared with the line after it, so a claimed result is
  checked, and a value left unclaimed fails too.

A block whose preceding line is ``<!-- slow … -->`` or ``<!-- hardware … -->`` is skipped;
``<!-- needs: ../shared/reference -->`` runs where that folder exists. Relative links must
resolve to files of the repository.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "RESULTS.md"]
REFERENCE = ROOT.parent / "shared" / "reference"
MARKER = re.compile(r"^<!--\s*(slow|hardware|needs)\b[:\s]*(.*?)\s*-->$")
FENCE = re.compile(r"^```(\w+)\s*$")
RUNNABLE = ("sh", "console", "python")


@dataclass(frozen=True)
class Example:
    page: Path
    line: int  # of the opening fence
    lang: str
    code: str
    marker: str | None  # slow, hardware, needs
    detail: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}:{self.lang}"

    @property
    def skipped(self) -> bool:
        return self.marker in ("slow", "hardware")


def examples(page: Path) -> list[Example]:
    """The page's fenced sh/console/python blocks with the marker on the line before each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = lines.index("```", i + 1)
        before = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        mark = MARKER.match(before)
        if m.group(1) in RUNNABLE:
            out.append(Example(page, i + 1, m.group(1), "\n".join(lines[i + 1:end]),
                               mark.group(1) if mark else None, mark.group(2) if mark else ""))
        i = end + 1
    return out


EXAMPLES = [ex for page in PAGES for ex in examples(page)]


# --------------------------------------------------------------------------- checking claims

def console_steps(code: str) -> list[tuple[str, str]]:
    """(command, expected output) pairs of a console block."""
    steps: list[tuple[str, list[str]]] = []
    lines = code.splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        if not line.startswith("$ "):
            if not steps:
                raise ValueError(f"console block must start with '$ ': {line!r}")
            steps[-1][1].append(line)
            k += 1
            continue
        cmd = [line[2:]]
        while cmd[-1].endswith("\\") and k + 1 < len(lines):
            k += 1
            cmd.append(lines[k])
        steps.append(("\n".join(cmd), []))
        k += 1
    return [(cmd, "\n".join(out)) for cmd, out in steps]


def matches(expected: str, got: str) -> bool:
    """Whether `got` is the expected text, `...` standing for anything (trailing spaces ignored)."""
    norm = lambda text: "\n".join(line.rstrip() for line in text.strip("\n").splitlines()) + "\n"  # noqa: E731
    return doctest.OutputChecker().check_output(norm(expected), norm(got), doctest.ELLIPSIS)


def run_console(code: str, cwd: Path, env: dict[str, str]) -> list[str]:
    """Run a console block's commands in one shell, in order; the mismatches, described."""
    steps = console_steps(code)
    mark = "@@pmsolve-readme-step@@"
    script = "\n".join(f"echo {mark}\n{cmd}" for cmd, _ in steps)
    p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        return [f"exit {p.returncode}:\n{p.stderr[-3000:]}"]
    outputs = p.stdout.split(mark + "\n")[1:]
    return [f"$ {cmd}\n--- the README says:\n{want}\n--- it printed:\n{got}"
            for (cmd, want), got in zip(steps, outputs) if not matches(want, got)]


def run_doctest(code: str, namespace: dict, name: str) -> str:
    """Run a python block as a doctest in `namespace` (kept for the next block); the failure
    report, or '' when every claimed value matched."""
    test = doctest.DocTestParser().get_doctest(code, namespace, name, name, 0)
    if not test.examples:
        return f"{name}: a runnable python block must be a doctest session (>>>), so its claims are checked"
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test, out=report.append, clear_globs=False)
    namespace.update(test.globs)
    return "".join(report)


# --------------------------------------------------------------------------- the examples

@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """Per page: the folder its examples run in, with ``../shared/reference`` beside it where it
    exists, and the namespace its Python examples share."""
    folders: dict[Path, tuple[Path, dict]] = {}

    def for_page(page: Path) -> tuple[Path, dict]:
        if page not in folders:
            root = tmp_path_factory.mktemp("readme")
            work = root / "work"
            work.mkdir()
            if REFERENCE.exists():
                (root / "shared").mkdir()
                (root / "shared" / "reference").symlink_to(REFERENCE)
            folders[page] = (work, {"__name__": "readme"})
        return folders[page]
    return for_page


def test_the_readme_has_quick_examples_of_every_kind():
    quick = [e for e in EXAMPLES if e.page == README and not e.skipped]
    assert {e.lang for e in quick} == set(RUNNABLE) and len(quick) >= 10


@pytest.mark.parametrize("ex", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_example_runs_and_prints_what_it_claims(ex: Example, scratch, monkeypatch):
    work, namespace = scratch(ex.page)
    if ex.skipped:
        pytest.skip(f"marked {ex.marker} in {ex.page.name}: {ex.detail}")
    if ex.marker == "needs" and "../shared/reference" in ex.detail and not REFERENCE.exists():
        pytest.skip("../shared/reference not present")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               XDG_CACHE_HOME=str(work / ".cache"), MPLBACKEND="Agg")
    env.pop("PMSOLVE_BACKEND", None)
    if ex.lang == "sh":
        p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", ex.code], cwd=work, env=env,
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"{ex.id} failed ({p.returncode}):\n{p.stderr[-3000:]}"
        assert "Traceback" not in p.stderr, p.stderr[-3000:]
    elif ex.lang == "console":
        wrong = run_console(ex.code, work, env)
        assert not wrong, f"{ex.id}:\n" + "\n\n".join(wrong)
    else:
        monkeypatch.chdir(work)
        monkeypatch.delenv("PMSOLVE_BACKEND", raising=False)
        report = run_doctest(ex.code, namespace, ex.id)
        assert not report, report


# --------------------------------------------------------------------------- the checker itself

def test_a_wrong_claim_fails(tmp_path):
    """The check goes red when a claim is wrong: a value, a printed line, a command's output,
    and a python block whose values nobody claims."""
    assert "Expected:\n    Fraction(1, 2)\nGot:\n    Fraction(3, 2)" in run_doctest(
        ">>> from fractions import Fraction\n>>> Fraction(3, 2)\nFraction(1, 2)\n", {}, "t")
    assert "Got:\n    3" in run_doctest(">>> 1 + 2\n", {}, "t")  # a value nobody claimed
    assert run_doctest("x = 1\n", {}, "t").endswith("so its claims are checked")
    assert run_doctest(">>> print('ab')\na...\n", {}, "t") == ""
    env = dict(os.environ)
    assert run_console("$ echo 3/2\n1/2", tmp_path, env)
    assert run_console("$ false", tmp_path, env)
    assert not run_console("$ X=1\n$ echo $X; echo tail\n1\n...", tmp_path, env)
    assert console_steps("$ a \\\n  b\nout\n$ c") == [("a \\\n  b", "out"), ("c", "")]


def test_relative_links_resolve():
    """Every relative link and picture of the README and the pages points to a file."""
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_the_readme_is_a_guide_not_a_notebook():
    """Issue 40: the README had grown to 1,534 lines of dated runs; the history lives in
    benchmarks/RESULTS.md and docs/. Its headline figures are one table under one heading."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400
    section = text.split("\n## Headline figures\n", 1)[1].split("\n## ", 1)[0]
    assert section.count("\n| ") >= 3 and "|---" in section  # one table: header, rule, rows
    assert text.count("\n## Headline figures\n") == 1


# --------------------------------------------------------------------------- promises in the prose

def test_an_anica_budget_of_one_discovery_gives_at_most_one(tmp_path):
    """`discoveries = 1` stops at the first discovery, even when the interesting block would
    generalise in several orders (it produced 2 before)."""
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        import anica_helpers as H
    finally:
        sys.path.pop(0)
    from pmsolve.anica.campaign import Campaign
    from pmsolve.anica.config import Config

    cfg = Config(a="factory:anica_helpers:base", b="factory:anica_helpers:slow_bsf", uops="none", samples=12,
                 chunk=6, orders=4, batch=10, block_size=3, max_discoveries=1, max_seconds=120, seed=2, workers=1)
    # (seed 2: the first interesting block generalises into two discoveries in its four orders)
    camp = Campaign(cfg, tmp_path, H.base(), H.slow_bsf(), universe=H.make_universe(), progress=lambda m: None)
    try:
        state = camp.run()
    finally:
        camp.pair.close()
    assert len(state.discoveries) == 1 and len(state.final()) == 1
