"""Operand allocation (Alg. 3.1): no read-after-write dependencies between instances except the
unavoidable chains through read-written operands, which are spread evenly over O_RW."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pmsolve.harness.allocation import (EVEX_VECTOR_REGS, MASK_REGS, RESERVED, VECTOR_REGS, WRITTEN_SPAN, allocate,
                                        body, dependency_report, immediate, partition, reads, unroll_factors)
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
    # a 32-bit immediate beyond 16 bits beside a 32-bit displacement takes two slots of Intel's
    # µop cache (mov [m64], imm32: 1.0 cycle instead of 0.5 on Ice Lake-SP); 298 needs imm32 still
    assert [immediate(w) for w in (8, 16, 32, 64)] == [43, 298, 298, 2 ** 56 + 42]
    assert not -128 <= immediate(32) < 128 and -2 ** 15 <= immediate(32) < 2 ** 15
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
    uses: dict[str, Counter] = {"gpr": Counter(), "vec": Counter(), "mask": Counter(), "mem": Counter()}
    for i in ins:
        for o, v in zip(i.scheme.operands, i.values):
            # reads(): partial GPR writes and compress/expand destinations read too
            if reads(o, i.scheme) and o.write and not o.fixed and o.kind in ("reg", "mem"):
                pool = "mem" if o.kind == "mem" else "gpr" if o.cls == "gpr" else "mask" if o.cls == "k" else "vec"
                uses[pool][representative(str(v))] += 1
    for pool, used in uses.items():
        if used and pool != "mem":   # written memory is packed instead: test_written_memory_is_packed...
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


# ------------------------------------------------------------------ AVX-512 (EVEX) operands

EVEX = [s for s in OFFERED if s.encoding == "evex"]
NO_DEPENDENCY = {"read_but_written": set(), "written_but_read": set(), "rw_shared": set()}


def _regs(ins, prefix):
    return {v for i in ins for o, v in zip(i.scheme.operands, i.values) if o.kind == "reg" and str(v).startswith(prefix)}


def test_evex_blocks_use_zmm16_31_and_k1_k7():
    """A pure EVEX block reaches all 32 vector registers (zmm16-31 first: the frame loads them in
    full) and allocates masks from k1-k7 only; masked destinations are read-written (O_RW)."""
    e = {CAT["vaddpd_zmm_zmm_zmm_k"]: 2, CAT["vpcmpd_k_zmm_zmm_i8_k"]: 1, CAT["kandw_k_k_k"]: 1,
         CAT["vfmadd231pd_zmm_zmm_m64bcst"]: 1}
    ins = allocate(body(e, 10))
    assert dependency_report(ins) == NO_DEPENDENCY
    vec = {representative(r) for r in _regs(ins, ("xmm", "ymm", "zmm"))}
    assert vec <= set(EVEX_VECTOR_REGS) and {"vec16", "vec31", "vec0"} <= vec   # 30 RW uses over 30 of O_RW
    masks = _regs(ins, "k")
    assert masks <= set(MASK_REGS) and "k0" not in masks and len(masks) >= 3
    part = partition(body(e, 1))
    assert set(part[("vec", "R")]) | set(part[("vec", "W")]) <= {f"vec{i}" for i in range(16, 32)}
    masked = [i for i in ins if i.scheme.name == "vaddpd_zmm_zmm_zmm_k"]
    assert all(i.text().endswith("}") and "{%k" in i.text() for i in masked)
    dests = [representative(str(i.values[0])) for i in masked]
    assert set(dests) <= set(part[("vec", "RW")]) and len(set(dests)) == len(dests)  # chains spread over O_RW


def test_vex_in_the_block_limits_its_vectors_to_16_and_evex_chains_take_the_other_16():
    """One VEX scheme with a vector operand: it may not use xmm16-31 (VEX cannot encode them), nor
    may the read-only and write-only operands every scheme shares; the EVEX schemes'
    read-written operands chain over xmm16-31, each register as seldom as the VEX chains'."""
    e = {CAT["vaddpd_zmm_zmm_zmm"]: 1, CAT["vfmadd231pd_ymm_ymm_ymm"]: 1, CAT["vpternlogd_zmm_zmm_zmm_i8"]: 1}
    ins = allocate(body(e, 30))
    assert dependency_report(ins) == NO_DEPENDENCY
    upper = set(EVEX_VECTOR_REGS[:16])
    for i in ins:
        regs = {representative(v) for o, v in zip(i.scheme.operands, i.values) if o.kind == "reg"}
        rw = {representative(v) for o, v in zip(i.scheme.operands, i.values) if o.kind == "reg" and o.read and o.write}
        assert regs - rw <= set(VECTOR_REGS), i.text()
        assert rw <= (upper if i.scheme.encoding == "evex" else set(VECTOR_REGS)), i.text()
    ternlog = [representative(i.values[0]) for i in ins if i.scheme.name == "vpternlogd_zmm_zmm_zmm_i8"]
    fma = [representative(i.values[0]) for i in ins if i.scheme.name == "vfmadd231pd_ymm_ymm_ymm"]
    assert set(ternlog) == upper and len(set(fma)) >= 12   # 30 copies: each upper register twice
    # a block without vector operands at all keeps the 16 (nothing to widen)
    assert {representative(r) for r in _regs(allocate(body({CAT["kandw_k_k_k"]: 1, CAT["kmovw_k_r32"]: 1}, 20)),
                                              ("xmm", "ymm", "zmm"))} == set()


def _mem(ins):
    """(instance index, operand index, displacement, written?, width in bytes) per memory operand."""
    return [(k, j, int(str(v).split("(")[0]), o.write, max(8, o.width // 8))
            for k, i in enumerate(ins) for j, (o, v) in enumerate(zip(i.scheme.operands, i.values))
            if o.kind == "mem" and not o.fixed]


@settings(max_examples=150, deadline=None)
@given(experiments, st.sampled_from([40, 80, 200]))
@example([(CAT["vmovups_m128_xmm"], 3)], 200)     # a period of one store: the span wraps after 32
def test_written_memory_is_packed_in_program_order_and_each_slot_keeps_one_role(exp, target):
    """Consecutive stores go to neighbouring addresses (a Zen 3 retires two stores in a cycle only
    within one 32-byte block), a slot always belongs to the same operand of one copy's instance,
    read and written slots are disjoint, and a read-written slot comes back only copies later."""
    counts = dict(exp)
    size = sum(counts.values())
    factor = max(1, round(target / size))
    ins = allocate(body(counts, factor))
    mem = _mem(ins)
    written = [m for m in mem if m[3]]
    read = {m[2] for m in mem if not m[3]}
    assert not read & {m[2] for m in written}
    assert all(2048 <= d and d + w <= 4096 and d % min(w, 64) == 0 for _, _, d, _, w in written)
    assert all(d < 2048 for d in read)
    # a role is an operand of a scheme: a copy of one scheme three times is three copies of one
    # (the layout repeats per shortest period: 32 copies of vmovups [m128] fill the 512-byte span,
    # and the 33rd, the third instruction of the 11th copy of the experiment, reuses the first slot)
    names = [x.scheme.name for x in ins]
    owner: dict[int, tuple[str, int]] = {}
    for k, j, d, _, _ in written:
        assert owner.setdefault(d, (names[k], j)) == (names[k], j), "a slot changes hands"
    per_copy = len(written) // factor if written else 0
    for c in range(factor):
        one = written[c * per_copy:(c + 1) * per_copy]
        for (_, _, d0, _, w0), (_, _, d1, _, w1) in zip(one, one[1:]):
            # or back to the region's start, once the layout's periods have filled the span (a
            # period can be shorter than one copy: {vcompresspd [m128]: 3} wraps after 32 stores)
            assert d1 == -(-(d0 + w0) // w1) * w1 or (d1 == 2048 and d0 + w0 - 2048 > WRITTEN_SPAN // 2), \
                "not packed: a gap or a jump between neighbouring stores"
    # a read-written slot comes back only after every other written slot, and those fill over half
    # the 512-byte span (the chain through it then waits for at least 32 stores: at two per cycle,
    # longer than its latency, yet soon enough to be forwarded as in real code and the published
    # figures). Not bytes written: slots aligned to their width leave gaps ({add [m16], i16: 2,
    # vpcompressq [m256]: 1} writes 48 bytes in each 96)
    top = max((d + w for _, _, d, _, w in written), default=2048)
    slots = {m[2] for m in written}
    last: dict[int, int] = {}
    for n, (k, j, d, _, _) in enumerate(written):
        if ins[k].scheme.operands[j].read and d in last:
            assert {m[2] for m in written[last[d]:n]} == slots, "a read-written slot comes back too soon"
            assert top - 2048 > WRITTEN_SPAN // 2, "the layout repeats before it fills its span"
        last[d] = n


def test_compress_and_expand_destinations_rotate_like_read_written_registers():
    """Unmasked ``vpcompressd zmm, zmm`` merges with its destination on the Zen 4: on one O_W
    register every copy chained at 5.0 cycles (gcc probe with rotating destinations, uops.info:
    1.33). Its copies now write different registers, as the merge-masked form's do."""
    for name in ("vpcompressd_zmm_zmm", "vpexpandd_zmm_m512", "vcompressps_ymm_ymm"):
        ins = allocate(body({CAT[name]: 1}, 8))
        assert len({i.values[0] for i in ins}) == 8, name


def test_write_only_registers_rotate_so_a_false_dependency_cannot_chain_the_copies():
    """``vreduceps xmm, m128, i8`` took 3.0 cycles alone on the Zen 4 and 2.3 beside four other
    instructions writing its register in between; ``vpshrdq xmm, xmm, xmm, i8`` 2.0 alone and
    0.5 beside one: the core reads a destination the ISA calls write-only. Copies of a
    write-only register destination must take turns over several registers (8 where the pool
    has room), and read-written operands keep at least 8 registers for their chains (12 vector
    ones: :func:`test_read_written_vector_registers_keep_twelve_of_the_sixteen_vex_reaches`)."""
    from pmsolve.harness.allocation import WRITTEN_ROTATION
    for names in (["vreduceps_xmm_m128_i8"], ["vpshrdq_xmm_xmm_xmm_i8"], ["vaddpd_xmm_xmm_xmm"],
                  ["popcnt_r64_r64"], ["vaddpd_xmm_xmm_xmm", "vfmadd231pd_xmm_xmm_xmm"],
                  ["mov_r64_i32", "add_r64_r64"]):
        schemes = [CAT[n] for n in names]
        ins = allocate(body({s: 1 for s in schemes}, 16))
        part = partition(schemes)
        for s in schemes:
            dest = [i.values[0] for i in ins if i.scheme == s]
            if s.operands[0].write and not s.operands[0].read:   # 12 GPRs: 3 beside 8 kept for O_RW
                pool = "gpr" if s.operands[0].cls == "gpr" else "vec"
                least = 4 if not part[(pool, "RW")] else 3 if pool == "gpr" else 2   # 16 vector: 12 for O_RW
                assert len(set(dest)) >= least, f"{s.name}: copies write {sorted(set(dest))}"
        for pool in ("gpr", "vec"):
            if part[(pool, "RW")] and any(o.read and o.write for s in schemes for o in s.operands
                                          if o.kind == "reg" and (o.cls == "gpr") == (pool == "gpr")):
                assert len(part[(pool, "RW")]) >= 8, (names, pool)
            assert len(part[(pool, "W")]) <= WRITTEN_ROTATION


def test_read_written_vector_registers_keep_twelve_of_the_sixteen_vex_reaches():
    """Each read-written register is a chain through the copies: a block of three read-written
    vector forms (an FMA, a merge-masked add, ``vpermt2d``) beside a VEX form (so 16 registers)
    and a write-only one must not meet one of its read-written registers again sooner than 12
    read-written operands later, or the chains, not the ports, set its time (a4's held-out mix
    ``{bts r16, i8; vandnpd ymm, m64bcst; vfmsub213ps ymm{k}; vpshufhw xmm; vsubpd ymm{k}}`` read
    1.49 cycles with 8 and 1.04 with 12 on the Zen 4)."""
    schemes = [CAT[n] for n in ("vfmadd231ps_ymm_ymm_ymm", "vpaddd_ymm_ymm_ymm_k", "vpermt2d_ymm_ymm_ymm",
                                "vpaddd_xmm_xmm_xmm", "vpshufhw_xmm_xmm_i8")]
    ins = allocate(body({s: 1 for s in schemes}, 40))
    part = partition(schemes)
    rw = set(part[("vec", "RW")]) | set(part[("evex", "RW")])   # the EVEX forms' chains: xmm16-31
    assert len(part[("vec", "RW")]) >= 12, part[("vec", "RW")]
    used = [representative(i.values[0]) for i in ins if representative(i.values[0]) in rw]
    assert len(used) == 3 * 40
    last: dict[str, int] = {}
    for k, r in enumerate(used):
        assert k - last.get(r, -12) >= 12, f"{r} read-written again after {k - last[r]} operands"
        last[r] = k


def test_a_read_modify_write_comes_back_to_its_slot_after_512_bytes_of_stores():
    """The span the published figures and real loops have: 200 copies of ``add [m64], r64`` use 64
    slots, so each store is read back 64 stores later, while it may still wait in the store queue
    (over 2 KiB the Zen 4 ran them at 0.44 cycles, faster than anyone publishes; over 512 bytes
    0.50, as the independent probe; docs/memory-layout.md)."""
    slots = [m[2] for m in _mem(allocate(body({CAT["add_m64_r64"]: 1}, 200))) if m[3]]
    assert sorted(set(slots)) == list(range(2048, 2048 + WRITTEN_SPAN, 8))
    assert slots[:70] == [2048 + 8 * (i % 64) for i in range(70)]
    big = allocate(body({CAT["vmovups_m512_zmm"]: 9, CAT["add_m64_r64"]: 1}, 8))   # 640 bytes a copy
    adds = [m[2] for m in _mem(big) if big[m[0]].scheme.name == "add_m64_r64"]
    assert len(set(adds)) == 3, "a copy over the span still repeats where the region holds it (3 times)"


@settings(max_examples=100, deadline=None)
@given(experiments, st.sampled_from([40, 200]))
@example([(CAT["mov_r64_m64"], 1)], 40)
@example([(CAT["mov_r64_m64"], 3), (CAT["vmovups_zmm_m512"], 1)], 40)
def test_copies_of_a_load_rotate_over_neighbouring_slots_of_its_width(exp, target):
    """Read-only memory: consecutive copies of a load read neighbouring addresses, slots of the
    block's widest read (aligned to it) in [512, 1024), eight of them where the block reads memory
    that often. One address for every copy ran GPR loads two a cycle on an Emerald Rapids where
    neighbouring addresses run three, as uops.info publishes (docs/memory-layout.md, "Loads").
    A narrower read in a wider slot reads at its own offset there, a different one in each slot
    where its width allows: at offset 0 of eight lines the Emerald Rapids ran them two a cycle too."""
    counts = dict(exp)
    ins = allocate(body(counts, max(1, round(target / sum(counts.values())))))
    reads = [m for m in _mem(ins) if not m[3]]
    if not reads:
        return
    width = max(w for *_, w in reads)
    width = 1 << (width - 1).bit_length()
    slots = {d - d % width for _, _, d, _, _ in reads}
    assert all(512 <= d and d + w <= 1024 and d % (1 << (w - 1).bit_length()) == 0 for _, _, d, _, w in reads)
    assert all(s + width <= 1024 for s in slots)
    assert len(slots) == min(8, 512 // width, len(reads)), sorted(slots)
    for w in {w for *_, w in reads}:
        own = 1 << (w - 1).bit_length()
        offsets = {d % width for _, _, d, _, x in reads if x == w}
        lines = {d - d % width for _, _, d, _, x in reads if x == w}
        assert len(offsets) == min(len(lines), width // own), (w, sorted(offsets), sorted(lines))


def test_a_read_layout_of_one_slot_gives_every_copy_of_a_load_operand_one_address():
    """``rotation=1`` (a CPU whose table says so: the Zen 4, where GPR loads beside 256-bit loads
    at neighbouring addresses switch between three and 2.4 a cycle) reads each load operand of
    every copy at one address, as uops.info measures; the default rotates over eight."""
    counts = {CAT["mov_r64_m64"]: 1, CAT["vpaddd_ymm_ymm_m256"]: 2, CAT["add_m64_r64"]: 1}
    one = [m for m in _mem(allocate(body(counts, 10), rotation=1)) if not m[3]]
    eight = [m for m in _mem(allocate(body(counts, 10))) if not m[3]]
    assert len(one) == len(eight) == 30
    assert {d for _, _, d, _, _ in one} == {512}
    assert len({d - d % 32 for _, _, d, _, _ in eight}) == 8


def test_the_hardware_oracle_reads_with_its_cpus_layout_and_keys_the_store_by_it():
    """The oracle's kernels use ``Microarchitecture.read_rotation`` of the CPU it runs on, and a
    layout other than the default is part of the store's key (a store measured with one layout
    never answers for another); the default adds nothing, so other CPUs' stores keep their key."""
    from pmsolve.harness.allocation import READ_ROTATION
    from pmsolve.harness.hardware import HardwareOracle, available
    from pmsolve.model import Experiment

    if available() is not None:
        pytest.skip(str(available()))
    names = ["mov_r64_m64", "vpaddd_ymm_ymm_m256"]
    with HardwareOracle(names, on_error="nan") as hw:
        arch = hw.machine.microarchitecture
        rotation = arch.read_rotation if arch else READ_ROTATION
        kernels, _ = hw._kernels(0, Experiment({"mov_r64_m64": 1, "vpaddd_ymm_ymm_m256": 2}))
        key = hw.fingerprint_settings()
    text = max(kernels.values(), key=len)
    slots = {int(a) - int(a) % 32 for a in re.findall(r"(\d+)\(%r14\)", text)}   # 32 bytes: the widest read
    assert len(slots) == min(rotation, 8), (rotation, sorted(slots))
    assert key.get("read_rotation") == (None if rotation == READ_ROTATION else rotation)


def test_512_bit_memory_slots_are_aligned_and_disjoint():
    """zmm loads/stores get 64-byte aligned slots 64 bytes apart; narrower blocks slots of their width."""
    e = {CAT["vaddpd_zmm_zmm_m512"]: 1, CAT["vmovups_m512_zmm_k"]: 1, CAT["vaddpd_zmm_zmm_m64bcst"]: 1}
    ins = allocate(body(e, 20))
    assert dependency_report(ins) == NO_DEPENDENCY
    disps = {int(str(v).split("(")[0]) for i in ins for o, v in zip(i.scheme.operands, i.values)
             if o.kind == "mem" and o.width == 512}
    assert disps and all(d % 64 == 0 for d in disps) and max(disps) + 64 <= 4096
    bcst = {int(str(v).split("(")[0]) for i in ins for o, v in zip(i.scheme.operands, i.values)
            if o.kind == "mem" and o.width == 64}
    assert bcst and all(d % 8 == 0 and d // 64 == (d + 7) // 64 for d in bcst), "a broadcast stays in its line"
    narrow = allocate(body({CAT["vaddpd_ymm_ymm_m256"]: 1, CAT["vmovups_m256_ymm"]: 1}, 5))
    assert {str(v) for i in narrow for o, v in zip(i.scheme.operands, i.values) if o.kind == "mem" and not o.write} \
        == {f"{512 + 32 * k}(%r14)" for k in range(5)}


@settings(max_examples=150, deadline=None)
@given(experiments, st.sampled_from([40, 80, 200]))
@example([(CAT["mov_m64_r64"], 2), (CAT["mov_r64_m64"], 1), (CAT["add_r64_i32"], 2)], 40)
def test_a_load_shares_no_low_address_bits_with_a_store_of_its_block(exp, target):
    """A Zen 4 holds a load back behind a store whose low 10-11 address bits it shares: with the
    load at 32(%r14) and the fifth copy's store at 2080, {mov [m64], r64: 2, mov r64, [m64]: 1,
    add r64, imm32: 2} ran 4.0 cycles, 1.07 with the load on another line (docs/memory-layout.md).
    So no read-only operand is on a written operand's line modulo 1 KiB, where the written copies
    span at most WRITTEN_SPAN bytes (larger copies repeat over more, and may meet the loads)."""
    counts = dict(exp)
    ins = allocate(body(counts, max(1, round(target / sum(counts.values())))))
    mem = _mem(ins)
    written = [(d, w) for _, _, d, wr, w in mem if wr]
    if not written or max(d + w for d, w in written) - min(d for d, _ in written) > WRITTEN_SPAN:
        return
    written_lines = {(a % 1024) // 64 for d, w in written for a in range(d, d + w)}
    for _, _, d, wr, w in mem:
        if not wr:
            assert not {(a % 1024) // 64 for a in range(d, d + w)} & written_lines, (d, sorted(written_lines))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(EVEX), st.integers(1, 3)), min_size=1, max_size=4,
                unique_by=lambda t: t[0].name), st.sampled_from([40, 200]))
def test_no_read_after_write_between_evex_instances(exp, target):
    counts = dict(exp)
    ins = allocate(body(counts, max(1, round(target / sum(counts.values())))))
    assert dependency_report(ins) == NO_DEPENDENCY
    assert "k0" not in _regs(ins, "k")


@pytest.mark.skipif(not shutil.which("as"), reason="GNU as missing")
def test_allocated_evex_blocks_assemble():
    """Every offered EVEX scheme, allocated in a pure EVEX block (registers 16-31 included)."""
    blocks = []
    for k in range(0, len(EVEX), 3):
        exp = {EVEX[(k + j * 97) % len(EVEX)]: 1 for j in range(3)}
        blocks += [i.text() for i in allocate(body(exp, 2))]
    assert any(re.search(r"%[xyz]mm(1[6-9]|2[0-9]|3[01])\b", b) for b in blocks)
    proc = subprocess.run(["as", "--64", "-o", "/dev/null", "-"], input="\n".join(blocks) + "\n",
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:2000]


def test_hardware_measures_zmm_and_mask_schemes():
    """On a CPU with AVX-512F the hardware oracle runs zmm, masked, broadcast and mask-register
    schemes (no fault, a positive finite cycle count; no timing bound on a shared VM)."""
    from pmsolve.harness.hardware import HardwareOracle, HarnessSettings, available
    from pmsolve.isa.catalogue import feature_supported, host_features

    if available() is not None:
        pytest.skip(str(available()))
    flags = host_features()
    if flags is None or not feature_supported("AVX512F", flags):
        pytest.skip("the host CPU lacks AVX-512F")
    from pmsolve.model import Experiment

    names = ["vaddpd_zmm_zmm_zmm", "vaddpd_zmm_zmm_zmm_k", "vaddpd_zmm_zmm_m64bcst", "kandw_k_k_k"]
    with HardwareOracle(names, HarnessSettings(rounds=3), on_error="nan") as hw:
        got = hw.measure([Experiment({n: 1}) for n in names] + [Experiment({n: 1 for n in names})])
        errors = [r.error for r in hw.results.values() if r.error]
    assert not errors, errors
    assert all(0 < v < 1e6 for v in got), got


def test_frame_guards_its_avx512_setup():
    """The measurement frame must run on CPUs without AVX-512: every zmm/k instruction sits
    behind the XCR0 check, zmm0-15 keep VEX (clean upper) initialisation, masks k1-k7 are set,
    zmm16-31 are loaded (512 bits wide only for a body that names a zmm register), and
    vzeroupper comes before the return."""
    from pmsolve.harness.assemble import _hi16, frame

    for body, width in (("vpaddd %zmm16, %zmm17, %zmm18", "zmm"), ("addq %rax, 2048(%r14)", "ymm")):
        lines = [ln.strip() for ln in frame().replace("{hi16}", _hi16(body)).splitlines() if ln.strip()]
        guard = lines.index("jne .L{name}_no_avx512")
        end = lines.index(".L{name}_no_avx512:")
        assert lines[guard - 4:guard] == ["xor %ecx, %ecx", "xgetbv", "and $0xe6, %eax", "cmp $0xe6, %eax"]
        evex = [k for k, ln in enumerate(lines) if re.search(r"%(zmm\d+|k[0-7])\b|%[xy]mm(1[6-9]|2\d|3[01])\b", ln)]
        assert evex and all(guard < k < end for k in evex)
        assert {f"kxnorw %k0, %k0, %k{i}" for i in range(1, 8)} <= set(lines[guard:end])
        assert {f"%{width}{i}" for i in range(16, 32)} == {ln.split()[-1] for ln in lines[guard + 1:end]
                                                          if ln.startswith("vmovups")}
        assert lines.index("ret") > max(k for k, ln in enumerate(lines) if ln == "vzeroupper") > lines.index("{body}")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(OFFERED), min_size=1, max_size=5))
def test_fewer_copies_allocate_as_a_prefix_of_more(schemes):
    """The hardware oracle allocates the longest unrolled body once and cuts the shorter kernels
    from it: that is only the same measurement if allocation is strictly sequential."""
    counts = Counter(schemes)
    size = sum(counts.values())
    factors = unroll_factors(size)
    longest = [i.text() for i in allocate(body(counts, factors[-1]))]
    for f in factors:
        assert [i.text() for i in allocate(body(counts, f))] == longest[:f * size]


def test_partial_register_writes_are_read_written():
    """sete r8 and mov r16 merge with the old register value: allocated as write-only, every copy
    would land in the one O_W register and form a chain (Zen 4: 1 cycle per sete, not 0.5)."""
    ins = allocate(body({CAT["sete_r8"]: 4}, 1))
    assert len({i.values[0] for i in ins}) == 4
    report = dependency_report(allocate(body({CAT["sete_r8"]: 2, CAT["mov_r16_m16"]: 2, CAT["add_r64_r64"]: 1}, 10)))
    assert not any(report.values())


def test_bit_tests_on_memory_take_the_small_offset_register():
    """``bt m, r`` addresses bit r of a string starting at m: with a pool register (2^24 and more
    in the frame) it reaches 2 MiB past the operand memory. Every such scheme reads r13 (3)."""
    from pmsolve.harness.allocation import DIVISOR, DIVISOR_VALUE

    bits = [s for s in OFFERED if s.mnemonic in ("bt", "bts", "btr", "btc")
            and any(o.kind == "mem" for o in s.operands) and any(o.kind == "reg" for o in s.operands)]
    assert len(bits) >= 12 and DIVISOR_VALUE < 8
    for i in allocate(body({**{s: 1 for s in bits}, CAT["add_r64_r64"]: 2}, 3)):
        if i.scheme in bits:
            assert re.match(rf"bt[crs]?[wlq]? %{DIVISOR}[dw]?, \d+\(%r14\)$", i.text()), i.text()


def test_a_copy_that_writes_more_than_the_region_wraps_around_it():
    """A characterisation probe of 2,615 `kmovq m64, k` (against a scheme that takes hundreds of
    cycles alone) writes 20 KiB in one copy: the allocation refused it, the experiment failed,
    and the failure stopped an `--all` run. Its slots wrap around the written region instead,
    packed and aligned, and no load reads what a store writes."""
    ins = allocate(body({CAT["kmovq_m64_k"]: 2615, CAT["mov_r64_m64"]: 6}, 1))
    assert dependency_report(ins) == NO_DEPENDENCY
    stores = [d for _, _, d, wr, _ in _mem(ins) if wr]
    assert len(stores) == 2615 and sorted(set(stores)) == list(range(2048, 4096, 8))
    assert stores[:300] == [2048 + 8 * (i % 256) for i in range(300)]


def _allocate_by_timestamps(schemes, part, rotation):
    """Alg. 3.1 as the paper states it: every operand scans its set for the smallest timestamp
    (the rule ``allocate`` followed until 2026-12-07; it now keeps each set as a queue)."""
    from pmsolve.harness.allocation import (DIVISOR, Instance, _pool_key, _read_width, _role, _slot_width,
                                            bit_offset, immediate, staggered, written_addresses)
    from pmsolve.isa.render import reg_name
    written = iter(written_addresses(schemes))
    read_width, placed, last_use, now, out = _read_width(schemes), {}, {}, 0, []
    for s in schemes:
        values, taken = [], set()
        for o in s.operands:
            now += 1
            if o.kind == "imm":
                values.append(immediate(o.width))
            elif o.kind == "const":
                values.append(o.value if o.value is not None else 1)
            elif o.fixed:
                values.append(o.fixed)
            elif bit_offset(s, o):
                values.append(reg_name(DIVISOR, o))
            elif o.kind == "mem" and o.write:
                values.append(next(written))
            else:
                role = "R" if o.kind == "mem" and not (o.read or o.write) else _role(o, s)
                key = (_pool_key(o), role)
                if key == ("vec", "RW") and s.encoding == "evex" and part[("evex", "RW")]:
                    key = ("evex", "RW")   # beside a VEX form, EVEX chains run over xmm16-31
                chosen = min((c for c in part[key] if c not in taken), key=lambda c: last_use.get(c, 0))
                last_use[chosen] = now
                taken.add(chosen)
                values.append(staggered(chosen, _slot_width(o), read_width, placed) if o.kind == "mem"
                              else reg_name(chosen, o))
        out.append(Instance(s, tuple(values)))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([s.name for s in CAT]), min_size=1, max_size=4, unique=True),
       st.lists(st.integers(1, 6), min_size=4, max_size=4), st.sampled_from([1, 8]), st.integers(1, 12))
def test_queued_allocation_is_the_timestamp_rule(names, counts, rotation, factor):
    from pmsolve.harness.allocation import partition
    from pmsolve.errors import ValidationError
    counts = {CAT[n]: c for n, c in zip(names, counts)}
    schemes = body(counts, factor)
    try:
        part = partition(schemes, rotation)
    except ValidationError:
        return
    assert allocate(schemes, part, rotation) == _allocate_by_timestamps(schemes, part, rotation)
