"""A port mapping as an OSACA machine model (YAML), so the mapping works where users analyse loops.

OSACA (0.7) predicts a loop body's throughput from a machine model: per instruction form (a
mnemonic and operand classes) a ``port_pressure`` list of ``[cycles, [ports]]`` µops, which it
spreads over their ports (``assign_optimal_throughput``), taking the most loaded port. A
pmsolve mapping is the same kind of model, so it translates entry by entry:

* **forms** — each mapped scheme becomes one instruction form in OSACA's notation: the
  mnemonic as the scheme's AT&T template writes it (``addq``: OSACA looks up the suffixed
  mnemonic first, so widths stay apart), operands in AT&T order as ``register`` (``gpr``,
  ``xmm``, ``ymm``, ``zmm``, ``k``, or a hardwired register by name, e.g. ``cl``),
  ``memory`` (every addressing mode) and ``immediate``. Hardwired-register forms come first,
  because OSACA takes the first entry that matches and ``gpr`` matches every general register;
* **port_pressure** — one ``[count, [ports]]`` per µop of the mapping; ``throughput`` is the
  mapping's inverse throughput of the scheme alone, ``uops`` its µop count on ports;
* **resources that are not ports** — a counter-free inference's units (``U1``, ``U2``: e.g.
  a divider, pmsolve's extra one-port resources) become ports of the same name, as OSACA's own
  Zen models do for their dividers (``DV0``). The front-end limit ``R_max`` becomes the
  pseudo-port ``FE``, on which every form puts ``1/R_max`` cycles: the most loaded port is then
  ``max(port bound, |block| / R_max)``, exactly the mapping's prediction;
* **latency** — pmsolve measures none. For the forms OSACA's nearest shipped model knows
  (``latency_from``, e.g. ``ZEN3``) its latency is copied (as OSACA itself computes it for a
  representative instance, load latency included); the others get ``latency: 0``, which is
  what OSACA reads a missing latency as on dependency chains, written out because OSACA 0.7
  fails (a TypeError) on a memory form it derives from a register form without one
  (``seteb 8(%r14)`` from ``seteb %al``). The file's header says which model and how many;
* **the rest OSACA needs** — ``load_throughput``/``store_throughput`` (used for memory forms the
  mapping lacks, when it has their register form) from the mapping's plain loads and stores
  (``mov r64, m64``, ``vmovdqu ymm, m256``, ...), load latency and store-to-load forwarding
  from ``latency_from`` (defaults stated in the header), ``hidden_loads: false``.

What OSACA cannot tell apart is merged and listed: immediate widths (``add r64, i8`` and
``add r64, i32`` are one form), an EVEX write mask, an embedded broadcast (a memory operand),
the register width of an unsuffixed mnemonic (``vcvtsd2si r32/r64``) and a ``{vex}``/``{evex}``
pseudo-prefix (compilers never write one; OSACA's parser cannot read it). Schemes that merge with
different usage keep the usage most of them share (ties: the first name); the others are
listed in the header. A mapped scheme without a catalogue scheme behind it (no assembly) is
listed as left out.

:func:`check_osaca_model` loads the written file in the installed OSACA and confirms that every
entry's representative instance gets exactly its port pressure.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable

from pmsolve.errors import ValidationError
from pmsolve.fileio import atomic_write_text
from pmsolve.isa import Catalogue, load_catalogue
from pmsolve.isa.bridge import detect_naming, translator
from pmsolve.isa.render import render_representative
from pmsolve.isa.scheme import Scheme
from pmsolve.model import Experiment, PortMapping, sort_ports
from pmsolve.predictors.osaca import OsacaPredictor, strip_pseudo_prefix
from pmsolve.throughput import inverse_throughput

#: the pseudo-port that carries the front-end limit
FE_PORT = "FE"
#: OSACA's default load latency (cycles) when the latency model gives none
DEFAULT_LOAD_LATENCY = 4.0
_REG_KEYS = ("gpr", "mm", "xmm", "ymm", "zmm")
#: plain loads and stores that give OSACA's load/store tables their ports, best first
_LOADS = {"gpr": ("mov_r64_m64", "mov_r32_m32"), "xmm": ("vmovdqu_xmm_m128", "vmovups_xmm_m128", "movdqu_xmm_m128"),
          "ymm": ("vmovdqu_ymm_m256", "vmovups_ymm_m256"), "zmm": ("vmovdqu64_zmm_m512", "vmovups_zmm_m512")}
_STORES = {"gpr": ("mov_m64_r64", "mov_m32_r32"), "xmm": ("vmovdqu_m128_xmm", "vmovups_m128_xmm", "movdqu_m128_xmm"),
           "ymm": ("vmovdqu_m256_ymm", "vmovups_m256_ymm"), "zmm": ("vmovdqu64_m512_zmm", "vmovups_m512_zmm")}

Usage = tuple[tuple[tuple[str, ...], int], ...]


@dataclass(frozen=True, order=True)
class Form:
    """An instruction form as OSACA matches it: the mnemonic and one class per operand, in AT&T
    order (``gpr``, ``xmm``, ``ymm``, ``zmm``, ``k``, ``mem``, ``imm``, or a hardwired general
    register's name such as ``cl``)."""

    mnemonic: str
    operands: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.mnemonic} {', '.join(self.operands)}".strip()

    @property
    def generality(self) -> int:
        """How many operands match any general register: OSACA takes the first matching entry,
        so a form with fewer comes first."""
        return sum(1 for o in self.operands if o == "gpr")

    def yaml_operands(self) -> list[str]:
        out = []
        for o in self.operands:
            if o == "mem":
                out.append('{class: memory, base: "*", offset: "*", index: "*", scale: "*"}')
            elif o == "imm":
                out.append("{class: immediate, imd: int}")
            else:
                out.append(f"{{class: register, name: {o}}}")
        return out


_SLOT = re.compile(r"@(\d+)@")


def osaca_form(scheme: Scheme) -> Form:
    """The form OSACA sees in the scheme's AT&T text (see the module docstring)."""
    n = len(scheme.operands)
    text = strip_pseudo_prefix(scheme.template.format(*(f"@{i}@" for i in range(n))))
    mnemonic, _, rest = text.strip().partition(" ")
    pieces, depth, cur = [], 0, ""
    for ch in rest:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            pieces.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        pieces.append(cur)
    ops = []
    for piece in (p.strip() for p in pieces):
        m = _SLOT.search(piece)
        if m is None:   # a literal operand (``%xmm0`` of blendvps)
            ops.append(_literal_class(piece))
            continue
        o = scheme.operands[int(m.group(1))]
        if o.kind == "mem":
            ops.append("mem")
        elif o.kind in ("imm", "const"):
            ops.append("imm")
        elif o.cls == "gpr":
            ops.append(o.fixed.lower() if o.fixed else "gpr")
        else:
            ops.append(o.cls)
    return Form(mnemonic.lower(), tuple(ops))


def _literal_class(text: str) -> str:
    if text.startswith("$"):
        return "imm"
    if text.startswith("%"):
        name = text[1:].lower()
        kind = re.sub(r"\d+$", "", name)
        return kind if kind in ("xmm", "ymm", "zmm", "k") else name
    return "mem"


@dataclass(frozen=True)
class Entry:
    """One instruction form of the model: the mapping's scheme behind it (``scheme``), the
    catalogue schemes it stands for, their µops, the inverse throughput alone, a latency
    from ``latency_from`` (None: OSACA's model does not know the form)."""

    form: Form
    scheme: str
    catalogue: tuple[str, ...]
    uops: Usage
    throughput: Fraction
    latency: float | None = None


@dataclass(frozen=True)
class Merge:
    """Schemes OSACA cannot tell apart whose usage differs: ``chosen`` gives the entry its
    usage, ``others`` are the mapping's schemes whose own usage is lost."""

    form: Form
    chosen: str
    others: tuple[str, ...]


@dataclass
class OsacaModel:
    """An exported machine model; :meth:`to_yaml` is the file."""

    arch_code: str
    source: str
    ports: list[str]
    units: list[str]
    r_max: float | None
    entries: list[Entry]
    left_out: dict[str, str]
    merged: list[Merge]
    latency_from: str | None
    latency_note: str
    loads: dict[str, tuple[str, Usage]]
    stores: dict[str, tuple[str, Usage]]
    load_latency: dict[str, float]
    store_to_load_forward_latency: float
    defaults: list[str] = field(default_factory=list)

    @property
    def osaca_ports(self) -> list[str]:
        return self.ports + ([FE_PORT] if self.r_max else [])

    def pressure(self, uops: Usage, *, front_end: bool = True) -> list[list[Any]]:
        out: list[list[Any]] = [[n, list(ports)] for ports, n in uops]
        if front_end and self.r_max:
            out.append([1 / self.r_max, [FE_PORT]])
        return out

    def summary(self) -> dict[str, Any]:
        known = sum(1 for e in self.entries if e.latency is not None)
        return {"arch_code": self.arch_code, "source": self.source, "forms": len(self.entries),
                "schemes": len({e.scheme for e in self.entries}),
                "catalogue_schemes": sum(len(e.catalogue) for e in self.entries),
                "ports": self.ports, "units": self.units, "r_max": self.r_max,
                "front_end_port": FE_PORT if self.r_max else None,
                "latency_from": self.latency_from, "latencies": known, "without_latency": len(self.entries) - known,
                "merged": [{"form": str(m.form), "chosen": m.chosen, "others": list(m.others)} for m in self.merged],
                "left_out": self.left_out, "defaults": self.defaults}

    def to_yaml(self) -> str:
        return _yaml(self)


def export_osaca(mapping: PortMapping, *, r_max: float | None = None, units: Iterable[str] = (),
                 latency_from: str | None = None, arch_code: str = "PMSOLVE", source: str = "",
                 catalogue: Catalogue | None = None) -> OsacaModel:
    """The OSACA machine model of ``mapping`` (schemes in any naming pmsolve bridges).

    ``r_max``: the mapping's front-end limit (the ``FE`` pseudo-port); ``units``: the ports that
    are modelled units, not execution ports (named so in the header); ``latency_from``: an
    OSACA model (``ZEN3``) to take latencies from, None for none."""
    if r_max is not None and not r_max > 0:
        raise ValidationError(f"OSACA export: r_max must be positive, got {r_max}")
    units = [u for u in units if u in mapping.ports]
    if FE_PORT in mapping.ports and r_max:
        raise ValidationError(f"OSACA export: the mapping has a port named {FE_PORT!r}, the front end's pseudo-port")
    cat = catalogue or load_catalogue()
    behind = _catalogue_schemes(mapping, cat)
    reached = set(behind.values())
    left_out = {s: "no x86-64 catalogue scheme has this name (nothing to render as assembly)"
                for s in mapping.uops if s not in reached}
    by_form: dict[Form, list[tuple[str, str]]] = defaultdict(list)    # form -> [(catalogue, mapping scheme)]
    for c, m in behind.items():
        by_form[osaca_form(cat[c])].append((c, m))
    usage = {s: tuple((tuple(sort_ports(u.ports)), u.count) for u in mapping.uops_of(s)) for s in mapping.uops}
    entries, merged = [], []
    for form in sorted(by_form, key=lambda f: (f.mnemonic, f.generality, f.operands)):
        members = sorted(by_form[form])
        votes = Counter(usage[m] for _, m in members)
        best = max(votes.values())
        chosen_c, chosen = next((c, m) for c, m in members if votes[usage[m]] == best)
        others = tuple(sorted({m for _, m in members if usage[m] != usage[chosen]}))
        if others:
            merged.append(Merge(form, chosen, others))
        tp = inverse_throughput(mapping, Experiment({chosen: 1}), r_max=r_max)
        entries.append(Entry(form, chosen, tuple(c for c, _ in members), usage[chosen], Fraction(tp)))
    forms_of = {e.form: cat[e.catalogue[0]] for e in entries}
    lat_note, lat = "no latencies asked for (every form has latency 0: unknown)", {}
    lat_model: dict[str, Any] = {}
    if latency_from:
        lat, lat_model, lat_note = _shipped_latencies(forms_of, latency_from)
    entries = [Entry(e.form, e.scheme, e.catalogue, e.uops, e.throughput, lat.get(e.form)) for e in entries]
    defaults: list[str] = []
    load_latency = dict(lat_model.get("load_latency") or {})
    for k in _REG_KEYS:
        if not isinstance(load_latency.get(k), (int, float)):
            load_latency[k] = DEFAULT_LOAD_LATENCY
            defaults.append(f"load latency of {k}: {DEFAULT_LOAD_LATENCY:g} cycles (OSACA's usual value)")
    forward = lat_model.get("store_to_load_forward_latency")
    if not isinstance(forward, (int, float)):
        forward = 0.0
        defaults.append("store-to-load forwarding latency: 0 cycles")
    loads = _plain(mapping, behind, usage, _LOADS)
    stores = _plain(mapping, behind, usage, _STORES)
    for what, table in (("load", loads), ("store", stores)):
        if not table:
            defaults.append(f"no plain {what} in the mapping: memory forms the mapping lacks get no {what} pressure")
    ports = list(mapping.ports)
    return OsacaModel(arch_code, source, ports, units, float(r_max) if r_max else None, entries, left_out, merged,
                      latency_from.upper() if latency_from else None, lat_note, loads, stores,
                      {k: float(v) for k, v in load_latency.items()}, float(forward), defaults)


def _catalogue_schemes(mapping: PortMapping, cat: Catalogue) -> dict[str, str]:
    """catalogue scheme -> the mapping's scheme for it (the bridge :class:`MappingPredictor` uses)."""
    names = list(mapping.uops)
    if not names:
        return {}
    naming = detect_naming(names)
    if naming == "catalogue":
        return {n: n for n in names if n in cat}
    translate = translator(names, "catalogue", naming)
    out = {}
    for s in cat:
        if s.excluded is None:
            m = translate(s.name)
            if m is not None and m in mapping.uops:
                out[s.name] = m
    return out


def _plain(mapping: PortMapping, behind: dict[str, str], usage: dict[str, Usage],
           table: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, Usage]]:
    out = {}
    for cls, candidates in table.items():
        for c in candidates:
            if c in behind:
                out[cls] = (c, usage[behind[c]])
                break
    return out


def _shipped_latencies(forms: dict[Form, Scheme], arch: str) -> tuple[dict[Form, float], dict[str, Any], str]:
    """Each form's latency in OSACA's shipped model ``arch``, as OSACA computes it for a
    representative instance (a memory form it builds from the register form includes the load
    latency); forms it does not know are absent. Also the model's load-latency settings."""
    try:
        from osaca.parser import ParserX86ATT
        from osaca.semantics import ArchSemantics, MachineModel
        from osaca.semantics.isa_semantics import INSTR_FLAGS
    except ImportError:
        raise ValidationError("latencies from OSACA need OSACA (pip install 'pmsolve[predictors]'); "
                              "or export without latencies") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = MachineModel(arch=arch.lower())
        except (FileNotFoundError, ValueError) as exc:
            raise ValidationError(f"OSACA has no model {arch!r} to take latencies from ({exc})") from None
        if model.get_ISA() != "x86":
            raise ValidationError(f"OSACA's {arch.upper()} is not an x86 model")
        parser = ParserX86ATT()
        sem = ArchSemantics(parser, model)
        out: dict[Form, float] = {}
        for form, scheme in forms.items():
            try:
                f = parser.parse_line(strip_pseudo_prefix(render_representative(scheme)), 1)
                sem.normalize_instruction_forms([f])
                sem.add_semantics([f])
            except Exception:   # OSACA failing on one form: that form has no latency
                continue
            if INSTR_FLAGS.TP_UNKWN in f.flags or INSTR_FLAGS.LT_UNKWN in f.flags or f.latency is None:
                continue
            out[form] = float(f.latency)
    meta = {"load_latency": {k: v for k, v in (model.get("load_latency") or {}).items()},
            "store_to_load_forward_latency": model.get("store_to_load_forward_latency")}
    note = (f"latency of {len(out)} of {len(forms)} forms from OSACA's {arch.upper()} model (the forms it knows, as "
            f"it computes them, load latency included); the other {len(forms) - len(out)} have latency 0 (unknown: "
            "OSACA's reading of a missing latency on dependency chains)")
    return out, meta, note


# ----------------------------------------------------------------------------- the YAML file

def _q(x: str) -> str:
    return json.dumps(x, ensure_ascii=False)


def _num(x: float) -> str:
    return repr(float(x))


def _flow(pressure: list[list[Any]]) -> str:
    return "[" + ", ".join(f"[{_num(n) if isinstance(n, float) else n}, [{', '.join(_q(p) for p in ps)}]]"
                           for n, ps in pressure) + "]"


def _comment(text: str) -> str:
    return "\n".join("# " + line for line in text.splitlines())


def _yaml(m: OsacaModel) -> str:
    s = m.summary()
    head = [f"OSACA machine model exported by pmsolve from {m.source or 'a port mapping'}.",
            f"{s['forms']} instruction forms for {s['schemes']} mapped schemes ({s['catalogue_schemes']} catalogue "
            "schemes); throughput and port_pressure from the mapping (pmsolve measures no latency).",
            f"Ports: {', '.join(m.ports)}."]
    if m.units:
        head.append(f"Units (modelled resources, not execution ports; a µop on one occupies it for a cycle): "
                    f"{', '.join(m.units)}.")
    if m.r_max:
        head.append(f"{FE_PORT}: the front-end limit, {m.r_max:g} instructions per cycle; every form puts "
                    f"1/{m.r_max:g} cycles on it, so the most loaded port is max(port bound, instructions / R_max).")
    head.append("Latency: " + m.latency_note + ".")
    for what, table in (("load_throughput", m.loads), ("store_throughput", m.stores)):
        if table:
            head.append(f"{what} (memory forms the mapping lacks, from their register form): "
                        + ", ".join(f"{k} from {c}" for k, (c, _) in table.items()) + ".")
    if m.defaults:
        head.append("Defaults: " + "; ".join(m.defaults) + ".")
    head.append("OSACA cannot tell apart immediate widths, EVEX write masks, embedded broadcasts, the register "
                "width of an unsuffixed mnemonic, nor {vex}/{evex} pseudo-prefixes: such schemes share a form.")
    if m.merged:
        head.append(f"{len(m.merged)} shared form(s) stand for schemes whose usage differs; each takes the usage "
                    "most of them share (ties: the first name):")
        head += [f"  {x.form}: {x.chosen} (not {', '.join(x.others)})" for x in m.merged]
    if m.left_out:
        head.append(f"{len(m.left_out)} mapped scheme(s) left out:")
        head += [f"  {k}: {v}" for k, v in sorted(m.left_out.items())]
    head.append("Use: MachineModel(path_to_yaml=FILE) and Frontend(path_to_yaml=FILE) in Python; for the osaca "
                "command, copy it to ~/.osaca/data/<arch>.yml (it shadows OSACA's own <arch> model).")
    out = [_comment("\n".join(head)), "",
           f"osaca_version: {_q(_osaca_version())}",
           f"micro_architecture: {_q('pmsolve mapping' + (': ' + m.source if m.source else ''))}",
           f"arch_code: {_q(m.arch_code)}",
           "isa: x86",
           "ROB_size: ~", "retired_uOps_per_cycle: ~", "scheduler_size: ~",
           "hidden_loads: false",
           "load_latency: {" + ", ".join(f"{k}: {_num(v)}" for k, v in m.load_latency.items()) + "}"]
    for key, table, reg in (("load_throughput", m.loads, "dst"), ("store_throughput", m.stores, "src")):
        out.append(f"{key}:" + ("" if table else " []"))
        for cls, (_, uops) in table.items():
            out.append(f'- {{{reg}: {cls}, base: "*", index: "*", offset: "*", scale: "*", '
                       f"port_pressure: {_flow(m.pressure(uops, front_end=False))}}}")
        first = next(iter(table.values()), None)
        out.append(f"{key}_default: {_flow(m.pressure(first[1], front_end=False)) if first else '[]'}")
    out.append(f"store_to_load_forward_latency: {_num(m.store_to_load_forward_latency)}")
    out.append(f"ports: [{', '.join(_q(p) for p in m.osaca_ports)}]")
    out.append("port_model_scheme: |\n  pmsolve port mapping: " + ", ".join(m.osaca_ports))
    out.append("instruction_forms:" + ("" if m.entries else " []"))
    for e in m.entries:
        out.append(f"- name: {_q(e.form.mnemonic)}   # {e.scheme}"
                   + (f" (also {', '.join(c for c in e.catalogue if c != e.scheme)})"
                      if any(c != e.scheme for c in e.catalogue) else ""))
        ops = e.form.yaml_operands()
        out.append("  operands:" + ("" if ops else " []"))
        out += [f"  - {o}" for o in ops]
        out.append(f"  throughput: {_num(e.throughput)}")
        out.append(f"  latency: {_num(e.latency if e.latency is not None else 0)}")   # none: OSACA fails on derived forms
        out.append(f"  uops: {sum(n for ports, n in e.uops if not set(ports) <= set(m.units))}")
        out.append(f"  port_pressure: {_flow(m.pressure(e.uops))}")
    return "\n".join(out) + "\n"


def _osaca_version() -> str:
    try:
        return importlib.metadata.version("osaca")
    except importlib.metadata.PackageNotFoundError:
        return "0.7"


def write_osaca_model(model: OsacaModel, path: str | Path) -> str:
    """Write the model's YAML; returns a short digest of it (predictors and caches key on it)."""
    text = model.to_yaml()
    atomic_write_text(path, text)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# ----------------------------------------------------------------------------- checking it in OSACA

def check_osaca_model(model: OsacaModel, path: str | Path, catalogue: Catalogue | None = None) -> list[str]:
    """Load the written file in the installed OSACA and analyse every entry's representative
    instance alone: each must resolve to its own entry (same port pressure, OSACA's throughput
    equal to the entry's). Returns the problems found (empty: the model is what it says)."""
    try:
        from osaca.parser import ParserX86ATT
        from osaca.semantics import ArchSemantics, MachineModel
        from osaca.semantics.isa_semantics import INSTR_FLAGS
    except ImportError:
        raise ValidationError("checking the model needs OSACA (pip install 'pmsolve[predictors]')") from None
    cat = catalogue or load_catalogue()
    problems = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mm = MachineModel(path_to_yaml=str(path))
        parser = ParserX86ATT()
        sem = ArchSemantics(parser, mm)
        ports = mm.get_ports()
        if ports != model.osaca_ports:
            return [f"OSACA reads the ports as {ports}, not {model.osaca_ports}"]
        for e in model.entries:
            asm = strip_pseudo_prefix(render_representative(cat[e.catalogue[0]]))
            try:
                f = parser.parse_line(asm, 1)
                sem.normalize_instruction_forms([f])
                sem.add_semantics([f])
            except Exception as exc:
                problems.append(f"{asm!r} ({e.scheme}): OSACA raised {type(exc).__name__}: {exc}")
                continue
            if INSTR_FLAGS.TP_UNKWN in f.flags:
                problems.append(f"{asm!r} ({e.scheme}): OSACA does not find its form {e.form}")
                continue
            want = mm.average_port_pressure(model.pressure(e.uops))
            if any(abs(a - b) > 1e-9 for a, b in zip(f.port_pressure, want)):
                problems.append(f"{asm!r} ({e.scheme}): OSACA puts {_pressure_text(f.port_pressure, ports)} "
                                f"on the ports, the mapping {_pressure_text(want, ports)}")
    return problems


def _pressure_text(pressure: list[float], ports: list[str]) -> str:
    return "{" + ", ".join(f"{p}: {x:g}" for p, x in zip(ports, pressure) if x) + "}"


# ----------------------------------------------------------------------------- as a predictor

#: the row of the main job's accuracy table
LABEL = "OSACA + pmsolve model"


def exported_predictor(mapping: PortMapping, path: str | Path, *, r_max: float | None = None,
                       units: Iterable[str] = (), latency_from: str | None = None, lcd: bool = True,
                       catalogue: Catalogue | None = None, source: str = "") -> tuple[OsacaPredictor, OsacaModel]:
    """OSACA with ``mapping`` exported to ``path`` as its machine model (the main job's row
    :data:`LABEL`), and the model. Close the predictor when done."""
    model = export_osaca(mapping, r_max=r_max, units=units, latency_from=latency_from, source=source,
                         catalogue=catalogue)
    write_osaca_model(model, path)
    return OsacaPredictor(str(path), lcd=lcd), model
