"""pmsolve's own predictor: the inverse throughput a port mapping implies for the block's schemes.

A port mapping sees a block as a multiset of instruction schemes (order, operands and
dependencies do not matter: the model of ch. 3 assumes independent instructions), so the
prediction is the exact bottleneck formula (Thm 5.2) of that multiset, capped from below by
``|block| / R_max`` when a front-end limit is given. Blocks carry catalogue scheme names; a
mapping named in another scheme (the explainable Zen+ mapping's iwho names, PMEvo's) is reached
through :mod:`pmsolve.isa.bridge`. A scheme the mapping lacks makes the block
``unsupported: ...``, never a silent zero. A mapping file with a ``models`` section (the main
job's and ``pmsolve infer explain``'s output) predicts its modelled schemes too
(:mod:`pmsolve.modelled`).
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path
from typing import Sequence

from pmsolve.errors import ValidationError
from pmsolve.isa.bridge import NAMINGS, detect_naming, translator
from pmsolve.model import Experiment, PortMapping
from pmsolve.predictors.base import Prediction
from pmsolve.predictors.block import Block
from pmsolve.modelled import ModelledMapping, load_model


class MappingPredictor:
    """``mapping:FILE[?r_max=5&names=explainable]`` — any mapping format pmsolve reads."""

    def __init__(self, mapping: PortMapping | ModelledMapping, *, r_max: float | None = None,
                 naming: str | None = None, label: str = "mapping"):
        if r_max is not None and not r_max > 0:
            raise ValidationError(f"mapping predictor: r_max must be positive, got {r_max}")
        if naming is not None and naming not in NAMINGS:
            raise ValidationError(f"mapping predictor: names={naming!r} is not one of {', '.join(NAMINGS)}")
        self.model = mapping if isinstance(mapping, ModelledMapping) else ModelledMapping(mapping)
        mapping = self.model
        self.r_max = r_max
        self.label = label
        self.naming = naming or detect_naming(mapping.instructions)
        self._known = set(mapping.instructions)
        self._translate = translator(mapping.instructions, "catalogue", self.naming)
        self._cache: dict[str, str | None] = {}

    @classmethod
    def from_file(cls, path: str | Path, *, r_max: float | None = None, naming: str | None = None) -> "MappingPredictor":
        path = Path(path)
        with warnings.catch_warnings():   # schemes without port usage are simply unsupported here
            warnings.simplefilter("ignore")
            mapping = load_model(path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
        return cls(mapping, r_max=r_max, naming=naming, label=f"mapping:{path.name}@{digest}")

    @property
    def name(self) -> str:
        return self.label + (f"?r_max={self.r_max:g}" if self.r_max is not None else "")

    def scheme(self, catalogue_name: str) -> str | None:
        """The mapping's name for a catalogue scheme (the name itself if the mapping has it)."""
        if catalogue_name not in self._cache:
            self._cache[catalogue_name] = (catalogue_name if catalogue_name in self._known
                                           else self._translate(catalogue_name))
        return self._cache[catalogue_name]

    def experiment(self, block: Block) -> Experiment | str:
        """The block as a multiset of the mapping's schemes, or the reason it has none."""
        names = []
        for insn in block.insns:
            if not insn.scheme:
                return (f"unsupported: {insn.asm.strip()!r} carries no scheme name, and a port mapping predicts "
                        f"from scheme names (give blocks with {{scheme, asm}} entries)")
            m = self.scheme(insn.scheme)
            if m is None:
                return (f"unsupported: scheme {insn.scheme!r} ({insn.asm.strip()!r}) has no counterpart "
                        f"in {self.label} ({self.naming} names)")
            names.append(m)
        return Experiment(names)

    def predict(self, blocks: Sequence[Block]) -> list[Prediction]:
        out = []
        for b in blocks:
            e = self.experiment(b)
            if isinstance(e, str):
                out.append(Prediction(None, e))
                continue
            out.append(Prediction(float(self.model.inverse_throughput(e, r_max=self.r_max))))
        return out
