"""The x86-64 scheme catalogue: operand facts, exclusions (sec. 3.2.2), host CPUID filtering, CLI."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from pmsolve.cli import main
from pmsolve.errors import FormatError, UnknownNameError, ValidationError
from pmsolve.isa import Catalogue, default_dir, load_catalogue
from pmsolve.isa.catalogue import parse_exclusions
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
        assert "{" not in text and text.split()[0], s.name


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
    if not shutil.which("as"):
        pytest.skip("GNU as missing")
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
    assert [d["name"] for d in out] == ["vfmadd231pd_ymm_ymm_ymm"] and out[0]["status"] == "offered"
    assert main(["isa", "list", "--all", "--filter", "adc_r64_r64"]) == 0
    assert "hardwired read-written flags" in capsys.readouterr().out
    assert main(["isa", "list", "--filter", "nope=1"]) == 2
    assert "pmsolve: error:" in capsys.readouterr().err
