"""The campaign report renders its generalisation trees in a real browser (headless Chromium),
and hostile text (a predictor's error message with markup) stays text."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser

import pytest

import anica_helpers as H
from pmsolve.anica import report
from pmsolve.anica.campaign import Campaign
from pmsolve.anica.config import Config
from pmsolve.anica.domain import Form, Universe
from pmsolve.isa import load_catalogue

CHROMIUM = shutil.which("chromium") or (shutil.which("/usr/bin/chromium"))


class _Count(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.nodes = self.trees = self.scripts = self.imgs = 0
        self.depth_max = 0
        self._ul = 0

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class", "") or ""
        if tag == "li" and "node" in cls.split():
            self.nodes += 1
        if tag == "ul":
            self._ul += 1
            self.depth_max = max(self.depth_max, self._ul)
            if "gtree" in cls.split():
                self.trees += 1
        self.scripts += tag == "script"
        self.imgs += tag == "img"

    def handle_endtag(self, tag):
        if tag == "ul":
            self._ul -= 1


@pytest.fixture(scope="module")
def campaign_folder(tmp_path_factory):
    cat = load_catalogue()
    u = Universe([Form(cat[n]) for n in H.SCHEMES if n in cat], {})
    folder = tmp_path_factory.mktemp("camp")
    cfg = Config(a="factory:anica_helpers:slow_bsf", b="factory:anica_helpers:crashy", uops="none", samples=8,
                 chunk=4, orders=1, batch=10, block_size=3, max_discoveries=3, max_seconds=60, patience=30,
                 seed=1, workers=1, filter_unsupported=False)
    camp = Campaign(cfg, folder, H.slow_bsf(), H.crashy(), universe=u, progress=lambda m: None)
    st = camp.run()
    camp.pair.close()
    report.write(st, camp.universe, folder)
    return folder


def test_report_escapes_everything(campaign_folder):
    page = (campaign_folder / "report.html").read_text()
    assert "<script" not in page and "&lt;script&gt;" in page
    assert "<b>bold" not in page
    doc = json.loads((campaign_folder / "report.json").read_text())
    assert doc["discoveries"] and all(d["tree"] for d in doc["discoveries"])


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install -y chromium)")
def test_report_renders_trees_in_headless_chromium(campaign_folder):
    doc = json.loads((campaign_folder / "report.json").read_text())
    with tempfile.TemporaryDirectory() as profile:
        res = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--dump-dom", str(campaign_folder / "report.html")],
            capture_output=True, text=True, timeout=180)
    dom = res.stdout
    assert res.returncode == 0 and "</html>" in dom, res.stderr[-2000:]
    c = _Count()
    c.feed(dom)
    assert c.trees == len(doc["discoveries"])
    assert c.nodes == sum(len(d["tree"]) for d in doc["discoveries"])
    kept = max(sum(n["accepted"] for n in d["tree"]) for d in doc["discoveries"])
    assert c.depth_max >= kept  # kept steps nest: the chain is in the rendered DOM as a tree
    assert c.scripts == 0 and c.imgs == 0  # the hostile error text did not become markup
    assert "&lt;script&gt;alert" in dom
    assert re.search(r"discovery \d+", dom)
