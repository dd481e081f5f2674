"""Is this machine quiet enough to measure? The gate's reference kernels sampled in this process.

Kept apart from :mod:`pmsolve.harness.hardware` because it runs an executor in-process, and the
worker (``python -m pmsolve.harness.worker``) must not be imported by the package it runs from.
"""

from __future__ import annotations

import statistics
from typing import Iterator, Sequence

from pmsolve.harness.assemble import assemble
from pmsolve.harness.hardware import CALIBRATION, REFERENCE_COUNT, REFERENCES, HardwareOracle, HarnessSettings
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
    n = {name: ex.iterations(name, settings.target_ticks) for name in support}
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
