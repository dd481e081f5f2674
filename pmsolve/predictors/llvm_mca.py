"""llvm-mca as a predictor: many blocks per process call, one ``LLVM-MCA-BEGIN/END`` region each.

What the number means: llvm-mca simulates the region's instructions repeated ``iterations``
times as one straight-line stream (the block as a loop body, without the loop's own branch)
and reports ``TotalCycles``; ``TotalCycles / Iterations`` is the cycles per iteration, which
approaches the steady-state inverse throughput as the fill and drain of the pipeline are
amortised (default 100 iterations, as AnICA used). Register dependencies are tracked across
iterations, so a value a block reads before writing it is a loop-carried dependency and the
prediction becomes the chain's latency where that dominates. Memory is not: by default
(``-noalias=true``) llvm-mca assumes loads never alias earlier stores, so dependencies through
memory (``add %rax, 8(%r14)`` twice) are ignored (dissertation sec. 8.3.1); ``noalias=false``
(spec option) makes every load depend on every earlier store instead.

Failure handling: llvm-mca 14 reports an unparsable line as ``<stdin>:LINE:COL: error`` and
drops that region while still answering the others (exit code 0), so line errors are mapped
back to their blocks. An instruction without scheduling information fails the whole call but
is named (``note: instruction: ...``): the blocks holding it get the error and the rest are
asked again. A crash, a hang or an unnamed failure also fails the whole call: then the batch
is split in halves until the offending blocks stand alone (bisection), and each gets its
error; a hang is bounded by a subprocess timeout that grows with the batch.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from pmsolve.predictors.block import Block
from pmsolve.predictors.base import ModelChoice, Prediction, bisect_failures
from pmsolve.errors import ValidationError
from pmsolve.harness.cpu import Microarchitecture

_LINE_ERROR = re.compile(r"^<stdin>:(\d+):\d+: error: (.*)$", re.M)


@dataclass(frozen=True)
class LlvmMca:
    """One installed llvm-mca: its path, LLVM major version and the ``-mcpu`` values it knows."""

    path: str
    version: int
    cpus: frozenset[str]


def _version(path: str) -> int | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"LLVM version (\d+)", out)
    return int(m.group(1)) if m else None


def _cpus(path: str) -> frozenset[str]:
    try:
        p = subprocess.run([path, "-mcpu=help", "-mtriple=x86_64-unknown-linux-gnu"], input="",
                           capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    text = p.stdout + p.stderr
    head, _, _ = text.partition("Available features")
    return frozenset(m.group(1) for m in re.finditer(r"^\s+([a-z0-9][a-z0-9_.-]*)\s+- Select", head, re.M))


@lru_cache(maxsize=1)
def installations() -> tuple[LlvmMca, ...]:
    """Every llvm-mca on PATH (``llvm-mca``, ``llvm-mca-NN``) and in ``/usr/lib/llvm-NN/bin``,
    newest LLVM first; one per version."""
    paths: list[str] = []
    for d in os.environ.get("PATH", "").split(os.pathsep) + sorted(glob.glob("/usr/lib/llvm-*/bin")):
        for f in sorted(glob.glob(os.path.join(d, "llvm-mca*"))):
            if re.fullmatch(r"llvm-mca(-\d+)?", os.path.basename(f)) and os.access(f, os.X_OK):
                paths.append(os.path.realpath(f))
    found: dict[int, LlvmMca] = {}
    for path in dict.fromkeys(paths):
        v = _version(path)
        if v is not None and v not in found:
            found[v] = LlvmMca(path, v, _cpus(path))
    return tuple(sorted(found.values(), key=lambda x: -x.version))


def find_llvm_mca(version: int | None = None) -> LlvmMca | None:
    """The newest installed llvm-mca (or the one of LLVM ``version``), None when there is none."""
    for inst in installations():
        if version is None or inst.version == version:
            return inst
    return None


def model_for(uarch: Microarchitecture | None) -> ModelChoice:
    """The newest llvm-mca and the best ``-mcpu`` it knows for a microarchitecture (its own model,
    else the nearest older one, said as a fallback); ``model`` is None when none fits."""
    newest = find_llvm_mca()
    if newest is None:
        return ModelChoice("llvm-mca", None, None, False, "llvm-mca is not installed (Debian: apt-get install llvm-19)")
    if uarch is None:
        return ModelChoice("llvm-mca", None, newest.version, False,
                           "unknown microarchitecture: no llvm-mca model is known to match this CPU")
    for rank, cpu in enumerate(uarch.llvm_mcpu):
        if cpu in newest.cpus:
            own = rank == 0 and uarch.own_llvm
            why = (f"{uarch.name}'s own model" if own else
                   f"nearest model to {uarch.name}" + (f": LLVM {newest.version} has no -mcpu={uarch.llvm_mcpu[0]}"
                                                     if rank else ""))
            return ModelChoice("llvm-mca", cpu, newest.version, own, why)
    return ModelChoice("llvm-mca", None, newest.version, False,
                       f"LLVM {newest.version}'s llvm-mca knows none of {', '.join(uarch.llvm_mcpu)}")


class LlvmMcaPredictor:
    """``llvm-mca:CPU`` — any ``-mcpu`` the newest installed llvm-mca knows (``znver5``, ``skylake``,
    ...); ``llvm-mca-14:CPU`` pins LLVM 14. The name carries the LLVM version, because two versions
    answer differently and caches must not mix them."""

    def __init__(self, mcpu: str, *, iterations: int = 100, noalias: bool = True, timeout: float = 60.0,
                 per_block_timeout: float = 0.05, version: int | None = None, batch: int = 2000):
        inst = find_llvm_mca(version)
        if inst is None:
            raise ValidationError("llvm-mca is not installed (Debian: apt-get install llvm-19)" if version is None
                                  else f"llvm-mca of LLVM {version} is not installed (Debian: apt-get install "
                                       f"llvm-{version}); installed: "
                                       f"{', '.join(str(i.version) for i in installations()) or 'none'}")
        if iterations < 1:
            raise ValidationError(f"llvm-mca: iterations must be positive, got {iterations}")
        self.exe = inst.path
        self.version = inst.version
        self.mcpu = mcpu
        self.iterations = iterations
        self.noalias = noalias
        self.timeout = timeout
        self.per_block_timeout = per_block_timeout
        self.batch = max(1, batch)
        self.calls = 0
        if inst.cpus and mcpu not in inst.cpus:
            raise ValidationError(f"LLVM {inst.version}'s llvm-mca does not know -mcpu={mcpu} "
                                  f"(list them with: {self.exe} -mcpu=help -mtriple=x86_64 </dev/null)")
        self._check_cpu()

    @property
    def name(self) -> str:
        extra = "" if self.iterations == 100 else f"?iterations={self.iterations}"
        if not self.noalias:
            extra += ("&" if extra else "?") + "noalias=false"
        return f"llvm-mca-{self.version}:{self.mcpu}{extra}"

    def _args(self) -> list[str]:
        return [self.exe, f"-mcpu={self.mcpu}", f"-iterations={self.iterations}", f"-noalias={str(self.noalias).lower()}",
                "-json", "-timeline=false", "-resource-pressure=false", "-instruction-info=false"]

    def _check_cpu(self) -> None:
        """llvm-mca only warns about an unknown CPU and then uses a generic model: refuse it."""
        p = subprocess.run(self._args(), input="nop\n", capture_output=True, text=True, timeout=self.timeout)
        if "is not a recognized processor" in p.stderr:
            raise ValidationError(f"llvm-mca does not know -mcpu={self.mcpu} "
                                  f"(list them with: {self.exe} -mcpu=help -mtriple=x86_64 </dev/null)")

    def predict(self, blocks: Sequence[Block]) -> list[Prediction]:
        return bisect_failures(blocks, self._call_excluding, self.batch)

    def _call_excluding(self, blocks: Sequence[Block]) -> tuple[list[Prediction], str | None]:
        """A call; when it fails on an instruction without scheduling information that llvm-mca
        names (``note: instruction: ...``), the blocks holding it get the error and the rest are
        asked again at once, so bisection is left for failures that name nothing."""
        preds, failure = self._call(blocks)
        if failure is None or _NOTE not in failure:
            return preds, failure
        culprit = _normal(failure.split(_NOTE, 1)[1].split(" | ")[0])
        bad = {k for k, b in enumerate(blocks) if any(_normal(line) == culprit for line in b.lines)}
        if not bad or len(bad) == len(blocks):
            return ([Prediction(None, failure)] * len(blocks), None) if bad else (preds, failure)
        rest, rest_failure = self._call_excluding([b for k, b in enumerate(blocks) if k not in bad])
        if rest_failure is not None:
            return [], rest_failure
        it = iter(rest)
        return [Prediction(None, failure) if k in bad else next(it) for k in range(len(blocks))], None

    def _call(self, blocks: Sequence[Block]) -> tuple[list[Prediction], str | None]:
        """Predictions for one llvm-mca call, or a failure of the call as a whole."""
        src: list[str] = []
        spans: list[tuple[int, int]] = []       # 1-based line range of each block's instructions
        for k, b in enumerate(blocks):
            src.append(f"# LLVM-MCA-BEGIN b{k}")
            first = len(src) + 1
            src.extend(line for insn in b.insns for line in insn.asm.splitlines() or [""])
            spans.append((first, len(src)))
            src.append("# LLVM-MCA-END")
        self.calls += 1
        try:
            p = subprocess.run(self._args(), input="\n".join(src) + "\n", capture_output=True, text=True,
                               timeout=self.timeout + self.per_block_timeout * len(blocks),
                               start_new_session=True)  # Ctrl-C must not make a "crash" answer
        except subprocess.TimeoutExpired:
            return [], f"timeout: llvm-mca took longer than {self.timeout + self.per_block_timeout * len(blocks):.0f} s"
        except OSError as exc:
            return [], f"crash: cannot run llvm-mca: {exc}"
        line_errors: dict[int, str] = {}
        for m in _LINE_ERROR.finditer(p.stderr):
            line = int(m.group(1))
            for k, (a, z) in enumerate(spans):
                if a <= line <= z:
                    line_errors.setdefault(k, f"unsupported: llvm-mca: {m.group(2)} "
                                              f"({src[line - 1].strip()!r})")
        if p.returncode != 0 or not p.stdout.strip():
            if line_errors and len(line_errors) == len(blocks):
                return [Prediction(None, line_errors[k]) for k in range(len(blocks))], None
            if p.returncode < 0:
                return [], f"crash: llvm-mca died with signal {-p.returncode}: {_tail(p.stderr)}"
            return [], f"unsupported: llvm-mca: {_tail(p.stderr) or f'exit code {p.returncode}'}"
        try:
            regions = {r["Name"]: r["SummaryView"] for r in json.loads(p.stdout)["CodeRegions"]}
        except (ValueError, KeyError, TypeError) as exc:
            return [], f"garbage: llvm-mca output is not the expected JSON ({exc})"
        preds = []
        for k in range(len(blocks)):
            if k in line_errors:
                preds.append(Prediction(None, line_errors[k]))
                continue
            view = regions.get(f"b{k}")
            try:
                cycles = float(view["TotalCycles"]) / float(view["Iterations"])
            except (TypeError, KeyError, ValueError, ZeroDivisionError):
                if view is None and p.stderr.strip():
                    return [], f"unsupported: llvm-mca: {_tail(p.stderr)}"
                preds.append(Prediction(None, f"garbage: llvm-mca gave no usable summary for the block ({view!r:.100})"))
                continue
            preds.append(Prediction(cycles) if cycles > 0 else Prediction(None, f"garbage: llvm-mca says {cycles} cycles"))
        return preds, None


_NOTE = "note: instruction:"


def _normal(asm: str) -> str:
    """Instruction text without layout differences (llvm-mca prints ``op\tA, B``)."""
    return re.sub(r"\s*,\s*", ",", " ".join(asm.split("#", 1)[0].split())).lower()


def _tail(text: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip() and not ln.strip().startswith("^")]
    return " | ".join(lines[:4])[:limit]



def block_details(mcpu: str, blocks: Sequence[Block], *, version: int | None = None,
                  timeout: float = 120.0) -> list[dict | None]:
    """What llvm-mca's model says about each block, per iteration, all blocks in one call (None for
    a block it did not answer): ``cycles``, its ``uops``, the model's ``dispatch_width`` and the
    ``resources`` it uses with their cycles (the resource-pressure view: ``{"Zn3ALU1": 1.0}``; a
    sub-unit's index after the dot, ``Zn3FP45.0``). ``uops / dispatch_width`` is the block's
    dispatch limit in llvm-mca."""
    inst = find_llvm_mca(version)
    if inst is None or not blocks:
        return [None] * len(blocks)
    src: list[str] = []
    for k, b in enumerate(blocks):
        src += [f"# LLVM-MCA-BEGIN b{k}", *b.lines, "# LLVM-MCA-END"]
    try:
        p = subprocess.run([inst.path, f"-mcpu={mcpu}", "-iterations=100", "-json", "-timeline=false",
                            "-instruction-info=false"], input="\n".join(src) + "\n", capture_output=True,
                           text=True, timeout=timeout)
        doc = json.loads(p.stdout)
        names = [re.sub(r"\.([\x00-\x1f])", lambda m: f".{ord(m.group(1))}", n)
                 for n in doc["TargetInfo"]["Resources"]]
        regions = {r["Name"]: r for r in doc["CodeRegions"]}
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError):
        return [None] * len(blocks)
    out: list[dict | None] = []
    for k, b in enumerate(blocks):
        r = regions.get(f"b{k}")
        try:
            view = r["SummaryView"]
            n = float(view["Iterations"])
            use: dict[str, float] = {}
            for x in r.get("ResourcePressureView", {}).get("ResourcePressureInfo", []):
                if x["InstructionIndex"] < len(b):      # the last index is llvm-mca's total row
                    name = names[x["ResourceIndex"]]
                    use[name] = use.get(name, 0.0) + float(x["ResourceUsage"])
            out.append({"cycles": float(view["TotalCycles"]) / n, "uops": float(view["TotaluOps"]) / n,
                        "dispatch_width": int(view["DispatchWidth"]),
                        "resources": {m: v for m, v in sorted(use.items()) if v > 0}})
        except (TypeError, KeyError, ValueError, ZeroDivisionError, IndexError):
            out.append(None)
    return out
