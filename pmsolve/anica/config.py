"""Campaign configuration: a TOML or JSON file with these sections (all keys optional)::

    [predictors]        a = "llvm-mca:znver3"      b = "osaca:ZEN3"
    [isa]               filter = ""                # catalogue filter, e.g. "extension=AVX*"
                        lock_variants = false      # add lock-prefixed forms of lockable schemes
                        uops = "llvm-mca:znver3"   # µop-count source: llvm-mca:CPU | file:PATH | none
                        filter_unsupported = true  # drop schemes a predictor fails on alone
    [interestingness]   mode = "relative"          threshold = 0.5
    [sampling]          block_size = 4             # max instructions of a sampled block
                        batch = 20                 # blocks sampled (and predicted) at once
    [generalization]    samples = 30  chunk = 10  orders = 3   witnesses = 3
    [budget]            discoveries = 150  seconds = 3600  samples = 0  patience = 0
    seed = 0            workers = 2

``samples`` per interestingness check is 100 in the dissertation; 30 by default here so that a
campaign fits a 2-core machine (documented deviation). Budget 0 means unlimited.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from pmsolve.errors import FormatError, ValidationError
from pmsolve.formats import parse_json_text, read_text_file

SECTIONS = {
    "predictors": {"a": "a", "b": "b"},
    "isa": {"filter": "isa_filter", "lock_variants": "lock_variants", "uops": "uops",
            "filter_unsupported": "filter_unsupported"},
    "interestingness": {"mode": "mode", "threshold": "threshold"},
    "sampling": {"block_size": "block_size", "batch": "batch"},
    "generalization": {"samples": "samples", "chunk": "chunk", "orders": "orders", "witnesses": "witnesses"},
    "budget": {"discoveries": "max_discoveries", "seconds": "max_seconds", "samples": "max_samples",
               "patience": "patience"},
}
TOP_LEVEL = {"seed": "seed", "workers": "workers"}


@dataclass(frozen=True)
class Config:
    a: str = "llvm-mca:znver3"
    b: str = "osaca:ZEN3"
    isa_filter: str = ""
    lock_variants: bool = False
    uops: str = "llvm-mca:znver3"
    filter_unsupported: bool = True
    mode: str = "relative"
    threshold: float = 0.5
    block_size: int = 4
    batch: int = 20
    samples: int = 30
    chunk: int = 10
    orders: int = 3
    witnesses: int = 3
    max_discoveries: int = 150
    max_seconds: float = 3600
    max_samples: int = 0
    patience: int = 0
    seed: int = 0
    workers: int = 2

    def __post_init__(self) -> None:
        for name in ("block_size", "batch", "samples", "chunk", "orders", "workers"):
            if int(getattr(self, name)) < 1:
                raise ValidationError(f"config: {name} must be ≥ 1, got {getattr(self, name)}")
        for name in ("max_discoveries", "max_seconds", "max_samples", "patience", "witnesses"):
            if getattr(self, name) < 0:
                raise ValidationError(f"config: {name} must be ≥ 0, got {getattr(self, name)}")
        if self.mode not in ("relative", "absolute"):
            raise ValidationError(f"config: interestingness mode must be relative or absolute, got {self.mode!r}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Config":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def replace(self, **kw: Any) -> "Config":
        d = self.to_json()
        d.update({k: v for k, v in kw.items() if v is not None})
        return Config(**d)


def parse(doc: Mapping[str, Any], where: str = "config") -> Config:
    """A config document (sections as above) -> Config, naming unknown keys."""
    kw: dict[str, Any] = {}
    types = {f.name: f.type for f in fields(Config)}
    if not isinstance(doc, Mapping):
        raise FormatError(f"{where}: a config is a table/object of sections, got a {type(doc).__name__}")
    for key, val in doc.items():
        if key in TOP_LEVEL:
            kw[TOP_LEVEL[key]] = val
        elif key in SECTIONS:
            if not isinstance(val, Mapping):
                raise FormatError(f"{where}: [{key}] must be a table/object")
            for k, v in val.items():
                if k not in SECTIONS[key]:
                    raise FormatError(f"{where}: unknown key {key}.{k}; known: {', '.join(SECTIONS[key])}")
                kw[SECTIONS[key][k]] = v
        else:
            raise FormatError(f"{where}: unknown section or key {key!r}; known: "
                              f"{', '.join(list(SECTIONS) + list(TOP_LEVEL))}")
    for k, v in kw.items():
        t = types[k]
        ok = (isinstance(v, bool) if t == "bool" else isinstance(v, str) if t == "str"
              else isinstance(v, (int, float)) and not isinstance(v, bool) if t == "float"
              else isinstance(v, int) and not isinstance(v, bool))
        if not ok:
            raise FormatError(f"{where}: {k} must be a {t}, got {v!r}")
        if t == "float" and not math.isfinite(v):
            raise FormatError(f"{where}: {k} must be a finite number, got {v!r}")
    return Config(**kw)


def load(path: str | Path) -> Config:
    path = Path(path)
    text = read_text_file(path, "campaign config")
    if path.suffix == ".json":
        return parse(parse_json_text(text, str(path)), str(path))
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FormatError(f"config {path}: {exc}") from None
    return parse(doc, str(path))
