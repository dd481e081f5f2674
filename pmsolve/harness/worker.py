"""The measurement worker: a separate process that executes generated machine code in-process.

Run as ``python -m pmsolve.harness.worker``; the parent (:mod:`pmsolve.harness.worker_client`) talks
to it with pickled messages over stdin/stdout. Code is copied into an executable anonymous
mmap that stays alive until the next ``load``, and called through ctypes. A kernel that faults
(SIGILL, SIGSEGV) kills only this process; the parent turns that into an error for the
experiment it was measuring and starts a fresh worker.

Timing (App. D, adapted): every kernel returns the TSC ticks of its loop; a sample is
``(T(2n) - T(n)) / n`` ticks per iteration, converted to core cycles with an *interleaved*
calibration: a chain of dependent ``add`` (latency 1) measured the same way right before and
after each round, so frequency changes between rounds cancel out.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import pickle
import struct
import sys
import time
from typing import Any, BinaryIO

KERNEL = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p)
MEMORY_SIZE = 1 << 16
CAL_CHAIN = 200  # dependent adds per calibration iteration
PAIRS = 2        # runs of T(n) and T(2n) per sample (their minima are used)
WARM_GAP = 0.001  # seconds without a variant after which a round warms again (timing version 7)


def fill_memory(buf: mmap.mmap) -> None:
    """Operand slots and vector initial values: the double 1.0000001 everywhere (no NaN, no
    denormal, no zero whatever the element type); reset before every experiment."""
    pattern = struct.pack("<d", 1.0000001)
    buf[:] = pattern * (len(buf) // len(pattern))


class Executor:
    def __init__(self) -> None:
        self.code: mmap.mmap | None = None
        self.funcs: dict[str, Any] = {}
        self.memory = mmap.mmap(-1, MEMORY_SIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        self.mem_addr = ctypes.addressof(ctypes.c_char.from_buffer(self.memory))
        fill_memory(self.memory)

    def load(self, code: bytes, symbols: dict[str, int]) -> None:
        size = max(mmap.PAGESIZE, -(-len(code) // mmap.PAGESIZE) * mmap.PAGESIZE)
        m = mmap.mmap(-1, size, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        m[:len(code)] = code
        base = ctypes.addressof(ctypes.c_char.from_buffer(m))
        funcs = {name: KERNEL(base + off) for name, off in symbols.items()}
        self.funcs = funcs
        old, self.code = self.code, m  # keep the new map alive; the old one is no longer called
        del old

    def run(self, name: str, n: int) -> int:
        return self.funcs[name](n, self.mem_addr)

    def diff(self, name: str, n: int, pairs: int = PAIRS) -> float:
        """Ticks per iteration from min T(2n) − min T(n) over ``pairs`` interleaved runs of each.
        An interruption only ever adds ticks to a run, so the minima are the undisturbed times;
        a single T(2n) − T(n) is too small whenever T(n) was interrupted (seen: 0.09 cycles for
        a 0.25-cycle kernel under load). Non-positive differences are repeated a few times."""
        for _ in range(8):
            t1 = t2 = None
            for _ in range(pairs):
                a, b = self.run(name, n), self.run(name, 2 * n)
                t1 = a if t1 is None else min(t1, a)
                t2 = b if t2 is None else min(t2, b)
            if t2 > t1:
                return (t2 - t1) / n
        raise RuntimeError(f"{name}: T(2n) never exceeded T(n) in 8 tries (n={n})")

    def iterations(self, name: str, target_ticks: int) -> int:
        self.run(name, 16)  # warm up code, data and branch predictors
        per = max(1.0, self.run(name, 64) / 64)
        return max(8, int(target_ticks / per) + 1)

    def calibrate(self, cal: str, n: int) -> float:
        """TSC ticks per core cycle: the dependent add chain runs CAL_CHAIN cycles per iteration.
        An interruption inflates T(n) or T(2n) and so shifts the difference either way: take
        the median of three differences."""
        return sorted(self.diff(cal, n) for _ in range(3))[1] / CAL_CHAIN

    def measure(self, req: dict) -> dict:
        """Rounds of samples for every unroll variant, interleaved with calibration, each round
        between two samples of the reference kernels (the first and last are returned; deciding
        what is noise is the parent's job).

        With ``req["gate"]`` (``baseline``: each reference's undisturbed cycles per instruction,
        ``tol``, ``seconds``) a round counts only when the references before *and* after it ran
        within ``tol`` of their baselines: until then the worker waits for a quiet moment (a
        disturbed reference is sampled again) and a round that ends disturbed is taken again.
        Bursts from outside a VM are often shorter than a second and come many times a second
        (on a 2-vCPU Zen 3 VM, 75 % of 0.2-ms reference samples were disturbed for minutes, with
        quiet stretches of 20-200 ms between), so waiting for a quiet stretch at the level of one
        round (about a millisecond) measures where retrying whole experiments would not. After
        ``seconds`` the remaining rounds are taken as they come and counted in ``disturbed``.

        With ``req["warm_runs"]`` every variant first runs that many timed lengths untimed, so
        that the round's calibrations and the variant run at one clock: on Intel cores AVX-512
        (and heavy AVX2) code lowers the clock a fraction of a millisecond after it starts
        (frequency licences) while the calibration chain alone runs at the higher one; without
        it a 0.5-cycle vaddpd zmm measured 0.49-0.82 on an Ice Lake-SP VM, with 20 runs 0.500.
        Rounds follow each other within a millisecond, well inside the ~2 ms a core keeps its
        licence after the last wide instruction (Travis Downs, "Gathering Intel on Intel AVX-512
        Transitions", 2020): so only the first round, and a round after the gate waited, warms
        the variants and takes an opening calibration of its own; the others open with the
        closing calibration of the round before, taken right after its variants at their clock.
        With ``req["separate_rounds"]`` every round warms and calibrates on its own (the rule
        before timing version 5, which spent about half the worker's time on it).

        With ``req["clock_tol"]`` (timing version 7) a round counts only when the clock held
        still: its opening and closing calibrations agree within ``clock_tol``, and so do the
        calibrations before and after the reference kernels that judge it. A clock that changes
        between a calibration and the kernel it converts shifts every kernel after the change by
        one factor (on an Emerald Rapids VM the core stepped between 3.0 and 4.0 GHz every few
        milliseconds: references read 1.33x slow or 0.75x fast, the gate waited 94 % of the
        time for "quiet" references although nothing shared the core, and a round that spanned
        a step still counted when the references after it agreed with its closing calibration).
        Such a round is taken again at once, without the wait that disturbed references start;
        the next round opens with the latest calibration, and warms again only when no variant
        ran for ``WARM_GAP`` seconds."""
        fill_memory(self.memory)
        cal, refs_req = req["calibration"], req["references"]
        target = req["target_ticks"]
        gate = req.get("gate")
        warm = req.get("warm_runs", 0)
        clock = req.get("clock_tol")
        short = req.get("reference_ticks", target)   # the calibration chain and the reference kernels
        n_cal = self.iterations(cal, short)
        n_ref = {name: self.iterations(name, short) for name, _ in refs_req}
        variants = [(name, copies, self.iterations(name, target)) for name, copies in req["variants"]]
        samples: dict[str, list[float]] = {name: [] for name, _, _ in variants}
        ratios: list[float] = []
        latest = 0.0   # the most recent calibration (timing version 7 opens rounds with it)

        def steady(a: float, b: float) -> bool:
            return clock is None or abs(b / a - 1) <= clock

        def ref_sample(ratio: float | None = None) -> tuple[dict[str, float], bool]:
            """The references converted by ``ratio`` (a fresh calibration when None), and whether
            the clock held still while they ran (always, without ``clock_tol``)."""
            nonlocal latest
            r = self.calibrate(cal, n_cal) if ratio is None else ratio
            s = {name: self.diff(name, n_ref[name]) / r / count for name, count in refs_req}
            if clock is None:
                return s, True
            latest = self.calibrate(cal, n_cal)
            return s, steady(r, latest)

        def quiet(s: dict[str, float]) -> bool:
            return all(v <= gate["baseline"][n] * (1 + gate["tol"]) for n, v in s.items() if n in gate["baseline"])

        deadline = time.monotonic() + (gate["seconds"] if gate else 0.0)
        waits = discarded = disturbed = clock_changes = 0
        waited = 0.0   # seconds spent on waits and on rounds taken again: the job reports its share
        separate = req.get("separate_rounds", False)
        opening: float | None = None   # the closing calibration of the round just before, if it counted
        ran = -1.0      # when variants last ran (timing version 7)
        first, still = ref_sample()
        before = first
        while len(ratios) < req["rounds"]:
            started = time.monotonic()
            waiting = gate is not None and started < deadline
            if waiting and not (still and quiet(before)):
                if still:
                    waits += 1
                    opening = None
                else:
                    clock_changes += 1
                before, still = ref_sample()
                first = before
                waited += time.monotonic() - started
                continue
            if clock is not None:
                cold = separate or started - ran > WARM_GAP
                opening = None if cold else latest
            if opening is None or separate:
                if warm:   # settle the clock at this code's licence; a run of 0 iterations would wrap r15
                    for name, _, n in variants:
                        self.run(name, n * warm)
                c1 = self.calibrate(cal, n_cal)
            else:
                c1 = opening
            raw = [(name, copies, self.diff(name, n)) for name, copies, n in variants]
            c2 = self.calibrate(cal, n_cal)
            ran = time.monotonic()
            # the round's closing calibration converts the references after it: a calibration of
            # their own made rounds a fifth longer, and a longer round finds fewer quiet
            # stretches (interleaved on the Zen 4 VM: 1.4-2.4x the experiments per second, the
            # same agreement between two passes)
            after, still = ref_sample(c2)
            held = steady(c1, c2) and still
            if gate is not None and not (held and quiet(before) and quiet(after)):
                if waiting and time.monotonic() < deadline:
                    discarded += 1
                    clock_changes += not held
                    before = after   # disturbed: the gate waits next, and the round after warms
                    waited += time.monotonic() - started
                    continue
                disturbed += 1
            opening = c2
            ratio = (c1 + c2) / 2
            ratios.append(ratio)
            for name, copies, ticks in raw:
                samples[name].append(ticks / ratio / copies)
            before = after
        gate_out = {"waits": waits, "discarded": discarded, "disturbed": disturbed, "waited": round(waited, 6)}
        if clock is not None:
            gate_out["clock"] = clock_changes
        return {"samples": samples, "ratios": ratios, "reference": [first, before], "gate": gate_out}


def _send(out: BinaryIO, msg: object) -> None:
    pickle.dump(msg, out, protocol=pickle.HIGHEST_PROTOCOL)
    out.flush()


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    ex = Executor()
    _send(out, {"ok": True, "pid": os.getpid()})
    while True:
        try:
            req = pickle.load(inp)
        except EOFError:
            return
        op = req.get("op")
        try:
            if op == "load":
                ex.load(req["code"], req["symbols"])
                _send(out, {"ok": True})
            elif op == "measure":
                _send(out, {"ok": True, **ex.measure(req)})
            elif op == "run":  # one raw call (tests, debugging)
                _send(out, {"ok": True, "ticks": ex.run(req["name"], req["n"])})
            elif op == "quit":
                _send(out, {"ok": True})
                return
            else:
                _send(out, {"ok": False, "error": f"unknown request {op!r}"})
        except Exception as exc:  # a Python-level failure is reported, a fault kills us
            _send(out, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})


def main() -> None:
    cpu = os.environ.get("PMSOLVE_WORKER_CPU")
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {int(cpu)})
        except (OSError, ValueError):
            pass
    # the pickle channel owns the real stdout; stray prints go to stderr
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    try:
        serve(sys.stdin.buffer, out)
    except (BrokenPipeError, ConnectionResetError):
        os._exit(0)   # the parent is gone (killed, or stopped reading): nothing to report to


if __name__ == "__main__":
    main()
