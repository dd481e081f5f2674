"""The README's examples run as written (issue 18, item 8), so the README cannot drift from the code.

Every fenced ``sh`` and ``python`` block of README.md runs, in the order of the README, in one
scratch folder: shell blocks with ``bash -e`` (``pmsolve`` from this interpreter's environment),
Python blocks in one shared namespace (later blocks use the names earlier ones define). A block
whose preceding line is ``<!-- slow … -->`` or ``<!-- hardware … -->`` is skipped;
``<!-- needs: ../shared/reference -->`` runs where that folder exists.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
REFERENCE = ROOT.parent / "shared" / "reference"
MARKER = re.compile(r"^<!--\s*(slow|hardware|needs)\b[:\s]*(.*?)\s*-->$")
FENCE = re.compile(r"^```(\w+)\s*$")


@dataclass(frozen=True)
class Example:
    line: int  # of the opening fence
    lang: str
    code: str
    marker: str | None  # slow, hardware, needs
    detail: str

    @property
    def id(self) -> str:
        return f"README.md:{self.line}:{self.lang}"


def examples() -> list[Example]:
    """The README's fenced sh/python blocks with the marker on the line before each."""
    lines = README.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = lines.index("```", i + 1)
        before = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        mark = MARKER.match(before)
        if m.group(1) in ("sh", "python"):
            out.append(Example(i + 1, m.group(1), "\n".join(lines[i + 1:end]),
                               mark.group(1) if mark else None, mark.group(2) if mark else ""))
        i = end + 1
    return out


EXAMPLES = examples()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The folder every example runs in, with ``../shared/reference`` beside it where it exists,
    and the namespace the Python examples share."""
    root = tmp_path_factory.mktemp("readme")
    work = root / "work"
    work.mkdir()
    if REFERENCE.exists():
        (root / "shared").mkdir()
        (root / "shared" / "reference").symlink_to(REFERENCE)
    return work, {"__name__": "readme"}


def test_the_readme_has_quick_examples_of_both_kinds():
    quick = [e for e in EXAMPLES if e.marker not in ("slow", "hardware")]
    assert {e.lang for e in quick} == {"sh", "python"} and len(quick) >= 8


@pytest.mark.parametrize("ex", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_readme_example_runs(ex: Example, scratch, monkeypatch):
    work, namespace = scratch
    if ex.marker in ("slow", "hardware"):
        pytest.skip(f"marked {ex.marker} in the README: {ex.detail}")
    if ex.marker == "needs" and "../shared/reference" in ex.detail and not REFERENCE.exists():
        pytest.skip("../shared/reference not present")
    if ex.lang == "sh":
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                   XDG_CACHE_HOME=str(work / ".cache"), MPLBACKEND="Agg")
        p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", ex.code], cwd=work, env=env,
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"{ex.id} failed ({p.returncode}):\n{p.stderr[-3000:]}"
        assert "Traceback" not in p.stderr, p.stderr[-3000:]
    else:
        monkeypatch.chdir(work)
        exec(compile(ex.code, ex.id, "exec"), namespace)


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
