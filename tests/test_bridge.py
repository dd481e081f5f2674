"""The scheme-name bridge: one key per scheme across the catalogue, iwho (explainable) and PMEvo names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pmsolve.errors import ValidationError
from pmsolve.isa import load_catalogue
from pmsolve.cli import main
from pmsolve.isa.bridge import bridge, detect_naming, names_of, scheme_key, scheme_key_of, translator

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"
EXPLAINABLE = REFERENCE / "zenplus" / "explainable_port_mapping.json"
PMEVO_ZEN = REFERENCE / "pmevo" / "ZEN" / "mapping_pmevo.json"
needs_reference = pytest.mark.skipif(not EXPLAINABLE.exists(), reason="../shared/reference not present")

# the same scheme in the three namings
SAME = [
    ("add_r64_i32", "add RW:GPR:64, IMM(32)", "ADD_((REG:RW:G:64)),_((IMM:32))"),
    ("add_r16_m16", "add RW:GPR:16, word ptr R:MEM(16)", None),
    ("and_r64_m64", "and RW:GPR:64, qword ptr R:MEM(64)", "AND_((REG:RW:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"),
    ("and_m64_i8", "and qword ptr RW:MEM(64), IMM(8)", "AND_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((IMM:8))"),
    ("mov_m32_r32", "mov dword ptr W:MEM(32), R:GPR:32", None),
    ("lea_r64_m", "lea W:GPR:64, MEM(0)", "LEA_((REG:W:G:64)),__[((MEM:64))_+_((MIMM:16))]"),
    ("shl_r64_1", "shl RW:GPR:64", None),
    ("shl_r64_cl", "shl RW:GPR:64, R:cl", None),
    ("cmp_al_i8", "cmp R:al, IMM(8)", None),
    ("add_r8_r8", "add RW:al,bl,bpl,cl,dil,dl,r10b,r11b,r12b,r13b,r14b,r15b,r8b,r9b,sil,spl, "
                  "R:al,bl,bpl,cl,dil,dl,r10b,r11b,r12b,r13b,r14b,r15b,r8b,r9b,sil,spl", None),
    ("aesimc_xmm_m128", "aesimc W:XMM0..15, xmmword ptr R:MEM(128)", None),
    ("vaddpd_ymm_ymm_ymm", "vaddpd W:YMM0..15, R:YMM0..15, R:YMM0..15",
     "VADDPD_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"),
    ("vpsllw_ymm_ymm_xmm", "vpsllw W:YMM0..15, R:YMM0..15, R:XMM0..15", None),
    ("vextracti128_m128_ymm_i8", "vextracti128 xmmword ptr W:MEM(128), R:YMM0..15, IMM(8)",
     "VEXTRACTI128_xmmword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:V:256)),_((IMM:8))"),
    ("bt_m64_r64", "bt qword ptr R:MEM(64), R:GPR:64", "BT_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((DIV:64))"),
    ("vzeroupper", "vzeroupper", "VZEROUPPER"),
]


@pytest.mark.parametrize("cat_name,exp_name,pm_name", SAME)
def test_same_scheme_same_key(cat_name, exp_name, pm_name):
    k = scheme_key(cat_name, "catalogue")
    assert k is not None
    assert scheme_key(exp_name, "explainable") == k
    if pm_name:
        assert scheme_key(pm_name, "pmevo") == k
    # detection from the name alone
    assert scheme_key(exp_name) == k and scheme_key(cat_name) == k


DIFFERENT = [
    ("add RW:GPR:64, IMM(8)", "add RW:GPR:64, IMM(32)"),      # immediate width
    ("add RW:GPR:64, IMM(8)", "add RW:GPR:64, 0x0"),          # iwho's immediate-zero form is its own scheme
    ("shl RW:GPR:64", "shl RW:GPR:64, IMM(8)"),               # shift by one vs by an immediate
    ("shl RW:GPR:64, R:cl", "shl RW:GPR:64, R:GPR:8"),
    ("mov W:rax, qword ptr R:MEM(64)", "mov W:GPR:64, qword ptr R:MEM(64)"),   # moffs form
    ("vaddpd W:XMM0..15, R:XMM0..15, R:XMM0..15", "vaddpd W:YMM0..15, R:YMM0..15, R:YMM0..15"),
    ("vmovups xmmword ptr W:MEM(128), R:XMM0..15", "vmovups W:XMM0..15, xmmword ptr R:MEM(128)"),  # order
]


@pytest.mark.parametrize("a,b", DIFFERENT)
def test_different_schemes_differ(a, b):
    assert scheme_key(a, "explainable") != scheme_key(b, "explainable")


def test_garbage_is_none_and_bad_naming_refused():
    assert scheme_key("add RW:FOO:64", "explainable") is None
    assert scheme_key("ADD_((REG:RW:X:64))", "pmevo") is None
    assert scheme_key("Add-R64", "catalogue") is None
    assert scheme_key("add dword ptr R:MEM(64)", "explainable") is None     # ptr width contradicts
    with pytest.raises(ValidationError, match="unknown naming"):
        scheme_key("add_r64_r64", "intel")
    with pytest.raises(ValidationError, match="cannot tell"):
        detect_naming(["???", "!!!"])


def test_catalogue_names_agree_with_structure():
    """Parsing a catalogue name gives the key its operands give (for every scheme)."""
    cat = load_catalogue(host=False)
    wrong = [s.name for s in cat if scheme_key(s.name, "catalogue") != scheme_key_of(s)]
    assert wrong == []
    # and the key tells every catalogue scheme apart
    assert len({scheme_key_of(s) for s in cat}) == len(cat)


def test_bridge_prefers_general_names_and_reports_collisions():
    exp = ["cmp R:al,bl,cl,dl,r10b,r11b,r8b,r9b, IMM(8)", "cmp R:bpl,dil,r12b,r13b,r14b,r15b,sil,spl, IMM(8)",
           "cmp R:al,bl,bpl,cl,dil,dl,r10b,r11b,r12b,r13b,r14b,r15b,r8b,r9b,sil,spl, R:al,bl,bpl,cl,dil,dl,"
           "r10b,r11b,r12b,r13b,r14b,r15b,r8b,r9b,sil,spl", "vcmpeqps W:XMM0..15, R:XMM0..15, R:XMM0..15"]
    b = bridge(["cmp_r8_i8", "cmp_r8_r8", "cmp_r64_r64", "bad name!"], exp)
    assert (b.naming_a, b.naming_b) == ("catalogue", "explainable")
    assert b.mapping == {"cmp_r8_i8": exp[0], "cmp_r8_r8": exp[2]}
    assert set(b.unmatched_a) == {"cmp_r64_r64", "bad name!"} and b.unparsed_a == ("bad name!",)
    assert b.unmatched_b == (exp[3],)
    assert set(b.collisions_b["cmp r8,i8"]) == set(exp[:2])
    c = b.coverage()
    assert (c["matched_a"], c["names_a"], c["matched_b"], c["names_b"]) == (2, 4, 3, 4)
    assert "2/4" in b.report()


def test_translator():
    t = translator(["add RW:GPR:64, IMM(8)", "add RW:GPR:64, R:GPR:64"], "catalogue")
    assert t("add_r64_r64") == "add RW:GPR:64, R:GPR:64"
    assert t("add_r64_i32") is None and t("not a name") is None


@needs_reference
def test_reference_coverage(capsys):
    exp, pm = names_of(str(EXPLAINABLE)), names_of(str(PMEVO_ZEN))
    assert len(exp) == 1819 and len(pm) == 310
    b = bridge(pm, exp)
    assert (b.naming_a, b.naming_b) == ("pmevo", "explainable")
    assert b.unparsed_a == () and b.unparsed_b == ()
    # every PMEvo scheme without a partner is one the explainable mapping lacks altogether (vmulpd ymm, ...)
    assert len(b.pairs) == 282
    assert b.mapping["ADD_((REG:RW:G:64)),_((IMM:32))"] == "add RW:GPR:64, IMM(32)"
    assert "vmulpd" not in {n.split()[0] for n in exp}
    cb = bridge(names_of("catalogue"), exp)
    assert cb.unparsed_b == ()
    # the explainable names the catalogue lacks: vcmp predicate pseudo-ops, iwho's immediate-zero forms,
    # and the moffs forms of mov
    rest = [n for n in cb.unmatched_b if not n.startswith("vcmp") and "0x0" not in n]
    assert rest and all(n.startswith("mov ") for n in rest) and len(rest) <= 6
    assert cb.coverage()["matched_b"] == 1294
    assert main(["bridge", str(PMEVO_ZEN), str(EXPLAINABLE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["matched_a"] == 282 and out["names_a"] == 310
