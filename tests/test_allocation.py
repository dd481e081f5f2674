"""Operand allocation (Alg. 3.1): no read-after-write dependencies between instances except the
unavoidable chains through read-written operands, which are spread evenly over O_RW."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmsolve.harness.allocation import (RESERVED, allocate, body, dependency_report, immediate, partition,
                                        unroll_factors)
from pmsolve.isa import load_catalogue
from pmsolve.isa.render import representative

CAT = load_catalogue(host=False)
OFFERED = sorted(CAT.offered(), key=lambda s: s.name)


def test_example_3_15():
    """The dissertation's example: add r64,imm8 / add m32,r32 / sub r32,r32 / vmulpd xmm."""
    e = {CAT["add_r64_i8"]: 1, CAT["add_m32_r32"]: 1, CAT["sub_r32_r32"]: 1, CAT["vmulpd_xmm_xmm_xmm"]: 1}
    ins = allocate(body(e, 1))
    texts = {i.scheme.name: i.text() for i in ins}
    assert texts["add_r64_i8"].startswith("addq $43, %")
    assert "(%r14)" in texts["add_m32_r32"]
    sub = texts["sub_r32_r32"].split()
    assert sub[1].rstrip(",") != sub[2]                         # RW and R operands differ
    assert len(set(texts["vmulpd_xmm_xmm_xmm"].replace(",", "").split()[1:])) == 3


def test_immediates_and_unrolling():
    assert [immediate(w) for w in (8, 16, 32, 64)] == [43, 298, 2 ** 24 + 42, 2 ** 56 + 42]
    assert unroll_factors(1) == [40, 80, 200]
    assert unroll_factors(4) == [10, 20, 50]
    assert unroll_factors(300) == [1]
    b = body({CAT["add_r64_r64"]: 2, CAT["imul_r64_r64"]: 1}, 3)
    assert len(b) == 9 and Counter(s.name for s in b) == {"add_r64_r64": 6, "imul_r64_r64": 3}


experiments = st.lists(st.tuples(st.sampled_from(OFFERED), st.integers(1, 3)), min_size=1, max_size=5,
                       unique_by=lambda t: t[0].name)


@settings(max_examples=150, deadline=None)
@given(experiments, st.sampled_from([40, 80, 200]))
def test_no_read_after_write_between_instances(exp, target):
    counts = dict(exp)
    size = sum(counts.values())
    factor = max(1, round(target / size))
    ins = allocate(body(counts, factor))
    assert len(ins) == size * factor
    # 1. a read-only location is never written, a write-only one never read, and read-written
    #    locations are only touched by read-written operands
    assert dependency_report(ins) == {"read_but_written": set(), "written_but_read": set(), "rw_shared": set()}
    # 2. reserved registers are never written
    for i in ins:
        _, w, rw = i.locations()
        assert not (w | rw) & set(RESERVED), i.text()
    # 3. the chains through read-written operands are spread evenly (round robin over O_RW)
    part = partition(body(counts, 1))
    uses: dict[str, Counter] = {"gpr": Counter(), "vec": Counter(), "mem": Counter()}
    for i in ins:
        for o, v in zip(i.scheme.operands, i.values):
            if o.read and o.write and not o.fixed and o.kind in ("reg", "mem"):
                pool = "mem" if o.kind == "mem" else "gpr" if o.cls == "gpr" else "vec"
                uses[pool][representative(str(v))] += 1
    for pool, used in uses.items():
        if used:
            total = sum(used.values())
            # no chain is longer than an even share over O_RW, plus one
            assert max(used.values()) <= -(-total // len(part[(pool, "RW")])) + 1, (pool, used)


@pytest.mark.skipif(not shutil.which("as"), reason="GNU as missing")
def test_allocated_blocks_assemble():
    blocks = []
    for k in range(0, len(OFFERED), 7):
        exp = {OFFERED[(k + j * 131) % len(OFFERED)]: 1 + j % 2 for j in range(4)}
        blocks += [i.text() for i in allocate(body(exp, 2))]
    proc = subprocess.run(["as", "--64", "-o", "/dev/null", "-"], input="\n".join(blocks) + "\n",
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:2000]


def test_hardwired_write_read_conflict_is_refused():
    from dataclasses import replace

    from pmsolve.errors import ValidationError
    from pmsolve.isa.scheme import Operand

    writer = replace(CAT["add_r64_r64"], name="fake_writes_rcx",
                     implicit=(Operand("reg", "gpr", 64, False, True, "rcx"),))
    with pytest.raises(ValidationError, match="hardwired register rcx"):
        allocate(body({writer: 1, CAT["shl_r64_cl"]: 1}, 2))
    assert allocate(body({writer: 1, CAT["add_r64_r64"]: 1}, 2))  # a lone writer is fine (O_W)
