"""The predictor interface AnICA compares (sec. 8.1): blocks in, cycles per iteration out.

A prediction either has a positive number of cycles per block iteration (inverse throughput
of the block as a loop body) or an error saying why not. Predictors never raise for one bad
block: crashes, timeouts, unsupported instructions and unparsable output become errors on the
blocks concerned, so a campaign records them and goes on (AnICA counts a crash as interesting).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence, runtime_checkable

from pmsolve.predictors.block import Block


@dataclass(frozen=True)
class Prediction:
    """``cycles`` per block iteration, or ``None`` with ``error`` set (e.g. ``"crash: ..."``,
    ``"timeout"``, ``"garbage: ..."``, ``"unsupported: ..."``)."""

    cycles: float | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.cycles is not None and self.error is None


@dataclass(frozen=True)
class ModelChoice:
    """Which model of a comparison tool stands in for a CPU: ``model`` (an ``-mcpu`` or OSACA
    architecture, None when none fits), the tool's ``version``, whether it is the CPU's ``own``
    model or only the nearest one, and ``why`` in words (shown in reports and ``--json``)."""

    tool: str
    model: str | None
    version: int | str | None
    own: bool
    why: str

    def label(self) -> str:
        tool = f"{self.tool}-{self.version}" if self.tool == "llvm-mca" and self.version else self.tool
        return f"{tool} {self.model}" if self.model else f"{tool} (none)"

    def to_json(self) -> dict:
        return {"tool": self.tool, "model": self.model, "version": self.version, "own": self.own,
                "fallback": not self.own, "why": self.why}


@runtime_checkable
class Predictor(Protocol):
    """Anything that predicts basic-block throughput.

    ``name`` is a stable identifier that includes everything the answers depend on (e.g.
    ``llvm-mca:znver3``); caches key on it. ``predict`` answers a batch in order, one
    :class:`Prediction` per block, and batches so tools can be called once per many blocks.
    """

    @property
    def name(self) -> str: ...

    def predict(self, blocks: Sequence[Block]) -> list[Prediction]: ...


#: the prefixes of :attr:`Prediction.error`, by what went wrong
ERROR_KINDS = ("crash", "timeout", "garbage", "unsupported")


def error_kind(error: str | None) -> str | None:
    """``"timeout"`` for ``"timeout: llvm-mca took ..."``; None for no error."""
    if error is None:
        return None
    head = error.split(":", 1)[0].strip()
    return head if head in ERROR_KINDS else "crash"


def checked(value: object, who: str) -> Prediction:
    """A tool's raw answer as a Prediction: a positive finite number, else ``garbage``."""
    if isinstance(value, Prediction):
        return value
    try:
        cycles = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return Prediction(None, f"garbage: {who} answered {value!r:.80}")
    if not (cycles > 0 and cycles != float("inf")):
        return Prediction(None, f"garbage: {who} answered {cycles!r} cycles")
    return Prediction(cycles)


def bisect_failures(blocks: Sequence[Block],
                    call: Callable[[Sequence[Block]], tuple[list[Prediction], str | None]],
                    batch: int | None = None) -> list[Prediction]:
    """Answer blocks with a tool that fails as a whole when one block is bad.

    ``call(batch)`` returns the batch's predictions, or a failure message for the call. A failed
    batch is split in halves until each bad block stands alone and gets the message, so one
    crash costs O(log n) extra calls and the rest of the batch is still answered. ``batch``
    caps how many blocks go into one call (default: all)."""
    if batch is not None and len(blocks) > batch:
        return [p for k in range(0, len(blocks), batch) for p in bisect_failures(blocks[k:k + batch], call)]
    out: list[Prediction] = [Prediction(None, "garbage: no answer")] * len(blocks)

    def solve(idx: list[int]) -> None:
        preds, failure = call([blocks[i] for i in idx])
        if failure is None and len(preds) == len(idx):
            for i, p in zip(idx, preds):
                out[i] = p
            return
        failure = failure or f"garbage: {len(preds)} answers for {len(idx)} blocks"
        if len(idx) == 1:
            out[idx[0]] = Prediction(None, failure)
            return
        half = len(idx) // 2
        solve(idx[:half])
        solve(idx[half:])

    if blocks:
        solve(list(range(len(blocks))))
    return out
