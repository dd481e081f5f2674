"""The main job's parts: profiles, held-out experiments, the llvm-mca and OSACA adapters, the
accuracy table, the HTML report, the simulated run and (on x86-64) the smoke profile on the CPU."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser

import pytest

from pmsolve.cli import main
from pmsolve.harness.allocation import READ_ROTATION
from pmsolve.harness.cpu import MICROARCHITECTURES, reference_singles
from pmsolve.harness.hardware import available, published_speeds
from pmsolve.harness.references import MachineState
from pmsolve.harness.store import MeasurementStore
from pmsolve.isa import load_catalogue
from pmsolve.jobs import profiles
from pmsolve.jobs.host import (Beside, HostReport, JobConfig, MeasuringProgress, _covered, _misses_text, _per_copy,
                               _wait_for_quiet, block_of, explain_options, held_out_experiments)
from pmsolve.jobs.report import render_html
from pmsolve.model import Experiment, PortMapping
from pmsolve.predictors.llvm_mca import LlvmMcaPredictor, find_llvm_mca

CAT = load_catalogue(host=False)
CHROMIUM = shutil.which("chromium")


def test_profiles_choose_offered_common_schemes():
    quick = profiles.choose(CAT, "quick")
    assert 150 <= len(quick) <= 300 and len(set(quick)) == len(quick)
    assert all(CAT.status(CAT[s]) == "offered" for s in quick)
    assert {"add_r64_i32", "imul_r64_r64", "mov_r64_m64", "vaddpd_ymm_ymm_ymm"} <= set(quick)
    assert any("zmm" in s for s in quick) and any(s.startswith("k") for s in quick)   # AVX-512 offered here
    assert set(profiles.choose(CAT, "smoke")) == set(profiles.SMOKE)
    assert len(profiles.choose(CAT, "all")) == len(CAT.offered())
    no512 = load_catalogue(host=False)
    no512.flags = frozenset({"avx", "avx2", "fma", "bmi1", "bmi2", "lzcnt", "popcnt", "aes", "pclmulqdq", "f16c"})
    assert not any("zmm" in s for s in profiles.choose(no512, "quick"))   # ... and not where it is absent


def test_representative_order_puts_pure_loads_before_loads_that_compute():
    order = profiles.representative_order(CAT, ["add_r64_m64", "mov_r64_m64", "add_r64_r64"])
    assert order.index("mov_r64_m64") < order.index("add_r64_m64")
    assert order[0] == "add_r64_r64"


def test_schemes_that_bridge_port_groups_are_no_blocking_candidates():
    names = ["add_r64_m64", "sete_m8", "mov_r64_m64", "mov_m64_r64", "vmovdqa_xmm_m128", "vmovd_r32_xmm",
             "vmovd_xmm_r32", "vcvtsi2sd_xmm_xmm_r64", "kmovw_k_r32", "kmovw_k_m16", "add_r64_r64",
             "vpaddd_xmm_xmm_xmm", "lea_r64_m"]
    assert set(profiles.not_blocking(CAT, names)) == {"add_r64_m64", "sete_m8", "vmovd_r32_xmm", "vmovd_xmm_r32",
                                                      "vcvtsi2sd_xmm_xmm_r64", "kmovw_k_r32"}


def test_flag_readers_are_no_blocking_candidates_flag_writers_are():
    names = ["sete_r8", "cmovne_r64_r64", "add_r64_i32", "imul_r64_r64", "shl_r64_i8", "mov_r64_i32"]
    assert set(profiles.not_blocking(CAT, names)) == {"sete_r8", "cmovne_r64_r64"}


def test_mask_register_forms_are_no_blocking_candidates_mask_loads_and_vector_forms_are():
    names = ["kandw_k_k_k", "kmovw_k_k", "kshiftlw_k_k_i8", "kmovw_k_m16", "vpaddd_zmm_zmm_zmm"]
    assert set(profiles.not_blocking(CAT, names)) == {"kandw_k_k_k", "kmovw_k_k", "kshiftlw_k_k_i8"}


def test_memory_forms_get_a_floor_for_the_first_guess_of_their_uops():
    names = ["add_r64_m64", "mov_r64_m64", "vbroadcastss_ymm_m32", "vpaddd_zmm_zmm_m32bcst", "mov_m64_r64",
             "vmovdqa_m128_xmm", "add_m64_r64", "add_r64_r64", "lea_r64_m", "kmovw_k_m16"]
    assert dict(profiles.min_uops(CAT, names)) == {"add_r64_m64": 2, "vpaddd_zmm_zmm_m32bcst": 2, "mov_m64_r64": 2,
                                                    "vmovdqa_m128_xmm": 2, "add_m64_r64": 3}
    assert dict(explain_options(CAT, names, JobConfig()).min_uops)["add_m64_r64"] == 3


def test_held_out_experiments_avoid_the_inference_experiments():
    names = ["a", "b", "c", "d", "e"]
    a = held_out_experiments(names, 40, seed=3)
    assert a == held_out_experiments(names, 40, seed=3) != held_out_experiments(names, 40, 4)
    assert len(set(a)) == 40 and all(e.size in (4, 5) and len(e.counts) >= 3 for e in a)
    assert not set(held_out_experiments(names, 40, seed=3, exclude=set(a[:10]))) & set(a[:10])


@pytest.mark.skipif(find_llvm_mca() is None, reason="llvm-mca missing")
def test_llvm_mca_many_blocks_in_one_call_per_copy():
    blocks = [block_of(CAT, Experiment({"add_r64_r64": 1})), block_of(CAT, Experiment({"imul_r64_r64": 1})),
              block_of(CAT, Experiment({"vaddpd_ymm_ymm_ymm": 2}))]
    (add, imul, vadd), errors = _per_copy(LlvmMcaPredictor("znver3"), blocks)
    assert add == pytest.approx(0.25, rel=0.05) and imul == pytest.approx(1.0, rel=0.05)
    assert vadd == pytest.approx(1.0, rel=0.05) and not errors       # two vaddpd per copy, 0.5 each


def _report(predictions: dict, measured: list[float]) -> HostReport:
    held = [Experiment({"a": 2, "b": 1, "c": 1})] * len(measured)
    return HostReport("test machine", JobConfig(held_out=3), None, None, None, None, {}, held, measured,
                      predictions, [], {"total": 1.0})


def test_accuracy_scores_every_predictor_on_the_common_coverage():
    measured = [1.0, 2.0, 3.0, 4.0, float("nan")]
    rep = _report({"good": [1.0, 2.0, 3.0, 4.0, 5.0], "partial": [None, 2.2, 3.3, 4.4, 5.5]}, measured)
    acc = rep.accuracy()
    assert acc["held_out"] == 4 and acc["common"] == 3           # NaN measurement out, partial's gap out
    good, partial = acc["predictors"]
    assert good["covered"] == 4 and partial["covered"] == 3
    assert good["common"]["mape"] == pytest.approx(0.0) and partial["common"]["mape"] == pytest.approx(0.1)
    assert good["common"]["n"] == partial["common"]["n"] == 3     # scored on the same experiments
    assert good["own"]["kendall_tau_b_resolved"] == pytest.approx(1.0) == good["own"]["tau_b_ceiling"]


class _Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, int] = {}
        self.scripts = 0
        self.details = 0

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        if tag == "tr" and cls:
            self.rows[cls] = self.rows.get(cls, 0) + 1
        self.scripts += tag == "script"
        self.details += tag == "details"


def _doc() -> dict:
    w = {"kind": "blocking", "experiment": {"blk": 4, "x<script>": 1}, "measured": 2.25, "modelled": 2.25,
         "baseline": {"blk": 4}, "measured_baseline": 2.0, "modelled_baseline": 2.0, "ports": ["0", "1"],
         "non_evading": 1.0}
    return {"machine": "AMD Zen 4 <b>", "profile": "quick", "method": "explain", "ports": 3, "r_max": 6.0,
            "port_names": ["0", "1", "2"], "models": [{"tool": "llvm-mca", "version": 19, "model": "znver4",
                                                      "why": "its own model", "fallback": False}],
            "accuracy": {"held_out": 5, "common": 4, "resolution": 0.01, "predictors": [
                {"name": "pmsolve (explain)", "covered": 5, "common": {"mape": 0.02, "kendall_tau_b": 0.95},
                 "own": {"mape": 0.02, "kendall_tau_b": 0.95}, "model": ""}],
                         "subsets": [{"subset": "mapped schemes only", "experiments": 2, "predictors": [
                             {"name": "pmsolve (explain)", "covered": 2, "own": {"mape": 0.01, "kendall_tau_b_resolved": 1.0}}]},
                             {"subset": "with a modelled <scheme>", "experiments": 3, "predictors": [
                                 {"name": "pmsolve (explain)", "covered": 3, "own": {"mape": 0.034,
                                                                                    "kendall_tau_b_resolved": 0.9}}]}]},
            "schemes": [{"scheme": "x<script>", "tp": 0.5, "confidence": 1.0, "source": "derived blocking",
                         "uops": [{"ports": ["0", "1"], "count": 1, "witnesses": [w]}],
                         "checks": [{"kind": "check", "experiment": {"x<script>": 4}, "measured": 2.5,
                                     "modelled": 2.0}],
                         "alternatives": [[{"ports": ["0<"], "count": 1}]]},
                        {"scheme": "y", "tp": 1.0, "confidence": 0.8,
                         "uops": [{"ports": ["2"], "count": 1, "witnesses": []}]}],
            "misfits": {"outside the model": [{"scheme": "div", "reason": "slower <i>", "experiments": [],
                                               "prediction": {"kind": "ports + cost", "confidence": 0.9, "cost": 4.5,
                                                              "evidence": [9, 10],
                                                              "uops": [{"ports": ["0<>"], "count": 1}]}}]},
            "predictions": {"kinds": {"mapped": 2, "unit": 0, "ports + cost": 1, "cost": 0}, "predicted": 3,
                            "schemes": 4, "share": 0.75, "unpredicted": {"bad<x>": "its kernel faults"}},
            "singles": {"y": 1.0}, "singles_reference": {"source": "a table", "values": {"y": 1.0}},
            "seconds": {"total": 12.0}, "notes": ["n<1>"],
            "misses": {"margin": 0.05, "count": 3, "localised": 2, "cores": [
                {"experiment": {"fma<z>": 1, "st": 1}, "measured": 1.74, "doubled": 1.73, "predicted": 1.0,
                 "kind": "no shared port", "held_out": [{"fma<z>": 1, "st": 1, "y": 2}, {"fma<z>": 1, "st": 1, "x": 1}]},
                {"experiment": {"ld<z>": 1, "ld": 1}, "measured": 2.0, "doubled": 2.0, "predicted": 1.5,
                 "kind": "no port mapping", "held_out": [{"ld<z>": 1, "ld": 1, "y": 1}],
                 "parts": [{"experiment": {"ld<z>": 1}, "measured": 1.0}, {"experiment": {"ld": 1}, "measured": 0.5}]}]},
            "slow_schedules": [{"experiment": {"imul<r>": 1, "mov": 4}, "measured": 1.625, "bound": 1.25}]}


def test_report_page_is_escaped_and_complete():
    page = render_html(_doc())
    assert "<script" not in page and "&lt;script&gt;" in page
    assert "Zen 4 <b>" not in page and "Zen 4 &lt;b&gt;" in page and "slower <i>" not in page
    dom = _Dom()
    dom.feed(page)
    assert dom.rows.get("scheme") == 2 and dom.scripts == 0 and dom.details >= 3   # witnesses, misfits, slow
    assert "imul&lt;r&gt;, mov×4" in page and "1.625" in page and "id='slow-schedules'" in page
    assert "(derived blocking)" in page and "check: <code>x&lt;script&gt;×4</code> measured 2.500" in page
    assert "2 experiment(s)" in page     # the µop's witness and the check
    assert "fits as well: 1×[0&lt;]" in page   # placements the measurements cannot tell apart
    assert dom.rows.get("miss") == 2 and "fma&lt;z&gt;, st, y×2" in page and "1.730" in page
    assert "part <code>ld&lt;z&gt;</code> 1.000<br>part <code>ld</code> 0.500" in page
    # what each scheme is predicted with: the kinds, the misfit's model, those without a prediction
    assert dom.rows.get("kind") == 4 and "3 of 4 schemes (75.0 %)" in page
    assert "predicted as <b class='prediction'>ports + cost</b> with µops 1×[0&lt;&gt;], 4.500 cycles per copy" in page
    assert "9 of 10 measured experiments within 5 %" in page and "<code>bad&lt;x&gt;</code>: its kernel faults" in page
    # held-out mixes come from every scheme, and those with a modelled scheme are scored on their own line
    assert "drawn from every scheme of the profile" in page and dom.rows.get("subset") == 2
    assert "with a modelled &lt;scheme&gt;" in page and "3.4 % (3), 0.900" in page


def test_held_out_mixes_with_a_modelled_scheme_are_scored_on_their_own():
    """Held-out experiments are drawn from every scheme, misfits too (issue 39); those whose
    prediction needs a modelled scheme are scored on a line of their own, and the ones drawn from
    PMEvo's sample apart from those drawn from the whole profile."""
    from fractions import Fraction

    from pmsolve.modelled import SchemeModel, with_models
    model = with_models(PortMapping(["0", "1"], {"a": [(frozenset({"0"}), 1)], "b": [(frozenset({"1"}), 1)]}),
                        {"div": SchemeModel("cost", 1.0, Fraction(4))})
    held = [Experiment({"a": 2, "b": 1}), Experiment({"a": 1, "div": 1}), Experiment({"b": 3, "div": 2}),
            Experiment({"a": 1, "b": 2})]
    measured = [2.0, 4.0, 8.4, 2.0]
    preds = {"pmsolve (explain)": _covered(model, held, None), "mapping only": _covered(model.mapping, held, None)}
    assert preds["pmsolve (explain)"] == [2.0, 4.0, 8.0, 2.0] and preds["mapping only"] == [2.0, None, None, 2.0]
    rep = HostReport("test machine", JobConfig(held_out=3), None, model.mapping, None, None, {}, held, measured,
                     preds, [], {"total": 1.0}, model=model, drawn=3)
    parts = {p["subset"]: p for p in rep.accuracy()["subsets"]}
    assert parts["drawn from the whole profile"]["experiments"] == 3
    assert parts["mapped schemes only"]["experiments"] == 2 and parts["with a modelled scheme"]["experiments"] == 2
    mine = {p["name"]: p for p in parts["with a modelled scheme"]["predictors"]}
    assert mine["pmsolve (explain)"]["covered"] == 2 and mine["mapping only"]["covered"] == 0


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install -y chromium)")
def test_report_renders_in_headless_chromium(tmp_path):
    path = tmp_path / "report.html"
    path.write_text(render_html(_doc()), encoding="utf-8")
    with tempfile.TemporaryDirectory() as profile:
        res = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--dump-dom", str(path)], capture_output=True, text=True, timeout=180)
    dom = res.stdout
    assert res.returncode == 0 and "</html>" in dom, res.stderr[-2000:]
    parsed = _Dom()
    parsed.feed(dom)
    assert parsed.rows.get("scheme") == 2 and parsed.scripts == 0
    assert re.search(r"<table id=\"accuracy\"", dom) and re.search(r"<table id=\"ports\"", dom)
    assert re.search(r"<table id=\"misses\"", dom)
    assert html.escape("x<script>") in dom and "1×[0,1]" in dom


def test_main_job_simulated(capsys, tmp_path):
    out_file, page = tmp_path / "m.json", tmp_path / "r.html"
    assert main(["infer", "--simulated", "--held-out", "60", "--quiet", "--json", "-o", str(out_file),
                 "--report", str(page)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["machine"] == "simulated Zen-like machine" and out["ports"] == 10 and len(out["held_out"]) == 60
    rows = {r["name"]: r for r in out["accuracy"]["predictors"]}
    assert set(rows) == {"pmsolve (explain)", "ground truth"}
    held = out["held_out"]
    for name, r in rows.items():   # the reported figures are the rows' figures
        mape = sum(abs(x[name] - x["measured"]) / x["measured"] for x in held) / len(held)
        assert r["common"]["mape"] == pytest.approx(mape, rel=1e-9), name
    # the truth differs from the measurements by the 1 % noise only; the explained mapping is the
    # truth (the gate), so it does as well, far from a rough mapping's 10-20 %
    assert rows["ground truth"]["common"]["mape"] < 0.02
    assert rows["pmsolve (explain)"]["common"]["mape"] == pytest.approx(rows["ground truth"]["common"]["mape"])
    assert json.loads(out_file.read_text())["explanation"]["schemes"]      # `pmsolve explain` reads it
    # the explained mapping is the truth, so only the 1 % noise could miss, and by 5 % it hardly
    # ever does: this checks that the report has the field and agrees with its rows, while
    # tests/test_misses.py checks what the shrinking finds
    misses = out["misses"]
    assert misses["count"] == sum(abs(x["pmsolve (explain)"] - x["measured"]) > 0.05 * x["measured"] for x in held)
    assert "<table id='schemes'>" in page.read_text()
    # a characterised scheme comes with the experiments not used to derive it, which it reproduces
    characterised = [x for x in out["schemes"] if x["source"] == "characterised"]
    assert characterised and all(any(w["kind"] == "check" for w in x["checks"]) for x in characterised)
    assert all(abs(w["modelled"] - w["measured"]) <= 0.05 * w["measured"] + 0.1
               for x in characterised for w in x["checks"] if w["kind"] == "check")


@pytest.mark.skipif(available() is not None, reason=str(available()))
def test_smoke_profile_on_this_cpu(tmp_path):
    """CI's run on hardware: a handful of schemes through every stage, under a minute or two.
    A burst outside the VM that lasts through the whole job leaves fewer schemes mapped (one
    run covered 9 held-out experiments), or a witness measured in it off the mapping its quieter
    experiments gave (a CI run of 2026-12-07, the reference ALU kernel at 0.38 cycles for 0.19):
    after a pause the job runs once more, from scratch."""
    start = time.monotonic()
    for attempt in range(2):
        if attempt and time.monotonic() - start > 600:
            break
        time.sleep(15 * attempt)
        work = tmp_path / f"run{attempt}"
        argv = ["infer", "--profile", "smoke", "--workdir", str(work), "--held-out", "30", "--no-pmevo", "--quiet",
                "--json"]
        try:    # a child, so that a machine too disturbed to measure in 20 minutes can be told from a hang
            p = subprocess.run([sys.executable, "-m", "pmsolve.cli", *argv], capture_output=True, text=True, timeout=1200)
        except subprocess.TimeoutExpired:
            rows = 0
            if (work / "measurements.sqlite").exists():
                store = MeasurementStore(work / "measurements.sqlite")
                rows = len(store.rows())
                store.close()
            if rows >= 50:     # it measured, ever more slowly: the neighbours, not pmsolve
                pytest.skip(f"too disturbed to judge: {rows} measurements in 20 minutes")
            raise
        assert p.returncode == 0, p.stderr[-3000:]
        out = json.loads(p.stdout)
        own = next(r for r in out["accuracy"]["predictors"] if r["name"].startswith("pmsolve"))
        off = [(s["scheme"], w) for s in out["schemes"] for u in s["uops"] for w in u["witnesses"]
               if w["modelled"] is not None and abs(w["modelled"] - w["measured"]) > 0.1 * w["measured"] + 0.05]
        if own["covered"] >= 20 and not off:
            break
    assert out["cpu"]["description"] and out["schemes"] and out["ports"] >= 2
    harness = out["harness"]     # what measured it, the CPU's read layout included (docs/memory-layout.md)
    assert harness["oracle"] == "hardware" and harness["allocation_version"] >= 13
    arch = MICROARCHITECTURES.get(out["cpu"]["microarchitecture"])
    assert harness.get("read_rotation", READ_ROTATION) == (arch.read_rotation if arch else READ_ROTATION)
    assert {m["tool"] for m in out["models"]} <= {"llvm-mca", "OSACA"}
    assert own["covered"] >= 20
    # every mapped scheme shows witnesses that its mapping reproduces
    assert all(any(u["witnesses"] for u in s["uops"]) for s in out["schemes"]) and not off, off


def test_a_mapping_of_a_sample_predicts_only_what_it_maps():
    """PMEvo's comparison maps a sample of the schemes: experiments with other schemes get None
    (not a crash, not a guess), the others the exact throughput in the same order."""
    m = PortMapping(("0", "1"), {"a": [({"0"}, 1)], "b": [({"0", "1"}, 1)]})
    held = [Experiment({"a": 1, "b": 1}), Experiment({"a": 1, "c": 1}), Experiment({"a": 2})]
    assert _covered(m, held, None) == [1.0, None, 2.0]


def test_held_out_experiments_of_few_schemes_end():
    """Three schemes have only 9 experiments of 4-5 instructions using all three: asking for 200
    must return those 9, not loop forever (the smoke profile maps a handful)."""
    got = held_out_experiments(["a", "b", "c"], 200, 1)
    assert len(got) == len(set(got)) == 9
    assert all(len(e.counts) == 3 and e.size in (4, 5) for e in got)


def test_text_report_gives_the_parts_a_core_contradicts():
    text = "\n".join(_misses_text(_doc()["misses"]))
    assert "no port mapping: 1 miss(es), 1 core(s)" in text
    assert "parts: ld<z>:1 1.000, ld:1 0.500" in text


def test_measuring_progress_speaks_every_minute_and_says_why_it_is_slow():
    """On a disturbed machine an experiment takes seconds: a line every 500 would leave a user
    staring at one line for half an hour (as a smoke run on the Zen 3 VM did, 88 experiments in 4
    minutes). Quiet: one line per 500; slow: one per minute, naming the noise once it is common."""
    lines, now = [], [0.0]
    quiet = MeasuringProgress(lines.append, lambda e: False, 0.0, clock=lambda: now[0])
    for k in range(1000):
        now[0] = (k + 1) * 0.01
        quiet(k, Experiment({"a": 1}))
    assert len(lines) == 2 and lines[0].startswith("  500 experiments measured (5 s, 100.0 per second)")
    lines.clear()
    slow = MeasuringProgress(lines.append, lambda e: e["a"] % 2 == 0, 0.0, clock=lambda: now[0])
    for k in range(1, 61):
        now[0] = k * 3.0
        slow(k, Experiment({"a": k}))
    assert len(lines) == 3 and lines[0].startswith("  20 experiments measured (60 s, 0.3 per second)")
    assert all("noisy through every retry" in x for x in lines)
    # beside a neighbour the gate finds its quiet rounds but waits for them: nothing is flagged,
    # and the line says where the time went (0.45 s of each 0.5 s here, then a quiet minute)
    lines.clear()
    waited = [0.0]
    gated = MeasuringProgress(lines.append, lambda e: False, 0.0, clock=lambda: now[0], waited=lambda: waited[0])
    for k in range(1, 241):
        now[0] = k * 0.5
        waited[0] += 0.45 if k <= 120 else 0.0
        gated(k, Experiment({"a": k}))
    assert len(lines) == 2
    assert lines[0].endswith("; the worker waited for quiet reference kernels 90 % of the last 60 s: something "
                             "shares this core (docs/harness.md)")
    assert lines[1] == "  240 experiments measured (120 s, 2.0 per second)"
    # the 500th experiment a moment after the minute's line: a share of half a second says nothing
    lines.clear()
    waited[0] = 0.0
    short = MeasuringProgress(lines.append, lambda e: False, 0.0, clock=lambda: now[0], waited=lambda: waited[0])
    for k in range(1, 501):
        now[0], waited[0] = k * 0.1205, k * 0.1205 * 0.9
        short(k, Experiment({"a": k}))
    assert len(lines) == 2 and "90 % of the last 60 s" in lines[0]
    assert lines[1] == "  500 experiments measured (60 s, 8.3 per second)"


def test_the_job_waits_for_quiet_and_says_when_it_measures_beside_a_neighbour():
    """A neighbour slows the reference kernels for hours (a Zen 3 VM, 2026-11-27): the job waits
    up to the minutes it is given, a burst every 30 s, and goes on with a warning for the report
    when they never reach the published speeds; at speed it starts at once."""
    published = {"pmsolve_ref_alu": 0.25, "pmsolve_ref_store": 0.5}
    slow = MachineState({"pmsolve_ref_alu": 0.36, "pmsolve_ref_store": 0.52}, published)
    quiet = MachineState({"pmsolve_ref_alu": 0.26, "pmsolve_ref_store": 0.5}, published)
    assert set(slow.slow()) == {"pmsolve_ref_alu"} and quiet.slow() == {}
    assert slow.describe() == "alu 0.360 for 0.25, store 0.520 for 0.5 cycles per instruction"
    now, lines = [0.0], []

    def sleep(s):
        now[0] += s

    states = iter([slow, slow, quiet])
    assert _wait_for_quiet(lambda: next(states), 5, lines.append, sleep, lambda: now[0]) is None
    assert now[0] == 60 and len(lines) == 3 and lines[-1].startswith("  reference kernels at this CPU's published")
    now[0], lines[:] = 0.0, []
    warning = _wait_for_quiet(lambda: slow, 2, lines.append, sleep, lambda: now[0])
    assert now[0] == 120 and "alu 0.360 for 0.25" in warning and lines[-1] == "  warning: " + warning
    assert _wait_for_quiet(lambda: slow, 0, lines.append, sleep, lambda: now[0]) == warning   # no wait by default


def test_published_speeds_of_the_reference_kernels_come_from_the_cpu_table():
    """The ALU kernel's scheme (add r64, i8) is in no table: it is judged by add r64, r64, which
    runs on the same pipes; a kernel whose figure a table lacks is not judged."""
    zen3, zen4 = published_speeds(reference_singles("zen3")), published_speeds(reference_singles("zen4"))
    assert zen3 == {"pmsolve_ref_alu": 0.25, "pmsolve_ref_load": 0.5, "pmsolve_ref_store": 0.5, "pmsolve_ref_fp": 0.5}
    assert "pmsolve_ref_load" not in zen4 and zen4["pmsolve_ref_alu"] == 0.25


def test_report_page_lists_shared_resources_and_serialising_schemes():
    doc = {**_doc(), "shared": {"resources": [{"name": "S1", "first": "ld<z>", "hold": {"ld<z>": 0.888, "st": 0.6},
                                               "beside": {"ld": 0.46}, "mode_context": True, "witnesses": []}],
                                "serial": [["bt<m>", {"bt<m>": 1, "mov": 10}, 7.15]], "left_out": []}}
    page = render_html(doc)
    assert "<h2>Shared resources</h2>" in page and "ld&lt;z&gt; 0.888, st 0.6" in page and "ld 0.46" in page
    assert "S1 (any 512-bit scheme is context)" in page and "<code>bt&lt;m&gt;</code> (<code>bt&lt;m&gt;, mov×10</code> = 7.150)" in page
    assert "shared resource (S1: ld&lt;z&gt; and 2 other(s))" in page
    assert "Shared resources" not in render_html(_doc())


def test_work_beside_runs_while_the_caller_goes_on_on_the_cpus_it_is_given():
    """llvm-mca and OSACA run beside PMEvo: the caller must not wait for them before its own
    work (here the work waits for the caller, so a Beside that ran it at once would time out),
    they run on the CPUs given (off the measuring one), and an error reaches the caller."""
    import os
    import threading
    go = threading.Event()
    cpus = {min(os.sched_getaffinity(0))}

    def work():
        assert go.wait(10), "the caller waited for the work"
        return os.sched_getaffinity(0)

    side = Beside(work, cpus)
    go.set()
    assert side.result() == cpus
    assert side.seconds >= 0

    def fails():
        raise ValueError("OSACA broke")

    with pytest.raises(ValueError, match="OSACA broke"):
        Beside(fails, None).result()
