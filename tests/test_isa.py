"""The x86-64 scheme catalogue: operand facts, exclusions (sec. 3.2.2), host CPUID filtering, CLI."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile

import pytest

from pmsolve.cli import main
from pmsolve.errors import FormatError, UnknownNameError, ValidationError
from pmsolve.isa import Catalogue, default_dir, load_catalogue
from pmsolve.isa.catalogue import feature_supported, host_features, parse_exclusions
from pmsolve.isa.render import render_representative


@pytest.fixture(scope="module")
def cat() -> Catalogue:
    return load_catalogue(host=False)


def acc(s):
    return [o.access for o in s.operands]


def test_operand_facts(cat):
    assert acc(cat["add_r64_r64"]) == ["RW", "R"]
    assert acc(cat["add_m32_r32"]) == ["RW", "R"] and cat["add_m32_r32"].memory == "load+store"
    assert cat["mov_r64_m64"].memory == "load" and acc(cat["mov_r64_m64"]) == ["W", "R"]
    assert cat["mov_m64_r64"].memory == "store"
    assert cat["lea_r64_m"].memory == "agen"
    s = cat["vfmadd231pd_ymm_ymm_ymm"]
    assert acc(s) == ["RW", "R", "R"] and s.extension == "FMA" and s.category == "vec-fma" and s.encoding == "vex"
    assert acc(cat["vaddpd_ymm_ymm_ymm"]) == ["W", "R", "R"]
    assert [o.width for o in cat["add_r64_i8"].operands] == [64, 8]
    # hardwired operands: explicit cl in shifts, implicit rdx in mulx
    assert cat["shl_r64_cl"].operands[1].fixed == "cl"
    assert [(o.fixed, o.access) for o in cat["mulx_r64_r64_r64"].implicit] == [("rdx", "R")]
    assert "CF" in cat["add_r64_r64"].flags_written and cat["cmovb_r64_r64"].flags_read
    assert cat["add_m64_r64"].lock and not cat["add_r64_r64"].rep
    assert cat["add_r64_r64"].signature() == "add GPR[64]:RW, GPR[64]:R"


@pytest.mark.parametrize("name, reason", [
    ("adc_r64_r64", "flags"), ("sbb_r32_r32", "flags"), ("div_r64", "division"), ("idiv_r32", "division"),
    ("push_r64", "stack"), ("pop_r64", "stack"), ("jmp_r64", "control flow"), ("addpd_xmm_xmm", "SSE"),
    ("cpuid", "system"), ("rdtsc", "system"), ("nop", "no ports"), ("mov_r64_r64", "move elimination"),
    ("cbw", "hardwired"), ("prefetcht0_m", "system"),
])
def test_exclusions_have_reasons(cat, name, reason):
    s = cat[name]
    assert s.excluded and reason in s.excluded, (name, s.excluded)


def test_no_x87_mmx_or_string_offered(cat):
    offered = cat.offered()
    assert len(offered) > 1000
    assert not [s for s in offered if s.category == "nop" or s.mnemonic.startswith("f") and "x87" in s.extension]
    assert not [s for s in offered if any(f.startswith(("MMX", "FPU")) for f in s.features)]
    assert not [s for s in offered if s.mnemonic in ("movsb", "stosq", "push", "pop", "adc", "div")]


def test_templates_render_every_offered_scheme(cat):
    for s in cat.offered():
        text = render_representative(s)
        # no placeholder left; braces only as EVEX decorators ({1to8}, {%k1}) or pseudo-prefixes
        assert not re.search(r"\{\d+\}", text) and text.split()[0], s.name
        assert re.sub(r"\{(1to\d+|%k[1-7]|vex|evex)\}", "", text).count("{") == 0, (s.name, text)


def test_host_cpuid_filter():
    no_avx2 = Catalogue(load_catalogue(host=False), frozenset({"avx", "fma", "sse4_1"}))
    assert no_avx2.supported(no_avx2["vaddpd_ymm_ymm_ymm"])
    assert not no_avx2.supported(no_avx2["vpaddd_ymm_ymm_ymm"])
    assert "AVX2" in no_avx2.status(no_avx2["vpaddd_ymm_ymm_ymm"])
    with pytest.raises(ValidationError, match="AVX2"):
        no_avx2.require(["vpaddd_ymm_ymm_ymm"])
    with pytest.raises(ValidationError, match="excluded"):
        no_avx2.require(["adc_r64_r64"])


def test_unknown_scheme_and_filters(cat):
    with pytest.raises(UnknownNameError, match="similar"):
        cat["add_r64_r99"]
    assert {s.name for s in cat.filter("category=vec-fma,name=vfmadd231pd*ymm_ymm_ymm")} == {"vfmadd231pd_ymm_ymm_ymm"}
    assert all(s.memory == "store" for s in cat.filter("memory=store"))
    with pytest.raises(ValidationError, match="key must be"):
        cat.filter("colour=red")


def test_exclusion_file_format():
    ex = parse_exclusions("[a]\nfoo_*   # why\n\n# c\nbar\n")
    assert [(e.pattern, e.reason, e.section) for e in ex] == [("foo_*", "why", "a"), ("bar", "a", "a")]
    with pytest.raises(FormatError):
        parse_exclusions("[oops\n")
    with pytest.raises(FormatError):
        parse_exclusions("two patterns  # no\n")


def test_catalogue_is_current(tmp_path):
    """The committed catalogue equals a fresh generation (skipped without iced-x86 / GNU as)."""
    pytest.importorskip("iced_x86")
    if not shutil.which("as") or not shutil.which("objdump"):
        pytest.skip("GNU binutils (as, objdump) missing")
    from pmsolve.isa.x86_gen import write_catalogue

    out = tmp_path / "x86_64.json"
    write_catalogue(out)
    fresh = json.loads(out.read_text())["schemes"]
    committed = json.loads((default_dir() / "x86_64.json").read_text())["schemes"]
    assert fresh == committed, "regenerate with: python -m pmsolve.isa.x86_gen"


def test_offered_schemes_assemble(cat):
    if not shutil.which("as"):
        pytest.skip("GNU as missing")
    src = "\n".join(render_representative(s) for s in cat.offered()) + "\n"
    proc = subprocess.run(["as", "--64", "-o", "/dev/null", "-"], input=src, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:2000]


def test_cli_isa_list(capsys):
    assert main(["isa", "list", "--filter", "name=vfmadd231pd_ymm_ymm_ymm", "--json", "--any-host"]) == 0
    out = json.loads(capsys.readouterr().out)
    # a bare name matches as a substring: the merge-masked EVEX variant comes along
    assert [d["name"] for d in out] == ["vfmadd231pd_ymm_ymm_ymm", "vfmadd231pd_ymm_ymm_ymm_k"]
    assert out[0]["status"] == "offered" and out[0]["encoding"] == "vex"
    assert main(["isa", "list", "--all", "--filter", "adc_r64_r64"]) == 0
    assert "hardwired read-written flags" in capsys.readouterr().out
    assert main(["isa", "list", "--filter", "nope=1"]) == 2
    assert "pmsolve: error:" in capsys.readouterr().err


# ------------------------------------------------------------------ AVX-512 (EVEX) forms

def _masked(s):
    return s.encoding == "evex" and "{{{%d}}}" % (len(s.operands) - 1) in s.template


def test_evex_forms(cat):
    s = cat["vaddpd_zmm_zmm_zmm"]
    assert s.encoding == "evex" and acc(s) == ["W", "R", "R"] and s.features == ("AVX512F",)
    assert s.category == "vec-fp-add" and s.signature() == "vaddpd ZMM:W, ZMM:R, ZMM:R"
    # merge-masking: the write mask is the last operand, read-only; the destination becomes RW
    m = cat["vaddpd_zmm_zmm_zmm_k"]
    assert acc(m) == ["RW", "R", "R", "R"] and m.operands[-1].cls == "k" and _masked(m)
    assert render_representative(m) == "vaddpd %zmm3, %zmm2, %zmm1{%k1}"
    # embedded broadcast: one element read
    b = cat["vaddpd_zmm_zmm_m64bcst"]
    assert (b.operands[2].cls, b.operands[2].width, b.memory) == ("bcst", 64, "load")
    assert render_representative(b) == "vaddpd 0x40(%r14){1to8}, %zmm2, %zmm1"
    assert "{1to16}" in render_representative(cat["vaddps_zmm_zmm_m32bcst"])
    assert "{1to4}" in render_representative(cat["vaddps_xmm_xmm_m32bcst"])
    # mask registers as operands; a masked store writes memory only
    k = cat["kandw_k_k_k"]
    assert acc(k) == ["W", "R", "R"] and k.category == "mask" and k.features == ("AVX512F",)
    assert [o.cls for o in cat["kmovw_k_r32"].operands] == ["k", "gpr"]
    c = cat["vpcmpd_k_zmm_zmm_i8_k"]
    assert [(o.cls, o.access) for o in c.operands] == [("k", "W"), ("zmm", "R"), ("zmm", "R"), ("imm", "R"), ("k", "R")]
    st = cat["vmovups_m512_zmm_k"]
    assert st.memory == "store" and acc(st) == ["W", "R", "R"] and st.operands[0].width == 512
    # EVEX-only instructions, at every vector length the CPU extension allows
    for name, feature in [("vpternlogd_xmm_xmm_xmm_i8", "AVX512VL"), ("vpermt2d_zmm_zmm_zmm", "AVX512F"),
                          ("vpcompressd_zmm_zmm_k", "AVX512F"), ("vpconflictd_zmm_zmm", "AVX512CD"),
                          ("vplzcntd_zmm_zmm", "AVX512CD"), ("vpopcntd_zmm_zmm", "AVX512_VPOPCNTDQ"),
                          ("vpdpbusd_zmm_zmm_zmm", "AVX512_VNNI"), ("vdpbf16ps_zmm_zmm_zmm", "AVX512_BF16"),
                          ("vaddph_zmm_zmm_zmm", "AVX512_FP16"), ("vpmadd52luq_zmm_zmm_zmm", "AVX512_IFMA")]:
        assert cat[name].encoding == "evex" and feature in cat[name].features, name


def test_evex_naming_rule(cat):
    """VEX forms keep their names; an EVEX twin that is the same instruction is not generated,
    one with different CPUID features is NAME_evex with {evex}; masked forms end in _k."""
    assert cat["vaddpd_ymm_ymm_ymm"].encoding == "vex" and cat["vaddpd_xmm_xmm_m128"].encoding == "vex"
    assert "vaddpd_ymm_ymm_ymm_evex" not in cat and "vfmadd231pd_xmm_xmm_xmm_evex" not in cat
    assert cat["vaddpd_ymm_ymm_ymm_k"].encoding == "evex"        # EVEX-only: no marker needed
    twin, vex = cat["vpdpbusd_ymm_ymm_ymm_evex"], cat["vpdpbusd_ymm_ymm_ymm"]
    assert twin.encoding == "evex" and "AVX512_VNNI" in twin.features and twin.template.startswith("{{evex}} ")
    assert vex.encoding == "vex" and vex.features == ("AVX_VNNI",) and vex.template.startswith("{{vex}} ")
    for s in cat:
        stem = "_".join([s.mnemonic] + [o.short() for o in s.operands])
        assert s.name == stem + ("_evex" if s.template.startswith("{{evex}}") else ""), s.name
        if s.encoding == "evex":
            # a masked form ends in _k (its write mask); so may a form whose last operand is a
            # mask register (vpmovm2d_zmm_k), which cannot be masked: no name is shared
            assert s.name.endswith("_k") or not _masked(s), s.name
            assert not re.search(r"\{z\}|sae|\{r[nduz]", s.template), s.name       # no zeroing/rounding
            assert not (_masked(s) and any(o.cls == "bcst" for o in s.operands)), s.name


def test_catalogue_names_are_unique():
    """One line per scheme in the committed file, no name twice (the loader would hide it)."""
    names = [d["name"] for d in json.loads((default_dir() / "x86_64.json").read_text())["schemes"]]
    assert len(names) == len(set(names))
    assert sum(n.endswith("_k") for n in names) > 1000 and sum("_zmm" in n for n in names) > 1000


#: iced-x86 AVX-512 CPUID features and how Linux spells them in /proc/cpuinfo (cpufeatures.h)
LINUX_FLAGS = {"AVX512F": "avx512f", "AVX512VL": "avx512vl", "AVX512BW": "avx512bw", "AVX512DQ": "avx512dq",
               "AVX512CD": "avx512cd", "AVX512ER": "avx512er", "AVX512PF": "avx512pf", "AVX512_IFMA": "avx512ifma",
               "AVX512_VBMI": "avx512vbmi", "AVX512_VBMI2": "avx512_vbmi2", "AVX512_VNNI": "avx512_vnni",
               "AVX512_BITALG": "avx512_bitalg", "AVX512_VPOPCNTDQ": "avx512_vpopcntdq",
               "AVX512_BF16": "avx512_bf16", "AVX512_FP16": "avx512_fp16", "GFNI": "gfni", "VAES": "vaes",
               "VPCLMULQDQ": "vpclmulqdq"}


def test_evex_cpuid_features_map_to_linux_flags(cat):
    used = {f for s in cat if s.encoding == "evex" or any(o.cls == "k" for o in s.operands) for f in s.features}
    assert used <= set(LINUX_FLAGS), used - set(LINUX_FLAGS)
    for f in used:
        assert feature_supported(f, frozenset({LINUX_FLAGS[f]})), f
        assert not feature_supported(f, frozenset(v for k, v in LINUX_FLAGS.items() if k != f)), f


def test_host_filter_offers_evex_only_with_avx512f():
    every = load_catalogue(host=False)
    base = "processor\t: 0\nflags\t\t: fpu sse sse2 pni ssse3 sse4_1 sse4_2 avx avx2 fma f16c bmi1 bmi2 popcnt\n"
    zen4 = base.rstrip("\n") + (" avx512f avx512dq avx512cd avx512bw avx512vl avx512ifma avx512vbmi avx512_vbmi2"
                                " avx512_vnni avx512_bf16 avx512_bitalg avx512_vpopcntdq gfni vaes vpclmulqdq\n")
    without, with_ = Catalogue(every, host_features(base)), Catalogue(every, host_features(zen4))
    off_without, off_with = {s.name for s in without.offered()}, {s.name for s in with_.offered()}
    evex_like = {s.name for s in every if s.encoding == "evex" or any(o.cls == "k" for o in s.operands)}
    assert not off_without & evex_like
    assert "vaddpd_ymm_ymm_ymm" in off_without and "vaddpd_ymm_ymm_ymm" in off_with
    assert {"vaddpd_zmm_zmm_zmm", "vaddpd_zmm_zmm_zmm_k", "vaddpd_zmm_zmm_m64bcst", "kandw_k_k_k",
            "vpdpbusd_zmm_zmm_zmm", "vpdpbusd_ymm_ymm_ymm_evex", "vpmadd52luq_zmm_zmm_zmm"} <= off_with
    assert len(off_with & evex_like) > 3000
    assert "vaddph_zmm_zmm_zmm" not in off_with and "vpdpbusd_ymm_ymm_ymm" not in off_with  # FP16, AVX-VNNI absent
    assert "AVX512F" in without.status(without["vaddpd_zmm_zmm_zmm"])
    with pytest.raises(ValidationError, match="AVX512F"):
        without.require(["kandw_k_k_k"])


def test_offered_templates_assemble_in_their_encoding(cat):
    """GNU as emits each offered VEX scheme as VEX (c4/c5) and each EVEX scheme as EVEX (62):
    ``vpdpbusd ymm`` needs ``{vex}``, an ``_evex`` twin ``{evex}``."""
    if not shutil.which("as") or not shutil.which("objdump"):
        pytest.skip("GNU binutils missing")
    todo = [s for s in cat.offered() if s.encoding in ("vex", "evex")]
    with tempfile.TemporaryDirectory() as tmp:
        src, obj = f"{tmp}/a.s", f"{tmp}/a.o"
        with open(src, "w") as fh:
            fh.write("\n".join(render_representative(s) for s in todo) + "\n")
        subprocess.run(["as", "--64", "-o", obj, src], check=True, capture_output=True)
        dis = subprocess.run(["objdump", "-d", "-w", obj], check=True, capture_output=True, text=True).stdout
    first = [m.group(1) for m in re.finditer(r"^\s*[0-9a-f]+:\t([0-9a-f]{2})[0-9a-f ]*\t\S", dis, re.M)]
    assert len(first) == len(todo)
    wrong = [s.name for s, b in zip(todo, first) if (b == "62") != (s.encoding == "evex")]
    assert not wrong, wrong[:10]
