"""Is this machine quiet enough to measure? The gate's reference kernels sampled in this process.

Kept apart from :mod:`pmsolve.harness.hardware` because it runs an executor in-process, and the
worker (``python -m pmsolve.harness.worker``) must not be imported by the package it runs from.
"""

from __future__ import annotations

import os
import statistics
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence

from pmsolve.harness.assemble import assemble
from pmsolve.harness.cpu import ReferenceSingles
from pmsolve.harness.hardware import (CALIBRATION, REFERENCE_COUNT, REFERENCES, HardwareOracle, HarnessSettings,
                                      published_speeds)
from pmsolve.harness.worker import Executor


def reference_bursts(settings: HarnessSettings, samples: int = 300,
                     probes: dict[str, str] | None = None) -> Iterator[dict[str, list[float]]]:
    """The gate's reference kernels sampled as the gate samples them, in this process (pin it
    first): per burst, ``samples`` readings per kernel in cycles per instruction, each converted
    by the calibration kernel timed just before it. For telling whether the machine is quiet
    (``benchmarks/reference_kernels.py``, ``tests/test_hardware.py``); endless, take what you need.
    ``probes`` adds kernels of the caller's own (name -> AT&T assembly, one instruction per line,
    memory at ``%r14``) for pipes no reference kernel fills, sampled the same way."""
    support = HardwareOracle(list(REFERENCES.values())[:1], settings).support_kernels()
    count = {name: REFERENCE_COUNT for name in REFERENCES}
    for name, text in (probes or {}).items():
        support[name] = text
        count[name] = len([line for line in text.splitlines() if line.strip()])
    ex = Executor()
    ex.load(*assemble(support))
    n = {name: ex.iterations(name, settings.reference_ticks) for name in support}
    while True:
        got: dict[str, list[float]] = {name: [] for name in count}
        for _ in range(samples):
            ratio = ex.calibrate(CALIBRATION, n[CALIBRATION])
            for name in count:
                got[name].append(ex.diff(name, n[name]) / ratio / count[name])
        yield got


def steadiness(samples: Sequence[float], tolerance: float) -> float:
    """The share of samples within a quarter of ``tolerance`` of their median: near 1 for a kernel
    that runs at one speed, low for one disturbed or of several speeds."""
    mid = statistics.median(samples)
    return sum(abs(x - mid) <= tolerance / 4 * mid for x in samples) / len(samples)


@dataclass(frozen=True)
class MachineState:
    """The reference kernels' medians in one burst beside this CPU's published figures. A kernel
    far slower than published means something shares the core (the other SMT thread, inside the
    VM or outside it): the gate then waits for quiet moments, and a job may take hours."""

    medians: dict[str, float]
    published: dict[str, float]

    def slow(self, tolerance: float = 0.1) -> dict[str, float]:
        """Kernel -> median over published, for the kernels more than ``tolerance`` slower."""
        return {k: self.medians[k] / v for k, v in self.published.items() if self.medians[k] > (1 + tolerance) * v}

    def describe(self) -> str:
        parts = [f"{k.removeprefix('pmsolve_ref_')} {self.medians[k]:.3f} for {v:g}" for k, v in self.published.items()]
        return ", ".join(parts) + " cycles per instruction"


@contextmanager
def pinned(cpu: int | None) -> Iterator[None]:
    """This process on ``cpu`` inside the block (where it may run there; else where it runs),
    back on its own CPUs after: a burst of kernels timed for the worker's CPU must run on it."""
    mine = os.sched_getaffinity(0)
    try:
        if cpu is not None:
            try:
                os.sched_setaffinity(0, {cpu})
            except OSError:     # not ours to run on: measured where this process runs
                pass
        yield
    finally:
        os.sched_setaffinity(0, mine)


def machine_state(settings: HarnessSettings, ref: ReferenceSingles, cpu: int | None = None,
                  samples: int = 200) -> MachineState:
    """One burst of the reference kernels on ``cpu`` (this process is pinned there meanwhile;
    about a second), judged against ``ref``'s published figures."""
    with pinned(cpu):
        burst = next(reference_bursts(settings, samples))
    return MachineState({k: statistics.median(v) for k, v in burst.items()}, published_speeds(ref))
