"""Swapping the solver backend never changes a throughput: every backend equals the formula."""

import pytest
from hypothesis import given, settings

from pmsolve.backends import describe
from pmsolve.encodings.lp import solve_inverse_throughput
from pmsolve.throughput import inverse_throughput
from strategies import mapping_and_experiment

BACKENDS = [r["name"] for r in describe() if r["installed"] and {"lp", "smt"} & set(r["capabilities"])]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=12, deadline=None)
@given(me=mapping_and_experiment(max_ports=5, max_insns=4, max_uops=2, max_count=2))
def test_backend_throughput_equals_formula(backend, me):
    m, e = me
    assert solve_inverse_throughput(m, e, backend) == inverse_throughput(m, e)
    assert solve_inverse_throughput(m, e, backend, r_max=2) == inverse_throughput(m, e, r_max=2)
