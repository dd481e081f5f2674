"""Which CPU this is: vendor, family, model, stepping and features, named as a microarchitecture.

Everything the project knows about one microarchitecture lives in :data:`MICROARCHITECTURES`,
keyed by that name: the ``-mcpu`` values llvm-mca should use (best first), OSACA's models (best
first) and the table of published single-instruction throughputs shipped in
``pmsolve/data/singles/``. Nothing elsewhere may assume a particular CPU. A CPU outside the table
is ``unknown``: it gets no comparison model and no reference table rather than another CPU's.

>>> ident = host_cpu()                                             # doctest: +SKIP
>>> ident.describe()                                               # doctest: +SKIP
'AMD Zen 5 (family 0x1A model 0x02), 2 vCPUs'

The family/model ranges follow the vendors' CPUID documentation as the Linux kernel applies it
(``arch/x86/kernel/cpu/amd.c`` for the Zen generations, ``intel-family.h`` for Intel cores).
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pmsolve.errors import FormatError


@dataclass(frozen=True)
class Microarchitecture:
    """What pmsolve knows of one microarchitecture. ``llvm_mcpu``/``osaca``: models best first;
    the first is this microarchitecture's own model, later ones are nearest fallbacks unless
    ``own_*`` says that even the first is only the nearest one (e.g. Zen+ has no model of its own)."""

    key: str
    name: str
    llvm_mcpu: tuple[str, ...]
    osaca: tuple[str, ...] = ()
    own_llvm: bool = True
    own_osaca: bool = True
    singles: str | None = None          # file in pmsolve/data/singles/
    #: neighbouring read-only slots the copies of a load rotate over (allocation.READ_ROTATION): the
    #: layout under which this CPU's loads run at their published speeds and mixes of load widths
    #: stay steady (docs/memory-layout.md, "Load layouts per CPU")
    read_rotation: int = 8


MICROARCHITECTURES: dict[str, Microarchitecture] = {m.key: m for m in [
    Microarchitecture("zen", "AMD Zen", ("znver1",), ("ZEN1",), singles="zen.json"),
    Microarchitecture("zen+", "AMD Zen+", ("znver1",), ("ZEN1",), own_llvm=False, own_osaca=False,
                      singles="zen.json"),           # measured on Zen+: the same core as Zen
    Microarchitecture("zen2", "AMD Zen 2", ("znver2", "znver1"), ("ZEN2", "ZEN1")),
    Microarchitecture("zen3", "AMD Zen 3", ("znver3", "znver2"), ("ZEN3", "ZEN2"), singles="zen3.json"),
    # one address per load operand: at neighbouring addresses GPR loads beside 256-bit loads switch
    # between 3 and 2.4 loads a cycle (benchmarks/RESULTS.md §1.30)
    Microarchitecture("zen4", "AMD Zen 4", ("znver4", "znver3"), ("ZEN4", "ZEN3"), singles="zen4.json",
                      read_rotation=1),
    Microarchitecture("zen5", "AMD Zen 5", ("znver5", "znver4", "znver3"), ("ZEN4", "ZEN3"), own_osaca=False,
                      singles="zen5.json"),
    Microarchitecture("sandybridge", "Intel Sandy Bridge", ("sandybridge",), ("SNB",)),
    Microarchitecture("ivybridge", "Intel Ivy Bridge", ("ivybridge", "sandybridge"), ("IVB", "SNB")),
    Microarchitecture("haswell", "Intel Haswell", ("haswell",), ("HSW",)),
    Microarchitecture("broadwell", "Intel Broadwell", ("broadwell", "haswell"), ("BDW", "HSW")),
    Microarchitecture("skylake", "Intel Skylake (client)", ("skylake",), ("SKX", "BDW"), own_osaca=False),
    Microarchitecture("skylake-server", "Intel Skylake-SP / Cascade Lake", ("skylake-avx512",), ("SKX", "CSX")),
    Microarchitecture("icelake-client", "Intel Ice Lake (client)", ("icelake-client",), ("ICL", "ICX")),
    Microarchitecture("icelake-server", "Intel Ice Lake-SP", ("icelake-server",), ("ICX", "ICL"),
                      singles="icelake-server.json"),
    Microarchitecture("tigerlake", "Intel Tiger Lake", ("tigerlake", "icelake-client"), ("ICL",), own_osaca=False),
    Microarchitecture("rocketlake", "Intel Rocket Lake", ("rocketlake", "icelake-client"), ("ICL",),
                      own_osaca=False),
    Microarchitecture("alderlake", "Intel Alder Lake / Raptor Lake (P-core)", ("alderlake",), ("SPR",),
                      own_osaca=False),
    Microarchitecture("sapphirerapids", "Intel Sapphire Rapids / Emerald Rapids",
                      ("sapphirerapids", "icelake-server"), ("SPR", "ICX"), singles="sapphirerapids.json"),
    Microarchitecture("graniterapids", "Intel Granite Rapids", ("graniterapids", "sapphirerapids"), ("SPR",),
                      own_osaca=False),
]}

#: (vendor, family) -> [(first model, last model, microarchitecture key)]
_MODELS: dict[tuple[str, int], list[tuple[int, int, str]]] = {
    ("AuthenticAMD", 0x17): [(0x08, 0x08, "zen+"), (0x18, 0x18, "zen+"), (0x00, 0x2F, "zen"), (0x50, 0x5F, "zen"),
                             (0x30, 0x4F, "zen2"), (0x60, 0x7F, "zen2"), (0x90, 0x91, "zen2"), (0xA0, 0xAF, "zen2")],
    ("AuthenticAMD", 0x19): [(0x00, 0x0F, "zen3"), (0x20, 0x5F, "zen3"), (0x10, 0x1F, "zen4"), (0x60, 0xAF, "zen4")],
    ("AuthenticAMD", 0x1A): [(0x00, 0x2F, "zen5"), (0x40, 0x4F, "zen5"), (0x60, 0x7F, "zen5")],
    ("GenuineIntel", 6): [
        (0x2A, 0x2A, "sandybridge"), (0x2D, 0x2D, "sandybridge"), (0x3A, 0x3A, "ivybridge"), (0x3E, 0x3E, "ivybridge"),
        (0x3C, 0x3C, "haswell"), (0x3F, 0x3F, "haswell"), (0x45, 0x46, "haswell"),
        (0x3D, 0x3D, "broadwell"), (0x47, 0x47, "broadwell"), (0x4F, 0x4F, "broadwell"), (0x56, 0x56, "broadwell"),
        (0x4E, 0x4E, "skylake"), (0x5E, 0x5E, "skylake"), (0x8E, 0x8E, "skylake"), (0x9E, 0x9E, "skylake"),
        (0xA5, 0xA6, "skylake"), (0x55, 0x55, "skylake-server"),
        (0x7D, 0x7E, "icelake-client"), (0x6A, 0x6A, "icelake-server"), (0x6C, 0x6C, "icelake-server"),
        (0x8C, 0x8D, "tigerlake"), (0xA7, 0xA7, "rocketlake"),
        (0x97, 0x97, "alderlake"), (0x9A, 0x9A, "alderlake"), (0xB7, 0xB7, "alderlake"), (0xBA, 0xBA, "alderlake"),
        (0xBF, 0xBF, "alderlake"), (0x8F, 0x8F, "sapphirerapids"), (0xCF, 0xCF, "sapphirerapids"),
        (0xAD, 0xAE, "graniterapids"),
    ],
}


def microarchitecture_named_in(text: str) -> Microarchitecture | None:
    """The microarchitecture a text names the way :meth:`CpuIdentity.describe` does
    (``... AMD Zen 3 (family 0x19 model 0x01), 2 vCPUs ...``, e.g. an oracle's description)."""
    hits = [m for m in MICROARCHITECTURES.values() if f"{m.name} (family 0x" in text]
    return max(hits, key=lambda m: len(m.name)) if hits else None


def microarchitecture_of(vendor: str, family: int, model: int) -> Microarchitecture | None:
    for lo, hi, key in _MODELS.get((vendor, family), []):
        if lo <= model <= hi:
            return MICROARCHITECTURES[key]
    return None


@dataclass(frozen=True)
class CpuIdentity:
    """The CPU as CPUID reports it (through ``/proc/cpuinfo``), and its microarchitecture."""

    vendor: str                      # AuthenticAMD, GenuineIntel, ... ("" when unreadable)
    family: int | None
    model: int | None
    stepping: int | None
    model_name: str
    features: frozenset[str] = field(default_factory=frozenset, repr=False)
    cpus: int = 1
    arch: str = ""                   # platform.machine()

    @property
    def microarchitecture(self) -> Microarchitecture | None:
        if self.family is None or self.model is None:
            return None
        return microarchitecture_of(self.vendor, self.family, self.model)

    @property
    def uarch(self) -> str:
        """The microarchitecture's key (``zen5``), or ``unknown``."""
        m = self.microarchitecture
        return m.key if m else "unknown"

    def describe(self) -> str:
        """``AMD Zen 5 (family 0x1A model 0x02), 2 vCPUs`` — or the model name when unknown."""
        m = self.microarchitecture
        if self.family is None:
            head = f"unknown CPU ({self.model_name or self.arch or 'no CPUID information'})"
        else:
            fm = f"family 0x{self.family:02X} model 0x{self.model:02X}"
            head = f"{m.name} ({fm})" if m else f"unknown microarchitecture: {self.model_name} ({fm})"
        return f"{head}, {self.cpus} vCPU{'s' if self.cpus != 1 else ''}"

    def has(self, flag: str) -> bool:
        return flag in self.features

    def key(self) -> dict[str, Any]:
        """What identifies this CPU's measurements (the measurement store keys on it)."""
        return {"vendor": self.vendor, "family": self.family, "model": self.model, "stepping": self.stepping,
                "microarchitecture": self.uarch, "model_name": self.model_name, "cpus": self.cpus,
                "arch": self.arch, "flags": " ".join(sorted(self.features))}

    def to_json(self) -> dict[str, Any]:
        return {**{k: v for k, v in self.key().items() if k != "flags"}, "description": self.describe()}


def parse_cpuinfo(text: str, cpus: int | None = None, arch: str | None = None) -> CpuIdentity:
    """The identity of the first processor listed in a ``/proc/cpuinfo`` text."""
    first = text.split("\n\n", 1)[0]

    def field_(key: str) -> str | None:
        m = re.search(rf"^{re.escape(key)}\s*:\s*(.*)$", first, re.M)
        return m.group(1).strip() if m else None

    def number(key: str) -> int | None:
        v = field_(key)
        try:
            return int(v, 0) if v is not None else None
        except ValueError:
            return None

    flags = field_("flags")
    return CpuIdentity(vendor=field_("vendor_id") or "", family=number("cpu family"), model=number("model"),
                       stepping=number("stepping"), model_name=field_("model name") or "",
                       features=frozenset(flags.split()) if flags else frozenset(),
                       cpus=cpus if cpus is not None else _cpus(), arch=arch if arch is not None else platform.machine())


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@lru_cache(maxsize=1)
def host_cpu() -> CpuIdentity:
    """This machine's CPU (``/proc/cpuinfo``; an identity with unknown family elsewhere)."""
    try:
        return parse_cpuinfo(Path("/proc/cpuinfo").read_text())
    except OSError:
        return CpuIdentity("", None, None, None, platform.processor(), cpus=_cpus(), arch=platform.machine())


# ---------------------------------------------------------------------------- reference singles

@dataclass(frozen=True)
class ReferenceSingles:
    """Published inverse throughputs of single schemes on one microarchitecture, for reports only.
    Every value carries its own citation: tables mix sources whose methods differ (uops.info and
    InstLatX64 place the memory operands of independent copies differently), so a comparison must
    be able to say where each figure comes from."""

    microarchitecture: str
    source: str                           # summary of the table's sources
    values: dict[str, float]              # catalogue scheme -> cycles per instruction
    published_as: dict[str, str]          # catalogue scheme -> the publication's own name
    sources: dict[str, str] = field(default_factory=dict)   # catalogue scheme -> full citation
    notes: dict[str, str] = field(default_factory=dict)     # catalogue scheme -> caveat, where one applies
    #: catalogue scheme -> how a measurement compares with it, where not "within" (see COMPARE)
    compare: dict[str, str] = field(default_factory=dict)

    def comparison(self, scheme: str) -> str:
        return self.compare.get(scheme, "within")


#: how a measured single compares with a published one: "within" a tolerance; "at_most": the
#: published figure is bound by its own benchmark (uops.info's 16 copies of a read-modify-write
#: re-use their slots every iteration, so store-forwarding latency / 16 caps it), a port-bound
#: measurement may be faster but not slower; "none": not a property of the ports at all
#: (non-temporal stores run at the speed of the write-combining buffers and memory behind them)
COMPARE = ("within", "at_most", "none")


def parse_reference_singles(doc: Any, name: str) -> ReferenceSingles:
    """A ``pmsolve.reference-singles`` document checked entry by entry: each names a scheme once,
    with a positive value and a ``source`` that is a key of the document's ``sources``."""
    def bad(why: str) -> FormatError:
        return FormatError(f"reference singles {name}: {why}")

    if not isinstance(doc, dict) or doc.get("format") != "pmsolve.reference-singles":
        raise bad("not a pmsolve.reference-singles document")
    cited = doc.get("sources", {})
    if not isinstance(cited, dict) or not all(isinstance(v, str) and v.strip() for v in cited.values()):
        raise bad("'sources' must map names to citations")
    out = ReferenceSingles(str(doc.get("microarchitecture", "")), str(doc.get("source", "")), {}, {})
    for i, e in enumerate(doc.get("entries") or []):
        if not isinstance(e, dict) or not isinstance(e.get("scheme"), str):
            raise bad(f"entry {i} has no scheme")
        scheme = e["scheme"]
        if scheme in out.values:
            raise bad(f"{scheme} is listed twice")
        value = e.get("inverse_throughput")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise bad(f"{scheme}: inverse_throughput must be a positive number, not {value!r}")
        if e.get("source") not in cited:
            raise bad(f"{scheme}: source {e.get('source')!r} is not one of 'sources'")
        if not isinstance(e.get("published"), str) or not e["published"].strip():
            raise bad(f"{scheme}: no published name")
        out.values[scheme] = float(value)
        out.published_as[scheme] = e["published"]
        out.sources[scheme] = cited[e["source"]]
        if e.get("note"):
            out.notes[scheme] = str(e["note"])
        how = e.get("compare", "within")
        if how not in COMPARE:
            raise bad(f"{scheme}: compare must be one of {', '.join(COMPARE)}, not {how!r}")
        if how != "within":
            out.compare[scheme] = how
    if not out.values:
        raise bad("no entries")
    return out


def reference_singles(uarch: Microarchitecture | str | None) -> ReferenceSingles | None:
    """The table shipped for this microarchitecture, or None (never another CPU's table)."""
    m = MICROARCHITECTURES.get(uarch) if isinstance(uarch, str) else uarch
    if m is None or m.singles is None:
        return None
    path = resources.files("pmsolve.data").joinpath("singles", m.singles)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FormatError(f"reference singles {m.singles} of {m.name} are unreadable: {exc}") from None
    return parse_reference_singles(doc, f"{m.singles} of {m.name}")


def measuring_on(*objs: Any) -> CpuIdentity | None:
    """The CPU that any of these oracles or predictors measures on (through stores, caches and
    wrappers), or None when none of them measures hardware. Commands print it before measuring."""
    for obj in objs:
        seen = set()
        while obj is not None and id(obj) not in seen:
            seen.add(id(obj))
            if isinstance(getattr(obj, "machine", None), CpuIdentity):
                return obj.machine
            obj = getattr(obj, "inner", None) or getattr(obj, "oracle", None)
    return None


def announce_measuring(*objs: Any) -> None:
    """Print ``pmsolve: measuring on AMD Zen 5 (…), 2 vCPUs`` to stderr when any of these measures
    hardware: every command that measures names the CPU before it starts."""
    cpu = measuring_on(*objs)
    if cpu is not None:
        print(f"pmsolve: measuring on {cpu.describe()}", file=sys.stderr, flush=True)
