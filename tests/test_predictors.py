"""Predictors (AnICA sec. 8.1/8.2.1): real tools on real blocks, failures that never stop a batch."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from pmsolve.predictors.block import Block
from pmsolve.predictors import (CachedPredictor, PredictionCache, Prediction, callable_predictor, error_kind,
                                      open_predictor, parse_spec, predict_many)
from pmsolve.predictors.llvm_mca import find_llvm_mca
from pmsolve.predictors.mapping import MappingPredictor
from pmsolve.predictors.user import CommandPredictor
from pmsolve.errors import ValidationError
from pmsolve.model import Experiment, PortMapping
from pmsolve.throughput import inverse_throughput

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"
EXPLAINABLE = REFERENCE / "zenplus" / "explainable_port_mapping.json"

needs_mca = pytest.mark.skipif(find_llvm_mca() is None, reason="llvm-mca not installed")
HAVE_OSACA = importlib.util.find_spec("osaca") is not None
needs_osaca = pytest.mark.skipif(not HAVE_OSACA, reason="OSACA not installed")


def B(*lines: str, schemes: tuple[str, ...] | None = None) -> Block:
    return Block.of(list(zip(schemes or ("?",) * len(lines), lines)))


GOOD = [B("addq %rax, %rbx", "imulq %rcx, %rdx"), B("vaddpd %ymm1, %ymm2, %ymm3"),
        B("vmulpd %ymm4, %ymm5, %ymm6", "vaddpd %ymm7, %ymm8, %ymm9"), B("movq 8(%r14), %rsi")]
BAD_MNEMONIC = B("foo %rax")
BAD_OPERANDS = B("addq %rax")


# --------------------------------------------------------------------------- llvm-mca

@needs_mca
def test_llvm_mca_batch_equals_single_calls_and_survives_bad_blocks():
    mca = open_predictor("llvm-mca:znver3")
    # an instruction without a scheduling model fails the whole call: bisection must isolate it
    unsupported = B("vpdpbusd %zmm1, %zmm2, %zmm3")
    batch = [GOOD[0], BAD_MNEMONIC, GOOD[1], unsupported, GOOD[2], BAD_OPERANDS, GOOD[3]]
    got = mca.predict(batch)
    singles = [mca.predict([b])[0] for b in batch]
    assert [g.cycles for g in got] == [s.cycles for s in singles]
    assert [g.ok for g in got] == [True, False, True, False, True, False, True]
    assert "invalid instruction mnemonic 'foo'" in got[1].error and error_kind(got[1].error) == "unsupported"
    assert "unsupported instruction" in got[3].error and "vpdpbusd" in got[3].error
    assert "too few operands" in got[5].error
    # semantics: a loop-carried imul chain costs its latency; independent vaddpd half a cycle
    # plus the pipeline fill spread over 100 iterations
    assert got[0].cycles == pytest.approx(3.0, abs=0.1)
    assert 0.5 <= got[2].cycles <= 0.6


@needs_mca
def test_llvm_mca_named_unsupported_instruction_needs_no_bisection():
    """llvm-mca names the instruction it has no scheduling data for: the blocks holding it are
    set aside in one step (2 calls for 64 blocks, where bisection alone took 71)."""
    mca = open_predictor("llvm-mca:znver3")
    bad = B("vpdpbusd %zmm1,%zmm2,  %zmm3")
    blocks = [GOOD[k % 2] if k % 7 else bad for k in range(64)]
    got = mca.predict(blocks)
    assert mca.calls == 2
    assert [g.ok for g in got] == [bool(k % 7) for k in range(64)]
    assert got[1].cycles == mca.predict([GOOD[1]])[0].cycles


@needs_mca
def test_llvm_mca_options_and_unknown_cpu():
    mca = open_predictor("llvm-mca:znver3?iterations=1000")
    assert mca.name == f"llvm-mca-{find_llvm_mca().version}:znver3?iterations=1000"
    assert mca.predict([GOOD[1]])[0].cycles == pytest.approx(0.5, abs=0.01)
    # with -noalias=false the store->load pair through the same address forms a chain
    rw = B("movq %rax, 8(%r14)", "movq 8(%r14), %rax")
    assert (open_predictor("llvm-mca:znver3?noalias=false").predict([rw])[0].cycles
            > open_predictor("llvm-mca:znver3").predict([rw])[0].cycles)
    with pytest.raises(ValidationError, match="does not know -mcpu=nonsense"):
        open_predictor("llvm-mca:nonsense")
    with pytest.raises(ValidationError, match="unknown option"):
        open_predictor("llvm-mca:znver3?iters=5")


@needs_mca
def test_llvm_mca_timeout_is_recorded():
    mca = open_predictor("llvm-mca:znver3")
    mca.timeout, mca.per_block_timeout = 0.0, 0.0   # no call can finish in no time
    got = mca.predict(GOOD[:2])
    assert all(error_kind(g.error) == "timeout" for g in got)


# --------------------------------------------------------------------------- OSACA

@needs_osaca
def test_osaca_real_blocks_unknown_forms_timeout_and_crash():
    p = open_predictor("osaca:ZEN3")
    try:
        got = p.predict([GOOD[1], BAD_MNEMONIC, B("addq $1, %rax"), B("addq 8(%r14), %rbx")])
        assert got[0].cycles == pytest.approx(0.5)
        assert got[1].error == "unsupported: OSACA ZEN3 does not know 'foo %rax'"
        assert got[2].cycles == pytest.approx(1.0)     # loop-carried add chain
        assert got[3].ok                                # suffixed memory form known via 'add'
        assert open_predictor("osaca:ZEN3?lcd=false").predict([B("addq $1, %rax")])[0].cycles == pytest.approx(0.25)
        # OSACA 0.7 extends its model's load-port list for every read-modify-write form it combines;
        # the worker restores the model, so an answer does not depend on what was asked before
        rmw = B("addq %rax, 8(%r14)", "addq %rax, 8(%r14)")
        again = p.predict([rmw, GOOD[3], rmw, rmw])
        assert again[0].ok and again[0] == again[2] == again[3]
        # a real hang: OSACA enumerates every simple path of the dependency graph, which explodes
        # for 24 mutually dependent adds; the worker is killed, the next block gets a fresh one
        p.timeout = 1.0
        chain = B(*(["addq %rax, %rbx", "addq %rbx, %rax"] * 12))
        got = p.predict([chain, GOOD[1]])
        assert error_kind(got[0].error) == "timeout" and got[1].cycles == pytest.approx(0.5)
        p.timeout = 30.0
        # a worker that dies (here: killed from outside) is a crash for the block it was on
        w = p._take()
        os.kill(w.proc.pid, signal.SIGKILL)
        w.proc.wait()
        p._give(w)
        got = p.predict([GOOD[1], GOOD[1]])
        assert error_kind(got[0].error) == "crash" and got[1].cycles == pytest.approx(0.5)
    finally:
        p.close()
    with pytest.raises(ValidationError, match="OSACA cannot predict"):
        open_predictor("osaca:NOSUCHARCH")


# --------------------------------------------------------------------------- mapping

CAT_NAMES = ["add_r64_r64", "imul_r64_r64", "mov_r64_m64", "vaddpd_ymm_ymm_ymm", "shl_r64_cl", "lea_r64_m"]
EXP_NAMES = ["add RW:GPR:64, R:GPR:64", "imul RW:GPR:64, R:GPR:64", "mov W:GPR:64, qword ptr R:MEM(64)",
             "vaddpd W:YMM0..15, R:YMM0..15, R:YMM0..15", "shl RW:GPR:64, R:cl", "lea W:GPR:64, MEM(0)"]


@st.composite
def mapping_and_blocks(draw):
    ports = [str(j) for j in range(draw(st.integers(1, 6)))]
    port_set = st.frozensets(st.sampled_from(ports), min_size=1)
    uops = {n: draw(st.lists(st.tuples(port_set, st.integers(1, 3)), min_size=1, max_size=3)) for n in EXP_NAMES}
    blocks = draw(st.lists(st.lists(st.sampled_from(range(len(CAT_NAMES))), min_size=1, max_size=6),
                           min_size=1, max_size=5))
    r_max = draw(st.sampled_from([None, 1, 4, 5]))
    return PortMapping(ports, uops), blocks, r_max


@given(mapping_and_blocks())
@settings(max_examples=60, deadline=None)
def test_mapping_predictor_equals_throughput(case):
    """Blocks with catalogue names, a mapping with explainable names: the bridge translates, and
    the answer is exactly pmsolve.throughput's for the multiset (order and operands ignored)."""
    mapping, blocks, r_max = case
    pred = MappingPredictor(mapping, r_max=r_max)
    assert pred.naming == "explainable"
    bs = [Block.of([(CAT_NAMES[i], f"insn {i}") for i in b]) for b in blocks]
    got = pred.predict(bs)
    for b, g in zip(blocks, got):
        want = inverse_throughput(mapping, Experiment([EXP_NAMES[i] for i in b]), r_max=r_max)
        assert g.ok and g.cycles == float(want)


def test_mapping_predictor_unknown_scheme_and_file(tmp_path):
    m = PortMapping.two_level(["0", "1"], {"add_r64_r64": ["0", "1"], "imul_r64_r64": ["1"]})
    path = tmp_path / "m.json"
    from pmsolve.formats import save_mapping

    save_mapping(m, path)
    p = open_predictor(f"mapping:{path}?r_max=4")
    assert p.name.startswith("mapping:m.json@") and p.name.endswith("?r_max=4")
    got = p.predict([Block.of([("add_r64_r64", "addq %rax, %rbx")] * 3 + [("imul_r64_r64", "imulq %rax, %rcx")]),
                     Block.of([("sub_r64_r64", "subq %rax, %rbx")])])
    assert got[0].cycles == 2.0
    assert got[1].error.startswith("unsupported: scheme 'sub_r64_r64'")
    with pytest.raises(ValidationError, match="names="):
        open_predictor(f"mapping:{path}?names=intel")


@pytest.mark.skipif(not EXPLAINABLE.exists(), reason="../shared/reference not present")
def test_mapping_predictor_on_the_explainable_zenplus_mapping():
    p = open_predictor(f"mapping:{EXPLAINABLE}?r_max=5")
    blk = Block.of([("add_r64_r64", "addq %rax, %rbx")] * 4 + [("vaddpd_ymm_ymm_ymm", "vaddpd %ymm1, %ymm2, %ymm3")])
    got = p.predict([blk, Block.of([("bsf_r32_r32", "bsfl %eax, %ebx")])])
    assert got[0].ok and got[0].cycles >= 1.0          # 5 instructions at peak IPC 5
    assert error_kind(got[1].error) == "unsupported"    # Zen+ bsf: no port usage in the mapping
    pm = open_predictor(f"mapping:{REFERENCE / 'pmevo' / 'ZEN' / 'mapping_pmevo.json'}")
    assert pm.naming == "pmevo"
    assert pm.scheme("lea_r64_m") == "LEA_((REG:W:G:64)),__[((MEM:64))_+_((MIMM:16))]"   # the base+disp mode
    got = pm.predict([Block.of([("add_r64_m64", "addq 8(%r14), %rax"), ("lea_r64_m", "leaq 8(%r14), %rbx")]), blk])
    assert got[0].ok and "'add_r64_r64'" in got[1].error   # PMEvo's Zen+ set has no add r64, r64


# --------------------------------------------------------------------------- user predictors

def test_callable_predictor_records_crashes_and_garbage():
    def fn(b):
        if "boom" in b.asm:
            raise RuntimeError("boom")
        return {"a": 1.5, "b": "abc", "c": -1, "d": math.nan}.get(b.lines[0][0], 2.0)

    p = callable_predictor("mine", fn)
    got = p.predict([B("a"), B("b"), B("c"), B("d"), B("boom"), B("z")])
    assert [g.cycles for g in got] == [1.5, None, None, None, None, 2.0]
    assert [error_kind(g.error) for g in got] == [None, "garbage", "garbage", "garbage", "crash", None]
    # batch mode: a wrong number of answers is garbage, an exception bisects to the culprit
    bad_len = callable_predictor("short", lambda bs: [], batch=True)
    assert all(error_kind(g.error) == "garbage" for g in bad_len.predict([B("x"), B("y")]))

    def batch(bs):
        if any("boom" in b.asm for b in bs):
            raise ValueError("no")
        return [len(b) for b in bs]
    got = callable_predictor("batch", batch, batch=True).predict([B("x"), B("boom"), B("y", "z")])
    assert [g.cycles for g in got] == [1.0, None, 2.0] and error_kind(got[1].error) == "crash"


SCRIPT = textwrap.dedent("""
    import json, sys, time
    req = json.load(sys.stdin)
    assert req["protocol"] == "pmsolve-predictor/1"
    out = []
    for b in req["blocks"]:
        if "crash" in b["asm"]:
            sys.exit(3)
        if "hang" in b["asm"]:
            time.sleep(60)
        if "garbage" in b["asm"]:
            print("this is not json"); sys.exit(0)
        out.append({"error": "cannot"} if "refuse" in b["asm"] else {"cycles": len(b["insns"]) * 0.5})
    json.dump({"predictions": out}, sys.stdout)
""")


def test_command_predictor_protocol_and_failures(tmp_path):
    script = tmp_path / "pred.py"
    script.write_text(SCRIPT)
    p = CommandPredictor([sys.executable, str(script)], timeout=1.0, per_block_timeout=0.0)
    blocks = [B("a", "b"), B("crash"), B("c"), B("refuse"), B("garbage"), B("d", "e", "f")]
    got = p.predict(blocks)
    assert [g.cycles for g in got] == [1.0, None, 0.5, None, None, 1.5]
    assert got[1].error.startswith("crash:") and "exit code 3" in got[1].error
    assert got[3].error == "unsupported: cannot"
    assert error_kind(got[4].error) == "garbage"
    got = p.predict([B("a"), B("hang")])
    assert got[0].cycles == 0.5 and error_kind(got[1].error) == "timeout"
    assert [g.error for g in open_predictor("cmd:false").predict([B("x")])] == ["crash: false failed with exit code 1"]
    assert error_kind(open_predictor("cmd:/no/such/program").predict([B("x")])[0].error) == "crash"


# --------------------------------------------------------------------------- cache and parallel evaluation

def test_cache_hits_misses_errors_and_persistence(tmp_path):
    calls = []

    def fn(b):
        calls.append(b.asm)
        if "bad" in b.asm:
            raise RuntimeError("bad block")
        return len(b)

    db = tmp_path / "c.sqlite"
    p = CachedPredictor(callable_predictor("len", fn), db)
    blocks = [B("x"), B("y", "z"), B("bad"), B("x")]
    first = p.predict(blocks)
    assert (p.hits, p.misses) == (1, 3) and len(calls) == 3
    again = p.predict(blocks)
    assert again == first and len(calls) == 3 and p.hits == 5
    # another process-level instance of the same file: everything, errors included, persisted
    q = CachedPredictor(callable_predictor("len", fn), PredictionCache(db))
    assert q.predict(blocks) == first and len(calls) == 3 and q.misses == 0
    assert error_kind(first[2].error) == "crash" and PredictionCache(db).count("len") == 3
    # errors of a kind listed in retry are asked again
    r = CachedPredictor(callable_predictor("len", fn), db, retry=("crash",))
    r.predict(blocks)
    assert calls[-1] == "bad" and r.misses == 1
    # a different name is a different predictor
    assert CachedPredictor(callable_predictor("other", fn), db).predict([B("x")])[0].cycles == 1.0
    assert PredictionCache(db).predictors() == ["len", "other"]


def test_cache_shared_by_threads_and_processes(tmp_path):
    import subprocess

    db = tmp_path / "c.sqlite"
    blocks = [B(f"insn {i}") for i in range(200)]
    p = CachedPredictor(callable_predictor("len", len, thread_safe=True), db)
    out = predict_many([p], blocks, workers=4, chunk=7)
    assert [o.cycles for o in out["len"]] == [1.0] * 200
    code = textwrap.dedent(f"""
        import sys
        from pmsolve.predictors.block import Block
        from pmsolve.predictors import CachedPredictor, callable_predictor
        p = CachedPredictor(callable_predictor("len", len), {str(db)!r})
        blocks = [Block.of([("?", "insn %d" % i)]) for i in range(150, 400)]
        p.predict(blocks)
        print(p.hits, p.misses)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [pr.communicate(timeout=120)[0].split() for pr in procs]
    assert all(pr.returncode == 0 for pr in procs)
    assert all(int(h) + int(m) == 250 and int(h) >= 50 for h, m in outs)
    assert PredictionCache(db).count("len") == 400


def test_predict_many_records_failures_and_reports_progress():
    class Raises:
        name = "raises"

        def predict(self, blocks):
            raise OSError("tool vanished")

    class Short:
        name = "short"

        def predict(self, blocks):
            return [Prediction(1.0)]

    order = []

    class Alone:
        name = "alone"
        exclusive = True

        def predict(self, blocks):
            order.append("alone")
            return [Prediction(2.0)] * len(blocks)

    seen = []
    blocks = [B(f"i{k}") for k in range(10)] + [B("i0")]
    out = predict_many([Raises(), Short(), callable_predictor("len", len), Alone()], blocks, workers=3, chunk=4,
                       progress=lambda name, done, total: seen.append((name, done, total)))
    assert all(error_kind(p.error) == "crash" and "tool vanished" in p.error for p in out["raises"])
    assert all(error_kind(p.error) == "garbage" for p in out["short"])
    assert [p.cycles for p in out["len"]] == [1.0] * 11 and [p.cycles for p in out["alone"]] == [2.0] * 11
    assert ("len", 10, 10) in seen and ("alone", 10, 10) in seen   # 10 distinct blocks
    assert order == ["alone"] * 3


def test_spec_parsing():
    assert parse_spec("llvm-mca:znver3?iterations=50") == ("llvm-mca", "znver3", {"iterations": "50"})
    assert parse_spec("hardware?rounds=3") == ("hardware", "", {"rounds": "3"})
    assert parse_spec("cmd:python3 x.py --a=1?b") == ("cmd", "python3 x.py --a=1?b", {})
    assert parse_spec("mapping:/a/b.json?r_max=5&names=explainable")[2] == {"r_max": "5", "names": "explainable"}
    with pytest.raises(ValidationError, match="kind must be one of"):
        open_predictor("iaca:HSW")
    with pytest.raises(ValidationError, match="not key=value"):
        parse_spec("osaca:ZEN3?lcd")
    with pytest.raises(ValidationError, match="bad value .maybe. for noalias"):
        open_predictor("llvm-mca:znver3?noalias=maybe")
    p = open_predictor("python:os.path:getsize")
    assert p.name == "python:os.path:getsize" and error_kind(p.predict([B("x")])[0].error) == "crash"


# --------------------------------------------------------------------------- hardware

def _hw_reason():
    from pmsolve.harness.hardware import available

    return available()


def _absent_instruction():
    """A catalogue instruction (register operands only) whose CPUID features this host lacks and
    whose mnemonic has no supported encoding (else the assembler may pick that one)."""
    from pmsolve.isa import load_catalogue
    from pmsolve.isa.catalogue import feature_supported
    from pmsolve.isa.render import render_representative

    cat = load_catalogue()
    runnable = {s.mnemonic for s in cat if cat.supported(s)}
    for s in sorted(cat, key=lambda s: s.name):
        if s.excluded is None and s.memory == "none" and not cat.supported(s) and s.mnemonic not in runnable:
            return render_representative(s), [f for f in s.features if not feature_supported(f, cat.flags)]
    return None, None


@pytest.mark.skipif(_hw_reason() is not None, reason=str(_hw_reason()))
def test_hardware_predictor_measures_blocks_and_refuses_unsafe_ones():
    absent, features = _absent_instruction()
    p = open_predictor("hardware")
    try:
        got = p.predict([B("imulq %rbx, %rbx"), B("movq 8(%rax), %rbx"), B("movq $0, %r15"), B("jmp .+2"),
                         B("addq %rax, 8(%r14)")] + ([B(absent)] if absent else []))
    finally:
        p.close()
    assert got[0].cycles == pytest.approx(3.0, rel=0.2)        # imul's latency chain: 3 cycles on x86-64 cores
    assert "memory operands must be disp(%r14)" in got[1].error
    assert "reserves" in got[2].error and "control flow" in got[3].error
    assert got[4].ok
    if absent is None:
        pytest.skip("this CPU has every CPUID feature the catalogue uses: no unsupported instruction to run")
    if got[5].ok:
        pytest.skip(f"{absent!r} ran although CPUID lacks {features}: the hypervisor hides a feature the CPU has")
    assert error_kind(got[5].error) == "crash" and "SIGILL" in got[5].error, (absent, got[5])
    # a worker that does not answer in time is killed: no measurement takes a tenth of a millisecond
    slow = open_predictor("hardware?timeout=0.0001")
    try:
        got = slow.predict([B("imulq %rbx, %rbx")])
    finally:
        slow.close()
    assert error_kind(got[0].error) == "timeout"


def test_check_block_rules():
    from pmsolve.harness.assemble import check_block

    assert check_block(["addq %rax, 32(%r14)", "vaddpd 64(%r14), %ymm1, %ymm2"]) is None
    assert "disp(%r14)" in check_block(["addq %rax, (%r14,%rbx,2)"])
    assert "disp(%r14)" in check_block(["addq %rax, 5000(%r14)"])
    assert "reserves" in check_block(["movl %r13d, %eax"])
    assert "not an instruction" in check_block(["loop:"])
    assert "control flow" in check_block(["pushq %rax"])


def test_predictions_json_roundtrip_of_blocks():
    b = B("addq %rax, %rbx", schemes=("add_r64_r64",))
    assert Block.from_json(json.loads(json.dumps(b.to_json()))).key == b.key


@needs_mca
def test_cli_predict_and_errors(capsys, tmp_path):
    from pmsolve.cli import main

    blocks = tmp_path / "b.json"
    blocks.write_text(json.dumps([[{"scheme": "add_r64_r64", "asm": "addq %rax, %rbx"}]]))
    cache = tmp_path / "c.sqlite"
    assert main(["predict", "-p", "llvm-mca:znver3", "--cache", str(cache), "--json", "--blocks", str(blocks),
                 "vaddpd %ymm1, %ymm2, %ymm3; vaddpd %ymm4, %ymm5, %ymm6", "foo"]) == 0
    out = json.loads(capsys.readouterr().out)
    name = f"llvm-mca-{find_llvm_mca().version}:znver3"
    assert out["predictors"] == [name] and len(out["blocks"]) == 3
    assert out["blocks"][0][name]["cycles"] > 0 and "foo" in out["blocks"][1][name]["error"]
    assert PredictionCache(cache).count(name) == 3
    assert main(["predict", "-p", "iaca:HSW", "nop"]) == 2
    assert "kind must be one of" in capsys.readouterr().err
    assert main(["predict", "-p", "llvm-mca:znver3", "--blocks", str(tmp_path / "missing.json")]) == 2
