"""Published single-instruction throughputs shipped in pmsolve/data/singles/: every value names a
catalogue scheme, is positive and carries its own citation; the loader refuses tables that do not."""

from __future__ import annotations

import copy
import json
import re
from importlib import resources

import pytest

from pmsolve.errors import FormatError
from pmsolve.harness.cpu import MICROARCHITECTURES, parse_reference_singles, reference_singles
from pmsolve.isa import load_catalogue

SHIPPED = [m for m in MICROARCHITECTURES.values() if m.singles]


def raw(m) -> dict:
    return json.loads(resources.files("pmsolve.data").joinpath("singles", m.singles).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cat():
    return load_catalogue(host=False)          # every scheme, whatever this host offers


def test_the_zen_tables_are_shipped():
    assert {m.key for m in SHIPPED} >= {"zen", "zen+", "zen3", "zen4", "zen5"}


def test_zen_and_zen_plus_share_one_table_measured_on_zen_plus(cat):
    """uops.info measured Zen+ only; Zen+ has the same core as Zen, so both read zen.json."""
    assert MICROARCHITECTURES["zen"].singles == MICROARCHITECTURES["zen+"].singles == "zen.json"
    ref = reference_singles("zen")
    assert ref.microarchitecture == "AMD Zen" and "Zen+" in ref.source
    assert all("ZEN+" in c for c in ref.sources.values())
    # Zen has no AVX-512: no zmm or mask-register form, no AVX-512 feature
    assert not [s for s in ref.values if any(o.cls in ("zmm", "k") for o in cat[s].operands + cat[s].implicit)
                or any(f.startswith("AVX512") for f in cat[s].features)]


@pytest.mark.parametrize("m", SHIPPED, ids=lambda m: m.key)
def test_every_shipped_table_has_at_least_40_cited_positive_values(m, cat):
    ref = reference_singles(m)
    # a table serves every microarchitecture that names it (zen.json: Zen and Zen+) and names one of them
    assert ref.microarchitecture in {o.name for o in SHIPPED if o.singles == m.singles}
    assert len(ref.values) >= 40
    assert all(v > 0 for v in ref.values.values())
    unknown = [s for s in ref.values if s not in cat]
    assert not unknown, f"{m.singles} names schemes the catalogue does not have: {unknown}"
    assert set(ref.sources) == set(ref.values) == set(ref.published_as)
    assert all(c.strip() for c in ref.sources.values())


@pytest.mark.parametrize("m", SHIPPED, ids=lambda m: m.key)
def test_each_entry_carries_the_citation_its_source_key_names(m):
    doc, ref = raw(m), reference_singles(m)
    for e in doc["entries"]:
        assert ref.sources[e["scheme"]] == doc["sources"][e["source"]]
        assert ref.published_as[e["scheme"]] == e["published"]
        assert ref.notes.get(e["scheme"]) == e.get("note")
    for key, citation in doc["sources"].items():
        # pinned: a commit of the repository read, or the publication's date
        assert re.search(r"\b[0-9a-f]{40}\b|\b\d{4}-\d{2}-\d{2}\b", citation), f"{key} is not pinned: {citation}"


@pytest.mark.parametrize("m", SHIPPED, ids=lambda m: m.key)
def test_memory_forms_say_how_the_source_placed_their_addresses(m, cat):
    """uops.info, InstLatX64 and the harness place the memory operands of independent copies
    differently (issue 39), so a memory form's figure is not comparable without that note."""
    ref = reference_singles(m)
    bare = [s for s in ref.values if cat[s].memory != "none" and not ref.notes.get(s)]
    assert not bare, f"{m.singles}: memory forms without a note: {bare}"


COVERAGE = {
    "zen": ["add_r64_i8", "vmovdqa_xmm_m128", "mov_m64_r64", "vaddpd_ymm_ymm_ymm",    # the gate's reference schemes
            "add_m64_r64", "add_m64_i8", "add_m32_r32", "add_m8_r8", "inc_m64", "shl_m64_cl", "mov_m32_r32",
            "vmovdqa_m128_xmm", "vmovdqa_m256_ymm", "vdivpd_ymm_ymm_ymm", "vsqrtpd_ymm_ymm", "vfmadd231pd_ymm_ymm_ymm",
            "vpaddd_ymm_ymm_ymm", "popcnt_r64_r64", "imul_r64_r64", "vmovq_xmm_r64"],
    "zen3": ["add_m64_r64", "add_m64_i8", "add_m32_r32", "add_m8_r8", "and_m64_r64", "inc_m64", "neg_m64",
             "shl_m64_cl", "mov_m64_r64", "mov_m32_r32", "vmovdqa_m128_xmm", "vmovdqa_m256_ymm", "vdivpd_ymm_ymm_ymm",
             "vdivpd_xmm_xmm_xmm", "vsqrtpd_ymm_ymm", "vpermilps_ymm_ymm_i8", "vmovq_xmm_r64",
             "vcvtsi2sd_xmm_xmm_r64", "vfmadd231pd_ymm_ymm_ymm", "vpermq_ymm_ymm_i8"],
    "zen4": ["add_m64_r64", "add_m64_i8", "inc_m64", "shl_m64_cl", "vmovdqa_m256_ymm", "vdivpd_ymm_ymm_ymm",
             "vaddps_zmm_zmm_zmm_k", "kandw_k_k_k", "vpcompressd_zmm_zmm_k", "vpcompressd_m512_zmm_k",
             "vpexpandd_zmm_zmm_k", "vpexpandd_zmm_m512", "vpcmpgtd_k_zmm_zmm", "vpcmpgtd_k_zmm_zmm_k",
             "vmovntpd_m512_zmm"],
    "zen5": ["add_m64_r64", "add_m64_i8", "vmovdqa_m256_ymm", "vdivpd_ymm_ymm_ymm", "kandw_k_k_k",
             "vpcompressd_zmm_zmm_k", "vpexpandd_zmm_zmm_k", "vmovntpd_m512_zmm", "vpternlogd_zmm_zmm_zmm_i8"],
}


@pytest.mark.parametrize("key", sorted(COVERAGE))
def test_the_tables_cover_the_forms_issue_39_compares(key):
    ref = reference_singles(key)
    assert not [s for s in COVERAGE[key] if s not in ref.values]


# ---------------------------------------------------------------------------- the loader's checks

GOOD = {
    "format": "pmsolve.reference-singles", "version": 1, "microarchitecture": "Test", "source": "two sources",
    "sources": {"a": "Source A, 2022-11-04", "b": "Source B at commit " + "0" * 40},
    "entries": [
        {"scheme": "add_r64_r64", "published": "ADD r,r", "inverse_throughput": 0.25, "source": "a"},
        {"scheme": "add_m64_r64", "published": "ADD (M64, R64)", "inverse_throughput": 0.56, "source": "b",
         "note": "consecutive slots"},
    ],
}


def test_a_well_formed_table_maps_each_scheme_to_its_own_citation():
    ref = parse_reference_singles(GOOD, "test")
    assert ref.values == {"add_r64_r64": 0.25, "add_m64_r64": 0.56}
    assert ref.sources == {"add_r64_r64": "Source A, 2022-11-04", "add_m64_r64": GOOD["sources"]["b"]}
    assert ref.published_as["add_m64_r64"] == "ADD (M64, R64)"
    assert ref.notes == {"add_m64_r64": "consecutive slots"}
    assert ref.comparison("add_r64_r64") == "within" and ref.compare == {}


@pytest.mark.parametrize("m", ["zen", "zen3", "zen4", "zen5"])
def test_figures_no_port_bound_measurement_can_match_say_how_they_compare(m):
    """uops.info's read-modify-writes are bound by their 16 copies' store-forwarding chains and a
    non-temporal store by memory: the hardware test must not hold the harness to them as equals."""
    ref = reference_singles(m)
    for n in ref.values:
        if n.startswith(("vmovnt", "movnt")):
            assert ref.comparison(n) == "none", n
        elif "read-modify-write" in ref.notes.get(n, "") and "uops.info" in ref.sources[n]:
            assert ref.comparison(n) == "at_most", n


def test_zen_reference_kernels_have_published_speeds():
    """The harness gate judges all four reference kernels on Zen / Zen+ (one store and two 128-bit
    FP adds per cycle: the store and FP kernels publish 1.0, where Zen 3 publishes 0.5)."""
    from pmsolve.harness.hardware import published_speeds
    assert published_speeds(reference_singles("zen")) == published_speeds(reference_singles("zen+")) == {
        "pmsolve_ref_alu": 0.25, "pmsolve_ref_load": 0.5, "pmsolve_ref_store": 1.0, "pmsolve_ref_fp": 1.0}


def test_front_end_bound_zen_figures_are_upper_bounds():
    """uops.info's Zen+ figures of 5- to 7-byte register forms (0.31, 0.38, 0.44) are 16 bytes of
    instructions per cycle, not the ALUs: a port-bound measurement may be faster."""
    ref = reference_singles("zen")
    bound = [s for s, n in ref.notes.items() if "front-end bound" in n]
    assert {"popcnt_r64_r64", "lzcnt_r64_r64", "andn_r64_r64_r64", "lea_r64_m"} <= set(bound)
    assert all(ref.comparison(s) == "at_most" for s in bound)


def broken(change):
    doc = copy.deepcopy(GOOD)
    change(doc)
    return doc


@pytest.mark.parametrize("change, why", [
    (lambda d: d["entries"][0].pop("source"), "source None"),
    (lambda d: d["entries"][0].update(source="c"), "source 'c'"),
    (lambda d: d.pop("sources"), "source 'a'"),
    (lambda d: d["sources"].update(a=""), "'sources' must map"),
    (lambda d: d.update(sources=["a", "b"]), "'sources' must map"),
    (lambda d: d["entries"].append(dict(d["entries"][0])), "listed twice"),
    (lambda d: d["entries"][0].update(inverse_throughput=0), "positive number"),
    (lambda d: d["entries"][0].update(inverse_throughput=-0.5), "positive number"),
    (lambda d: d["entries"][0].update(inverse_throughput=float("nan")), "positive number"),
    (lambda d: d["entries"][0].update(inverse_throughput=float("inf")), "positive number"),
    (lambda d: d["entries"][0].update(inverse_throughput=True), "positive number"),
    (lambda d: d["entries"][0].update(inverse_throughput="0.25"), "positive number"),
    (lambda d: d["entries"][0].pop("inverse_throughput"), "positive number"),
    (lambda d: d["entries"][0].update(published=" "), "no published name"),
    (lambda d: d["entries"][0].pop("scheme"), "no scheme"),
    (lambda d: d.update(entries=[]), "no entries"),
    (lambda d: d.update(format="something else"), "not a pmsolve.reference-singles"),
    (lambda d: d["entries"][0].update(compare="roughly"), "compare must be one of within, at_most, none"),
])
def test_the_loader_refuses_tables_it_cannot_cite(change, why):
    with pytest.raises(FormatError, match=re.escape(why)):
        parse_reference_singles(broken(change), "test")
