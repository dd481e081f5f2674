"""A leaderboard: several throughput predictors scored side by side on measured experiments.

Predictors name instruction schemes in their own way (PMEvo's ``ADD_((REG:RW:G:64)),_((IMM:32))``,
the explainable mapping's ``add RW:GPR:64, IMM(32)``, Palmed's ``ADD_GPR64i64_IMMi32``), so
every predictor translates the measurement file's names through :mod:`pmsolve.isa.bridge`'s
canonical keys and scores only the experiments all of whose schemes it knows (its coverage).
Accuracy is reported in cycles per iteration and in IPC (instructions per cycle, |e|/cycles),
the unit of the dissertation's Table 6.3; IPC-MAPE weighs an error by the measured rate, not
the measured time, so the two MAPEs differ.

Palmed's model is *conjunctive* (dissertation sec. 7.1; Derumigny et al. 2022): each scheme puts
a load ρ(i, r) on abstract resources r, and tp⁻¹(e) = max_r Σ_i e(i)·ρ(i, r). That is not a
port mapping (no µops, no choice of port), so it is read into :class:`PalmedModel`, not into a
:class:`~pmsolve.model.PortMapping`.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from pmsolve.errors import FormatError, ValidationError
from pmsolve.fileio import atomic_write_bytes
from pmsolve.formats import _read_json, load_mapping
from pmsolve.isa.bridge import detect_naming, scheme_key
from pmsolve.metrics import Accuracy, accuracy
from pmsolve.model import Experiment, Measurement, PortMapping
from pmsolve.modelled import PORT_KINDS, ModelledMapping, load_model
from pmsolve.throughput import evaluate_many

Translate = Callable[[str], "str | None"]


# ----------------------------------------------------------------------------- Palmed

@dataclass(frozen=True)
class PalmedModel:
    """Palmed's resource model: scheme -> {resource: load per occurrence (cycles)}."""

    usage: Mapping[str, Mapping[str, float]]

    @property
    def instructions(self) -> list[str]:
        return list(self.usage)

    def inverse_throughput(self, e: Experiment) -> float:
        """max over resources of the summed load (KeyError for an unknown scheme)."""
        load: dict[str, float] = {}
        for insn, n in e.items():
            for r, w in self.usage[insn].items():
                load[r] = load.get(r, 0.0) + n * w
        return max(load.values(), default=0.0)


def palmed_from_json(data: object, source: str = "") -> PalmedModel:
    """Read ``{"instr_to_class": {scheme: class}, "class_to_resources": {class: {"resource_use":
    [[load, resource], ...]}}}`` (the Palmed artifact's export)."""
    where = f"{source}: " if source else ""
    if not isinstance(data, dict) or not {"instr_to_class", "class_to_resources"} <= set(data):
        raise FormatError(f"{where}not a Palmed model (needs instr_to_class and class_to_resources)")
    classes: dict[str, dict[str, float]] = {}
    for cls, body in data["class_to_resources"].items():
        use = body.get("resource_use") if isinstance(body, dict) else None
        if not isinstance(use, list):
            raise FormatError(f"{where}class {cls!r}: resource_use must be a list of [load, resource]")
        loads: dict[str, float] = {}
        for entry in use:
            if (not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], (int, float))
                    or not isinstance(entry[1], str) or entry[0] < 0):
                raise FormatError(f"{where}class {cls!r}: bad resource entry {entry!r}")
            if entry[0] > 0:
                loads[entry[1]] = loads.get(entry[1], 0.0) + float(entry[0])
        classes[cls] = loads
    usage = {}
    for insn, cls in data["instr_to_class"].items():
        if cls not in classes:
            raise FormatError(f"{where}scheme {insn!r} names unknown class {cls!r}")
        if classes[cls]:
            usage[insn] = classes[cls]
    return PalmedModel(usage)


def load_palmed(path: str | Path) -> PalmedModel:
    return palmed_from_json(_read_json(path), str(path))


_PALMED_FIXED = {"ALi8": "al", "AXi16": "ax", "EAXi32": "eax", "RAXi64": "rax", "CLi8": "cl", "XMM": "xmm0"}
_PALMED_VR = {"64": "mm", "128": "xmm", "256": "ymm"}


def _palmed_operand(tok: str) -> str | None:
    if tok in _PALMED_FIXED:
        return _PALMED_FIXED[tok]
    if tok == "ONE":
        return "1"
    if m := re.fullmatch(r"GPR(8|16|32|64)(NOREX)?[iu]\d+(x\d+)?", tok):
        return f"r{m.group(1)}"
    if m := re.fullmatch(r"VR(64|128|256)[iuf]\d+(x\d+)?", tok):
        return _PALMED_VR[m.group(1)]
    if m := re.fullmatch(r"MEM\d+[iuf](\d+)(?:x(\d+))?", tok):
        return f"m{int(m.group(1)) * int(m.group(2) or 1)}"
    if re.fullmatch(r"ADDR\d+[iu]\d+", tok):
        return "m"
    if m := re.fullmatch(r"IMM[iu](\d+)", tok):
        return f"i{m.group(1)}"
    return None


#: Condition-code spellings Palmed uses, to the catalogue's (and PMEvo's) spelling.
_CC = {"b": "c", "nb": "nc", "z": "e", "nz": "ne", "nbe": "a", "be": "be", "l": "l", "nl": "ge", "le": "le",
       "nle": "g", "s": "s", "ns": "ns", "o": "o", "no": "no", "p": "p", "np": "np"}


def palmed_key(name: str) -> str | None:
    """The :mod:`pmsolve.isa.bridge` key of a Palmed scheme name (``ADC_GPR16i16_IMMi8`` ->
    ``adc r16,i8``), or None for x87 and other operands the bridge has no token for."""
    parts = name.split("_")
    ops = [_palmed_operand(t) for t in parts[1:]]
    if not parts[0] or any(o is None for o in ops):
        return None
    return _canon_mnemonic(parts[0].lower()) + (" " + ",".join(ops) if ops else "")  # type: ignore[arg-type]


def _canon_mnemonic(mn: str) -> str:
    for prefix in ("cmov", "set"):
        if mn.startswith(prefix) and mn[len(prefix):] in _CC:
            return prefix + _CC[mn[len(prefix):]]
    return mn


# ----------------------------------------------------------------------------- names

def bridge_translator(target_names: Sequence[str], source_naming: str, target_naming: str | None = None,
                      target_key: Callable[[str], str | None] | None = None) -> Translate:
    """Source scheme name -> the target's name for the same scheme (None if it has none).

    ``target_key`` replaces the bridge's parser for target names it does not know (Palmed's).
    Identical namings translate by identity first."""
    targets = list(target_names)
    if target_key is None:
        target_naming = target_naming or detect_naming(targets)
        if target_naming == source_naming:
            known = set(targets)
            return lambda n: n if n in known else None
        target_key = lambda n: scheme_key(n, target_naming)  # noqa: E731
    by_key: dict[str, str] = {}
    for n in sorted(targets, key=lambda n: (len(n), n)):  # shortest (most general) name wins a key
        k = target_key(n)
        if k is not None:
            by_key.setdefault(_canon_key(k), n)
    cache: dict[str, str | None] = {}

    def translate(name: str) -> str | None:
        if name not in cache:
            k = scheme_key(name, source_naming)
            cache[name] = by_key.get(_canon_key(k)) if k else None
        return cache[name]

    return translate


def _canon_key(key: str) -> str:
    mn, _, ops = key.partition(" ")
    return _canon_mnemonic(mn) + (" " + ops if ops else "")


# ----------------------------------------------------------------------------- predictors

@dataclass(frozen=True)
class ExperimentPredictor:
    """A named predictor: ``predict`` gives cycles per iteration or None (not covered) per
    experiment; ``translate`` maps the measurement file's names to the predictor's."""

    name: str
    kind: str
    predict: Callable[[Sequence[Experiment]], list[float | None]] = field(repr=False)
    known: int = 0          # schemes of the measurement set the predictor knows
    detail: str = ""


def _translated(exps: Sequence[Experiment], translate: Translate) -> list[Experiment | None]:
    out: list[Experiment | None] = []
    for e in exps:
        names = [(translate(i), n) for i, n in e.items()]
        out.append(None if any(t is None for t, _ in names) else Experiment(names))  # type: ignore[misc]
    return out


def mapping_predictor(name: str, mapping: PortMapping | ModelledMapping, translate: Translate, r_max: float | None,
                      schemes: Sequence[str]) -> ExperimentPredictor:
    """A port mapping, or a modelled mapping (its modelled schemes predicted too, see
    :mod:`pmsolve.modelled`)."""
    model = mapping if isinstance(mapping, ModelledMapping) else ModelledMapping(mapping)

    def predict(exps: Sequence[Experiment]) -> list[float | None]:
        tr = _translated(exps, lambda n: t if (t := translate(n)) in model.schemes else None)
        ok = [e for e in tr if e is not None]
        values = iter(model.evaluate_many(ok, r_max)) if ok else iter(())
        return [None if e is None else float(next(values)) for e in tr]

    known = sum(1 for s in schemes if translate(s) in model.schemes)
    modelled = sum(1 for m in model.schemes.values() if m.kind not in PORT_KINDS)
    detail = "port mapping" + (f" and {modelled} modelled scheme(s)" if modelled else "") + \
        (f", R_max {r_max:g}" if r_max else "")
    return ExperimentPredictor(name, "mapping", predict, known, detail)


def palmed_predictor(name: str, model: PalmedModel, translate: Translate, schemes: Sequence[str]) -> ExperimentPredictor:
    def predict(exps: Sequence[Experiment]) -> list[float | None]:
        return [None if e is None else model.inverse_throughput(e) for e in _translated(exps, translate)]

    known = sum(1 for s in schemes if translate(s) is not None)
    return ExperimentPredictor(name, "palmed", predict, known, "conjunctive resource model")


def recorded_predictor(name: str, measurements: Sequence[Measurement]) -> ExperimentPredictor:
    """Answers recorded beside the measurements: by position for the measurement list itself
    (an experiment may occur twice with different answers), by experiment otherwise."""
    order = [m.experiment for m in measurements]
    answers = [m.others.get(name) for m in measurements]
    by_exp: dict[Experiment, float | None] = {}
    for e, a in zip(order, answers):
        by_exp.setdefault(e, a)

    def predict(exps: Sequence[Experiment]) -> list[float | None]:
        if list(exps) == order:
            return list(answers)
        return [by_exp.get(e) for e in exps]

    return ExperimentPredictor(name, "recorded", predict, 0, "answers recorded in the measurement file")


# ----------------------------------------------------------------------------- scoring

@dataclass(frozen=True)
class Score:
    """One predictor's row: coverage, then accuracy in cycles and in IPC on what it covers and
    on the experiments every predictor covers (``common_*``)."""

    name: str
    detail: str
    covered: int
    total: int
    known: int
    cycles: Accuracy | None
    ipc: Accuracy | None
    common_cycles: Accuracy | None
    common_ipc: Accuracy | None

    def to_json(self) -> dict:
        out = self.cycles.to_json() if self.cycles else {"n": 0}
        out.update(covered=self.covered, total=self.total, known_schemes=self.known, detail=self.detail)
        for key in ("ipc", "common_cycles", "common_ipc"):
            acc = getattr(self, key)
            out[key] = acc.to_json() if acc else None
        return out


@dataclass(frozen=True)
class Leaderboard:
    scores: tuple[Score, ...]
    common: int
    total: int
    predictions: dict[str, list[float | None]] = field(repr=False, compare=False)
    measured: list[float] = field(repr=False, compare=False)
    sizes: list[int] = field(repr=False, compare=False)

    def table(self) -> str:
        head = ["predictor", "covered", "MAPE", "Pearson", "τ-b", "IPC-MAPE", "IPC τ-b",
                f"MAPE (common {self.common})", f"IPC-MAPE (common {self.common})"]
        pct = lambda a: "-" if a is None else f"{100 * a.mape:.1f} %"  # noqa: E731
        num = lambda a, k: "-" if a is None else f"{getattr(a, k):.3f}"  # noqa: E731
        rows = [[s.name, f"{s.covered}/{s.total}", pct(s.cycles), num(s.cycles, "pearson"),
                 num(s.cycles, "kendall_tau_b"), pct(s.ipc), num(s.ipc, "kendall_tau_b"),
                 pct(s.common_cycles), pct(s.common_ipc)] for s in self.scores]
        widths = [max(len(str(r[j])) for r in [head, *rows]) for j in range(len(head))]
        return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *rows])


def _acc(pred: np.ndarray, meas: np.ndarray) -> Accuracy | None:
    return accuracy(pred, meas) if len(pred) >= 2 else None


def score(measurements: Sequence[Measurement], predictors: Sequence[ExperimentPredictor]) -> Leaderboard:
    """Score every predictor on the experiments it covers and on the common subset."""
    if not measurements:
        raise ValidationError("no measurements to score")
    names = [p.name for p in predictors]
    if len(set(names)) != len(names):
        raise ValidationError(f"predictor names must be distinct: {names}")
    exps = [m.experiment for m in measurements]
    meas = np.array([m.cycles for m in measurements])
    sizes = np.array([e.size for e in exps], dtype=np.float64)
    preds = {p.name: p.predict(exps) for p in predictors}
    for name, values in preds.items():
        if len(values) != len(exps) or any(v is not None and not v > 0 for v in values):
            raise ValidationError(f"predictor {name!r} gave a wrong number of answers or a non-positive one")
    covered = {n: np.array([v is not None for v in vs]) for n, vs in preds.items()}
    common = np.logical_and.reduce(list(covered.values())) if covered else np.ones(len(exps), bool)
    scores = []
    for p in predictors:
        mask = covered[p.name]
        val = np.array([v if v is not None else np.nan for v in preds[p.name]])

        def both(sel: np.ndarray) -> tuple[Accuracy | None, Accuracy | None]:
            if sel.sum() < 2:
                return None, None
            return _acc(val[sel], meas[sel]), _acc(sizes[sel] / val[sel], sizes[sel] / meas[sel])

        cyc, ipc = both(mask)
        ccyc, cipc = both(common)
        scores.append(Score(p.name, p.detail, int(mask.sum()), len(exps), p.known, cyc, ipc, ccyc, cipc))
    scores.sort(key=lambda s: (s.common_ipc is None, s.common_ipc.mape if s.common_ipc else 0.0, s.name))
    return Leaderboard(tuple(scores), int(common.sum()), len(exps), preds, list(meas), [int(s) for s in sizes])


def heatmaps(board: Leaderboard, path: str | Path, unit: str = "cycles", title: str = "", bins: int = 50) -> None:
    """One predicted-vs-measured 2-D histogram per predictor (each on what it covers), in cycles
    per iteration or in IPC, log colour scale, diagonal drawn (like Fig. 6.3)."""
    import matplotlib  # lazily: only heat maps need matplotlib (~0.6 s to import)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    if unit not in ("cycles", "ipc"):
        raise ValidationError(f"heat map unit must be cycles or ipc, got {unit!r}")
    meas, sizes = np.array(board.measured), np.array(board.sizes, dtype=np.float64)
    series = {}
    for s in board.scores:
        v = np.array([np.nan if x is None else x for x in board.predictions[s.name]])
        ok = ~np.isnan(v)
        if ok.sum() >= 2:
            m, p = meas[ok], v[ok]
            if unit == "ipc":
                m, p = sizes[ok] / m, sizes[ok] / p
            series[s.name] = (m, p, s.ipc if unit == "ipc" else s.cycles, s.covered)
    if not series:
        raise ValidationError("no predictor covers enough experiments for a heat map")
    hi = float(np.quantile(np.concatenate([np.r_[m, p] for m, p, _, _ in series.values()]), 0.995)) * 1.05
    edges = np.linspace(0, hi, bins + 1)
    fig, axes = plt.subplots(1, len(series), figsize=(4.4 * len(series), 4.2), squeeze=False)
    label = "IPC" if unit == "ipc" else "cycles / iteration"
    for ax, (name, (m, p, acc, n)) in zip(axes[0], series.items()):
        counts, _, _ = np.histogram2d(np.clip(m, 0, hi), np.clip(p, 0, hi), bins=[edges, edges])
        img = ax.pcolormesh(edges, edges, counts.T, norm=LogNorm(vmin=1, vmax=max(counts.max(), 1)), cmap="viridis")
        ax.plot([0, hi], [0, hi], color="grey", lw=0.8, ls="--")
        ax.set_title(f"{name}\nn {n}, MAPE {100 * acc.mape:.1f} %, τ {acc.kendall_tau_b:.2f}", fontsize=9)
        ax.set_xlabel(f"measured {label}")
        ax.set_ylabel(f"predicted {label}")
        ax.set_aspect("equal")
        fig.colorbar(img, ax=ax, label="experiments", shrink=0.8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    image = io.BytesIO()  # written by fileio: atomic, parents created, never clobbering a device
    fig.savefig(image, dpi=110, format=Path(path).suffix.lstrip(".").lower() or "png")
    plt.close(fig)
    atomic_write_bytes(path, image.getvalue(), "heat map")


# ----------------------------------------------------------------------------- specs

def parse_mapping_spec(spec: str) -> tuple[str, str | None, float | None]:
    """``PATH[:r_max=X][:name=LABEL]`` -> (path, label, r_max)."""
    label, r_max, path = None, None, spec
    while True:
        m = re.search(r":(r_max|name)=([^:]*)$", path)
        if not m:
            break
        path = path[:m.start()]
        if m.group(1) == "name":
            label = m.group(2)
        else:
            try:
                r_max = float(m.group(2))
            except ValueError:
                raise ValidationError(f"mapping spec {spec!r}: r_max must be a number") from None
            if not (r_max > 0 and math.isfinite(r_max)):
                raise ValidationError(f"mapping spec {spec!r}: r_max must be a finite number > 0, got {m.group(2)!r}")
    return path, label, r_max


def predictors_for(measurements: Sequence[Measurement], mappings: Sequence[str] = (), palmed: Sequence[str] = (),
                   others: bool = False, r_max: float | None = None) -> list[ExperimentPredictor]:
    """Build predictors from mapping specs, Palmed files and the recorded answers, each with a
    translator from the measurement file's naming to its own."""
    schemes = sorted({i for m in measurements for i in m.experiment})
    try:
        naming = detect_naming(schemes)
    except ValidationError:
        naming = ""
    out: list[ExperimentPredictor] = []
    for spec in mappings:
        path, label, rm = parse_mapping_spec(spec)
        mapping = load_model(path)
        label = label or (path if len(mappings) + len(palmed) > 1 else "mapping")
        tr = _mapping_translator(mapping, schemes, naming)
        out.append(mapping_predictor(label, mapping, tr, rm if rm is not None else r_max, schemes))
    for spec in palmed:
        path, label, _ = parse_mapping_spec(spec)
        model = load_palmed(path)
        tr = (bridge_translator(model.instructions, naming, target_key=palmed_key) if naming
              else (lambda n: n if n in model.usage else None))
        out.append(palmed_predictor(label or "Palmed", model, tr, schemes))
    if others:
        for name in sorted({k for m in measurements for k in m.others}):
            out.append(recorded_predictor(name, measurements))
    return out


def _mapping_translator(mapping: PortMapping | ModelledMapping, schemes: Sequence[str], naming: str) -> Translate:
    known = set(mapping.instructions)
    if not naming or all(s in known for s in schemes):
        return lambda n: n if n in known else None
    try:
        return bridge_translator(mapping.instructions, naming)
    except ValidationError:  # names the bridge does not understand: exact names only
        return lambda n: n if n in known else None
