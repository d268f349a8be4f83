"""Render one paper: every artifact with numbers gets a comparison table, every implemented
figure its plot. Called by the paper's notebook; writes results/rendered/<paper>.json."""

from __future__ import annotations

from pathlib import Path

from timerepro.io import atomic_write_json, atomic_write_text
from timerepro.paths import results_dir
from timerepro.registry import Registry

from . import aggregate, badges, figures, published, staleness, suspects, tables


def is_configuration(art: dict) -> bool:
    """An artifact that prints settings, not results (params/<paper>.yaml `reproducible: configuration ...`,
    e.g. hawkes_attention Tables 6-8): its runs make it, but it regenerates no measured number (so no delta)."""
    return str(art.get("reproducible", "")).startswith("configuration")


def suspect_notes(below, aid: str) -> list[str]:
    """The footnote of the cells of `aid` below EdgeBank (each marked suspects.MARK in the table): one line when there
    are more than a few."""
    return tables.summarise(suspects.notes(below, aid), f"{suspects.MARK} {suspects.LABEL}")


def render_paper(reg: Registry, paper: str, scale: str, results: Path | None = None, fingerprints=None) -> dict:
    """Tables carry notes under them: numbers made by other code (staleness.py), cells below EdgeBank
    (suspects.py); `fingerprints` defaults to this checkout's code."""
    results = results or results_dir()
    reproduced = aggregate.read(paper, results)
    stale = staleness.stale_marks(reg, paper, scale, results, fingerprints)
    below = suspects.flagged_in(paper, results)
    manifest = {"paper": paper, "scale": scale, "artifacts": {}}
    for kind in ("tables", "figures"):  # declared outputs of the DVC stage, even when empty
        (results / kind / paper).mkdir(parents=True, exist_ok=True)
    for art in reg.artifacts(paper):
        aid = art["id"]
        entry = {"status": art["status"], "tables": [], "figures": []}
        rep = suspects.mark(reproduced[reproduced["artifact"] == aid], below)
        pub = published.load(paper, aid)
        if art["status"] == "implemented" and not rep.empty:
            meta = figures.meta_of(rep, scale)
            if art["kind"] == "figure" and art.get("render"):  # the name was checked when params/ loaded
                fig = figures.RENDERERS[art["render"]](rep, meta)
                figures.stamp(fig, meta)  # every figure states scale and data kind (a no-op if its renderer did)
                paths = figures.save(fig, results / "figures" / paper / aid)
                entry["figures"] = [str(p.relative_to(results)) for p in paths]
        if art["status"] == "qualitative":  # a matrix from params/, as the paper states it (no numbers)
            table = tables.qualitative(art["qualitative"])
            stem = results / "tables" / paper / aid
            caption = f"{paper} {aid}: {art['title']} (qualitative, as the paper states it)"
            note = art["qualitative"].get("note", "")
            line = tables.QUALITATIVE_LINE
            atomic_write_text(stem.with_suffix(".md"), f"<!-- {caption} -->\n**{caption}**\n\n"
                              + tables.to_markdown(table, line) + f"\n{note}\n")
            atomic_write_text(stem.with_suffix(".tex"), tables.to_latex(table, caption, line))
            entry["tables"] = [str(stem.with_suffix(ext).relative_to(results)) for ext in (".md", ".tex")]
        elif not rep.empty or not pub.empty:
            configuration = is_configuration(art)
            table = tables.comparison(pub, rep, delta=not configuration)
            stem = results / "tables" / paper / aid
            md = stem.with_suffix(".md")
            caption = f"{paper} {aid}: {art['title']}"
            line = tables.provenance_line(scale, rep, configuration)
            kinds = badges.merged(list(rep["data_kind"]))
            notes = suspect_notes(below, aid) + ([staleness.markdown_note(stale[aid], paper, scale)] if aid in stale else [])
            atomic_write_text(md, f"<!-- {caption} | scale={scale}{f' | data_kind={kinds}' if kinds else ''} -->\n"
                              f"**{caption}**\n\n" + tables.to_markdown(table, line) + "".join(f"\n{n}\n" for n in notes))
            atomic_write_text(stem.with_suffix(".tex"), tables.to_latex(table, caption, line))
            entry["tables"] = [str(md.relative_to(results)), str(stem.with_suffix(".tex").relative_to(results))]
            entry["n_published"] = int(len(pub))
            entry["n_reproduced"] = int(len(rep))
        manifest["artifacts"][aid] = entry
    atomic_write_json(results / "rendered" / f"{paper}.json", manifest)
    return manifest
