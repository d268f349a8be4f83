"""The claim engine: a verdict lists the cells it read with their data, is withheld from those cells only, and a
claim this machine can never decide says so before any run (issue 25)."""

import pandas as pd

from timerepro import cli, registry
from timerepro.report import aggregate, claims


def rows(kind: str, scale: str = "offline", artifact: str = "fig2", group: str = "g") -> pd.DataFrame:
    return pd.DataFrame([{"paper": "p", "artifact": artifact, "row_group": group, "row": r, "column": "1", "metric": "m",
                          "mean": v, "std": 0.0, "note": "", "n_runs": 1, "scale": scale, "data": "d", "data_kind": kind}
                         for r, v in (("A", 2.0), ("B", 1.0))], columns=aggregate.COLUMNS)


def _reads_group_g(df):
    cells = df[df["row_group"] == "g"]
    a, b = (cells.set_index("row")["mean"].get(k) for k in ("A", "B"))
    if a is None or b is None:
        return claims.PENDING, "needs A and B", cells
    return (claims.HOLDS if a > b else claims.FAILS), f"A {a} vs B {b}", cells


def claim(**kw):
    return {"paper": "p", "id": "c01", "artifact": "fig2", "text": "A beats B", "rule": "test_reads_g", **kw}


def test_a_verdict_lists_its_cells_with_data_kind_and_scale(monkeypatch):
    monkeypatch.setattr(claims, "RULES", {"test_reads_g": _reads_group_g})
    out = claims.judge(claim(), rows("real"))
    assert out["verdict"] == claims.HOLDS and out["data"] == "real cut" and out["scale"] == "offline"
    assert out["n_cells"] == 2 and {c["row"] for c in out["cells"]} == {"A", "B"}
    assert all(c["data_kind"] == "real" and c["scale"] == "offline" for c in out["cells"])
    assert claims.judge(claim(), rows("real", scale="paper"))["data"] == "real"


def test_withholding_is_decided_by_the_cells_the_claim_read(monkeypatch):
    """A stand-in row of the same artifact that the rule did not read does not withhold the verdict."""
    monkeypatch.setattr(claims, "RULES", {"test_reads_g": _reads_group_g})
    df = pd.concat([rows("real"), rows("standin", group="other")], ignore_index=True)
    assert claims.judge(claim(), df)["verdict"] == claims.HOLDS
    out = claims.judge(claim(), pd.concat([rows("standin"), rows("real", group="other")], ignore_index=True))
    assert out["verdict"] == claims.PENDING and out["detail"].startswith("on synthetic stand-ins only (would be holds)")
    assert out["data"] == "stand-in"


def test_a_claim_never_decidable_here_says_so_with_what_would_decide_it(monkeypatch):
    monkeypatch.setattr(claims, "RULES", {"test_reads_g": _reads_group_g})
    why = "a GPU measurement at L = 2048; decided by benchmarks/x.py on a GPU"
    before = claims.judge(claim(never_here=why), rows("real").iloc[:0])
    assert before["verdict"] == claims.NEVER and before["detail"] == why
    after = claims.judge(claim(never_here=why), rows("real"))
    assert after["verdict"] == claims.NEVER and after["detail"].startswith(why) and "not a verdict" in after["detail"]
    assert "holds" not in after["detail"]  # what this machine shows is quoted, never as a verdict on the claim


def test_a_claim_without_cells_says_so(monkeypatch):
    monkeypatch.setattr(claims, "RULES", {"test_reads_g": lambda df: (claims.PENDING, "needs A and B")})
    out = claims.judge(claim(), rows("real", artifact="table9"))
    assert out["verdict"] == claims.PENDING and out["detail"].startswith("no reproduced cells of fig2")
    assert out["data"] == claims.NO_CELLS and out["cells"] == []


def test_missing_cells_name_what_a_whole_table_claim_lacks():
    expected = pd.concat([rows("real"), rows("real", group="h")], ignore_index=True)
    got = claims.missing_cells(rows("real"), expected)
    assert got == ["h / A / 1", "h / B / 1"]
    assert "lacks 2 cell(s)" in claims.incomplete(got, "table1")


def test_before_any_run_the_never_here_claims_are_declared(tmp_path):
    verdicts = claims.evaluate(registry.load(), tmp_path)
    never = {(c["paper"], c["id"]) for c in verdicts if c["verdict"] == claims.NEVER}
    assert {("dyg_mamba", "c11"), ("dyg_mamba", "c12"), ("dyg_mamba", "c23"),
            ("time2vec", "c03"), ("time2vec", "c09")} <= never
    assert all(c["detail"] for c in verdicts if c["verdict"] == claims.NEVER)
    assert {c["verdict"] for c in verdicts} <= {claims.PENDING, claims.NEVER}  # nothing else without results


def test_claims_command_prints_per_paper_counts_with_data(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TIMEREPRO_RESULTS", str(tmp_path))
    assert cli.main(["claims"]) == 0
    out = capsys.readouterr().out
    for paper in registry.PAPERS:
        line = next(l for l in out.splitlines() if l.startswith(paper))
        assert "hold" in line and "fail" in line and "cannot yet" in line and "never here" in line
    assert "0 hold (" not in out and "never here" in out.splitlines()[-1]
    t = claims.tally([{"paper": "p", "verdict": claims.HOLDS, "data": "real cut"},
                      {"paper": "p", "verdict": claims.PENDING, "data": "stand-in"},
                      {"paper": "p", "verdict": claims.PENDING, "data": "stand-in"}])
    assert claims.tally_line(t["p"]) == "1 hold (real cut 1) · 0 fail · 2 cannot yet (stand-in 2) · 0 never here"


def test_the_reports_first_screen_answers_per_paper_with_links():
    from timerepro.report import html

    verdicts = [{"paper": "p", "id": "c01", "text": "A beats B", "verdict": claims.HOLDS, "data": "real cut",
                 "detail": "A 2 vs B 1", "scale": "offline", "n_cells": 2},
                {"paper": "p", "id": "c02", "text": "at L = 2048", "verdict": claims.NEVER, "data": claims.NO_CELLS,
                 "detail": "a GPU measurement", "scale": "", "n_cells": 0},
                {"paper": "q", "id": "c01", "text": "x", "verdict": claims.PENDING, "data": "stand-in",
                 "detail": "on synthetic stand-ins only (would be fails): ...", "scale": "smoke", "n_cells": 3}]
    table = html.verdict_table(verdicts)
    assert table.count("<tr><th><a href='#") == 2  # one row per paper
    assert "href='#p-claim-c01'" in table and "href='#p-claim-c02'" in table and "href='#q-claim-c01'" in table
    assert "real cut" in table and "stand-in 1" in table and "never here" in table
    one = html.claim_html(verdicts[0], anchor=True)
    assert "id='p-claim-c01'" in one and "on real cut · scale offline · 2 cell(s) read" in one


def test_a_rule_that_names_no_cell_it_read_is_withheld(monkeypatch):
    monkeypatch.setattr(claims, "RULES", {"test_reads_g": lambda df: (claims.FAILS, "read fig3, not fig2")})
    out = claims.judge(claim(), rows("standin", artifact="fig3"))
    assert out["verdict"] == claims.PENDING and "names none it read" in out["detail"] and "would be fails" in out["detail"]
