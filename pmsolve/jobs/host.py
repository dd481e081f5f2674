"""The main job (``pmsolve infer`` without arguments): measure this machine, infer its port
mapping, and compare it with llvm-mca and OSACA on held-out measured experiments.

On an x86-64 Linux host with AVX: measure ~50 common schemes (ALU, shifts, bit ops, imul,
loads, stores, vector FP add/mul/FMA, integer, logic, shuffles) as singletons, pairs and ratio
pairs (PMEvo's experiment design) through the hardware oracle and the measurement store,
detect the peak IPC (sec. 4.3), infer a three-level mapping with PMEvo under that R_max, then
measure random 4-5-instruction experiments that inference never saw and report MAPE and
Kendall's τ of pmsolve's mapping next to the newest installed llvm-mca and OSACA, each with the
model that best fits this CPU's microarchitecture (:mod:`pmsolve.harness.cpu`; a fallback to a
nearest model is said in the report), on the very same instruction sequences. Elsewhere it runs the same pipeline on a simulated machine
(the bundled Zen+ example mapping with noise and R_max 5).
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from pmsolve.anica.predictors.base import ModelChoice
from pmsolve.harness.cpu import host_cpu, reference_singles
from pmsolve.model import Experiment, PortMapping

#: the default scheme set of the main job (all offered on Zen 3 / any AVX2+BMI2+FMA host)
DEFAULT_SCHEMES = """
add_r64_r64 sub_r64_r64 xor_r64_r64 cmp_r64_r64 add_r64_i8 inc_r64 neg_r64
shl_r64_i8 sar_r64_cl rorx_r64_r64_i8 shlx_r64_r64_r64 lea_r64_m imul_r64_r64 imul_r64_r64_i32 mulx_r64_r64_r64
popcnt_r64_r64 lzcnt_r64_r64 andn_r64_r64_r64 pdep_r64_r64_r64 cmove_r64_r64 bswap_r64 crc32_r64_r64
mov_r64_m64 add_r64_m64 mov_m64_r64 vmovdqu_ymm_m256 vmovdqu_m256_ymm vbroadcastss_ymm_m32
vaddpd_ymm_ymm_ymm vmulpd_ymm_ymm_ymm vfmadd231pd_ymm_ymm_ymm vaddps_xmm_xmm_xmm vminpd_ymm_ymm_ymm
vroundpd_ymm_ymm_i8 vcvtdq2pd_ymm_xmm vpaddd_ymm_ymm_ymm vpmulld_ymm_ymm_ymm vpmaddwd_ymm_ymm_ymm vpand_ymm_ymm_ymm
vpxor_ymm_ymm_ymm vpcmpeqd_ymm_ymm_ymm vpsadbw_ymm_ymm_ymm vpshufd_ymm_ymm_i8 vpermq_ymm_ymm_i8
vpunpcklqdq_ymm_ymm_ymm vpsllq_ymm_ymm_i8 vpblendd_ymm_ymm_ymm_i8 vpmovmskb_r32_ymm vperm2i128_ymm_ymm_ymm_i8
vaesenc_xmm_xmm_xmm
""".split()



@dataclass
class JobConfig:
    schemes: Sequence[str] = tuple(DEFAULT_SCHEMES)
    ports: int = 10
    held_out: int = 60
    seed: int = 0
    population: int = 300
    generations: int = 50
    patience: int | None = 10
    local_search: int | None = 16
    workers: int = 1
    store: str | None = None            # None: default_store()
    checkpoint: str | None = None
    mcpu: str | None = None             # None: the best llvm-mca model for this CPU
    osaca_arch: str | None = None       # None: OSACA's nearest model for this CPU
    simulated: bool = False


@dataclass
class JobReport:
    machine: str
    mapping: PortMapping
    singles: dict[str, float]
    peak_ipc: float
    peak_experiment: str
    held_out: list[Experiment]
    measured: list[float]
    predictions: dict[str, list[float | None]]
    accuracy: dict[str, dict]
    seconds: dict[str, float]
    pmevo_table: str
    notes: list[str] = field(default_factory=list)
    cpu: dict | None = None                                  # CpuIdentity.as_json() on hardware
    models: list[dict] = field(default_factory=list)         # ModelChoice.as_json() of each comparison tool
    reference: dict | None = None                            # the host's published singles, if any

    def as_json(self) -> dict:
        return {"machine": self.machine, "cpu": self.cpu, "models": self.models, "reference_singles": self.reference,
                "peak_ipc": self.peak_ipc, "peak_experiment": self.peak_experiment,
                "singles": self.singles, "accuracy": self.accuracy, "seconds": self.seconds, "notes": self.notes,
                "held_out": [{"experiment": str(e), "measured": m,
                              **{k: v[i] for k, v in self.predictions.items()}}
                             for i, (e, m) in enumerate(zip(self.held_out, self.measured))],
                "mapping": {i: [{"ports": sorted(u.ports), "count": u.count} for u in us]
                            for i, us in self.mapping.uops.items()}}


def default_store() -> Path:
    """``$XDG_CACHE_HOME/pmsolve/measurements.sqlite`` (``~/.cache`` by default)."""
    import os

    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = base / "pmsolve" / "measurements.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def held_out_experiments(schemes: Sequence[str], n: int, seed: int) -> list[Experiment]:
    """Random 4-5-instruction experiments (multisets), distinct, deterministic under ``seed``."""
    rng = random.Random(seed)
    out: dict[Experiment, None] = {}
    while len(out) < n:
        size = rng.choice((4, 5))
        e = Experiment([rng.choice(list(schemes)) for _ in range(size)])
        if len(e.counts) > 2:   # beyond PMEvo's pairs
            out[e] = None
    return list(out)


# ---------------------------------------------------------------------------- other predictors

def _block(catalogue, e: Experiment, target: int = 40):
    """The experiment as a concrete block (operands allocated, unrolled to about ``target``
    instructions) and its unroll factor: predictions divide by it to get cycles per copy."""
    from pmsolve.anica.block import Block
    from pmsolve.harness.allocation import allocate, body

    counts = {catalogue[n]: c for n, c in e.items()}
    factor = max(1, round(target / e.size))
    return Block.of([(i.scheme.name, i.text()) for i in allocate(body(counts, factor))]), factor


def _per_copy(predictor, blocks) -> tuple[list[float | None], list[str]]:
    preds = predictor.predict([b for b, _ in blocks])
    return ([p.cycles / f if p.ok else None for p, (_, f) in zip(preds, blocks)],
            [p.error for p in preds if not p.ok])


def comparison_models(config: JobConfig, uarch) -> tuple[ModelChoice, ModelChoice]:
    """The llvm-mca and OSACA models to compare with: given in the config, else the best ones
    for this microarchitecture (a nearest-model fallback says so in ``why``)."""
    from pmsolve.anica.predictors import llvm_mca, osaca

    mca = (ModelChoice("llvm-mca", config.mcpu, getattr(llvm_mca.find_llvm_mca(), "version", None), False,
                       "chosen by the user") if config.mcpu else llvm_mca.model_for(uarch))
    osa = ModelChoice("OSACA", config.osaca_arch, None, False, "chosen by the user") if config.osaca_arch \
        else osaca.model_for(uarch)
    return mca, osa


def llvm_mca_predict(blocks, mcpu: str, iterations: int = 100) -> list[float | None]:
    """Cycles per experiment copy from the newest llvm-mca (:mod:`pmsolve.anica.predictors.llvm_mca`:
    all blocks in one call); None for blocks it cannot predict, or everywhere without llvm-mca."""
    from pmsolve.anica.predictors.llvm_mca import LlvmMcaPredictor, find_llvm_mca

    if find_llvm_mca() is None:
        return [None] * len(blocks)
    return _per_copy(LlvmMcaPredictor(mcpu, iterations=iterations), blocks)[0]


def osaca_predict(blocks, arch: str) -> tuple[list[float | None], list[str]]:
    """Cycles per experiment copy from OSACA (:mod:`pmsolve.anica.predictors.osaca`: its Python
    API in a worker, optimal port pressure and loop-carried dependencies), and the errors of the
    blocks it could not predict (e.g. instruction forms its model lacks)."""
    import importlib.util

    if importlib.util.find_spec("osaca") is None:
        return [None] * len(blocks), []
    from pmsolve.anica.predictors.osaca import OsacaPredictor

    predictor = OsacaPredictor(arch)
    try:
        return _per_copy(predictor, blocks)
    finally:
        predictor.close()


# ---------------------------------------------------------------------------- the job

def _say(msg: str, quiet: bool) -> None:
    if not quiet:
        print(f"pmsolve: {msg}", file=sys.stderr, flush=True)


def run(config: JobConfig, *, quiet: bool = False) -> JobReport:
    from pmsolve.harness.hardware import available

    reason = None if config.simulated else available()
    if reason is None and not config.simulated:
        return _run_hardware(config, quiet)
    return _run_simulated(config, quiet, reason or "requested")


def _progress(event) -> None:
    print(event, file=sys.stderr, flush=True)


def _infer(oracle, schemes, r_max, config: JobConfig, quiet: bool):
    from pmsolve.infer.pmevo import PmevoOptions, infer

    # the job's own configuration (the paper's algorithm with a light volume weight, a generation
    # cap and patience); its held-out experiments are the check on unseen experiments
    options = PmevoOptions(ports=config.ports, instructions=list(schemes), preset="paper", volume_weight=0.01,
                           budget_seconds=None, population=config.population, generations=config.generations,
                           seed=config.seed, patience=config.patience, local_search=config.local_search,
                           r_max=r_max, workers=config.workers, check_experiments=0)
    return infer(oracle, options, state=config.checkpoint, progress=None if quiet else _progress)


def _accuracy(preds: dict[str, list[float | None]], measured: list[float]) -> dict[str, dict]:
    from pmsolve.metrics import accuracy

    out = {}
    for name, vals in preds.items():
        pairs = [(p, m) for p, m in zip(vals, measured) if p is not None and p > 0 and m == m]
        if len(pairs) >= 3:
            acc = accuracy([p for p, _ in pairs], [m for _, m in pairs])
            out[name] = acc.as_dict()
    return out


def _run_hardware(config: JobConfig, quiet: bool) -> JobReport:
    from pmsolve.harness.hardware import HardwareOracle, Settings
    from pmsolve.harness.peak import detect_peak_ipc
    from pmsolve.harness.cache import CachingOracle
    from pmsolve.throughput import evaluate_many

    t0 = time.monotonic()
    seconds: dict[str, float] = {}
    done = [0]

    def progress(idx: int, e: Experiment) -> None:
        done[0] += 1
        if done[0] % 250 == 0:
            _say(f"measured {done[0]} experiments ({time.monotonic() - t0:.0f} s)", quiet)

    hw = HardwareOracle(list(config.schemes), Settings(), progress=progress)
    store_path = str(config.store or default_store())
    oracle = CachingOracle.in_sqlite(hw, store_path)
    cpu = host_cpu()
    _say(f"measuring {len(config.schemes)} schemes on {cpu.describe()} (store {store_path})", quiet)
    try:
        singles = dict(zip(config.schemes, oracle.measure([Experiment({s: 1}) for s in config.schemes])))
        fast = sorted((s for s in config.schemes if singles[s] < 0.9), key=singles.get)[:8]
        peak = detect_peak_ipc(oracle, singles, fast, starts=3, max_size=12)
        _say(f"{peak}", quiet)
        seconds["singles+peak"] = time.monotonic() - t0
        t1 = time.monotonic()
        result = _infer(oracle, config.schemes, peak.ipc, config, quiet)
        seconds["pmevo (measure+infer)"] = time.monotonic() - t1
        t2 = time.monotonic()
        held = held_out_experiments(config.schemes, config.held_out, config.seed + 1)
        measured = oracle.measure(held)
        seconds["held-out measurement"] = time.monotonic() - t2
    finally:
        hw.close()
    t3 = time.monotonic()
    blocks = [_block(hw.catalogue, e) for e in held]
    mca, osa = comparison_models(config, cpu.microarchitecture)
    preds: dict[str, list[float | None]] = {
        "pmsolve (PMEvo)": [float(x) for x in evaluate_many(result.mapping, held, r_max=peak.ipc)]}
    notes = []
    if mca.model:
        preds[mca.label()] = llvm_mca_predict(blocks, mca.model)
    if osa.model:
        osaca, osaca_errors = osaca_predict(blocks, osa.model)
        preds[osa.label()] = osaca
        if osaca_errors:
            notes.append(f"OSACA could not predict {len(osaca_errors)} held-out experiment(s), left out of its "
                         f"accuracy (e.g. {osaca_errors[0]})")
    for choice in (mca, osa):
        notes.append(f"{choice.label()}: {choice.why}" + ("" if choice.own or not choice.model else " (fallback)"))
    seconds["predictors"] = time.monotonic() - t3
    seconds["total"] = time.monotonic() - t0
    notes.insert(0, f"{oracle.measured} experiments measured now, {oracle.reused} answered from {store_path}")
    noisy = [r for r in oracle.store.all() if r.noisy]
    notes.append(f"{len(noisy)} stored experiment(s) kept a spread above {Settings().noise_tolerance:.0%}")
    ref = reference_singles(cpu.microarchitecture)
    reference = ({"source": ref.source, "values": {s: v for s, v in ref.values.items() if s in singles}}
                 if ref else None)
    return JobReport(f"{cpu.describe()} (hardware)", result.mapping, singles, peak.ipc, str(peak.experiment), held,
                     measured, preds, _accuracy(preds, measured), seconds, result.table(), notes, cpu=cpu.as_json(),
                     models=[mca.as_json(), osa.as_json()], reference=reference)


def _run_simulated(config: JobConfig, quiet: bool, reason: str) -> JobReport:
    from pmsolve.data import example_mapping
    from pmsolve.harness.peak import detect_peak_ipc
    from pmsolve.harness.simulated import SimulatedOracle
    from pmsolve.throughput import evaluate_many

    _say(f"no hardware measurement ({reason}): running the simulated example (bundled Zen+ mapping, "
         "1 % noise, R_max 5)", quiet)
    t0 = time.monotonic()
    truth = example_mapping()
    oracle = SimulatedOracle(truth, r_max=5, noise=0.01, seed=config.seed)
    schemes = list(truth.instructions)
    singles = dict(zip(schemes, oracle.measure([Experiment({s: 1}) for s in schemes])))
    peak = detect_peak_ipc(oracle, singles)
    result = _infer(oracle, schemes, peak.ipc, config, quiet)
    held = held_out_experiments(schemes, config.held_out, config.seed + 1)
    measured = oracle.measure(held)
    preds = {"pmsolve (PMEvo)": [float(x) for x in evaluate_many(result.mapping, held, r_max=peak.ipc)],
             "ground truth": [float(x) for x in evaluate_many(truth, held, r_max=5)]}
    return JobReport("simulated Zen+ example", result.mapping, singles, peak.ipc, str(peak.experiment), held,
                     measured, preds, _accuracy(preds, measured), {"total": time.monotonic() - t0},
                     result.table(), [f"simulated because: {reason}"])


def render(report: JobReport) -> str:
    lines = [f"machine: {report.machine}", "", report.pmevo_table, ""]
    lines.append(f"peak IPC (R_max): {report.peak_ipc:.2f}  ({report.peak_experiment})")
    ref = report.reference
    known = [(s, v, ref["values"][s]) for s, v in report.singles.items() if ref and s in ref["values"]]
    if known:
        lines += ["", f"singles vs published values for this microarchitecture (cycles per instruction; "
                      f"{ref['source'].split(';')[0]}):"]
        lines += [f"  {s:<26} {v:7.3f}   published {k:5.3f}   {100 * (v - k) / k:+5.1f} %" for s, v, k in known]
    elif report.cpu is not None:
        lines += ["", "no published singles are shipped for this microarchitecture"]
    lines += ["", f"held-out: {len(report.held_out)} measured 4-5-instruction experiments"]
    lines.append(f"  {'predictor':<28} {'MAPE':>8} {'Kendall τ':>10} {'Pearson':>8}")
    for name, acc in report.accuracy.items():
        lines.append(f"  {name:<28} {100 * acc['mape']:7.1f}% {acc['kendall_tau_b']:10.3f} {acc['pearson']:8.3f}")
    lines += ["", "time: " + ", ".join(f"{k} {v:.0f} s" for k, v in report.seconds.items())]
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)
