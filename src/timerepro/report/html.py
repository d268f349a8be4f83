"""results/report/index.html: every artifact of every paper, reproduced beside published, the
claim verdicts, and where each number came from. Static HTML, no scripts, opens offline."""

from __future__ import annotations

import datetime as dt
import html
from pathlib import Path

from timerepro import datakind
from timerepro.fingerprint import Fingerprinter
from timerepro.io import atomic_write_text, read_json
from timerepro.paths import results_dir
from timerepro.registry import PAPERS, Registry

from . import aggregate, badges, claims, cost_plan, figures, published, render, staleness, suspects, tables

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#16324f;color:#fff;padding:18px 28px}header h1{margin:0 0 4px;font-size:22px}
header p{margin:2px 0;color:#d6e2f0}main{padding:8px 28px 40px;max-width:1400px}
nav a{margin-right:14px;color:#16324f;font-weight:600}
h2{border-bottom:2px solid #16324f;padding-bottom:4px;margin-top:36px}
.art{background:#fff;border:1px solid #e3e3e3;border-radius:8px;padding:12px 16px;margin:12px 0}
.art h3{margin:0 0 6px;font-size:16px}.muted{color:#777}
.badge{display:inline-block;border-radius:10px;padding:1px 9px;font-size:12px;font-weight:600;margin-right:6px}
.regenerated{background:#d8f3dc;color:#1b5e20}.partial{background:#fff3cd;color:#7a5a00}
.planned{background:#eceff1;color:#455a64}.diagram{background:#e8eaf6;color:#283593}
.configuration{background:#e0f2f1;color:#00695c}
.holds{background:#d8f3dc;color:#1b5e20}.fails{background:#fde2e1;color:#a4161a}.pending{background:#eceff1;color:#455a64}
img{max-width:100%;border:1px solid #eee;border-radius:4px;margin:6px 0}
.tablewrap{overflow-x:auto;max-height:420px;overflow-y:auto;border:1px solid #eee;margin:6px 0}
table{border-collapse:collapse;font-size:12px}th,td{border-bottom:1px solid #eee;padding:3px 7px;text-align:right;white-space:nowrap}
th.rowlabel{text-align:left;font-weight:500}thead th{background:#f3f5f7;position:sticky;top:0}
.src-published{color:#5a5a5a;background:#fbfbfb}.src-reproduced{font-weight:600;color:#0b3d91}.src-delta{color:#8a4b08}
.prov{font-size:12px;color:#555}.prov code{font-size:11px}
details summary{cursor:pointer;color:#16324f}
.summary td,.summary th{text-align:left}
.stale{background:#fde2e1;color:#a4161a}.stalenote{margin:6px 0;color:#a4161a}
.art[data-stale] td.src-reproduced{background:#fdecea;text-decoration:underline wavy #a4161a}
.suspect{color:#a4161a;font-size:12px}
.tableline{font-size:12px;color:#16324f;margin:4px 0;font-style:italic}
.verdicts td,.verdicts th{text-align:left;vertical-align:top;white-space:normal;padding:4px 8px}
.verdicts .n{font-weight:700;font-size:14px}.verdicts a{margin-right:4px;font-size:11px}
.neverhere{background:#ede7f6;color:#4527a0}.claim{margin:3px 0}.claim:target{background:#fff8c4}
.verdicts .kindline{font-size:11px;color:#555}.scaleline{font-size:13px;color:#16324f;margin:8px 0 2px}
.kindmark{font-size:10px;border-radius:4px;padding:0 2px;font-weight:600}a.notemark{color:#a4161a;text-decoration:none}
figure{margin:6px 0}figcaption{font-size:12px;color:#555}figcaption.standin{color:#a4161a}
.suspect:target{background:#fff8c4}
""" + badges.CSS


is_configuration = render.is_configuration  # settings, not results: one definition for the page and the tables


VCLASS = {claims.HOLDS: "holds", claims.FAILS: "fails", claims.PENDING: "pending", claims.NEVER: "neverhere"}


def claim_anchor(c: dict) -> str:
    return f"{c['paper']}-claim-{c['id']}"


DATA_ORDER = badges.WORD_ORDER + (badges.NO_CELLS,)


def _claim_links(mine: list[dict]) -> str:
    """The claims of one first-screen cell, grouped by the data behind their verdicts: 'stand-in 2: c01 c04'."""
    by: dict[str, list[dict]] = {}
    for c in mine:
        by.setdefault(c.get("data") or badges.NO_CELLS, []).append(c)
    order = sorted(by, key=lambda w: DATA_ORDER.index(w) if w in DATA_ORDER else len(DATA_ORDER))
    link = lambda c: (f"<a href='#{claim_anchor(c)}' title='{html.escape(c['text'] + ' | ' + c.get('detail', ''))}'>"
                      f"{c['id']}</a>")
    return "".join(f"<div class='kindline'>{html.escape(w)} {len(by[w])}: {''.join(link(c) for c in by[w])}</div>"
                   for w in order)


def verdict_table(claim_list: list[dict]) -> str:
    """The first screen: per paper, how many claims hold, fail, cannot be decided yet or never here, on which data
    (real, real cut, stand-in, ...), each claim linked to its verdict."""
    head = "".join(f"<th><span class='badge {VCLASS[v]}'>{html.escape(v)}</span></th>" for v in claims.VERDICTS)
    rows = []
    for paper, t in claims.tally(claim_list).items():
        tds = []
        for v in claims.VERDICTS:
            mine = [c for c in claim_list if c["paper"] == paper and c["verdict"] == v]
            links = ("<div class='kindline'>" + "".join(f"<a href='#{claim_anchor(c)}' title='"
                                                         f"{html.escape(c['text'] + ' | ' + c.get('detail', ''))}'>{c['id']}</a>"
                                                         for c in mine) + "</div>") if v == claims.NEVER else _claim_links(mine)
            tds.append(f"<td><span class='n'>{t[v]}</span>{links if mine else ''}</td>")
        rows.append(f"<tr><th><a href='#{paper}-claims'>{html.escape(paper)}</a></th>{''.join(tds)}</tr>")
    return (f"<table class='summary verdicts'><caption style='text-align:left;font-weight:600'>Claims per paper: the "
            f"verdicts and the data behind them (real: real data at paper scale; real cut: real data below paper "
            f"scale; stand-in: synthetic, proves the pipeline only)</caption><tr><th>paper</th>{head}</tr>"
            f"{''.join(rows)}</table>")


def claim_html(c: dict, anchor: bool = False) -> str:
    """One verdict: its badge, the claim, the data and scale of the cells it read, the detail."""
    where = (f"on {c.get('data', '')}" + (f" · scale {c['scale']}" if c.get("scale") else "")
             + f" · {c.get('n_cells', 0)} cell(s) read")
    ident = f" id='{claim_anchor(c)}'" if anchor else ""
    link = "" if anchor else f" <a href='#{claim_anchor(c)}'>(all claims)</a>"
    return (f"<div class='claim'{ident}><span class='badge {VCLASS.get(c['verdict'], 'pending')}'>{c['id']}: "
            f"{html.escape(c['verdict'])}</span>{html.escape(c['text'])} <span class='muted'>[{html.escape(where)}] "
            f"{html.escape(c['detail'])}</span>{link}</div>")


def suspect_html(below, aid: str, anchor: str) -> str:
    """The footnote of the table's cells below EdgeBank (the MARK in a cell links here): one line, every cell in a
    fold below it when there are many."""
    every, lines = suspects.notes(below, aid), render.suspect_notes(below, aid)
    if not lines:
        return ""
    fold = (f"<details><summary>every cell</summary>{'<br>'.join(map(html.escape, every))}</details>"
            if len(every) > len(lines) else "")
    return f"<div class='suspect' id='{html.escape(anchor)}'>{'<br>'.join(map(html.escape, lines))}{fold}</div>"


def _status(art: dict, prov: dict | None) -> tuple[str, str]:
    if art["status"] == "diagram":
        return "diagram", "diagram (not regenerated by design)"
    if art["status"] == "qualitative":
        return "diagram", "qualitative: rendered from params/ as the paper states it (not a measurement)"
    if art["status"] == "planned":
        return "planned", "planned: not implemented yet"
    if not prov or prov.get("n_runs", 0) == 0:
        return "planned", "implemented: no completed runs at this scale"
    if prov["n_runs"] < prov.get("n_expected", 0):
        return "partial", f"partially regenerated ({prov['n_runs']} of {prov['n_expected']} runs)"
    if is_configuration(art):
        return "configuration", "configuration: the settings of the runs, not a regenerated result"
    if datakind.proves_pipeline_only(prov.get("data_kind", "")):
        return "regenerated", "regenerated on synthetic stand-ins, not the real data"
    return "regenerated", "regenerated"


def _provenance_html(prov: dict, scale: str) -> str:
    commits = ", ".join(c[:10] for c in prov["git_commits"])
    return (f"<div class='prov'>scale <b>{html.escape(scale)}</b> · data: {html.escape(prov['data'])} · "
            f"{prov['n_runs']}/{prov['n_expected']} runs · commit(s) <code>{html.escape(commits)}</code>"
            f"{' (uncommitted changes)' if prov['any_dirty'] else ''} · device(s) {', '.join(prov['devices'])} · "
            f"torch {', '.join(prov['torch'])} · {prov['slurm_jobs']} SLURM job(s) · total wall time "
            f"{prov['wall_time_s_total'] / 60:.1f} min · peak memory {prov['peak_memory_mb_max']:.0f} MB"
            f"<details><summary>run records</summary><code>{' '.join(prov['run_ids'])}</code><br>"
            f"under <code>runs/&lt;paper&gt;/&lt;run_id&gt;/</code> (config.json, history.json, metrics.json, provenance.json)</details></div>")


def build(reg: Registry, scale: str, results: Path | None = None, fingerprints=None) -> Path:
    """Write the page; `fingerprints` (a `fingerprint.Fingerprinter`, default: this checkout's code) decides
    which numbers are stale."""
    results = results or results_dir()
    fingerprints = fingerprints or Fingerprinter(models=reg.models)  # one parse of the sources for every paper
    out_dir = results / "report"
    claim_list = read_json(claims.claims_path(results)) if claims.claims_path(results).is_file() else claims.evaluate(reg, results)
    n_art = sum(len(reg.artifacts(p)) for p in PAPERS)
    body, counts = [], {"regenerated": 0, "configuration": 0, "partial": 0, "planned": 0, "diagram": 0}
    n_stale = n_suspect = 0
    for paper in PAPERS:
        doc = reg.papers[paper]
        prov_path = aggregate.aggregated_path(paper, results).with_suffix(".provenance.json")
        prov_all = read_json(prov_path)["artifacts"] if prov_path.is_file() else {}
        rendered_path = results / "rendered" / f"{paper}.json"
        rendered = read_json(rendered_path)["artifacts"] if rendered_path.is_file() else {}
        reproduced = aggregate.read(paper, results)
        stale = staleness.stale_marks(reg, paper, scale, results, fingerprints)
        below = suspects.flagged_in(paper, results)
        n_stale, n_suspect = n_stale + len(stale), n_suspect + len(below)
        nb = results / "notebooks" / f"{paper}.ipynb"
        body.append(f"<h2 id='{paper}'>{html.escape(paper)}: {html.escape(doc['title'])}</h2>")
        body.append(f"<p class='muted'>{html.escape(str(doc.get('authors') or ''))}"
                    + (f" · executed notebook: <a href='../notebooks/{paper}.ipynb'>notebooks/{paper}.ipynb</a>" if nb.is_file() else "")
                    + "</p>")
        mine = [c for c in claim_list if c["paper"] == paper]
        body.append(f"<details id='{paper}-claims' open><summary>claims of {html.escape(paper)}: "
                    f"{html.escape(claims.tally_line(claims.tally(mine)[paper])) if mine else 'none'}</summary>"
                    + "".join(claim_html(c, anchor=True) for c in mine) + "</details>")
        body.append(cost_plan.to_html(*cost_plan.table(reg, paper, scale, prov_all, results), paper))
        for art in doc["artifacts"]:
            aid = art["id"]
            prov = prov_all.get(aid)
            cls, label = _status(art, prov)
            counts[cls] += 1
            kind = badges.data_kind_badges((prov or {}).get("data_kind", "")) if art["status"] == "implemented" else ""
            parts = [f"<div class='art' id='{paper}-{aid}'{' data-stale' if aid in stale else ''}><h3>{aid} "
                     f"<span class='badge {cls}'>{label}</span>{kind}</h3>", f"<div>{html.escape(art['title'])}</div>"]
            if aid in stale:
                parts.append(staleness.html_note(stale[aid], paper, scale))
            if art.get("section"):
                parts.append(f"<div class='muted'>section {html.escape(art['section'])} · compute: {html.escape(art.get('compute', '?'))}</div>")
            pub = published.load(paper, aid)
            rep = suspects.mark(reproduced[reproduced["artifact"] == aid], below)
            for fig in rendered.get(aid, {}).get("figures", []):
                if fig.endswith(".png") and not rep.empty:
                    words = figures.caption(figures.meta_of(rep, scale))
                    parts.append(f"<figure><img src='../{html.escape(fig)}' alt='{paper} {aid}'><figcaption"
                                 f"{' class=standin' if 'stand-in' in words else ''}>{html.escape(words)}</figcaption></figure>")
            if art.get("qualitative"):
                parts.append(tables.to_html(tables.qualitative(art["qualitative"]), tables.QUALITATIVE_LINE)
                             + f"<div class='muted'>{html.escape(art['qualitative'].get('note', ''))}</div>")
            if not pub.empty or not rep.empty:
                note = "" if not pub.empty else " <span class='muted'>(the paper prints no numbers for this artifact: figure only)</span>"
                line = tables.provenance_line(scale, rep, is_configuration(art))
                anchor = f"{paper}-{aid}-suspects"
                parts.append(f"<details {'open' if not rep.empty else ''}><summary>numbers: published{' and reproduced' if not rep.empty else ''}{note}</summary>"
                             + tables.to_html(tables.comparison(pub, rep, delta=not is_configuration(art)), line,
                                              {suspects.MARK: f"#{anchor}"}) + "</details>" + suspect_html(below, aid, anchor))
            for c in [c for c in claim_list if c["paper"] == paper and aid in c["artifact"].replace(" ", "").split(",")]:
                parts.append(claim_html(c))
            if prov and prov.get("n_runs"):
                parts.append(_provenance_html(prov, scale))
            parts.append("</div>")
            body.append("".join(parts))
    nav = " ".join(f"<a href='#{p}'>{p}</a>" for p in PAPERS)
    summary = (f"<table class='summary'><tr><th>artifacts</th><td>{n_art}</td></tr>"
               f"<tr><th>regenerated</th><td>{counts['regenerated']}</td></tr>"
               f"<tr><th>configuration (settings, not results)</th><td>{counts['configuration']}</td></tr>"
               f"<tr><th>partially regenerated</th><td>{counts['partial']}</td></tr>"
               f"<tr><th>planned / no runs yet</th><td>{counts['planned']}</td></tr><tr><th>diagrams</th><td>{counts['diagram']}</td></tr>"
               f"<tr><th>made by other code or data (stale)</th><td>{n_stale} artifact(s)</td></tr>"
               f"<tr><th>below EdgeBank (suspect)</th><td>{n_suspect} cell(s)</td></tr></table>")
    page = (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>timerepro report ({html.escape(scale)})</title>"
            f"<style>{CSS}</style></head><body><header><h1>Reproduction report: how models encode time</h1>"
            f"<p>scale <b>{html.escape(scale)}</b>: {html.escape(reg.scales['scales'].get(scale, {}).get('description', ''))}"
            f" · generated {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}</p>"
            f"<p>Reproduced numbers come only from run records of this pipeline; published numbers come only from "
            f"params/published/published_values.csv and sit under <i>published</i> headings.</p></header>"
            f"<main>{verdict_table(claim_list)}<nav>{nav}</nav>{summary}{''.join(body)}</main></body></html>")
    return atomic_write_text(out_dir / "index.html", page)
