"""Hypothesis strategies for port mappings and experiments shared by the test modules."""

from hypothesis import strategies as st

from pmsolve.model import Experiment, PortMapping


@st.composite
def mappings(draw, max_ports: int = 12, max_insns: int = 6, levels: int | None = None,
             max_uops: int = 3, max_count: int = 3) -> PortMapping:
    """Random two- or three-level mappings (``levels`` None: either)."""
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


@st.composite
def experiments(draw, mapping: PortMapping, max_len: int = 6, max_count: int = 4) -> Experiment:
    insns = draw(st.lists(st.sampled_from(mapping.instructions), min_size=1, max_size=max_len, unique=True))
    return Experiment({i: draw(st.integers(1, max_count)) for i in insns})


@st.composite
def mapping_and_experiment(draw, **kwargs) -> tuple[PortMapping, Experiment]:
    m = draw(mappings(**kwargs))
    return m, draw(experiments(m))
