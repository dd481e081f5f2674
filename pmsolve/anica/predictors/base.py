"""The predictor interface AnICA compares (sec. 8.1): blocks in, cycles per iteration out.

A prediction either has a positive number of cycles per block iteration (inverse throughput
of the block as a loop body) or an error saying why not. Predictors never raise for one bad
block: crashes, timeouts, unsupported instructions and unparsable output become errors on the
blocks concerned, so a campaign records them and goes on (AnICA counts a crash as interesting).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

from pmsolve.anica.block import Block


@dataclass(frozen=True)
class Prediction:
    """``cycles`` per block iteration, or ``None`` with ``error`` set (e.g. ``"crash: ..."``,
    ``"timeout"``, ``"garbage: ..."``, ``"unsupported: ..."``)."""

    cycles: float | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.cycles is not None and self.error is None


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
