"""A mapping as an OSACA machine model: the forms OSACA sees, the file OSACA loads, and OSACA's
throughput with it against pmsolve's exact bottleneck on kernels rendered as the main job does."""

from __future__ import annotations

import importlib.util
import json

import pytest

from pmsolve.cli import main
from pmsolve.isa import load_catalogue
from pmsolve.jobs.host import _per_copy, block_of, tool_predictions
from pmsolve.model import Experiment, PortMapping
from pmsolve.predictors.osaca_export import (FE_PORT, LABEL, Form, check_osaca_model, export_osaca,
                                             exported_predictor, osaca_form, write_osaca_model)
from pmsolve.throughput import inverse_throughput

CAT = load_catalogue(host=False)
needs_osaca = pytest.mark.skipif(importlib.util.find_spec("osaca") is None, reason="OSACA not installed")

ALU, AGU, FP = ("0", "1", "2", "3"), ("4", "5"), ("6", "7", "8", "9")
#: a small Zen-3-like mapping: ALUs 0-3, load/store AGUs 4-5, FP pipes 6-9, a divider unit U1
SMALL = PortMapping(ALU + AGU + FP + ("U1",), {
    "add_r64_r64": [(ALU, 1)], "add_r64_i8": [(ALU, 1)], "imul_r64_r64": [(("1",), 1)],
    "shl_r64_cl": [(("1", "2"), 1)], "cmp_al_i8": [(ALU, 1)], "cmp_r8_i8": [(("0", "3"), 1)],
    "mov_r64_m64": [(AGU, 1)], "mov_m64_r64": [(("5",), 1), (ALU, 1)], "add_r64_m64": [(AGU, 1), (ALU, 1)],
    "vaddpd_ymm_ymm_ymm": [(("8", "9"), 1)], "vmulpd_ymm_ymm_ymm": [(("6", "7"), 1)],
    "vpaddd_ymm_ymm_ymm": [(FP, 1)], "vdivpd_ymm_ymm_ymm": [(("6",), 1), (("U1",), 4)],
})
R_MAX = 6


# --------------------------------------------------------------------------- forms

@pytest.mark.parametrize("scheme, form", [
    ("add_r64_i8", ("addq", ("imm", "gpr"))),
    ("add_m64_r64", ("addq", ("gpr", "mem"))),
    ("shl_r64_cl", ("shlq", ("cl", "gpr"))),          # a hardwired register keeps its name
    ("shl_r64_1", ("shlq", ("imm", "gpr"))),          # the constant 1 is an immediate to OSACA
    ("cmp_al_i8", ("cmpb", ("imm", "al"))),
    ("vaddpd_ymm_ymm_m256", ("vaddpd", ("mem", "ymm", "ymm"))),
    ("vaddpd_zmm_zmm_m64bcst", ("vaddpd", ("mem", "zmm", "zmm"))),   # a broadcast is a memory operand
    ("vaddpd_xmm_xmm_xmm_k", ("vaddpd", ("xmm", "xmm", "xmm"))),     # the write mask is no operand
    ("blendvps_xmm_xmm", ("blendvps", ("xmm", "xmm", "xmm"))),    # a literal %xmm0 first
    ("lea_r64_m", ("leaq", ("mem", "gpr"))),
    ("kandw_k_k_k", ("kandw", ("k", "k", "k"))),
])
def test_forms_are_what_osaca_matches(scheme, form):
    assert osaca_form(CAT[scheme]) == Form(form[0], form[1])


def test_an_evex_twin_shares_the_vex_form():
    twins = [(s, s.name.removesuffix("_evex")) for s in CAT if s.template.startswith("{{evex}}")]
    assert len(twins) > 10
    for s, vex in twins:
        assert osaca_form(s) == osaca_form(CAT[vex])


@needs_osaca
def test_forms_agree_with_osacas_own_parser():
    """Every 7th catalogue scheme: the structural form equals what OSACA's AT&T parser reads in
    its representative instance (mnemonic, and per operand register name class / memory /
    immediate)."""
    from osaca.parser import ParserX86ATT

    from pmsolve.isa.render import render_representative
    from pmsolve.predictors.osaca import strip_pseudo_prefix

    parser = ParserX86ATT()

    def cls(o) -> str:
        kind = type(o).__name__
        if kind == "MemoryOperand":
            return "mem"
        if kind == "ImmediateOperand":
            return "imm"
        name = o.name.lower()
        base = name.rstrip("0123456789")
        return base if base in ("xmm", "ymm", "zmm", "k") else name

    checked = 0
    for s in list(CAT)[::7]:
        if s.excluded:
            continue
        f = parser.parse_line(strip_pseudo_prefix(render_representative(s)), 1)
        mine = osaca_form(s)
        seen = tuple(cls(o) for o in f.operands)
        assert f.mnemonic == mine.mnemonic, s.name
        assert len(seen) == len(mine.operands), s.name
        for a, b in zip(mine.operands, seen):   # gpr stands for any general register name
            assert a == b or (a == "gpr" and b not in ("xmm", "ymm", "zmm", "k", "mem", "imm")), (s.name, mine, seen)
        checked += 1
    assert checked > 500


# --------------------------------------------------------------------------- the model

def test_export_entries_header_and_ordering():
    m = export_osaca(SMALL, r_max=R_MAX, units=["U1"], source="small")
    text = m.to_yaml()
    by = {e.scheme: e for e in m.entries}
    assert set(by) == set(SMALL.uops) and not m.left_out and not m.merged
    assert by["vdivpd_ymm_ymm_ymm"].throughput == 4 and by["add_r64_r64"].throughput == pytest.approx(0.25)
    assert m.osaca_ports[-1] == FE_PORT and "U1" in m.osaca_ports
    assert "Units (modelled resources, not execution ports" in text and "U1" in text
    assert m.loads["gpr"][0] == "mov_r64_m64" and m.stores["gpr"][0] == "mov_m64_r64"
    names = [e.form for e in m.entries]
    # OSACA takes the first matching entry: `cmpb $1, %al` must meet cmp_al_i8 before cmp_r8_i8
    assert names.index(Form("cmpb", ("imm", "al"))) < names.index(Form("cmpb", ("imm", "gpr")))
    assert "port_pressure: [[1, [\"6\"]], [4, [\"U1\"]], [0.16666666666666666, [\"FE\"]]]" in text


def test_schemes_osaca_cannot_tell_apart_merge_and_are_listed():
    m = PortMapping(("0", "1"), {"add_r64_i8": [({"0"}, 1)], "add_r64_i32": [({"1"}, 1)],
                                 "add_r32_i8": [({"0"}, 1)], "blk0": [({"0"}, 1)]})
    x = export_osaca(m)
    assert [(str(g.form), g.chosen, g.others) for g in x.merged] == [("addq imm, gpr", "add_r64_i32", ("add_r64_i8",))]
    assert list(x.left_out) == ["blk0"]
    text = x.to_yaml()
    assert "addq imm, gpr: add_r64_i32 (not add_r64_i8)" in text and "blk0: no x86-64 catalogue scheme" in text


@needs_osaca
def test_exported_model_loads_in_osaca_and_every_form_gets_its_pressure(tmp_path):
    m = export_osaca(SMALL, r_max=R_MAX, units=["U1"], latency_from="ZEN3")
    path = tmp_path / "small.yml"
    write_osaca_model(m, path)
    assert check_osaca_model(m, path) == []
    known = {e.scheme: e.latency for e in m.entries}
    assert known["add_r64_r64"] == 1.0 and known["vaddpd_ymm_ymm_ymm"] == 3.0   # OSACA ZEN3's own latencies
    assert f"latency of {sum(v is not None for v in known.values())} of {len(known)} forms" in path.read_text()


#: kernels on which OSACA's balancing reaches the optimum, so it must equal the exact bottleneck
KERNELS = [
    {"add_r64_r64": 3, "imul_r64_r64": 1, "shl_r64_cl": 1},
    {"add_r64_r64": 3, "vaddpd_ymm_ymm_ymm": 2, "vmulpd_ymm_ymm_ymm": 2, "mov_r64_m64": 1},  # the front end binds
    {"mov_r64_m64": 2, "mov_m64_r64": 1, "add_r64_m64": 1},
    {"vdivpd_ymm_ymm_ymm": 1, "vmulpd_ymm_ymm_ymm": 2, "vpaddd_ymm_ymm_ymm": 1},   # the divider unit binds
    {"cmp_al_i8": 1, "cmp_r8_i8": 2, "imul_r64_r64": 1},
    {"vaddpd_ymm_ymm_ymm": 3, "vpaddd_ymm_ymm_ymm": 2},
]


@needs_osaca
def test_osaca_with_the_model_equals_the_exact_bottleneck(tmp_path):
    predictor, _ = exported_predictor(SMALL, tmp_path / "small.yml", r_max=R_MAX, units=["U1"], lcd=False)
    try:
        got, errors = _per_copy(predictor, [block_of(CAT, Experiment(k)) for k in KERNELS])
    finally:
        predictor.close()
    assert not errors
    want = [float(inverse_throughput(SMALL, Experiment(k), r_max=R_MAX)) for k in KERNELS]
    assert want[1] == pytest.approx(8 / 6) and want[3] == pytest.approx(4.0)
    assert got == pytest.approx(want, rel=0.005)     # OSACA rounds port sums to 0.01 cycles


@needs_osaca
def test_the_main_jobs_row(tmp_path):
    held = [Experiment(k) for k in KERNELS]
    notes: list[str] = []
    own = {"mapping": SMALL, "path": tmp_path / "model.yml", "r_max": R_MAX, "units": ["U1"]}
    from pmsolve.predictors.base import ModelChoice

    none = ModelChoice("llvm-mca", None, None, False, "test"), ModelChoice("OSACA", None, None, False, "test")
    out = tool_predictions(CAT, held, none, notes, own)
    assert list(out) == [LABEL] and all(v is not None for v in out[LABEL])
    assert any(n.startswith(LABEL) for n in notes)


@needs_osaca
def test_osaca_derives_memory_forms_from_register_forms_of_unknown_latency(tmp_path):
    """OSACA 0.7 combines a register form with the load or store data for a memory form the model
    lacks, and raised a TypeError on a form without a latency (the Zen 3 run of 2026-11-27: 53 of
    300 held-out blocks, all with a ``setcc m8`` whose ``setcc r8`` was mapped)."""
    mapping = PortMapping(SMALL.ports, {**SMALL.uops, "sete_r8": [(("0", "3"), 1)]})
    predictor, model = exported_predictor(mapping, tmp_path / "m.yml", r_max=R_MAX, units=["U1"])
    try:
        assert {e.scheme: e.latency for e in model.entries}["sete_r8"] is None    # no model asked: unknown
        got, errors = _per_copy(predictor, [block_of(CAT, Experiment({"sete_m8": 1, "add_r64_r64": 1}))])
    finally:
        predictor.close()
    assert not errors and got[0] is not None


# --------------------------------------------------------------------------- the command

def test_export_command(tmp_path, capsys):
    src = tmp_path / "m.json"
    from pmsolve.formats import save_mapping

    save_mapping(SMALL, src)
    out = tmp_path / "m.yml"
    args = ["export", str(src), "--to", "osaca", "-o", str(out), "--r-max", "6", "--latency-from", "none", "--json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["forms"] == len(SMALL.uops) and doc["r_max"] == 6 and doc["latencies"] == 0
    assert doc["checked"] == (importlib.util.find_spec("osaca") is not None) and doc["problems"] == []
    assert out.read_text().startswith("# OSACA machine model exported by pmsolve")
    assert main(["export", str(src), "--to", "osaca", "-o", str(out), "--latency-from", "NOSUCH"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@needs_osaca
def test_a_model_file_is_a_predictor_spec_and_pseudo_prefixes_are_read(tmp_path):
    from pmsolve.predictors import open_predictor
    from pmsolve.predictors.block import Block

    path = tmp_path / "small.yml"
    write_osaca_model(export_osaca(SMALL, r_max=R_MAX, units=["U1"]), path)
    p = open_predictor(f"osaca:{path}?lcd=false")
    zen3 = open_predictor("osaca:ZEN3?lcd=false")
    try:
        assert p.name.startswith("osaca:small.yml@") and p.name.endswith("?lcd=false")
        twin = Block.parse("{evex} vaddpd %ymm3, %ymm2, %ymm1; vaddpd %ymm6, %ymm5, %ymm4")
        assert p.predict([twin])[0].cycles == pytest.approx(1.0)          # two on ports 8, 9
        assert zen3.predict([twin])[0].cycles == pytest.approx(1.0)       # ZEN3: 0.5 each
        assert "does not know 'vpdpbusd" in p.predict([Block.parse("vpdpbusd %ymm3, %ymm2, %ymm1")])[0].error
    finally:
        p.close()
        zen3.close()


def test_the_cpu_an_explained_mapping_names():
    from pmsolve.harness.cpu import microarchitecture_named_in

    text = "hardware oracle (host, AMD Zen 3 (family 0x19 model 0x01), 2 vCPUs, 145 schemes) via store.sqlite"
    assert microarchitecture_named_in(text).key == "zen3"          # not "AMD Zen", a prefix of it
    assert microarchitecture_named_in("simulated oracle (12 instructions, 10 ports)") is None


@needs_osaca
def test_export_takes_latencies_from_the_mapping_s_cpu(tmp_path, capsys):
    from pmsolve.formats import mapping_to_json

    doc = mapping_to_json(SMALL)
    doc["explanation"] = {"format": "pmsolve.explanation", "version": 1, "r_max": R_MAX, "schemes": {},
                          "units": [{"port": "U1", "members": ["vdivpd_ymm_ymm_ymm"]}],
                          "oracle": "hardware oracle (h, AMD Zen 3 (family 0x19 model 0x01), 2 vCPUs, 13 schemes)"}
    src = tmp_path / "explained.json"
    src.write_text(json.dumps(doc))
    assert main(["export", str(src), "--to", "osaca", "-o", str(tmp_path / "m.yml"), "--no-check", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["latency_from"] == "ZEN3" and out["latencies"] > 0 and out["r_max"] == R_MAX and out["units"] == ["U1"]
