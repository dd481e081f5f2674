"""Data shipped with the package: the bundled example mapping, published singles per CPU."""

from __future__ import annotations

import json
from importlib import resources
from pmsolve.formats import mapping_from_json

EXAMPLE_MAPPING = "zenplus_blocking.json"


def example_mapping():
    """The bundled example: Zen+ blocking instructions as inferred in dissertation Table 6.2."""
    text = resources.files(__name__).joinpath(EXAMPLE_MAPPING).read_text(encoding="utf-8")
    return mapping_from_json(json.loads(text), EXAMPLE_MAPPING)
