"""The campaign report: one static HTML page (no scripts, no external resources) plus JSON.

Discoveries are ranked by interestingness; each shows its abstract block, its generality, the
minimised and the original example block, and its generalisation tree as nested lists: every
expansion tried hangs under the block it was tried on; kept ones continue the chain, rejected
ones are leaves carrying the witness that refuted them. Every piece of text (assembly,
predictor names and error messages, feature values) goes through :func:`html.escape`.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

from pmsolve.anica.campaign import State
from pmsolve.anica.domain import Universe
from pmsolve.anica.rank import by_interestingness, generality
from pmsolve.fileio import atomic_write_text

CSS = """body{font-family:sans-serif;max-width:70em;margin:auto;padding:1em}
pre{background:#f4f4f4;padding:.4em;margin:.2em 0}
.accepted>.step{border:3px double #2a2}.rejected>.step{border:1px solid #c22}
.step{padding:.3em;margin:.3em 0}.note{color:#555}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em}
article{border-top:2px solid #888;margin-top:1.5em}
ul.abstract{list-style:none;padding-left:.5em}.gtree ul{padding-left:1em}"""


def e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _num(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return "∞" if math.isinf(x) else f"{x:.3g}"
    return e(x)


def _witnesses(ws: list[dict[str, Any]], a: str, b: str) -> str:
    if not ws:
        return ""
    rows = "".join(
        f"<tr><td><pre>{e(chr(10).join(w['asm']))}</pre></td><td>{_num(w['a'])}</td><td>{_num(w['b'])}</td>"
        f"<td>{'∞' if w['score'] is None else _num(w['score'])}</td><td>{e(w['error'] or '')}</td></tr>"
        for w in ws)
    return (f"<table class='witnesses'><tr><th>block</th><th>{e(a)}</th><th>{e(b)}</th>"
            f"<th>score</th><th>error</th></tr>{rows}</table>")


def _step(n: dict[str, Any], a: str, b: str) -> str:
    desc = "".join(f"<li>{e(x)}</li>" for x in n["describe"])
    verdict = "kept" if n["accepted"] else "rejected"
    return (f"<div class='step'><b>{e(n['expansion'])}</b> — {verdict} <span class='note'>({e(n['note'])})</span>"
            f"<ul class='abstract'>{desc}</ul>{_witnesses(n['witnesses'], a, b)}</div>")


def tree_html(tree: list[dict[str, Any]], a: str, b: str) -> str:
    """Nested lists: kept steps nest deeper, rejected steps are leaves of the step they left."""
    if not tree:
        return ""
    out: list[str] = []
    depth = 0
    root = tree[0]
    out.append(f"<ul class='gtree'><li class='node {'accepted' if root['accepted'] else 'rejected'}'>"
               + _step(root, a, b))
    for n in tree[1:]:
        cls = "accepted" if n["accepted"] else "rejected"
        if n["accepted"]:
            out.append(f"<ul><li class='node {cls}'>{_step(n, a, b)}")
            depth += 1
        else:
            out.append(f"<ul><li class='node {cls}'>{_step(n, a, b)}</li></ul>")
    out.append("</li></ul>" * depth + "</li></ul>")
    return "".join(out)


def build(state: State, u: Universe) -> tuple[str, dict[str, Any]]:
    cfg = state.config
    final = state.final()
    order = by_interestingness([d.score for d in final])
    ranked = [final[k] for k in order]
    doc: dict[str, Any] = {
        "predictors": [cfg.a, cfg.b], "config": cfg.to_json(),
        "counters": {"sampled": state.sampled, "interesting": state.interesting, "subsumed": state.subsumed,
                     "discoveries": len(state.discoveries), "kept": len(final), "seconds": state.elapsed,
                     "predictions": state.predicted, "unsupported": len(state.unsupported or [])},
        "discoveries": [dict(d.to_json(), generality=generality(u, d.block), describe=d.block.describe())
                        for d in ranked]}
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>AnICA: {e(cfg.a)} vs {e(cfg.b)}</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>AnICA campaign: {e(cfg.a)} vs {e(cfg.b)}</h1>",
             "<table id='summary'>" + "".join(f"<tr><th>{e(k)}</th><td>{_num(v)}</td></tr>"
                                              for k, v in doc["counters"].items()) + "</table>",
             f"<p>Interesting: {e(cfg.mode)} difference &gt; {_num(cfg.threshold)} or a predictor error; "
             f"{cfg.samples} samples per check, {cfg.orders} expansion orders, seed {cfg.seed}.</p>",
             "<section id='discoveries'>"]
    for rank, d in enumerate(doc["discoveries"], 1):
        desc = "".join(f"<li>{e(x)}</li>" for x in d["describe"])
        score = "∞ (crash)" if d["crash"] else _num(d["score"])
        parts.append(
            f"<article class='discovery' id='d{d['id']}'><h2>#{rank}: discovery {d['id']}</h2>"
            f"<p>mean score {score}, generality {d['generality']} forms</p>"
            f"<ul class='abstract'>{desc}</ul>"
            f"<h3>Example blocks</h3><p>minimised:</p><pre class='example'>{e(chr(10).join(d['minimal']['asm']))}</pre>"
            f"<p>as sampled:</p><pre class='example'>{e(chr(10).join(d['origin']))}</pre>"
            f"<details open><summary>generalisation tree ({len(d['tree'])} steps)</summary>"
            f"{tree_html(d['tree'], cfg.a, cfg.b)}</details></article>")
    parts.append("</section></body></html>")
    return "".join(parts), doc


def write(state: State, u: Universe, folder: str | Path) -> tuple[Path, Path]:
    folder = Path(folder)
    page, doc = build(state, u)
    hp, jp = folder / "report.html", folder / "report.json"
    atomic_write_text(hp, page)
    atomic_write_text(jp, json.dumps(doc, indent=1))
    return hp, jp
