"""Swapping the solver backend never changes a throughput: every backend equals the formula,
through the one front door, which picks the backend by name or $PMSOLVE_BACKEND and validates."""

import pytest
from hypothesis import given, settings

from pmsolve.backends import Backend, describe, register, unregister
from pmsolve.backends import capabilities as C
from pmsolve.backends.base import RawResult, ReplayEngine
from pmsolve.errors import SolverError
from pmsolve.model import Experiment, PortMapping
from pmsolve.testing import mapping_and_experiment
from pmsolve.throughput import inverse_throughput

BACKENDS = [r["name"] for r in describe() if r["installed"] and {"lp", "smt"} & set(r["capabilities"])]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=12, deadline=None)
@given(me=mapping_and_experiment(max_ports=5, max_insns=4, max_uops=2, max_count=2))
def test_backend_throughput_equals_formula(backend, me):
    m, e = me
    assert inverse_throughput(m, e, method="lp", backend=backend) == inverse_throughput(m, e)
    assert inverse_throughput(m, e, r_max=2, method="lp", backend=backend) == inverse_throughput(m, e, r_max=2)


class _Liar(Backend):
    """Claims every LP is solved with all variables 0: a model the validation must refuse."""

    name = "liar"
    capabilities = frozenset({C.LP, C.OPTIMIZE})

    def engine(self, timeout, options):
        return ReplayEngine(lambda problem, core: RawResult("sat", {v.name: 0 for v in problem.variables()}))


def test_lp_route_uses_the_registry_and_validates(monkeypatch):
    m = PortMapping.two_level(["p0", "p1"], {"a": ["p0", "p1"]})
    register("liar", _Liar)
    try:
        monkeypatch.setenv("PMSOLVE_BACKEND", "liar")
        with pytest.raises(SolverError, match="liar returned a model that violates"):
            inverse_throughput(m, Experiment({"a": 2}), method="lp")
    finally:
        unregister("liar")
