"""Where the µop-count feature of Table 8.2 comes from for x86-64 schemes.

The catalogue has no µop counts (they are microarchitecture facts, and this CPU has no
performance counters). AnICA's domain only needs them to group schemes by complexity, so we
take them from llvm-mca's scheduling model (``NumMicroOpcodes`` of its instruction-info view,
for a chosen ``-mcpu``, default ``znver3``) once per scheme, in a few batched calls with one
code region per scheme, cached as JSON. Schemes llvm-mca rejects get no count (``None``), which
the log-sizes abstraction represents only by ⊤. Override with a JSON file ``{scheme: count}``
(e.g. µop counts of a port mapping).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable

from pmsolve.errors import FormatError
from pmsolve.fileio import atomic_write_text
from pmsolve.isa.render import render_representative
from pmsolve.isa.scheme import Scheme


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pmsolve" / "anica"


def _mca_regions(texts: list[str], mcpu: str, timeout: float = 120) -> list[int | None] | None:
    """µop counts per single-instruction region, or None if llvm-mca rejects the file."""
    body = []
    for k, t in enumerate(texts):
        body += [f"# LLVM-MCA-BEGIN r{k}", t, "# LLVM-MCA-END"]
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write("\n".join(body) + "\n")
        path = f.name
    try:
        proc = subprocess.run(["llvm-mca", f"-mcpu={mcpu}", "--json", "--iterations=1", path],
                              capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        return None
    try:
        regions = json.loads(proc.stdout)["CodeRegions"]
        out: list[int | None] = [None] * len(texts)
        for r in regions:
            k = int(str(r["Name"]).lstrip("r"))
            insns = r["InstructionInfoView"]["InstructionList"]
            out[k] = int(sum(i["NumMicroOpcodes"] for i in insns))
        return out
    except (KeyError, ValueError, TypeError, json.JSONDecodeError):
        return None


def llvm_mca_uops(schemes: Iterable[Scheme], mcpu: str = "znver3", chunk: int = 256) -> dict[str, int | None]:
    """µop counts by scheme name from llvm-mca (``None`` where it cannot tell)."""
    schemes = list(schemes)
    out: dict[str, int | None] = {s.name: None for s in schemes}
    if shutil.which("llvm-mca") is None:
        return out
    texts = [render_representative(s) for s in schemes]

    def run(lo: int) -> None:
        part = texts[lo:lo + chunk]
        res = _mca_regions(part, mcpu)
        if res is None and len(part) > 1:  # one bad instruction spoils the file: split
            for k in range(len(part)):
                one = _mca_regions([part[k]], mcpu)
                out[schemes[lo + k].name] = one[0] if one else None
            return
        for k, v in enumerate(res or []):
            out[schemes[lo + k].name] = v

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(run, range(0, len(texts), chunk)))
    return out


def uop_counts(schemes: Iterable[Scheme], source: str = "llvm-mca:znver3") -> dict[str, int | None]:
    """``llvm-mca:CPU`` (cached per CPU and scheme set), ``file:PATH`` (JSON) or ``none``."""
    schemes = list(schemes)
    if source == "none":
        return {s.name: None for s in schemes}
    if source.startswith("file:"):
        path = source[5:]
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise FormatError(f"µop count file {path}: {exc}") from None
        return {s.name: (int(data[s.name]) if isinstance(data.get(s.name), (int, float)) else None)
                for s in schemes}
    if not source.startswith("llvm-mca:"):
        raise FormatError(f"uops source {source!r}: expected 'llvm-mca:CPU', 'file:PATH' or 'none'")
    mcpu = source.split(":", 1)[1] or "znver3"
    cache = cache_dir() / f"uops-{mcpu}.json"
    known: dict[str, int | None] = {}
    if cache.exists():
        try:
            known = json.loads(cache.read_text())
        except (OSError, json.JSONDecodeError):
            known = {}
    missing = [s for s in schemes if s.name not in known]
    if missing:
        known.update(llvm_mca_uops(missing, mcpu))
        try:
            atomic_write_text(cache, json.dumps(known, sort_keys=True))
        except OSError:
            pass
    return {s.name: known.get(s.name) for s in schemes}
