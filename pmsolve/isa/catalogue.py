"""Loading the generated catalogue, the curated exclusion lists and the host's CPUID features.

``isa/x86_64.json`` is generated (``python -m pmsolve.isa.x86_gen``) and carries the rule-based
exclusions; ``isa/exclusions.txt`` is curated by hand (glob patterns on scheme names, each with a
comment saying why) and applied at load time, so editing it needs no regeneration. A scheme is
*offered* when neither excludes it and the host CPU has all its CPUID features.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import sys
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator

from pmsolve.errors import FormatError, UnknownNameError, ValidationError
from pmsolve.isa.scheme import Scheme

#: iced-x86 CPUID feature -> /proc/cpuinfo flag; features absent here map to their lower-case name
#: (AVX512F -> avx512f, AVX512_VNNI -> avx512_vnni, AVX512_BF16 -> avx512_bf16, ...: Linux's
#: arch/x86/include/asm/cpufeatures.h spells IFMA and VBMI without the underscore)
_CPUINFO_FLAG = {"SSE3": "pni", "LZCNT": "abm", "SHA": "sha_ni", "CMPXCHG16B": "cx16", "PREFETCHW": "3dnowprefetch",
                 "CLFSH": "clflush", "SSE4_1": "sse4_1", "SSE4_2": "sse4_2", "AVX_VNNI": "avx_vnni",
                 "D3NOW": "3dnow", "D3NOWEXT": "3dnowext", "AVX512_IFMA": "avx512ifma", "AVX512_VBMI": "avx512vbmi"}
#: features every x86-64 CPU has
_BASELINE = {"INTEL8086", "INTEL186", "INTEL286", "INTEL386", "INTEL486", "X64", "CPUID", "MULTIBYTENOP", "PAUSE",
             "FPU", "FPU287", "FPU387", "TSC", "CX8", "CMOV", "FXSR", "SSE", "SSE2", "MMX", "SYSCALL"}


def default_dir() -> Path:
    """The top-level ``isa/`` folder (``$PMSOLVE_ISA_DIR`` overrides it)."""
    env = os.environ.get("PMSOLVE_ISA_DIR")
    if env:
        return Path(env)
    return data_dir("isa")


def data_dir(name: str) -> Path:
    """A top-level data folder (``isa``, ``harness``): next to the package in a checkout or an
    editable install, else where a wheel installs it (``<prefix>/share/pmsolve/NAME``)."""
    here = Path(__file__).resolve().parents[2] / name
    if here.is_dir():
        return here
    installed = Path(sys.prefix) / "share" / "pmsolve" / name
    return installed if installed.is_dir() else here


def host_features(cpuinfo: str | None = None) -> frozenset[str] | None:
    """The host's CPU flags (``/proc/cpuinfo``), or None when they cannot be read (not Linux/x86)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return None
    m = re.search(r"^flags\s*:\s*(.*)$", cpuinfo, re.M)
    return frozenset(m.group(1).split()) if m else None


def feature_supported(feature: str, flags: frozenset[str]) -> bool:
    return feature in _BASELINE or _CPUINFO_FLAG.get(feature, feature.lower()) in flags


@dataclass(frozen=True)
class Exclusion:
    pattern: str
    reason: str
    section: str

    def matches(self, name: str) -> bool:
        return fnmatch.fnmatchcase(name, self.pattern)


def parse_exclusions(text: str, source: str = "exclusions") -> list[Exclusion]:
    """``[section]`` headers, then ``pattern  # reason`` lines; blank and comment lines skipped."""
    out: list[Exclusion] = []
    section = "curated"
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise FormatError(f"{source}:{n}: bad section header {line!r}")
            section = line[1:-1].strip()
            continue
        pattern, _, reason = line.partition("#")
        pattern = pattern.strip()
        if not pattern or " " in pattern:
            raise FormatError(f"{source}:{n}: expected 'PATTERN  # reason', got {raw!r}")
        out.append(Exclusion(pattern, reason.strip() or section, section))
    return out


class Catalogue:
    """Schemes by name, with exclusions applied and the host's support known."""

    def __init__(self, schemes: Iterable[Scheme], flags: frozenset[str] | None = None,
                 exclusions: Iterable[Exclusion] = ()):
        excl = list(exclusions)
        self._all: dict[str, Scheme] = {}
        for s in schemes:
            if s.excluded is None:
                hit = next((e for e in excl if e.matches(s.name)), None)
                if hit is not None:
                    s = replace(s, excluded=f"{hit.section}: {hit.reason}")
            self._all[s.name] = s
        self.flags = flags
        self.exclusions = excl

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[Scheme]:
        return iter(self._all.values())

    def __contains__(self, name: object) -> bool:
        return name in self._all

    def __getitem__(self, name: str) -> Scheme:
        try:
            return self._all[name]
        except KeyError:
            close = [n for n in self._all if n.startswith(name.split("_")[0] + "_")][:5]
            hint = f"; similar: {', '.join(close)}" if close else ""
            raise UnknownNameError(f"unknown instruction scheme {name!r}{hint}") from None

    def supported(self, s: Scheme) -> bool:
        """Does the host have the scheme's CPUID features? (True when the host is unknown.)"""
        return self.flags is None or all(feature_supported(f, self.flags) for f in s.features)

    def status(self, s: Scheme) -> str:
        if s.excluded:
            return f"excluded ({s.excluded})"
        if not self.supported(s):
            missing = [f for f in s.features if self.flags is not None and not feature_supported(f, self.flags)]
            return f"unsupported by host CPU (needs {', '.join(missing)})"
        return "offered"

    def offered(self) -> list[Scheme]:
        return [s for s in self._all.values() if s.excluded is None and self.supported(s)]

    def require(self, names: Iterable[str]) -> list[Scheme]:
        """The named schemes, refusing excluded or unsupported ones with the reason."""
        out = []
        for n in names:
            s = self[n]
            st = self.status(s)
            if st != "offered":
                raise ValidationError(f"scheme {n!r} cannot be measured: {st}")
            out.append(s)
        return out

    def filter(self, expr: str | None) -> list[Scheme]:
        """Select by a filter: comma-separated terms, each ``key=glob`` (keys: name, mnemonic,
        category, extension, memory, encoding, feature, status) or a bare glob on the name."""
        keys = {"name", "mnemonic", "category", "extension", "memory", "encoding", "feature", "status"}
        terms = []
        for term in (expr or "").split(","):
            term = term.strip()
            if not term:
                continue
            key, eq, val = term.partition("=")
            if not eq:
                key, val = "name", term
            key = key.strip()
            if key not in keys:
                raise ValidationError(f"bad ISA filter term {term!r}: key must be one of {', '.join(sorted(keys))}")
            pat = val.strip()
            if not any(c in pat for c in "*?[") and key in ("name", "mnemonic"):
                pat = f"*{pat}*"
            terms.append((key, pat))

        def ok(s: Scheme) -> bool:
            for key, pat in terms:
                if key == "feature":
                    vals = list(s.features)
                elif key == "status":
                    vals = [self.status(s).split(" ")[0]]
                else:
                    vals = [str(getattr(s, key))]
                if not any(fnmatch.fnmatchcase(v.lower(), pat.lower()) for v in vals):
                    return False
            return True

        return [s for s in self._all.values() if ok(s)]


@lru_cache(maxsize=4)
def _read(path: str) -> tuple[Scheme, ...]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FormatError(f"ISA catalogue {path} is missing; regenerate it with `python -m pmsolve.isa.x86_gen` "
                          "(needs pip install 'pmsolve[isa]')") from None
    except json.JSONDecodeError as exc:
        raise FormatError(f"ISA catalogue {path} is not valid JSON: {exc}") from None
    if doc.get("format") != "pmsolve.isa":
        raise FormatError(f"{path} is not a pmsolve ISA catalogue")
    return tuple(Scheme.from_json(d) for d in doc["schemes"])


def load_catalogue(path: str | Path | None = None, *, host: bool = True,
                   exclusions: str | Path | None = None) -> Catalogue:
    """The x86-64 catalogue with the curated exclusions; ``host=False`` ignores the host's CPUID."""
    base = default_dir()
    path = Path(path) if path else base / "x86_64.json"
    excl_path = Path(exclusions) if exclusions else base / "exclusions.txt"
    excl = parse_exclusions(excl_path.read_text(encoding="utf-8"), str(excl_path)) if excl_path.exists() else []
    return Catalogue(_read(str(path)), host_features() if host else None, excl)
