"""This CPU as a predictor: measure each concrete block as the loop body (the hardware oracle).

The block runs unrolled inside the measurement frame of :mod:`pmsolve.harness.hardware` in an
isolated worker: ``T(2n) - T(n)`` timing with interleaved clock calibration, the fastest of the
unroll variants' medians, re-measurement when reference kernels show outside noise; a fault
(SIGILL, SIGSEGV) or a kernel that never ends is an error for that block only. Blocks must use
the frame's conventions (memory at ``disp(%r14)``, ``r13``-``r15`` and ``rsp`` untouched), as the
AnICA sampler's blocks do; others are ``unsupported`` without running.

Measurements disturb each other, so :func:`~pmsolve.predictors.parallel.predict_many`
runs this predictor alone (``exclusive``), after the others. The name carries the machine
fingerprint, so cached answers are never taken for another machine's.
"""

from __future__ import annotations

import re
import threading
from typing import Sequence

from pmsolve.errors import ValidationError
from pmsolve.harness.hardware import HardwareOracle, HarnessSettings, available
from pmsolve.harness.store import machine_fingerprint
from pmsolve.predictors.base import Prediction
from pmsolve.predictors.block import Block


class HardwarePredictor:
    """``hardware[?rounds=5&noise_tolerance=0.02&timeout=60]`` — x86-64 Linux hosts with AVX."""

    max_workers = 1
    exclusive = True

    def __init__(self, *, rounds: int | None = None, noise_tolerance: float | None = None,
                 timeout: float = 60.0):
        reason = available()
        if reason:
            raise ValidationError(f"the hardware predictor is unavailable here: {reason}")
        kw = {k: v for k, v in (("rounds", rounds), ("noise_tolerance", noise_tolerance)) if v is not None}
        self.settings = HarnessSettings(**kw)
        self.oracle = HardwareOracle([], self.settings, on_error="nan", call_timeout=timeout)
        self.machine = machine_fingerprint()
        self._lock = threading.Lock()
        self.noisy = 0

    @property
    def name(self) -> str:
        extra = "&".join(f"{k}={getattr(self.settings, k)}" for k in ("rounds", "noise_tolerance")
                         if getattr(self.settings, k) != getattr(type(self.settings)(), k))
        return f"hardware:{self.machine}" + (f"?{extra}" if extra else "")

    def predict(self, blocks: Sequence[Block]) -> list[Prediction]:
        with self._lock:
            results = self.oracle.measure_blocks([b.lines for b in blocks])
        out = []
        for r in results:
            if r.ok:
                self.noisy += bool(r.noisy)
                out.append(Prediction(float(r.cycles)))
            else:
                err = r.error or "no measurement"
                kind = err.split(":", 1)[0]
                if "rejected" in err:   # keep the assembler's verdict, not its temporary file names
                    m = re.search(r"Error: ([^|]*)", err)
                    err = "unsupported: GNU as: " + (m.group(1).strip() if m else err)
                elif kind not in ("crash", "timeout", "garbage", "unsupported"):
                    err = "crash: " + err
                out.append(Prediction(None, err))
        return out

    def close(self) -> None:
        self.oracle.close()
