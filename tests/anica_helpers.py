"""Genuine small predictors for the AnICA tests: port-mapping throughput (pmsolve.throughput).

``slow_bsf`` differs from ``base`` only in ``bsf``/``bsr`` (on one port, 3 µops instead of 1),
so every real inconsistency between them involves a bit scan: the planted bug AnICA must find
(cf. the llvm-mca Zen+ bit-scan model bug of sec. 8.3). ``crashy`` fails on ``imul`` blocks.
"""

from __future__ import annotations

from typing import Sequence

from pmsolve.anica.block import Block
from pmsolve.anica.predictors.base import Prediction
from pmsolve.model import Experiment, PortMapping
from pmsolve.throughput import evaluate_many

SCHEMES = ["add_r64_r64", "add_r64_i8", "sub_r64_r64", "adc_r64_r64", "add_m64_r64", "mov_r64_m64",
           "mov_m64_r64", "imul_r64_r64", "shl_r64_cl", "bsf_r64_r64", "bsr_r64_r64", "bsf_r32_r32",
           "vaddpd_ymm_ymm_ymm", "vmulpd_ymm_ymm_ymm", "lea_r64_m", "popcnt_r64_r64"]
PORTS = ["0", "1", "2", "3", "L", "S", "F0", "F1"]
#: µop counts for the domain's log-size feature (the rest count as one µop)
UOPS = {"add_r64_r64": 1, "add_m64_r64": 4, "bsf_r64_r64": 6, "bsr_r64_r64": 6, "bsf_r32_r32": 6,
        "imul_r64_r64": 1, "mov_r64_m64": 1, "mov_m64_r64": 1}


def make_universe():
    """The AnICA universe over SCHEMES (the catalogue's forms, UOPS as µop counts)."""
    from pmsolve.anica.domain import Form, Universe
    from pmsolve.isa import load_catalogue

    cat = load_catalogue()
    return Universe([Form(cat[n]) for n in SCHEMES if n in cat], UOPS)


def _mapping(slow_bsf: bool) -> PortMapping:
    alu = ("0", "1", "2", "3")
    u: dict[str, list] = {}
    for s in SCHEMES:
        if s.startswith(("bsf", "bsr")):
            u[s] = [(("0",), 3)] if slow_bsf else [(alu, 1)]
        elif s.startswith(("vaddpd", "vmulpd")):
            u[s] = [(("F0", "F1"), 1)]
        elif s == "imul_r64_r64":
            u[s] = [(("1",), 1)]
        elif s == "add_m64_r64":
            u[s] = [(("L",), 1), (alu, 1), (("S",), 1)]
        elif s == "mov_r64_m64":
            u[s] = [(("L",), 1)]
        elif s == "mov_m64_r64":
            u[s] = [(("S",), 1)]
        else:
            u[s] = [(alu, 1)]
    return PortMapping(PORTS, u)


class MappingPredictor:
    def __init__(self, name: str, mapping: PortMapping, crash_on: str | None = None, error_text: str = ""):
        self._name, self.mapping, self.crash_on, self.error_text = name, mapping, crash_on, error_text

    @property
    def name(self) -> str:
        return self._name

    def predict(self, blocks: Sequence[Block]) -> list[Prediction]:
        out: list[Prediction | None] = [None] * len(blocks)
        exps, where = [], []
        for k, b in enumerate(blocks):
            names = [i.scheme for i in b.insns]
            if self.crash_on and self.crash_on in names:
                out[k] = Prediction(None, f"crash: {self.error_text or 'unsupported'}")
            elif any(n not in self.mapping.uops for n in names):
                out[k] = Prediction(None, "unsupported: not in mapping")
            else:
                exps.append(Experiment(names))
                where.append(k)
        if exps:
            for k, v in zip(where, evaluate_many(self.mapping, exps)):
                out[k] = Prediction(float(v))
        return out  # type: ignore[return-value]


def base() -> MappingPredictor:
    return MappingPredictor("map:base", _mapping(False))


def slow_bsf() -> MappingPredictor:
    return MappingPredictor("map:slow-bsf", _mapping(True))


def crashy() -> MappingPredictor:
    return MappingPredictor("map:crashy", _mapping(False), crash_on="imul_r64_r64",
                            error_text="<script>alert('x')</script> & <b>bold</b>")
