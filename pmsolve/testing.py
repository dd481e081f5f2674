"""Hypothesis strategies for port mappings and experiments, for property tests of your own code.

    from hypothesis import given
    from pmsolve.testing import mapping_and_experiment

    @given(mapping_and_experiment(max_ports=6))
    def test_my_predictor(pair):
        mapping, experiment = pair
        ...

`hypothesis` is an optional dependency (``pip install 'pmsolve[test]'``); importing this module
works without it, and the strategies say what is missing when called.
"""

from __future__ import annotations

from typing import Any

from pmsolve.errors import PmsolveError
from pmsolve.model import Experiment, PortMapping


def _st() -> Any:
    try:
        from hypothesis import strategies as st
    except ImportError as exc:  # an optional dependency, so the import is deferred
        raise PmsolveError("pmsolve.testing needs hypothesis: pip install hypothesis") from exc
    return st


def mappings(max_ports: int = 12, max_insns: int = 6, levels: int | None = None,
             max_uops: int = 3, max_count: int = 3) -> Any:
    """Random mappings on ports p0…, instructions i0… (``levels`` 2, 3, or None: either)."""
    st = _st()

    @st.composite
    def draw_mapping(draw: Any) -> PortMapping:
        n_ports = draw(st.integers(1, max_ports))
        ports = [f"p{j}" for j in range(n_ports)]
        lv = levels or draw(st.sampled_from([2, 3]))
        port_set = st.frozensets(st.sampled_from(ports), min_size=1)
        uops = {}
        for i in range(draw(st.integers(1, max_insns))):
            if lv == 2:
                uops[f"i{i}"] = [(draw(port_set), 1)]
            else:
                uops[f"i{i}"] = draw(st.lists(st.tuples(port_set, st.integers(1, max_count)),
                                              min_size=1, max_size=max_uops))
        return PortMapping(ports, uops)

    return draw_mapping()


def experiments(mapping: PortMapping, max_len: int = 6, max_count: int = 4) -> Any:
    """Random experiments over a mapping's instructions (≤ `max_len` distinct ones)."""
    st = _st()

    @st.composite
    def draw_experiment(draw: Any) -> Experiment:
        insns = draw(st.lists(st.sampled_from(mapping.instructions), min_size=1, max_size=max_len,
                              unique=True))
        return Experiment({i: draw(st.integers(1, max_count)) for i in insns})

    return draw_experiment()


def mapping_and_experiment(**kwargs: Any) -> Any:
    """A random mapping (keyword arguments of :func:`mappings`) with an experiment over it."""
    st = _st()
    return mappings(**kwargs).flatmap(lambda m: st.tuples(st.just(m), experiments(m)))
