"""The main job's static HTML report, in the spirit of uops.info's tables.

One self-contained page, rendered from the job's JSON document (:meth:`HostReport.to_json`), no
scripts, every text escaped:

* the CPU, the profile, the comparison models (and whether each is a fallback), wall time;
* the accuracy table: every predictor on the held-out experiments all of them cover, and each
  one's coverage;
* a picture of the ports: one row per µop kind (port set) with the number of schemes that use
  it, one column per port;
* one row per scheme: measured tp⁻¹, port usage, µop count, confidence, and its witnesses
  (expandable);
* what every scheme is predicted with (:mod:`pmsolve.modelled`): mapped, a unit, its µops and
  a cost, or a cost alone, with counts and the schemes left without a prediction;
* the misfits by category, each with its experiments and the model that predicts it, and the
  experiments set aside as slow schedules (slower than the port bound of the mapping that
  explains everything else).
"""

from __future__ import annotations

import html
from collections import Counter
from typing import Any

from pmsolve.infer.explain.shared import members

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ccc;padding:2px 6px;font-size:13px;text-align:left;vertical-align:top}
th{background:#eee}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.on{background:#4a7}
td.off{background:#f7f7f7}
.best{font-weight:bold}
details summary{cursor:pointer}
code{font-size:12px}
.muted{color:#777}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _exp(e: dict[str, int]) -> str:
    return ", ".join(f"{n}×{c}" if c != 1 else n for n, c in e.items())


def _num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _uops(uops: list[dict[str, Any]]) -> str:
    return " + ".join(f"{u['count']}×[{','.join(u['ports'])}]" for u in uops) or "–"


def _witness(w: dict[str, Any]) -> str:
    text = f"{w['kind']}: <code>{_e(_exp(w['experiment']))}</code> measured {_num(w.get('measured'))}"
    if w.get("modelled") is not None:
        text += f", modelled {_num(w['modelled'])}"
    if w.get("baseline"):
        text += (f"; {'stand-in' if w['kind'] == 'stand-in' else 'baseline'} <code>{_e(_exp(w['baseline']))}</code> measured {_num(w.get('measured_baseline'))}"
                 f", modelled {_num(w.get('modelled_baseline'))}")
    if w.get("non_evading") is not None:
        text += f"; non-evading µops on [{_e(','.join(w.get('ports', [])))}] = {_num(w['non_evading'], 2)}"
    return text


def _accuracy(acc: dict[str, Any]) -> list[str]:
    rows = acc.get("predictors", [])
    if not rows:
        return ["<p class='muted'>no held-out experiments were scored</p>"]
    best = min((r["common"]["mape"] for r in rows if r.get("common")), default=None)
    out = [f"<p>{acc['held_out']} held-out 4–5-instruction experiments drawn from every scheme of the profile "
           f"(misfits too), none used for inference; {acc['common']} covered by every predictor (the first "
           "columns).</p>",
           f"<p>Kendall's τ-b is given on the raw measurements and on measurements rounded to "
           f"{acc['resolution']} cycles (τ-b .01, the precision of published tables, and the dissertation's τ_K, "
           "sec. 3.2.2). Raw measurements tie "
           "no pair, while a port mapping predicts few distinct values and ties many: τ-b max is the most "
           "τ-b can be with the predictor's ties, however right it is.</p>",
           "<table id='accuracy'><tr><th>predictor</th><th>MAPE (common)</th><th>Kendall τ-b (common)</th>"
           "<th>τ-b .01 (common)</th><th>covered</th><th>MAPE (own coverage)</th><th>Kendall τ-b (own)</th>"
           "<th>τ-b .01 (own)</th><th>τ-b max (own)</th>"
           "<th>shared with pmsolve</th><th>MAPE (shared)</th><th>pmsolve's MAPE (shared)</th><th>model</th></tr>"]
    for r in rows:
        c = r.get("common") or {}
        cls = " class='num best'" if c and c.get("mape") == best else " class='num'"
        own = r.get("own") or {}
        out.append(f"<tr><td>{_e(r['name'])}</td><td{cls}>{_num(100 * c['mape'], 1) + ' %' if c else '–'}</td>"
                   f"<td class='num'>{_num(c.get('kendall_tau_b'))}</td>"
                   f"<td class='num'>{_num(c.get('kendall_tau_b_resolved'))}</td>"
                   f"<td class='num'>{r['covered']}/{acc['held_out']}</td>"
                   f"<td class='num'>{_num(100 * own['mape'], 1) + ' %' if own else '–'}</td>"
                   f"<td class='num'>{_num(own.get('kendall_tau_b'))}</td>"
                   f"<td class='num'>{_num(own.get('kendall_tau_b_resolved'))}</td>"
                   f"<td class='num'>{_num(own.get('tau_b_ceiling'))}</td>{_versus(r.get('versus_first'))}"
                   f"<td>{_e(r.get('model', ''))}</td></tr>")
    out.append("</table>")
    return out + _subsets(acc.get("subsets") or [])


def _subsets(subsets: list[dict[str, Any]]) -> list[str]:
    """The held-out experiments split by what they contain (only mapped schemes, a modelled one):
    each predictor's MAPE and τ-b .01 on the part it covers, so a score over mapped schemes cannot
    stand in for the whole."""
    if not subsets:
        return []
    names = [r["name"] for r in subsets[0]["predictors"]]
    out = ["<table id='subsets'><tr><th>held-out subset</th><th>experiments</th>"
           + "".join(f"<th>{_e(n)}: MAPE (covered), τ-b .01</th>" for n in names) + "</tr>"]
    for part in subsets:
        by_name = {r["name"]: r for r in part["predictors"]}
        cells = []
        for n in names:
            r = by_name.get(n, {"covered": 0})
            own = r.get("own") or {}
            cells.append(f"<td class='num'>{_num(100 * own['mape'], 1) + ' %' if own else '–'} ({r['covered']}), "
                         f"{_num(own.get('kendall_tau_b_resolved'))}</td>")
        out.append(f"<tr class='subset'><td>{_e(part['subset'])}</td><td class='num'>{part['experiments']}</td>"
                   + "".join(cells) + "</tr>")
    out.append("</table>")
    return out


def _versus(vs: dict[str, Any] | None) -> str:
    """Head to head with pmsolve: both on the experiments both cover."""
    if not vs:
        return "<td class='num'>–</td><td class='num'>–</td><td class='num'>–</td>"
    this, first = vs.get("this") or {}, vs.get("first") or {}
    return (f"<td class='num'>{vs['covered']}</td>"
            f"<td class='num'>{_num(100 * this['mape'], 1) + ' %' if this else '–'}</td>"
            f"<td class='num'>{_num(100 * first['mape'], 1) + ' %' if first else '–'}</td>")


def _misses(doc: dict[str, Any] | None) -> list[str]:
    if not doc or not doc.get("count"):
        return []
    out = ["<h3>Where the mapping misses</h3>",
           f"<p>{_e(doc['count'])} held-out experiment(s) miss pmsolve's prediction by more than "
           f"{_num(100 * doc['margin'], 0)} %; the worst {_e(doc['localised'])} are shrunk to the smallest "
           "sub-experiments that still miss. <i>no port mapping</i>: the experiment runs slower than the sum of "
           "two measured parts (or faster than one), which no port mapping allows; <i>no shared port</i>: the "
           "schemes share no port in the mapping, so the bottleneck is not a port; <i>unstable</i>: the doubled "
           "experiment does not miss.</p>",
           "<table id='misses'><tr><th>kind</th><th>smallest experiment that misses</th><th>measured</th>"
           "<th>doubled</th><th>mapping</th><th>held-out misses</th></tr>"]
    for c in doc.get("cores", []):
        held = "".join(f"<li><code>{_e(_exp(e))}</code></li>" for e in c["held_out"])
        parts = "".join(f"<br>part <code>{_e(_exp(p['experiment']))}</code> {_num(p['measured'])}"
                        for p in c.get("parts", []))
        out.append(f"<tr class='miss'><td>{_e(c['kind'])}</td><td><code>{_e(_exp(c['experiment']))}</code>{parts}</td>"
                   f"<td class='num'>{_num(c['measured'])}</td><td class='num'>{_num(c['doubled'])}</td>"
                   f"<td class='num'>{_num(c['predicted'])}</td><td><details><summary>{len(c['held_out'])}</summary>"
                   f"<ul>{held}</ul></details></td></tr>")
    out.append("</table>")
    return out


def _ports_picture(schemes: list[dict[str, Any]], ports: list[str]) -> list[str]:
    kinds: Counter[tuple[str, ...]] = Counter()
    for s in schemes:
        for u in s.get("uops", []):
            kinds[tuple(u["ports"])] += 1
    if not kinds:
        return ["<p class='muted'>no mapped schemes</p>"]
    out = ["<table id='ports'><tr><th>µop kind</th>" + "".join(f"<th>{_e(p)}</th>" for p in ports)
           + "<th>schemes</th></tr>"]
    for kind, n in sorted(kinds.items(), key=lambda kv: (len(kv[0]), kv[0])):
        cells = "".join(f"<td class='{'on' if p in kind else 'off'}'></td>" for p in ports)
        out.append(f"<tr><td>[{_e(','.join(kind))}]</td>{cells}<td class='num'>{n}</td></tr>")
    out.append("</table>")
    return out


KIND_TEXT = {"mapped": "µops on ports, each witnessed", "unit": "µops on ports and cycles of a unit",
             "ports + cost": "the µops found on ports and its cost on a resource of its own",
             "cost": "its cost on a resource of its own (a bound)"}


def _predictions(pr: dict[str, Any] | None) -> list[str]:
    """How many schemes each kind of prediction covers, and those without one."""
    if not pr:
        return []
    out = ["<h2>Predictions</h2>",
           f"<p>{_e(pr['predicted'])} of {_e(pr['schemes'])} schemes ({_num(100 * pr['share'], 1)} %) get a "
           "prediction. A resource of a scheme's own adds n × its cost to the bound of a mix (as a port only it "
           "used would); the cost is its time alone, or less where experiments with it ran faster. The "
           "confidence of a modelled scheme is the share of its measured experiments predicted within 5 %.</p>",
           "<table id='kinds'><tr><th>kind</th><th>schemes</th><th>what</th></tr>"]
    for kind, n in pr["kinds"].items():
        out.append(f"<tr class='kind'><td>{_e(kind)}</td><td class='num'>{_e(n)}</td><td>{_e(KIND_TEXT.get(kind, ''))}</td></tr>")
    out.append("</table>")
    if pr.get("unpredicted"):
        out.append("<details id='unpredicted'><summary>no prediction: " + _e(len(pr["unpredicted"])) + "</summary><ul>"
                   + "".join(f"<li><code>{_e(i)}</code>: {_e(why)}</li>" for i, why in pr["unpredicted"].items())
                   + "</ul></details>")
    return out


def _shared(shared: dict[str, Any] | None) -> list[str]:
    """The shared resources: members, what they hold alone and beside a full member, and the
    serialising schemes (:mod:`pmsolve.infer.explain.shared`)."""
    found, serial = (shared or {}).get("resources") or [], (shared or {}).get("serial") or []
    if not found and not serial:
        return []
    out = ["<h2>Shared resources</h2><p>Bottlenecks beside the ports that schemes hold for a measured time per "
           "copy, adding up (a mix takes at least Σ n × hold); a scheme holds its <i>beside</i> time while a full "
           "member (or, where said, any 512-bit scheme) is in the mix.</p>",
           "<table id='shared'><tr><th>resource</th><th>holds</th><th>beside a full member</th></tr>"]
    for r in found:
        hold = ", ".join(f"{i} {t:.3g}" for i, t in sorted(r["hold"].items(), key=lambda x: -x[1]))
        beside = ", ".join(f"{i} {t:.3g}" for i, t in sorted(r["beside"].items(), key=lambda x: -x[1]))
        ctx = " (any 512-bit scheme is context)" if r.get("mode_context") else ""
        out.append(f"<tr><td>{_e(r['name'])}{_e(ctx)}</td><td>{_e(hold)}</td><td>{_e(beside)}</td></tr>")
    out.append("</table>")
    if serial:
        out.append("<p>Serialising (microcode that holds the front end: a mix takes their time alone plus the rest's "
                   "front-end cycles between them, or more if the rest needs it): "
                   + ", ".join(f"<code>{_e(i)}</code> (<code>{_e(_exp(e))}</code> = {_num(t)})" for i, e, t in serial)
                   + "</p>")
    return out


def _reads(reads: dict[str, Any] | None) -> list[str]:
    """Transfers beside three-source forms (:mod:`pmsolve.infer.explain.reads`): the reference
    pair, and what the members hold."""
    if not (reads or {}).get("hold"):
        return []
    hold = ", ".join(f"{i} {t:.3g}" for i, t in sorted(reads["hold"].items(), key=lambda x: -x[1])[:12])
    beside = ", ".join(f"{i} {t:.3g}" for i, t in sorted(reads["beside"].items(), key=lambda x: -x[1])[:12])
    return ["<h2>Transfers beside three-source forms</h2><p>Stores and moves out of the vector registers "
            "(<i>transfers</i>) and forms that read three vector registers slow each other where the ports do "
            f"not: <code>{_e(reads.get('why'))}</code>. A mix with a transfer takes at least the sum of what its "
            "members hold; where its only transfers read three vector registers themselves (members of both "
            "kinds), the other members add at most what those hold. "
            f"{len(reads['context'])} transfers ({len(set(reads['context']) & set(reads['beside']))} of both kinds), "
            f"{len(reads['beside'])} schemes that hold it beside one, {len(reads.get('left_out', []))} left out by "
            "their checks.</p>",
            f"<p>transfers (largest first): {_e(hold)}{', …' if len(reads['hold']) > 12 else ''}<br>"
            f"beside a transfer: {_e(beside)}{', …' if len(reads['beside']) > 12 else ''}</p>"]


def _prediction(p: dict[str, Any] | None) -> str:
    if not p:
        return "<br><b>no prediction</b>"
    cost = (f", {_num(p.get('cost'))} cycles per copy" + (f" ({_num(p['alone'])} alone)" if p.get("alone") else "")
            if p.get("cost") is not None else "")
    uops = f" with µops {_e(_uops(p['uops']))}" if p.get("uops") else ""
    ev = (f" ({_e(p['evidence'][0])} of {_e(p['evidence'][1])} measured experiments within 5 %)"
          if p.get("evidence") else "")
    return (f"<br>predicted as <b class='prediction'>{_e(p['kind'])}</b>{uops}{cost}; confidence "
            f"{_num(p.get('confidence'), 2)}{ev}{_slots(p)}")


def _slots(p: dict[str, Any] | None) -> str:
    """'; 2 front-end slots per copy (probe measured 1.33)' for a scheme that takes more than one."""
    w = (p or {}).get("slots_witness")
    return (f"; <b>{_e(p['slots'])}</b> front-end slots per copy (<code>{_e(_exp(w['experiment']))}</code> measured "
            f"{_num(w['measured'])})" if p and p.get("slots") and w else "")


def mode_text(mode: dict | None) -> str:
    """'; beside 512-bit schemes port 1 serves no vector µop of {0,1,3} (the AVX-512 mode)' or ''."""
    if not mode or mode.get("port") is None:
        return ""
    return "; " + mode["why"] + " (the AVX-512 mode)"


def shared_text(shared: dict | None) -> str:
    """'; 2 shared resources (S1: vdivpd_zmm_zmm_zmm and 11 other(s); …)' or '': bottlenecks that
    schemes hold for fractional times, adding up (:mod:`pmsolve.infer.explain.shared`)."""
    found = (shared or {}).get("resources") or []
    if not found:
        return ""
    return (f"; {len(found)} shared resource{'s' if len(found) > 1 else ''} ("
            + "; ".join(f"{r['name']}: {r['first']} and {len(members(r)) - 1} other(s)"
                        for r in found) + ")")


def reads_text(reads: dict | None) -> str:
    """'; transfers and three-source forms share reads (281 transfers, 1329 beside them)' or '':
    :mod:`pmsolve.infer.explain.reads` in a line."""
    if not (reads or {}).get("hold"):
        return ""
    return (f"; transfers and three-source forms share {reads.get('name', 'reads')} ({len(reads['context'])} transfers, "
            f"{len(reads['beside'])} schemes beside them)")


def queues_text(queues: dict | None) -> str:
    """'; scheduling queues [3,5] [4,6] (38 of 800 …)' or '': :func:`queues_chosen` in a line."""
    chosen = queues_chosen(queues)
    return f"; scheduling queues {chosen}" if chosen else ""


def queues_chosen(queues: dict | None) -> str:
    """'[3,5] [4,6] (38 of 800 measured experiments 5 % nearer, 9 farther)' or '': the split of four
    ports into queues that the measurements chose (:mod:`pmsolve.infer.explain.queues`)."""
    row = (queues or {}).get("chosen")
    if not row:
        return ""
    return (" ".join("[" + ",".join(q) + "]" for q in row["queues"])
            + f" ({row['better']} of {row['experiments']} measured experiments 5 % nearer, {row['worse']} farther)")


def _queues(queues: dict[str, Any] | None) -> list[str]:
    """Every split of four ports into queues that was tried, and the experiments that chose one."""
    tried = (queues or {}).get("tried") or []
    if not tried:
        return []
    chosen = (queues or {}).get("chosen")
    out = ["<h2>Scheduling queues</h2><p>Each split of four ports into two queues of two, tried on the measured "
           "experiments where it matters: each predicted as the longer of the port bound and the queues' simulated "
           "time (µops placed into a random queue that can take them as they are renamed; "
           "<code>pmsolve.queues</code>). A split is kept when it lowers the mean error and brings more "
           "experiments 5 % nearer than it takes 5 % farther, at least three.</p>",
           "<table id='queues'><tr><th>queues</th><th>experiments</th><th>mean error, ports</th>"
           "<th>with the queues</th><th>5 % nearer</th><th>5 % farther</th></tr>"]
    for r in tried:
        mark = " class='best'" if chosen and r["queues"] == chosen["queues"] else ""
        out.append(f"<tr{mark}><td>{_e(' '.join('[' + ','.join(q) + ']' for q in r['queues']))}</td>"
                   f"<td class='num'>{_e(r['experiments'])}</td><td class='num'>{100 * r['mape_before']:.2f} %</td>"
                   + (f"<td class='num'>{100 * r['mape_after']:.2f} %</td>" if r["mape_after"] is not None else
                      "<td class='muted'>none measured 5 % slower than the ports</td>")
                   + f"<td class='num'>{_e(r['better'])}</td>"
                   + f"<td class='num'>{_e(r['worse'] if r['worse'] is not None else '–')}</td></tr>")
    out.append("</table>")
    if chosen and chosen.get("witnesses"):
        out.append("<p>Witnesses of the kept split: " + "; ".join(
            f"<code>{_e(_exp(w['experiment']))}</code> measured {_num(w['measured'])}, ports {_num(w['ports'])}, "
            f"queues {_num(w['queues'])}" for w in chosen["witnesses"]) + "</p>")
    return out


def units_text(units: list[dict]) -> str:
    """' and 2 units (U1: 9 scheme(s) like vdivps_xmm_xmm_xmm; …)': the non-port bottlenecks found."""
    if not units:
        return ""
    return (f" and {len(units)} unit{'s' if len(units) > 1 else ''} ("
            + "; ".join(f"{u['port']}: {len(u['members'])} scheme(s) like {u['members'][0]}" for u in units) + ")")


def certified_text(misfits: dict[str, list[dict]]) -> str:
    """'; for 527 of them no port mapping fits their measurements': the misfits with a certificate
    (:mod:`pmsolve.infer.explain.certify`)."""
    n = sum(1 for ms in misfits.values() for m in ms if m.get("certificate"))
    return f"; for {n} of them no port mapping fits their measurements" if n else ""


def render_html(doc: dict[str, Any]) -> str:
    """The report page for a job document."""
    cpu = doc.get("cpu") or {}
    title = f"pmsolve: port mapping of {doc.get('machine', 'this CPU')}"
    out = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>", f"<title>{_e(title)}</title>",
           f"<style>{CSS}</style></head><body>", f"<h1>{_e(title)}</h1>",
           f"<p>profile <b>{_e(doc.get('profile'))}</b>, method <b>{_e(doc.get('method'))}</b>, "
           f"{_e(doc.get('ports', '?'))} ports inferred{_e(units_text(doc.get('units', [])))}"
           f"{_e(mode_text(doc.get('mode')))}{_e(shared_text(doc.get('shared')))}{_e(reads_text(doc.get('reads')))}"
           f"{_e(queues_text(doc.get('queues')))}, "
           f"front end {_e(doc.get('r_max'))} instructions per cycle; "
           f"{_e(len(doc.get('schemes', [])))} schemes mapped, "
           f"{_e(sum(len(v) for v in doc.get('misfits', {}).values()))} misfits"
           f"{_e(certified_text(doc.get('misfits', {})))}; "
           f"{_num(doc.get('seconds', {}).get('total'), 0)} s.</p>"]
    if cpu:
        out.append(f"<p class='muted'>{_e(cpu.get('description', ''))}; vendor {_e(cpu.get('vendor'))}, "
                   f"stepping {_e(cpu.get('stepping'))}</p>")
    for m in doc.get("models", []):
        out.append(f"<p class='muted'>{_e(m['tool'])} {_e(m.get('version') or '')}: "
                   f"{_e(m.get('model') or 'none')} — {_e(m['why'])}{' (fallback)' if m.get('fallback') and m.get('model') else ''}</p>")
    out.append("<h2>Accuracy on held-out experiments</h2>")
    out += _accuracy(doc.get("accuracy", {}))
    out += _misses(doc.get("misses"))
    out.append("<h2>Ports and the µop kinds that use them</h2>")
    out += _ports_picture(doc.get("schemes", []), [str(p) for p in doc.get("port_names", [])])
    out.append("<h2>Schemes</h2><table id='schemes'><tr><th>scheme</th><th>tp⁻¹ measured</th><th>port usage</th>"
               "<th>µops</th><th>confidence</th><th>witnesses</th></tr>")
    for s in doc.get("schemes", []):
        ws = [w for u in s.get("uops", []) for w in u.get("witnesses", [])] + s.get("checks", [])
        wit = ("<details><summary>" + _e(f"{len(ws)} experiment(s)") + "</summary><ul>"
               + "".join(f"<li>{_witness(w)}</li>" for w in ws) + "</ul></details>") if ws else "–"
        source = s.get("source", "characterised")
        tag = f" <span class='muted'>({_e(source)})</span>" if source != "characterised" else ""
        also = "".join(f"<br><span class='muted'>fits as well: {_e(_uops(alt))}</span>"
                       for alt in s.get("alternatives", []))
        out.append(f"<tr class='scheme'><td><code>{_e(s['scheme'])}</code>{tag}</td><td class='num'>{_num(s.get('tp'))}</td>"
                   f"<td>{_e(_uops(s.get('uops', [])))}{also}{_slots(s.get('slots'))}</td>"
                   f"<td class='num'>{sum(u['count'] for u in s.get('uops', []))}</td>"
                   f"<td class='num'>{_num(s.get('confidence'), 2)}</td><td>{wit}</td></tr>")
    out.append("</table>")
    out += _predictions(doc.get("predictions"))
    out += _shared(doc.get("shared"))
    out += _reads(doc.get("reads"))
    out += _queues(doc.get("queues"))
    out.append("<h2>Misfits</h2>")
    for category, items in doc.get("misfits", {}).items():
        out.append(f"<details class='misfit-category'><summary>{_e(category)}: {len(items)}</summary><ul>")
        for m in items:
            exps = "; ".join(f"<code>{_e(_exp(x['experiment']))}</code> = {_num(x['measured'])}"
                             for x in m.get("experiments", [])[:6])
            out.append(f"<li class='misfit'><code>{_e(m['scheme'])}</code>: {_e(m['reason'])}"
                       + _prediction(m.get("prediction"))
                       + (f"<br><span class='muted'>{exps}</span>" if exps else "") + "</li>")
        out.append("</ul></details>")
    slow = doc.get("slow_schedules", [])
    if slow:
        out.append(f"<details class='misfit-category' id='slow-schedules'><summary>slow schedules: {len(slow)} "
                   "experiment(s) of blocking instructions ran slower than the port bound of the mapping that "
                   "explains all their other experiments (set aside, outside the model)</summary><ul>")
        out += [f"<li class='slow'><code>{_e(_exp(a['experiment']))}</code> = {_num(a['measured'])}, port bound "
                f"{_num(a['bound'])}</li>" for a in slow]
        out.append("</ul></details>")
    ref = doc.get("singles_reference")
    if ref:
        out.append("<h2>Singles against published values</h2><p class='muted'>" + _e(ref["source"]) + "</p>"
                   "<table id='singles'><tr><th>scheme</th><th>measured</th><th>published</th><th>Δ</th></tr>")
        for name, v in ref["values"].items():
            got = doc.get("singles", {}).get(name)
            delta = f"{100 * (got - v) / v:+.1f} %" if got else "–"
            out.append(f"<tr><td><code>{_e(name)}</code></td><td class='num'>{_num(got)}</td>"
                       f"<td class='num'>{_num(v)}</td><td class='num'>{delta}</td></tr>")
        out.append("</table>")
    if doc.get("seconds"):
        out.append("<h2>Time per stage</h2><table id='stages'>" + "".join(
            f"<tr><td>{_e(k)}</td><td class='num'>{_num(v, 1)} s</td></tr>" for k, v in doc["seconds"].items())
            + "</table>")
    for n in doc.get("notes", []):
        out.append(f"<p class='muted'>note: {_e(n)}</p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
