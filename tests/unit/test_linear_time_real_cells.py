"""linear_time claims on a mix of real and stand-in cells (issue 24/25): TGAT on real UCI (a package copy, minute
resolution) beside stand-ins for every other cell. A claim about every cell it names is decided by a real cell run at
the paper's protocol that refutes it (and lists only that cell); a real cell of a cut (the offline default's few
epochs) is quoted and decides nothing; a real cell that agrees leaves it withheld, saying so."""

from __future__ import annotations

import pandas as pd
import pytest

from timerepro import registry
from timerepro.report import claims

from .test_claims_on_published import published_frame
from .test_every_rule_can_fail import change as at  # one frame editor for every claim test

REAL_UCI = "real UCI, minute resolution, package copy"
AP_R, AP_H = "AP_random_NS_test", "AP_historical_NS_test"


def offline_mix(turn=None, scale="offline") -> pd.DataFrame:
    """linear_time's published tables as a run at `scale` would fill them: TGAT UCI real, the rest stand-ins."""
    df = published_frame("linear_time").assign(scale=scale, data=f"stand-in ({scale})", data_kind="standin")
    real = (df["row_group"] == "TGAT") & (df["column"] == "UCI") & df["artifact"].isin(["table1", "table2", "table7", "table8"])
    df.loc[real, ["data", "data_kind"]] = [REAL_UCI, "package_copy"]
    return turn(df) if turn else df


def judge(cid: str, df: pd.DataFrame) -> dict:
    claim = next(c for c in registry.load().papers["linear_time"]["claims"] if c["id"] == cid)
    return claims.judge({**claim, "paper": "linear_time"}, df)


TGAT_UCI = {"row_group": "TGAT", "column": "UCI"}
REFUTE = {  # claim -> a real TGAT UCI cell that refutes it
    "c03": lambda d: at(d, 70.0, artifact="table1", metric=AP_R, row="Linear", **TGAT_UCI),            # a loss, not +15.14
    "c04": lambda d: at(d, 99.0, artifact="table1", metric=AP_R, row="Sinusoidal-scale", **TGAT_UCI),  # scaling helps
    "c06": lambda d: at(d, 10.0, artifact="table2", metric=AP_H, row="Linear", **TGAT_UCI),            # linear not best
    "c07": lambda d: at(d, 10.0, artifact="table2", metric=AP_H, row="Linear", **TGAT_UCI),            # a loss, not +22.48
}


@pytest.mark.parametrize("cid", sorted(REFUTE))
def test_a_real_cell_at_the_papers_protocol_decides_a_claim_about_every_cell_it_names(cid):
    out = judge(cid, offline_mix(REFUTE[cid], scale="paper"))
    assert out["verdict"] == claims.FAILS, out["detail"]
    assert f"refuted on real data ({REAL_UCI} (package_copy, paper))" in out["detail"]
    assert out["data"] == "real" and {c["row_group"] + " " + c["column"] for c in out["cells"]} == {"TGAT UCI"}


@pytest.mark.parametrize("cid", sorted(REFUTE))
def test_a_real_cell_of_a_cut_is_quoted_and_decides_nothing(cid):
    out = judge(cid, offline_mix(REFUTE[cid]))
    assert out["verdict"] == claims.PENDING, out["detail"]
    assert "(a cut: not a verdict)" in out["detail"] and "refuted" not in out["detail"]


@pytest.mark.parametrize("cid", sorted(REFUTE))
def test_a_real_cell_that_agrees_leaves_the_claim_withheld_and_says_so(cid):
    out = judge(cid, offline_mix())
    assert out["verdict"] == claims.PENDING and "partly on synthetic stand-ins" in out["detail"], out["detail"]
    assert "on real data" in out["detail"] and "consistent" in out["detail"]


def test_an_incomplete_table_is_still_refuted_by_a_real_cell():
    gone = lambda d: d[~((d["artifact"] == "table1") & (d["row_group"] == "DyGFormer") & (d["column"] == "UCI"))]  # noqa: E731
    assert judge("c04", offline_mix(lambda d: REFUTE["c04"](gone(d)), scale="paper"))["verdict"] == claims.FAILS
    out = judge("c04", offline_mix(gone))
    assert out["verdict"] == claims.PENDING and "lacks" in out["detail"] and "consistent" in out["detail"]


def test_c11_names_the_real_cells_but_a_count_waits_for_the_tables():
    df = offline_mix(lambda d: d[~((d["artifact"] == "table7") & (d["column"] == "Enron"))])
    out = judge("c11", df)
    assert out["verdict"] == claims.PENDING and f"on real data ({REAL_UCI}" in out["detail"]
    assert "cannot decide it" in out["detail"]
