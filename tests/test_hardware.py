"""The hardware oracle on this machine, and peak-IPC detection.

Timing on a shared VM is noisy, so nothing here bounds speed and measured values are checked
only by structure (ratios between instructions, linearity, fast vs slow) inside generous
bands. A comparison that fails is measured again, up to :data:`TRIES` times, after pauses
that grow to several seconds (:func:`attempts`): outside bursts (a busy SMT sibling outside the
VM) slow throughput-bound kernels for seconds to minutes (DESIGN.md §4), and a burst that spans
an oracle's baseline is not flagged by its reference kernels. The oracle's own noise handling
has already retried each experiment by then.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import statistics
import subprocess
import threading
import time
from dataclasses import replace

import pytest

from pmsolve.errors import MeasurementError, ValidationError
from pmsolve.harness.assemble import assemble, elf_text, source
from pmsolve.harness.hardware import (BASELINE_SAMPLES, FLOOR_MARGIN, REFERENCES, STALE_AFTER, HardwareOracle,
                                      HardwareMeasurement, HarnessSettings, _faster, available, densest, floored,
                                      LOWER_AFTER, lower_baseline, published_speeds, relative_spread, settled_baseline,
                                      steadiest_fastest)
from pmsolve.harness.references import MachineState, machine_state, pinned, reference_bursts, steadiness
from pmsolve.harness.cpu import host_cpu, reference_singles
from pmsolve.harness.peak import detect_peak_ipc
from pmsolve.harness.simulated import SimulatedOracle
from pmsolve.harness.cache import CachingOracle
from pmsolve.harness.store import MeasurementStore
from pmsolve.harness.worker import Executor
from pmsolve.isa import Catalogue, load_catalogue
from pmsolve.isa.scheme import Operand, Scheme
from pmsolve.model import Experiment, PortMapping

needs_hw = pytest.mark.skipif(available() is not None, reason=str(available()))
FAST = HarnessSettings(rounds=3, max_retries=2)
NAMES = ["add_r64_r64", "imul_r64_r64", "mov_r64_m64", "vaddpd_ymm_ymm_ymm", "vmulpd_ymm_ymm_ymm"]


@pytest.fixture(scope="module")
def hw():
    if available() is not None:
        pytest.skip(str(available()))
    with HardwareOracle(NAMES, FAST) as oracle:
        yield oracle


TRIES = 5


def attempts(tries: int = TRIES):
    """Attempt numbers, with a pause before each retry (1, 2, 4, 8 s): a burst gets time to end."""
    for k in range(tries):
        if k:
            time.sleep(2 ** (k - 1))
        yield k


def holds(check, hw, experiments, tries=TRIES):
    """Measure and test a structural fact; re-measure (fresh results) up to ``tries`` times."""
    for _ in attempts(tries):
        vals = hw.measure(experiments)
        if check(*vals):
            return vals
    pytest.fail(f"structural fact did not hold in {tries} measurements: {experiments} -> {vals}")


@needs_hw
def test_facts_that_hold_on_every_cpu(hw):
    e = {n: Experiment({n: 1}) for n in NAMES}
    # independent instances are never slower than a dependent chain of the same instruction
    for name, chain in (("imul_r64_r64", "imulq %rbx, %rbx"), ("add_r64_r64", "addq %rbx, %rbx"),
                        ("vaddpd_ymm_ymm_ymm", "vaddpd %ymm1, %ymm1, %ymm1")):
        for _ in attempts():
            [indep] = hw.measure([e[name]])
            [dep] = hw.measure_blocks([[chain]])
            if indep <= dep.cycles * 1.02:
                break
        else:
            pytest.fail(f"{name}: independent instances {indep:.3f} cycles, dependent chain {dep.cycles:.3f}")
    # the calibration counts core cycles: a chain runs at its latency, 1 for add, 3 for imul on every
    # x86 core since Nehalem and Zen (a chain of `add $1` is not one: Golden Cove folds it at rename)
    for chain, latency in (("addq %rbx, %rbx", 1.0), ("imulq %rbx, %rbx", 3.0)):
        for _ in attempts():
            [dep] = hw.measure_blocks([[chain]])
            if abs(dep.cycles - latency) <= 0.03 * latency:
                break
        else:
            pytest.fail(f"{chain}: a dependent chain {dep.cycles:.3f} cycles per instruction, not {latency}")
    # a pair is never faster than its slower member
    for a, b in (("add_r64_r64", "imul_r64_r64"), ("vaddpd_ymm_ymm_ymm", "vmulpd_ymm_ymm_ymm"),
                 ("mov_r64_m64", "add_r64_r64")):
        holds(lambda x, y, xy: xy >= 0.98 * max(x, y), hw, [e[a], e[b], Experiment({a: 1, b: 1})])
    # linearity: twice the instructions, twice the cycles
    holds(lambda one, two: 1.7 < two / one < 2.3, hw, [e["imul_r64_r64"], Experiment({"imul_r64_r64": 2})])


@needs_hw
def test_the_next_batch_is_prepared_off_the_worker_cpu_while_one_is_measured():
    """Batches are generated and assembled one ahead, in a thread that must run off the worker's
    CPU (scheduled there it would disturb the timed runs), and each batch is measured with its
    own code: several batches of two give each experiment its own throughput."""
    exps = [Experiment({n: 1}) for n in NAMES] + [Experiment({"imul_r64_r64": 2})]
    with HardwareOracle(NAMES, FAST, batch=2) as oracle:
        seen = []
        prepare = oracle._prepare

        def recording(chunk, kernels_of):
            seen.append((threading.current_thread() is threading.main_thread(), os.sched_getaffinity(0)))
            return prepare(chunk, kernels_of)

        oracle._prepare = recording
        # facts of every x86 core this has run on (imul 0.33-1.0 for ALU adds at 0.17-0.25, vaddpd ymm
        # 0.5): a batch measured with another batch's code breaks them
        vals = holds(lambda add, imul, load, vadd, vmul, imul2: imul > 1.5 * add and vadd > 1.5 * add
                     and 1.7 < imul2 / imul < 2.3,
                     oracle, exps)
    assert len(seen) >= 3 and not any(main for main, _ in seen)
    if len(os.sched_getaffinity(0)) > 1:      # with one CPU there is nowhere else to go
        assert all(oracle.cpu not in cpus for _, cpus in seen), seen
    assert all(v > 0 for v in vals)


@needs_hw
def test_the_parent_is_back_on_every_cpu_when_a_measure_call_ends():
    """Off the worker's CPU only while measuring: PMEvo's search processes, forked from the job
    after its measurements, inherit the parent's CPUs, and kept off the worker's they searched
    on one CPU of two (2026-11-29)."""
    before = os.sched_getaffinity(0)
    with HardwareOracle(NAMES[:1], FAST) as oracle:
        during = []
        prepare = oracle._prepare
        oracle._prepare = lambda chunk, kernels_of: (during.append(os.sched_getaffinity(0)), prepare(chunk, kernels_of))[1]
        oracle.measure([Experiment({NAMES[0]: 1})])
        after = os.sched_getaffinity(0)
        off = oracle.off_worker_cpus()
    assert after == before
    if len(before) > 1:
        assert during and all(oracle.cpu not in cpus for cpus in during)
        assert off == before - {oracle.cpu}


@needs_hw
def test_singles_are_reproducible_within_their_spread(hw):
    exps = [Experiment({n: 1}) for n in NAMES]
    for _ in attempts():
        first = dict(hw.measure_iter(exps))
        again = dict(hw.measure_iter(exps))
        off = [(NAMES[i], first[i].cycles, again[i].cycles) for i in first
               if abs(first[i].cycles - again[i].cycles) > max(first[i].spread, again[i].spread,
                                                                FAST.noise_tolerance) * first[i].cycles]
        if not off:
            return
    pytest.fail(f"singles differ between two measurements by more than their spread: {off}")


@needs_hw
def test_singles_match_the_published_values_of_this_microarchitecture():
    """Each single against its published figure, as the entry says to compare it: within 15 %, or
    (a figure its own benchmark bounds: uops.info's read-modify-writes) not slower by more than
    15 %. A scheme is wrong when none of its attempts agrees: noise mostly slows a kernel down,
    but a disturbed ``T(n)`` run can make one look faster (``vpcompressd zmm, zmm`` once read 0.76
    for 1.33 in CI beside a heavy neighbour, 2026-12-01, and 1.333 in every probe after), so
    neither the fastest nor the slowest attempt decides alone, and a scheme is wrong only when
    three undisturbed attempts or more all disagree; a harness that lays memory out badly
    (written slots on separate cache lines: every read-modify-write at 1.00 cycle, issue 39) or
    mis-assembles a form is off in all of them."""
    cpu = host_cpu()
    ref = reference_singles(cpu.microarchitecture)
    if ref is None:
        pytest.skip(f"no published singles are shipped for {cpu.describe()}")
    cat = load_catalogue()
    names = [n for n in ref.values if n in cat and cat.status(cat[n]) == "offered" and ref.comparison(n) != "none"]
    assert len(names) >= 8, f"the {ref.microarchitecture} table names schemes the catalogue does not offer"

    def wrong(n: str, v: float) -> bool:
        ratio = v / ref.values[n]
        return ratio > 1.15 or (ref.comparison(n) == "within" and ratio < 1 / 1.15)

    # The gate's reference kernels are yardsticks where the table has their scheme, or one on the
    # same pipes: a measurement taken while one ran slower than published was disturbed, flagged
    # or not (a neighbour that slows the load pipes for hours also slows the gate's baseline). The
    # ALU kernel counts too: with a neighbour on the core (ALU kernel at 0.38 where 0.25 is
    # published) GPR loads read 0.39 for 0.33.
    yard = published_speeds(ref)

    def undisturbed(r) -> bool:
        return r.ok and not r.noisy and all(d[k] <= 1.1 * v for d in r.reference for k, v in yard.items())

    # No reference kernel loads three times per cycle, and twice in CI (Zen 3, 2026-11-27) GPR
    # loads read 0.38-0.39 for 0.33 beside reference samples within 10 % of their published speeds.
    # So the machine is also judged by a GPR load kernel written here (not by the harness's
    # allocation, which it would then share), before and after each attempt, on the worker's CPU.
    probe = {}
    if "mov_r64_m64" in ref.values:
        regs = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12"]
        probe = {"probe_gpr_load": "\n".join(f"    movq {8 * (i % 64)}(%r14), %{regs[i % len(regs)]}"
                                              for i in range(200))}
    machine = dict(yard, **{k: ref.values["mov_r64_m64"] for k in probe})
    bursts = reference_bursts(FAST, 200, probe)
    seen: list[dict[str, float]] = []

    def machine_at_speed(cpu: int) -> bool:
        with pinned(cpu):
            seen.append({k: round(statistics.median(v), 3) for k, v in next(bursts).items() if k in machine})
        return all(seen[-1][k] <= 1.1 * v for k, v in machine.items())

    seen_values: dict[str, list[float]] = {}   # each scheme's undisturbed attempts

    def nearest(n: str) -> float:
        return min(seen_values[n], key=lambda v: abs(v / ref.values[n] - 1))

    off: dict[str, tuple] = {}
    deadline = time.monotonic() + 300    # in a noisy hour each noisy single waits out its retries
    with HardwareOracle(names, FAST) as oracle:
        for k in itertools.count():    # retries until the deadline: a judgement needs three attempts
            if k:
                time.sleep(min(2 ** (k - 1), 8))
            if time.monotonic() > deadline:
                break
            if not machine_at_speed(oracle.cpu):
                continue
            todo = [n for n in names if n not in seen_values or wrong(n, nearest(n))]
            got: dict[str, float] = {}
            for i, r in oracle.measure_iter([Experiment({n: 1}) for n in todo]):
                if undisturbed(r):    # a disturbed calibration can make a kernel look faster too
                    got[todo[i]] = min(r.cycles, got.get(todo[i], r.cycles))
                if time.monotonic() > deadline:
                    break
            if not machine_at_speed(oracle.cpu):
                continue
            for n, v in got.items():
                seen_values.setdefault(n, []).append(v)
            off = {n: (round(nearest(n), 3), ref.values[n], ref.comparison(n)) for n in seen_values
                   if wrong(n, nearest(n))}
            if not off and len(seen_values) == len(names):
                return
            if off and all(len(seen_values[n]) >= 3 for n in off):
                break
    if not seen_values:
        pytest.skip(f"the machine ran slower than published around every attempt: medians {seen[-2:]} against {machine}")
    if not off and len(seen_values) < len(names) / 2:
        pytest.skip(f"too disturbed to judge: {len(names) - len(seen_values)} of {len(names)} singles never measured "
                    f"with the reference kernels at their published speeds")
    # Beside a heavy neighbour (CI, 2026-12-02) every attempt of vpcompressd zmm, zmm and vcvtpd2ps
    # xmm, ymm read slow (2.22 for 1.33, 0.785 for 0.67) with the reference kernels at speed, and
    # 1.334 and 0.667 in a probe minutes later: a scheme is judged on three attempts or more; a
    # harness that measures a form wrong is off in every attempt, and a quiet machine gives three in
    # seconds.
    judged = {n: v for n, v in off.items() if len(seen_values[n]) >= 3}
    if off and not judged:
        pytest.skip(f"too disturbed to judge: {sorted(off)} off in fewer than three undisturbed attempts each: {off}")
    assert not judged, f"measured vs published ({ref.source.split(',')[0]}): {judged}"


@needs_hw
def test_result_details(hw):
    [(_, r)] = list(hw.measure_iter([Experiment({"mov_r64_m64": 1})]))
    assert r.ok and r.cycles > 0 and r.spread is not None and r.attempts >= 1
    assert len(r.samples) == 3 and all(len(v) == FAST.rounds for v in r.samples.values())   # 40/80/200
    assert len(r.reference) == 2 and set(r.reference[0]) == set(REFERENCES) and all(x > 0 for x in r.ratios)
    medians = {n: sorted(v)[len(v) // 2] for n, v in r.samples.items()}
    steady = [n for n, v in r.samples.items() if relative_spread(v) <= FAST.noise_tolerance]
    assert r.cycles == min(medians[n] for n in steady or medians)   # the fastest steady variant


def undisturbed(samples: list[float], tolerance: float, band: float = 0.05) -> float:
    """:func:`steadiness` of the samples within ``band`` of the lower quartile (0 when fewer than a
    third are): the kernel's speeds when nothing slowed it, modes a few per cent apart included."""
    floor = sorted(samples)[len(samples) // 4]
    near = [x for x in samples if x <= (1 + band) * floor]
    return steadiness(near, tolerance) if 3 * len(near) >= len(samples) else 0.0


def slowed(samples: list[float], tolerance: float) -> bool:
    """Whether the samples off the median by more than a quarter of ``tolerance`` are mostly slow
    ones (twice as many as fast): a neighbour slowing some, where modes lie on both sides."""
    mid = statistics.median(samples)
    slow = sum(x > (1 + tolerance / 4) * mid for x in samples)
    return slow > 0 and slow >= 2 * sum(x < (1 - tolerance / 4) * mid for x in samples)


def test_a_variant_that_switches_speeds_is_not_reported_over_a_steady_one():
    """Without hardware: run z2's store (Zen 4, 2026-11-29) read ``add [m64], r64`` at 0.445 from
    a u40 variant whose rounds switched between 0.444, 0.500 and 0.61, while u80 and u200 held
    0.4996; published 0.53-0.56, probe 0.500. The steady variants are reported; with none
    steady, the fastest median as before; a steady overhead-bound variant still loses to a
    faster steady one."""
    z2 = {"u40": [0.4445, 0.6105, 0.5001, 0.4454, 0.4453], "u80": [0.4996, 0.4996, 0.4996, 0.4992, 0.4995],
          "u200": [0.4997, 0.4996, 0.4998, 0.4996, 0.4995]}
    assert steadiest_fastest(z2, 0.02) == "u80"
    assert steadiest_fastest({"u40": z2["u40"], "u80": [0.5, 0.6, 0.45, 0.5, 0.7]}, 0.02) == "u40"
    assert steadiest_fastest({"u40": [0.52] * 5, "u80": [0.51] * 5, "u200": z2["u40"]}, 0.02) == "u80"
    e = Experiment({"add_m64_r64": 1})
    fast_noisy = HardwareMeasurement(e, 0.445, noisy=True)
    clean = HardwareMeasurement(e, 0.500)
    assert _faster(fast_noisy, clean, 2).cycles == 0.500 and _faster(clean, fast_noisy, 2).cycles == 0.500
    assert _faster(HardwareMeasurement(e, 0.52, noisy=True), fast_noisy, 3).cycles == 0.445
    assert _faster(HardwareMeasurement(e, None, error="x"), clean, 3).cycles == 0.500


def test_only_slow_samples_are_left_out_of_the_steadiness_of_a_kernel():
    """Without hardware: a kernel at one speed with a third of its samples slowed by 10-60 % is
    steady; one of four speeds 1.2 % apart (the Zen 4's GPR loads) is not, slowed or not."""
    rng = random.Random(1)
    one = [0.5 * (1 + rng.uniform(0.1, 0.6)) if k % 3 == 0 else 0.5 for k in range(300)]
    modes = [(0.329, 0.333, 0.337, 0.341)[k % 4] for k in range(300)]
    assert steadiness(one, 0.02) < 0.7 <= undisturbed(one, 0.02)
    assert undisturbed(modes, 0.02) < 0.3 and undisturbed([x * 1.3 if k % 3 == 0 else x for k, x in enumerate(modes)], 0.02) < 0.3
    assert slowed([0.5 * (1 + rng.uniform(0.01, 0.04)) if k % 3 == 0 else 0.5 for k in range(300)], 0.02)
    assert not slowed(modes, 0.02) and not slowed([0.5] * 300, 0.02)


@needs_hw
def test_every_reference_kernel_runs_at_one_speed_when_undisturbed():
    """The gate holds each reference sample against one baseline within ``noise_tolerance``, so
    a kernel whose undisturbed speed scatters over several values looks disturbed whenever its
    baseline sits at one of them (GPR loads at three per cycle on the Zen 4 VM: four modes over
    0.329-0.341 cycles; in an `--all` run a baseline lowered to 0.330 flagged the 0.337 samples
    and cost runs of eight experiments retried to no end). Each reference is judged by its best
    share, over bursts of 300 samples, of samples within a quarter of the tolerance of their
    median, and held against the steadiest one's. Outside bursts do not hit all references
    alike (on this VM many slow the ALU, load and store kernels by 10-90 % and leave the FP one
    alone), so each gets its own quiet moment: a steady kernel reaches a high share in one, a
    kernel of several speeds in none (with mov r64, m64 as the load reference: at best 0.70 in
    eight bursts against 0.93 for the others). Only the samples within 5 % of a burst's lower
    quartile are judged (:func:`undisturbed`): a burst only slows a kernel, and on the Ice Lake-SP
    VM a neighbour kept a third of the load kernel's samples 5-60 % slow through every burst of a
    CI run (0.77 at best against 0.94) while the others had quiet moments; the Zen 4's modes lie
    within 4 % of each other and stay in."""
    best = {name: 0.0 for name in REFERENCES}
    at_best: dict[str, list[float]] = {}
    ref = reference_singles(host_cpu().microarchitecture)
    published = published_speeds(ref) if ref is not None else {}
    neighbour: dict[str, float] = {}   # a kernel's median far slower than published in some burst
    for _, samples in zip(attempts(8), reference_bursts(FAST)):   # bursts last seconds to minutes: wait up to two
        neighbour.update(MachineState({n: statistics.median(v) for n, v in samples.items()}, published).slow())
        for name, v in samples.items():
            share = undisturbed(v, FAST.noise_tolerance)
            if share >= best[name]:
                best[name], at_best[name] = share, v
        if max(best.values()) >= 0.7 and min(best.values()) >= max(best.values()) - 0.15:
            break
    # A kernel that never reached 0.7 in two minutes is either of several speeds or was disturbed
    # all along (on the Zen 3 VM a neighbour slowed the ALU, load and store kernels by 20-60 % for
    # hours and left the FP one alone): nothing to judge. The Zen 4 case (GPR loads at best 0.70
    # against 0.93) still reaches 0.7 and fails the comparison.
    if min(best.values()) < 0.7:
        pytest.skip(f"a reference kernel had no quiet moment within 8 bursts: {best}")
    low = [n for n in REFERENCES if best[n] < max(best.values()) - 0.15]
    if low and (neighbour or all(slowed(at_best[n], FAST.noise_tolerance) for n in low)):
        # the Ice Lake-SP VM beside a neighbour (2026-11-28): the load kernel 0.77, then the FP one
        # 0.80-0.81, against 0.94-0.98 for the others; on a quiet hour all were 0.88-0.95
        pytest.skip(f"a neighbour slowed the reference kernels ({neighbour}): not judged: {best}")
    assert not low, best


@needs_hw
def test_the_machine_state_the_job_checks_first_times_every_reference_kernel():
    """The job's check before measuring: one burst of every reference kernel on the worker's CPU,
    in core cycles per instruction. Noise only slows a kernel down, so none may run more than 10 %
    faster than its published figure (a calibration that converted ticks to cycles wrongly would)."""
    ref = reference_singles(host_cpu().microarchitecture)
    if ref is None:
        pytest.skip(f"no published singles are shipped for {host_cpu().describe()}")
    state = machine_state(FAST, ref, HardwareOracle(NAMES[:1], FAST).cpu)
    assert set(state.medians) == set(REFERENCES) and state.published == published_speeds(ref)
    assert all(state.medians[k] >= 0.9 * v for k, v in state.published.items()), state.describe()


@needs_hw
def test_rounds_wait_for_quiet_references_and_a_round_let_through_flags_the_measurement():
    """The gate of the worker: with a baseline no reference can reach, every round waits its
    ``gate_seconds`` and is then let through disturbed, which flags the experiment; with one every
    reference reaches, nothing waits and nothing is flagged."""
    settings = replace(FAST, gate_seconds=0.05, max_retries=0, deferred_passes=0)
    e = Experiment({"add_r64_r64": 1})
    with HardwareOracle(NAMES, settings) as oracle:
        oracle.measure([e])
        oracle.baseline = {n: 1e-3 for n in REFERENCES}
        t0, before = time.perf_counter(), oracle.waited
        [(_, r)] = list(oracle.measure_iter([e]))
        assert time.perf_counter() - t0 >= settings.gate_seconds
        assert r.noisy and r.gate["disturbed"] == settings.rounds and r.gate["waits"] > 0
        assert r.gate["waited"] >= 0.8 * settings.gate_seconds and oracle.waited - before == pytest.approx(r.gate["waited"])
        oracle.baseline = {n: 1e3 for n in REFERENCES}
        [(_, r)] = list(oracle.measure_iter([e]))
        assert r.gate["waits"] == 0 and r.gate["disturbed"] == 0   # rounds across a clock step are taken again


class _Clockwork(Executor):
    """A worker whose kernels take exact cycles (TSC ticks = a call overhead + n · cycles · 2.5),
    so :meth:`Executor.measure` runs without machine code."""

    CYCLES = {"cal": 200, "ref_alu": 50, "k_u3": 12}    # per iteration: 200 dependent adds, ...

    def __init__(self):
        super().__init__()
        self.calibrations = 0

    def run(self, name: str, n: int) -> int:
        return 1000 + round(n * self.CYCLES[name] * 2.5)

    def calibrate(self, cal: str, n: int) -> float:
        self.calibrations += 1
        return super().calibrate(cal, n)


def test_a_round_calibrates_before_and_after_and_its_references_use_the_closing_calibration():
    """Cycles come out exact from ticks (2.5 per cycle): 12 cycles per iteration of 3 copies are
    4 cycles per copy, 50 per 200 reference instructions 0.25. The references after a round are
    converted with its closing calibration (a calibration of their own made every round a fifth
    longer, and fewer rounds fit between outside bursts), and a round that follows a counted one
    opens with that round's closing calibration (timing version 5): one for the first reference
    sample, two for the first round, one for each after it; two per round when separate."""
    req = {"calibration": "cal", "references": [("ref_alu", 200)], "variants": [("k_u3", 3)],
           "rounds": 5, "target_ticks": 40_000}
    for separate, calibrations in ((False, 1 + 1 + 5), (True, 1 + 2 * 5)):
        ex = _Clockwork()
        out = ex.measure({**req, "separate_rounds": separate})
        assert out["samples"]["k_u3"] == pytest.approx([4.0] * 5, rel=1e-6)
        assert all(r["ref_alu"] == pytest.approx(0.25, rel=1e-6) for r in out["reference"])
        assert out["ratios"] == pytest.approx([2.5] * 5, rel=1e-6)
        assert ex.calibrations == calibrations


class _Log(_Clockwork):
    def __init__(self):
        super().__init__()
        self.log: list[tuple[str, int]] = []

    def run(self, name: str, n: int) -> int:
        self.log.append((name, n))
        return super().run(name, n)


def test_the_variants_run_untimed_before_the_first_round_so_calibration_and_kernel_share_a_clock():
    """On Intel AVX-512 cores the clock drops a fraction of a millisecond after 512-bit code
    starts; a round timed right away calibrated at one clock and ran at another (vaddpd zmm
    0.49-0.82 for 0.5 on an Ice Lake-SP VM). The first round must open with ``warm_runs`` timed
    lengths of every variant, before its opening calibration; the rounds after it follow within
    a millisecond and keep the clock (timing version 5), unless rounds are asked to be separate;
    no warm-up when not asked."""
    req = {"calibration": "cal", "references": [("ref_alu", 200)], "variants": [("k_u3", 3)],
           "rounds": 3, "target_ticks": 40_000, "warm_runs": 20}
    for every, times in ((False, 1), (True, 3)):
        ex = _Log()
        out = ex.measure({**req, "separate_rounds": every})
        n = ex.iterations("k_u3", 40_000)
        warm = [i for i, (name, k) in enumerate(ex.log) if k == 20 * n and name == "k_u3"]
        assert len(warm) == times and ex.log[warm[0] + 1][0] == "cal"
        assert out["samples"]["k_u3"] == pytest.approx([4.0] * 3, rel=1e-6)
    cold = _Log()
    cold.measure({**req, "warm_runs": 0})
    assert not any(k >= 20 * n for _, k in cold.log)
    assert all(k > 0 for _, k in cold.log)      # a kernel run for 0 iterations loops 2^64 times


def test_the_calibration_and_references_run_for_their_own_shorter_time_and_the_variants_for_theirs():
    """The calibration chain and the reference kernels took 60 % of the worker's time when they
    ran as long as the variants (40,000 ticks): they run ``reference_ticks``, the variants
    ``target_ticks``, and the values stay exact. A store keyed before the field existed (the
    same ticks for both) keeps its key; the shorter rule is a key of its own."""
    req = {"calibration": "cal", "references": [("ref_alu", 200)], "variants": [("k_u3", 3)],
           "rounds": 3, "target_ticks": 40_000, "reference_ticks": 10_000}
    ex = _Log()
    out = ex.measure(req)
    timed = {name: {k for nm, k in ex.log if nm == name} - {16, 64} for name in ("cal", "ref_alu", "k_u3")}
    for name, ticks in (("cal", 10_000), ("ref_alu", 10_000), ("k_u3", 40_000)):   # 16, 64: iterations' probes
        n = ex.iterations(name, ticks)
        assert timed[name] == {n, 2 * n}
    assert out["samples"]["k_u3"] == pytest.approx([4.0] * 3, rel=1e-6)
    assert all(r["ref_alu"] == pytest.approx(0.25, rel=1e-6) for r in out["reference"])
    old = HarnessSettings(reference_ticks=HarnessSettings().target_ticks).key()
    assert "reference_ticks" not in old and old.keys() | {"reference_ticks"} == HarnessSettings().key().keys()


class _Burst(_Log):
    """The reference kernel runs twice as slow for its ``slow``-th sample (counted from 1)."""

    def __init__(self, slow: int):
        super().__init__()
        self.slow, self.samples = slow, 0

    def diff(self, name: str, n: int, pairs: int = 2) -> float:
        if name == "ref_alu":
            self.samples += 1
            if self.samples == self.slow:
                return 2 * super().diff(name, n, pairs)
        return super().diff(name, n, pairs)


def test_a_round_after_the_gate_waited_warms_the_variants_again():
    """While the gate waits only the reference kernels run, for as long as a burst lasts: the
    core may leave the code's licence, so the next round warms and calibrates again; a round
    discarded for disturbed references after it is followed by such a wait."""
    req = {"calibration": "cal", "references": [("ref_alu", 200)], "variants": [("k_u3", 3)],
           "rounds": 3, "target_ticks": 40_000, "warm_runs": 20,
           "gate": {"baseline": {"ref_alu": 0.25}, "tol": 0.02, "seconds": 5.0}}
    for slow, waits, warmed in ((1, 1, 1), (2, 1, 2), (3, 1, 2), (99, 0, 1)):
        ex = _Burst(slow)
        out = ex.measure(req)
        n = ex.iterations("k_u3", 40_000)
        assert out["gate"]["waits"] == waits
        assert (out["gate"]["waited"] > 0) == (slow != 99), "the time spent waiting and taking rounds again"
        assert sum(1 for name, k in ex.log if k == 20 * n and name == "k_u3") == warmed
        assert out["samples"]["k_u3"] == pytest.approx([4.0] * 3, rel=1e-6)


class _Stepping(_Log):
    """The core's clock drops by a quarter (2.5 to 3.333 TSC ticks per cycle, as 4.0 to 3.0 GHz)
    after its ``at``-th kernel run, as an Emerald Rapids VM's stepped every few milliseconds."""

    def __init__(self, at: int):
        super().__init__()
        self.at, self.runs = at, 0

    def run(self, name: str, n: int) -> int:
        self.runs += 1
        self.log.append((name, n))
        per = 2.5 if self.runs <= self.at else 2.5 * 4 / 3
        return 1000 + round(n * self.CYCLES[name] * per)


_GATED = {"calibration": "cal", "references": [("ref_alu", 200)], "variants": [("k_u3", 3)],
          "rounds": 3, "target_ticks": 40_000, "warm_runs": 20,
          "gate": {"baseline": {"ref_alu": 0.25}, "tol": 0.02, "seconds": 5.0}}


def _runs_before_round(k: int) -> int:
    """Kernel runs a _Stepping worker makes before the variants of its ``k``-th round (from 1):
    iterations' probes (2 per kernel), the reference sample (a calibration, the reference, a
    calibration), the first round's warm-up and opening calibration; 3 diffs of 2 pairs (12 runs)
    per calibration, 4 runs per kernel difference."""
    probes, cal, ref, variant = 6, 12, 4, 4
    first = probes + (cal + ref + cal) + 1 + cal
    return first + (k - 1) * (variant + cal + ref + cal)


def test_a_round_whose_calibrations_disagree_is_taken_again_and_its_values_stay_exact():
    """Timing version 7: a clock step inside a round (between its opening calibration and its
    variants) converts the variants with a ratio from another clock; the references after it
    share the closing calibration's clock and look quiet, so the gate alone counted the round
    (a 4-cycle kernel read 3.5 to 4.67 on the Emerald Rapids). The round must be taken again,
    counted as a clock change, not as a wait for a neighbour, and every value must come out exact."""
    for k in (1, 2, 3):
        ex = _Stepping(_runs_before_round(k))
        out = ex.measure({**_GATED, "clock_tol": 0.01})
        assert out["samples"]["k_u3"] == pytest.approx([4.0] * 3, rel=1e-6), k
        assert out["gate"]["clock"] == 1 and out["gate"]["waits"] == 0 and out["gate"]["discarded"] == 1
        assert all(r["ref_alu"] == pytest.approx(0.25, rel=1e-6) for r in out["reference"])
    old = _Stepping(6 + 12 + 4 + 1 + 12 + 4 + 12 + 4)   # version 6: no calibration after the references
    assert old.measure(_GATED)["samples"]["k_u3"][1] == pytest.approx(4.0 * 2 / (1 + 3 / 4)), "the rule before counts it"


def test_references_read_across_a_clock_step_are_sampled_again_without_a_wait():
    """A clock step between a calibration and the reference kernels makes them read a third
    slow although nothing shares the core: the gate waited for "quiet" references 94 % of the
    time on the Emerald Rapids VM. With ``clock_tol`` the references carry a calibration after
    them; a sample that spans a step is taken again at once (no wait, the variants not warmed
    again) and the round's values stay exact."""
    ex = _Stepping(6 + 12)     # right after the first reference sample's opening calibration
    out = ex.measure({**_GATED, "clock_tol": 0.01})
    assert out["gate"]["waits"] == 0 and out["gate"]["clock"] == 1
    assert out["samples"]["k_u3"] == pytest.approx([4.0] * 3, rel=1e-6)
    n = _Clockwork().iterations("k_u3", 40_000)
    assert sum(1 for name, k in ex.log if k == 20 * n and name == "k_u3") == 1
    old = _Stepping(6 + 12)
    assert old.measure(_GATED)["gate"]["waits"] == 1, "the rule before waits for a neighbour"


def test_zmm16_31_are_loaded_512_bits_wide_only_for_bodies_that_name_a_zmm_register():
    """One 512-bit instruction slows scalar memory code for a while on Ice Lake-SP (add [m64], r64
    0.77 instead of 0.53 cycles): the frame must not load zmm16-31 in full for other bodies."""
    from pmsolve.harness.assemble import _hi16
    plain, wide = _hi16("    addq %rax, 2048(%r14)"), _hi16("    vpaddd %zmm16, %zmm17, %zmm18")
    assert "zmm" not in plain and plain.count("%ymm") == 16
    assert wide.count("%zmm") == 16 and "%zmm31" in wide


def _fake(name: str, template: str, operands=()) -> Scheme:
    return Scheme(name=name, mnemonic=name, code="FAKE", template=template, operands=tuple(operands))


@needs_hw
def test_faults_become_errors_for_their_experiment():
    w64 = Operand("reg", "gpr", 64, False, True)
    fakes = [_fake("fake_sigill", "ud2"), _fake("fake_sigsegv", "movq 0x8, {0}", [w64]),
             _fake("fake_asm", "notaninstruction {0}", [w64])]
    cat = Catalogue(list(load_catalogue()) + fakes, None)
    with HardwareOracle(["add_r64_r64"] + [f.name for f in fakes], FAST, catalogue=cat, on_error="nan") as hw:
        exps = [Experiment({"fake_sigill": 1}), Experiment({"add_r64_r64": 1}), Experiment({"fake_sigsegv": 1}),
                Experiment({"fake_asm": 1}), Experiment({"add_r64_r64": 2})]
        results = dict(hw.measure_iter(exps))
        assert "SIGILL" in results[0].error
        assert "SIGSEGV" in results[2].error
        assert "GNU as" in results[3].error
        assert results[1].ok and results[4].ok            # the campaign went on
        vals = hw.measure(exps)
        assert vals[0] != vals[0] and vals[1] > 0
        hw.on_error = "raise"
        with pytest.raises(MeasurementError, match="SIGILL"):
            hw.measure(exps[:2])


@needs_hw
def test_store_reuses_hardware_measurements(tmp_path, hw):
    store = MeasurementStore(tmp_path / "hw.sqlite")
    exps = [Experiment({"add_r64_r64": 1}), Experiment({"imul_r64_r64": 1})]
    first = CachingOracle.in_sqlite(hw, store).measure(exps)
    again = CachingOracle.in_sqlite(hw, store)
    assert again.measure(exps) == first and again.measured == 0 and again.reused == 2
    row = store.rows()[0]
    assert set(row.samples) == {"variants", "reference", "ratios"} and row.spread is not None


def test_unknown_scheme_refused():
    if available() is not None:
        pytest.skip(str(available()))
    from pmsolve.errors import ValidationError

    with pytest.raises(ValidationError, match="adc_r64_r64"):
        HardwareOracle(["adc_r64_r64"])


def test_spread_ignores_one_outlier():
    assert relative_spread([1.0, 1.0, 1.01, 1.0, 5.0]) == pytest.approx(0.01)
    assert relative_spread([1.0, 1.1, 1.2]) == pytest.approx(0.2 / 1.1)


@needs_hw
def test_assembler_batches_kernels():
    code, symbols = assemble({"k_a": "    addq $1, %rax", "k_b": "    imulq %rbx, %rax"})
    assert set(symbols) == {"k_a", "k_b"} and symbols["k_a"] < symbols["k_b"] < len(code)


@pytest.mark.skipif(not (shutil.which("as") and shutil.which("objcopy") and shutil.which("nm")),
                    reason="GNU binutils missing")
def test_the_object_file_reader_agrees_with_objcopy_and_nm(tmp_path):
    """elf_text in place of ``objcopy -O binary --only-section=.text`` and ``nm --defined-only``:
    the same bytes, and the same offset for every kernel, on a batch of three frames."""
    kernels = {"k_a": "    addq $1, %rax", "k_b": "    vaddpd %ymm1, %ymm2, %ymm3\n    imulq %rbx, %rax",
               "k_c": "    movq %rax, 64(%r14)"}
    (tmp_path / "k.s").write_text(source(kernels))
    obj, binary = tmp_path / "k.o", tmp_path / "k.bin"
    subprocess.run(["as", "--64", "-o", str(obj), str(tmp_path / "k.s")], check=True)
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.text", str(obj), str(binary)], check=True)
    listed = subprocess.run(["nm", "--defined-only", str(obj)], check=True, capture_output=True, text=True).stdout
    by_nm = {p[2]: int(p[0], 16) for p in (line.split() for line in listed.splitlines()) if len(p) == 3 and p[1] in "tT"}
    code, symbols = elf_text(obj.read_bytes())
    assert code == binary.read_bytes() and len(code) > 100
    assert symbols == by_nm and set(kernels) <= set(symbols)
    assert assemble(kernels)[1] == {n: by_nm[n] for n in kernels}


def test_peak_ipc_on_a_simulated_machine():
    m = PortMapping.two_level([str(p) for p in range(8)],
                              {"alu": ["0", "1", "2", "3"], "vec": ["4", "5"], "ld": ["6", "7"], "mul": ["0"]})
    capped = SimulatedOracle(m, r_max=5)
    peak = detect_peak_ipc(capped)
    assert peak.ipc == pytest.approx(5.0)
    assert "mul" not in peak.experiment                    # tp 1: not a candidate
    free = detect_peak_ipc(SimulatedOracle(m))
    assert free.ipc == pytest.approx(8.0)                  # every port busy: 4 + 2 + 2
    with pytest.raises(Exception, match="below 1"):
        detect_peak_ipc(SimulatedOracle(m), candidates=["mul"])


class _OneFastGlitch(SimulatedOracle):
    """A simulated machine whose one layout of one experiment measures too fast, as a T(2n) − T(n)
    sample does when its T(n) run was disturbed (seen on a Zen 4: 1.00 cycles for a mix that runs
    at 1.40 in every other layout)."""

    glitch = Experiment({"alu": 4, "vec": 1})

    def measure(self, experiments):
        return [v * 0.7 if e == self.glitch else v for e, v in zip(experiments, super().measure(experiments))]


def test_peak_ipc_is_confirmed_in_other_layouts():
    m = PortMapping.two_level([str(p) for p in range(8)],
                              {"alu": ["0", "1", "2", "3"], "vec": ["4", "5"], "ld": ["6", "7"]})
    glitchy = _OneFastGlitch(m, r_max=4)
    assert detect_peak_ipc(glitchy, confirm=1).ipc == pytest.approx(5 / (1.25 * 0.7))   # the glitch wins
    peak = detect_peak_ipc(glitchy)
    assert peak.ipc == pytest.approx(4.0)
    with pytest.raises(ValidationError, match="confirm"):
        detect_peak_ipc(glitchy, confirm=0)


def test_a_baseline_taken_in_a_burst_is_lowered_by_undisturbed_references_not_by_one_glitch():
    burst, streak = {"alu": 0.364, "load": 0.333}, {}
    quiet = [[{"alu": 0.2513, "load": 0.333}, {"alu": 0.2511, "load": 0.340}],
             [{"alu": 0.2509, "load": 0.333}, {"alu": 0.2512, "load": 0.334}],
             [{"alu": 0.2515, "load": 0.333}, {"alu": 0.2510, "load": 0.333}]]
    for k, samples in enumerate(quiet, 1):
        lower_baseline(burst, samples, 0.02, streak)
        assert burst["alu"] == (0.364 if k < LOWER_AFTER else 0.2515)   # the slowest of the streak
    assert burst["load"] == 0.333 and streak == {}
    glitch = {"alu": 0.2512, "load": 0.333}
    lower_baseline(glitch, [{"alu": 0.2246, "load": 0.333}, {"alu": 0.2513, "load": 0.333}], 0.02, streak)
    assert glitch == {"alu": 0.2512, "load": 0.333}           # one fast sample: a calibration glitch


def test_one_measurement_whose_two_references_read_fast_does_not_lower_the_baseline():
    # Zen 5 VM, 2026-12-06: the ALU reference read 0.184 before and after one experiment (0.189
    # otherwise); lowered to it, the gate then waited 97 % of the time for rounds that fast
    base, streak = {"alu": 0.1887}, {}
    lower_baseline(base, [{"alu": 0.184}, {"alu": 0.184}], 0.02, streak)
    lower_baseline(base, [{"alu": 0.1889}, {"alu": 0.1891}], 0.02, streak)   # a normal one ends the streak
    lower_baseline(base, [{"alu": 0.184}, {"alu": 0.1845}], 0.02, streak)
    lower_baseline(base, [{"alu": 0.1843}, {"alu": 0.184}], 0.02, streak)
    assert base == {"alu": 0.1887}


def test_the_reference_baseline_is_the_densest_cluster_not_a_fast_glitch_or_a_burst():
    # ten samples of four independent adds in a noisy minute on the 2-vCPU VM
    noisy = [0.2246, 0.2313, 0.2511, 0.2512, 0.2514, 0.4101, 0.438, 0.4535, 0.4692, 0.4855]
    assert densest(noisy, 0.02) == 0.2511          # the second smallest (0.2313) was the old baseline
    assert densest([0.25, 0.3, 0.36, 0.37, 0.371], 0.02) == 0.37    # a burst through most: lower_baseline mends it
    assert densest([0.5], 0.02) == 0.5


# 20 samples of the integer-ALU and store references in a row (cycles per instruction) on the
# 2-vCPU Zen 4 VM, in a minute when 66 % of reference samples were disturbed
_QUIET = {"alu": [0.2515, 0.2512, 0.2511, 0.2512, 0.2512, 0.2473, 0.2513, 0.2516, 0.2495, 0.251, 0.2512, 0.3052,
                  0.3872, 0.2511, 0.2515, 0.2513, 0.2515, 0.2513, 0.2512, 0.2513],
          "store": [0.5005, 0.4995, 0.5, 0.4998, 0.4998, 0.4925, 0.5002, 0.5001, 0.4965, 0.4995, 0.5, 0.6608, 0.7049,
                    0.4993, 0.5005, 0.5007, 0.5002, 0.4998, 0.5002, 0.5002]}
_BURST = {"alu": [0.2513, 0.4243, 0.2915, 0.4823, 0.4412, 0.263, 0.5229, 0.4645, 0.3883, 0.3798, 0.4151, 0.4438,
                  0.3327, 0.3815, 0.3733, 0.3282, 0.3169, 0.3846, 0.377, 0.3589],
          "store": [0.5003, 0.7144, 0.6735, 0.8298, 0.7508, 0.754, 0.7961, 0.788, 0.833, 0.8177, 0.6817, 0.7445,
                    0.9727, 0.8128, 0.6942, 0.862, 0.7545, 0.7577, 0.8106, 0.7941]}


def _rows(cols: dict[str, list[float]]) -> list[dict[str, float]]:
    return [dict(zip(cols, vs)) for vs in zip(*cols.values())]


def test_a_baseline_is_taken_only_where_the_reference_samples_agree():
    quiet = settled_baseline(_rows(_QUIET), 0.01)
    assert quiet == {"alu": pytest.approx(0.2512, rel=0.01), "store": pytest.approx(0.5, rel=0.01)}
    # in the burst the densest alu sample is 0.3798, half as slow again: not a baseline
    assert densest(_BURST["alu"], 0.01) > 0.37
    assert settled_baseline(_rows(_BURST), 0.01) is None


class _Scripted:
    """A worker that answers baseline requests with given reference samples."""

    def __init__(self, rows):
        self.rows = iter(rows)
        self.proc = type("P", (), {"poll": staticmethod(lambda: None)})()

    def call(self, req, timeout=None):
        assert req["rounds"] == 0
        return {"reference": [next(self.rows)]}


def _scripted_samples(cols: dict[str, list[float]]) -> list[dict[str, float]]:
    return [{name: cols["alu" if "alu" in name else "store"][k] for name in REFERENCES} for k in range(20)]


@needs_hw
def test_a_baseline_is_not_retaken_in_a_burst_and_the_first_waits_for_agreeing_samples():
    assert BASELINE_SAMPLES == 20
    burst, quiet = _scripted_samples(_BURST), _scripted_samples(_QUIET)
    with HardwareOracle(NAMES, FAST) as oracle:
        oracle._loaded = symbols = {}
        oracle.floor = {}            # scripted Zen speeds: no CPU's published floor applies (an Emerald
        #                              Rapids' 0.17 for the ALU kernel capped 0.2512 at 0.187)
        oracle._worker = _Scripted(burst + quiet)
        first = oracle._baseline(b"", symbols)           # the burst's samples are passed over
        assert first["pmsolve_ref_alu"] == pytest.approx(0.2512, rel=0.01)
        oracle._noisy_in_a_row = STALE_AFTER             # a retake in a burst keeps what it had
        oracle._worker = _Scripted(burst)
        assert oracle._baseline(b"", symbols) == first and oracle._noisy_in_a_row == 0
        oracle._noisy_in_a_row = STALE_AFTER             # one where the samples agree replaces it
        oracle._worker = _Scripted([{n: 2 * v for n, v in s.items()} for s in quiet])
        assert oracle._baseline(b"", symbols)["pmsolve_ref_alu"] == pytest.approx(0.5024, rel=0.01)
        oracle._worker = None


@needs_hw
def test_a_baseline_is_never_far_slower_than_the_published_speeds():
    """Run q5 (Zen 3, 2026-11-27): the other SMT thread's steady load held the ALU kernel at
    0.47 cycles, its samples agreed, the baseline settled there and 145 singletons were measured
    at that speed unflagged. With the CPU's published speeds the baseline stays near them."""
    steady = [{n: 2 * v for n, v in s.items()} for s in _scripted_samples(_QUIET)]
    with HardwareOracle(NAMES, FAST) as oracle:
        oracle._loaded = symbols = {}
        oracle.floor = published_speeds(reference_singles("zen3"))
        oracle._worker = _Scripted(steady)
        base = oracle._baseline(b"", symbols)
        assert base["pmsolve_ref_alu"] == pytest.approx(0.25 * (1 + FLOOR_MARGIN))
        assert base["pmsolve_ref_store"] == pytest.approx(0.5 * (1 + FLOOR_MARGIN))
        oracle._worker = None
    assert floored({"alu": 0.2512, "fp": 0.9}, {"alu": 0.25}) == {"alu": 0.2512, "fp": 0.9}   # quiet, no figure
    with HardwareOracle(NAMES, FAST) as oracle:       # the oracle takes this CPU's figures, if shipped
        ref = reference_singles(oracle.machine.microarchitecture)
        assert oracle.floor == (published_speeds(ref) if ref else {})
    with HardwareOracle(NAMES, replace(FAST, gate_floor=False)) as oracle:
        assert oracle.floor == {}


@needs_hw
def test_mid_run_the_harness_waits_for_the_published_speeds_within_its_patience():
    """After STALE_AFTER noisy experiments in a row it looks at the references until their median
    is back near the published speeds (here after three slow looks), then takes the baseline again;
    without patience it takes it at once."""
    quiet = _scripted_samples(_QUIET)
    slow = [{n: 2 * v for n, v in s.items()} for s in quiet]
    for patience, rows, waits in ((60.0, slow * 3 + quiet + quiet, True), (0.0, quiet, False)):
        with HardwareOracle(NAMES, FAST, patience=patience) as oracle:
            oracle._loaded = symbols = {}
            oracle.floor, oracle.poll = published_speeds(reference_singles("zen3")), 0.0
            oracle.baseline = {n: 0.26 for n in REFERENCES}
            oracle._noisy_in_a_row = STALE_AFTER
            oracle._worker = worker = _Scripted(rows)
            base = oracle._baseline(b"", symbols)
            oracle._worker = None
        assert next(worker.rows, None) is None                    # every look taken, and no more
        assert base["pmsolve_ref_alu"] == pytest.approx(0.2512, rel=0.01)
        assert (oracle.waited > 0) == waits
