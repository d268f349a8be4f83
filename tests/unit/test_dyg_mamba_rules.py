"""dyg_mamba's claim rules on frames built to make each hold, fail, or be undecidable (issue 25): the figure rules
whose cells the paper does not print, and the parts of the table rules the published frame cannot show (a claim
about the whole table is not judged on part of it; C05 counts wins, C10 the size of the gain, C21 its arithmetic).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from timerepro.report import claims
from timerepro.report.aggregate import TIME_PER_EPOCH
from timerepro.report.dyg_mamba import rules_studies as rs
from timerepro.report.dyg_mamba import rules_tables as rt
from timerepro.report.dyg_mamba.case_study import _case_study_rows
from timerepro.report.dyg_mamba.common import OURS, PEAK_MEM, RIVAL, SAVED_MEM, TIME_STEP

from .test_claims_on_published import published_frame
from .test_every_rule_can_fail import change as with_mean  # one frame editor for every claim test

HOLDS, FAILS, PENDING = claims.HOLDS, claims.FAILS, claims.PENDING


def frame(rows: list[tuple]) -> pd.DataFrame:
    """(artifact, row_group, row, column, metric, mean[, note]) tuples -> an aggregated frame (real data, paper scale)."""
    out = [dict(zip(("artifact", "row_group", "row", "column", "metric", "mean", "note"), (*r, "")[:7])) for r in rows]
    return pd.DataFrame(out).assign(std=0.0, n_runs=5, data_kind="real", scale="paper")


# ------------------------------------------------------------------ Figure 3: C11, C12, C23 (GPU, L up to 2048)

LENGTHS = (32, 64, 128, 256, 512, 1024, 2048)


def fig3(device="cuda:0", lengths=LENGTHS, speedup=9.0, saving=77.0, exps=None) -> pd.DataFrame:
    exps = exps or {(OURS, TIME_STEP): 1.0, (OURS, PEAK_MEM): 1.0, (RIVAL, PEAK_MEM): 2.0, (RIVAL, TIME_STEP): 1.9,
                    (OURS, SAVED_MEM): 1.0, (RIVAL, SAVED_MEM): 2.0}
    rows = [("fig3", "cost", m, str(L), k, float(L), f"device {device}") for m in (OURS, RIVAL) for L in lengths
            for k in (TIME_STEP, PEAK_MEM, SAVED_MEM)]
    rows += [("fig3", "cost", m, "growth exponent", f"growth_exponent_{k}", v) for (m, k), v in exps.items()]
    top = max(lengths)
    mem = "gpu_memory_saving_vs_DyGFormer_pct" if device.startswith("cuda") else "cpu_memory_saving_vs_DyGFormer_pct"
    rows += [("fig3", f"seq_len={top}", "DyG-Mamba vs DyGFormer", OURS, "speedup_vs_DyGFormer_x", speedup),
             ("fig3", f"seq_len={top}", "DyG-Mamba vs DyGFormer", OURS, mem, saving)]
    return frame(rows)


def test_c11_judges_the_stated_speedup_and_saving_at_2048_on_a_gpu():
    assert rs.dm_c11(fig3())[0] == HOLDS
    assert rs.dm_c11(fig3(speedup=3.0))[0] == FAILS  # faster, but not 8.9x: the size is judged, not the sign
    assert rs.dm_c11(fig3(saving=40.0))[0] == FAILS
    verdict, detail, read = rs.dm_c11(fig3(device="cpu", lengths=(32, 64, 128), speedup=0.5))
    assert verdict == PENDING and "L = 128 on cpu" in detail and "CUDA GPU" in detail and not read.empty


@pytest.mark.parametrize("rule, turn", [(rs.dm_c12, {(RIVAL, PEAK_MEM): 1.1}), (rs.dm_c12, {(OURS, TIME_STEP): 1.8}),
                                        (rs.dm_c23, {(RIVAL, SAVED_MEM): 1.2}), (rs.dm_c23, {(OURS, SAVED_MEM): 1.9})])
def test_c12_c23_growth_exponents_up_to_2048_on_a_gpu(rule, turn):
    base = {(OURS, TIME_STEP): 1.0, (OURS, PEAK_MEM): 1.0, (RIVAL, PEAK_MEM): 2.0, (OURS, SAVED_MEM): 1.0,
            (RIVAL, SAVED_MEM): 2.0}
    assert rule(fig3(exps=base))[0] == HOLDS
    assert rule(fig3(exps=base | turn))[0] == FAILS
    assert rule(fig3(device="cpu", lengths=(32, 64, 128), exps=base | turn))[0] == PENDING


def test_the_gpu_claims_are_never_here_up_front_without_a_verdict_word():
    from timerepro import registry

    reg = registry.load()
    for cid in ("c11", "c12", "c23"):
        claim = next(c for c in reg.papers["dyg_mamba"]["claims"] if c["id"] == cid)
        out = claims.judge({**claim, "paper": "dyg_mamba"}, fig3(device="cpu", lengths=(32, 64, 128), speedup=0.5))
        assert out["verdict"] == claims.NEVER and "GPU" in out["detail"] and "decided by" in out["detail"].lower()
        assert "fails" not in out["detail"] and "holds" not in out["detail"]
        assert out["cells"] and all(c["data_kind"] == "real" and c["scale"] == "paper" for c in out["cells"])


# ------------------------------------------------------------------ Figures 4, 10 (bubbles): C13, C22

def bubbles(artifact: str, datasets, ap: dict, time: dict, params: dict) -> pd.DataFrame:
    return frame([(artifact, ds, m, "", metric, v[m]) for ds in datasets
                  for metric, v in (("AP_transductive_random", ap), (TIME_PER_EPOCH, time), ("param_size_MB", params))
                  for m in v])


def test_c13_and_c22_bubbles():
    ap, time, params = {OURS: 95.0, RIVAL: 90.0, "CAWN": 85.0}, {OURS: 2.0, RIVAL: 3.0, "CAWN": 9.0}, {OURS: 1.0, RIVAL: 2.0, "CAWN": 3.0}
    assert rs.dm_c13(bubbles("fig4", ["Enron"], ap, time, params))[0] == HOLDS
    assert rs.dm_c13(bubbles("fig4", ["Enron"], ap, time | {RIVAL: 10.0}, params))[0] == FAILS  # CAWN not the slowest
    datasets = ["UCI", "Enron", "LastFM", "Reddit"]
    assert rs.dm_c22(bubbles("fig10", datasets, ap, time, params))[0] == HOLDS
    assert rs.dm_c22(bubbles("fig10", datasets, ap | {RIVAL: 99.0}, time, params))[0] == FAILS
    assert rs.dm_c22(bubbles("fig10", datasets[:3], ap, time, params))[0] == PENDING  # Reddit missing


def test_table5_claims_need_all_four_datasets():
    pub = published_frame("dyg_mamba")
    one = pub[~((pub["artifact"] == "table5") & (pub["row"] != "UCI"))]
    for rule in (rs.dm_c15, rs.dm_c16):
        assert rule(pub)[0] == HOLDS and rule(one)[0] == PENDING


# ------------------------------------------------------------------ Figures 5, 11, 7, 8-9: C14, C17, C18

def test_c14_ablations():
    rows = [(art, s, v, ds, "AP_random", ap) for art, s in (("fig5", "transductive"), ("fig11", "inductive"))
            for ds in ("Can. Parl.", "Enron")
            for v, ap in ((OURS, 90.0), ("w/o Selective", 88.0), ("w/o Cross-attn", 87.0),
                          ("w/o Time-span", 86.0 if s == "transductive" else 80.0))]
    df = frame(rows)
    assert rs.dm_c14(df)[0] == HOLDS
    assert rs.dm_c14(with_mean(df, 95.0, row="w/o Selective", row_group="inductive"))[0] == FAILS
    assert rs.dm_c14(with_mean(df, 70.0, row="w/o Time-span", row_group="transductive"))[0] == FAILS  # not larger inductive
    verdict, detail, _ = rs.dm_c14(df[df["column"] != "Enron"])  # one dataset of two: not decided
    assert verdict == PENDING and "Enron" in detail


def test_c17_sequence_length():
    df = frame([("fig7", "Enron", m, str(L), "AP_random", v) for L, vals in (
        (32, {OURS: 80.0, RIVAL: 75.0, "TGN": 70.0, "GraphMixer": 72.0}), (2048, {OURS: 92.0, RIVAL: 90.0}))
        for m, v in vals.items()])
    assert rs.dm_c17(df)[0] == HOLDS
    assert rs.dm_c17(with_mean(df, 70.0, row=OURS, column="2048"))[0] == FAILS
    assert rs.dm_c17(with_mean(df, 85.0, row="TGN", column="32"))[0] == FAILS  # a baseline ahead at the shortest
    assert rs.dm_c17(df[df["column"] != "2048"])[0] == PENDING  # the longest length not run (CPU offline cut)
    assert rs.dm_c17(df[df["row"] != "TGN"])[0] == PENDING  # one baseline missing


def noise(drops: dict, datasets=("Enron", "UCI", "Can. Parl."), ratios=(0.0, 0.5, 0.6)) -> pd.DataFrame:
    return frame([("fig8" if ds == "Enron" else "fig9", ds, m, str(x), "AP_random_noise", 90.0 - d * x / max(ratios))
                  for ds in datasets for m, d in drops.items() for x in ratios])


def test_c18_noise():
    assert rs.dm_c18(noise({OURS: 2.0, RIVAL: 10.0, "GraphMixer": 8.0}))[0] == HOLDS
    assert rs.dm_c18(noise({OURS: 20.0, RIVAL: 10.0, "GraphMixer": 8.0}))[0] == FAILS
    assert rs.dm_c18(noise({OURS: 2.0, RIVAL: 10.0, "GraphMixer": 8.0}, datasets=("UCI",)))[0] == PENDING
    assert rs.dm_c18(noise({OURS: 2.0, RIVAL: 10.0}))[0] == PENDING  # GraphMixer missing
    assert rs.dm_c18(noise({OURS: 2.0, RIVAL: 10.0, "GraphMixer": 8.0}, ratios=(0.0, 0.3)))[0] == PENDING


# ------------------------------------------------------------------ C19: both halves, the noise rows required

def c19_cost(ours=(1.0, 100.0), mixer=(2.0, 200.0), length="512") -> pd.DataFrame:
    return frame([("fig3", "cost", m, length, k, v) for m, vals in ((OURS, ours), ("GraphMixer", mixer))
                  for k, v in zip((TIME_STEP, PEAK_MEM), vals)])


def test_c19_needs_both_halves():
    holds = pd.concat([c19_cost(), noise({OURS: 4.0}, datasets=("UCI", "Enron"))])
    assert rs.dm_c19(holds)[0] == HOLDS
    verdict, detail, _ = rs.dm_c19(c19_cost())  # the timing half alone: cannot hold
    assert verdict == PENDING and "noise" in detail
    assert rs.dm_c19(pd.concat([c19_cost(), noise({OURS: 30.0})]))[0] == FAILS  # 30 of 90 points at 50%: > 10%
    assert rs.dm_c19(pd.concat([c19_cost(ours=(3.0, 100.0)), noise({OURS: 4.0})]))[0] == FAILS
    assert rs.dm_c19(pd.concat([c19_cost(length="128"), noise({OURS: 4.0})]))[0] == PENDING  # not at L = 512
    partial = pd.concat([holds, noise({RIVAL: 4.0}, datasets=("LastFM",))])  # a noise dataset without DyG-Mamba
    assert rs.dm_c19(partial)[0] == PENDING


# ------------------------------------------------------------------ C20: all three parts

def fig1(ap: dict, p: float = 0.01, datasets=("UCI", "Enron")) -> pd.DataFrame:
    rows = [("fig1", s, arm, ds, "AP_random", v) for (s, arm), v in ap.items() for ds in datasets]
    rows += [("fig1", "transductive", f"{RIVAL} vs {RIVAL} w/o time", ds, "p_value_ttest", p) for ds in datasets]
    return frame(rows)


FIG1 = {("transductive", "vMamba"): 80.0, ("transductive", "vMamba w/o time"): 79.0,
        ("transductive", RIVAL): 90.0, ("transductive", f"{RIVAL} w/o time"): 80.0,
        ("transductive", "GraphMixer"): 85.0, ("transductive", "GraphMixer w/o time"): 83.0,
        ("inductive", "vMamba"): 70.0, ("inductive", RIVAL): 88.0}


@pytest.mark.parametrize("turn", [{("transductive", "vMamba"): 95.0},            # (1) vMamba not below DyGFormer
                                  {("transductive", "vMamba w/o time"): 60.0},   # (2) time hurts vMamba more
                                  {("inductive", "vMamba"): 85.0}])              # (3) no larger inductive gap
def test_c20_each_part_can_fail(turn):
    assert rs.dm_c20(fig1(FIG1))[0] == HOLDS
    assert rs.dm_c20(fig1(FIG1 | turn))[0] == FAILS


def test_c20_needs_significance_and_every_arm():
    assert rs.dm_c20(fig1(FIG1, p=0.2))[0] == FAILS
    lacking = {k: v for k, v in FIG1.items() if k != ("transductive", "GraphMixer w/o time")}
    assert rs.dm_c20(fig1(lacking))[0] == PENDING


# ------------------------------------------------------------------ C24: the peak at the target's position

def fig6b(ours, theirs, target_at=None) -> pd.DataFrame:
    rows = [("fig6", "B", m, str(i + 1), "cosine_similarity_to_target", v) for m, vals in ((OURS, ours), (RIVAL, theirs))
            for i, v in enumerate(vals)]
    if target_at is not None:
        rows += [("fig6", "B", m, str(i + 1), "neighbour_is_target", float(i + 1 in target_at)) for m in (OURS, RIVAL)
                 for i in range(len(ours))]
    return frame(rows)


def test_c24_peak_at_the_target():
    flat = [0.50, 0.52, 0.51, 0.50]
    assert rs.dm_c24(fig6b([0.1, 0.9, 0.2, 0.3], flat, target_at={2}))[0] == HOLDS
    assert rs.dm_c24(fig6b([0.1, 0.2, 0.9, 0.3], flat, target_at={2}))[0] == FAILS  # peak elsewhere
    assert rs.dm_c24(fig6b([0.1, 0.9, 0.2, 0.3], [0.0, 1.0, 0.0, 1.0], target_at={2}))[0] == FAILS  # DyGFormer not uniform
    verdict, detail, _ = rs.dm_c24(fig6b([0.1, 0.9, 0.2, 0.3], flat))  # no positions recorded: not spreads instead
    assert verdict == PENDING and "u_neighbours" in detail
    assert rs.dm_c24(fig6b([0.1, 0.9, 0.2, 0.3], flat, target_at=set()))[0] == PENDING  # the target is not in u's history


def test_the_case_study_rows_mark_the_targets_positions(tmp_path):
    np.savez(tmp_path / "case_study.npz", cos_target_0=np.array([0.1, 0.9, 0.2]), sim_layers_0=np.eye(3),
             src=np.array([5]), dst=np.array([7]), ts=np.array([1.0]), u_neighbours_0=np.array([3, 7, 4]))
    rec = {"config": {"model": "dyg_mamba", "dataset": "uci", "seed": 0}, "dir": tmp_path}
    rows = [r for r in _case_study_rows([rec]) if r["metric"] == "neighbour_is_target"]
    assert [r["mean"] for r in rows] == [0.0, 1.0, 0.0]


@pytest.mark.parametrize("ours_ids, verdict", [([[5], [7], [3], [4]], HOLDS), ([[5], [3], [7], [4]], FAILS)])
def test_c24_on_the_rows_of_the_probes_records(tmp_path, ours_ids, verdict):
    """case_study.npz as the probe writes it, u_neighbours (n, P) (DyGFormer in patches of 2) -> Figure 6 (B)'s
    rows -> C24: DyG-Mamba's peak (position 2) is where u's history holds the target 7, or it is not."""
    def record(model, cos, ids):
        (tmp_path / model).mkdir()
        np.savez(tmp_path / model / "case_study.npz", cos_target_0=np.array(cos), sim_layers_0=np.eye(len(cos)),
                 src=np.array([5]), dst=np.array([7]), ts=np.array([1.0]), u_neighbours_0=np.array(ids))
        return {"config": {"model": model, "dataset": "uci", "seed": 0}, "dir": tmp_path / model}

    recs = [record("dyg_mamba", [0.1, 0.9, 0.2, 0.3], ours_ids),
            record("dygformer", [0.50, 0.52, 0.51], [[5, 3], [7, 4], [2, 0]])]
    rows = pd.DataFrame(_case_study_rows(recs)).assign(artifact="fig6", data_kind="real", scale="paper")
    assert rows[(rows["metric"] == "neighbour_is_target") & (rows["row"] == RIVAL)]["mean"].tolist() == [0.0, 1.0, 0.0]
    assert rs.dm_c24(rows)[0] == verdict


# ------------------------------------------------------------------ table rules: the whole table, the stated figures

def test_rank_claims_need_every_dataset_of_the_table():
    pub = published_frame("dyg_mamba")
    one = pub[~((pub["artifact"] == "table2") & (pub["row"] != "UCI") & (pub["row"] != "Avg. Rank"))]
    for rule in (rt.dm_c01, rt.dm_c02):  # "all but one" on one dataset would hold whatever the numbers
        verdict, detail, _ = rule(one)
        assert verdict == PENDING and "lacks 99 cell(s)" in detail, detail
    for artifact, rule in (("table4", rt.dm_c07), ("table9", rt.dm_c08), ("table11", rt.dm_c09), ("table4", rt.dm_c05),
                           ("table10", rt.dm_c04), ("table9", rt.dm_c06), ("table3", rt.dm_c03)):
        gone = pub[~((pub["artifact"] == artifact) & (pub["row"] == "Reddit"))]
        assert rule(gone)[0] == PENDING, (artifact, rule.__name__)


def test_c05_counts_the_papers_wins_not_a_majority():
    pub = published_frame("dyg_mamba")
    t = pub[(pub["artifact"] == "table4") & (pub["metric"] == "AP_transductive_historical") & (pub["row"] != "Avg. Rank")]
    ranks = t.pivot_table(index="row", columns="column", values="mean").rank(axis=1, ascending=False, method="min")
    top2 = list(ranks.index[ranks[OURS] <= 2])
    assert len(top2) == 8  # the paper's 8 under hist
    verdict, detail, _ = rt.dm_c05(with_mean(pub, 0.0, artifact="table4", metric="AP_transductive_historical",
                                             column=OURS, row=top2[0]))
    assert verdict == FAILS and "hist 7 of 12 (paper 8)" in detail  # 7 of 12 is still a majority


def test_c10_judges_the_size_of_the_gain():
    pub = published_frame("dyg_mamba")
    for value, verdict in ((2.9, HOLDS), (1.0, FAILS), (6.0, FAILS)):  # 1.0%: a gain, far below the stated 3.64%
        df = with_mean(pub, value, artifact="fig6", row="dynamic_link_prediction")
        assert rs.dm_c10(df)[0] == verdict, value


def test_c21_fails_where_a_rank_is_not_the_stated_arithmetic():
    pub = published_frame("dyg_mamba")
    assert rt.dm_c21(pub)[0] == HOLDS
    # DyG-Mamba's table3 rank is not the mean of its per-dataset ranks
    assert rt.dm_c21(with_mean(pub, 2.5, artifact="table3", row="Avg. Rank", column=OURS))[0] == FAILS
    # FreeDyG given a rank: the claim says it is excluded
    ranked = pd.concat([pub, frame([("table9", "rnd", "Avg. Rank", "FreeDyG", "avg_rank_AUC_transductive_random", 3.0)])])
    assert rt.dm_c21(ranked)[0] == FAILS
