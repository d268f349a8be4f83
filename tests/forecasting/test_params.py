"""params/ expands Table 9 into the runs the protocol needs: at paper scale every dataset x horizon x the
paper's L x H x D search on real data; the smoke and offline cuts as stated in params/scales.yaml."""

from __future__ import annotations

import itertools

from timerepro import registry

SERIES = ["ettm1", "ettm2", "etth1", "etth2", "ecl", "exchange", "traffic", "weather"]


def test_table9_runs_per_scale():
    reg = registry.load()
    paper = [r.config for r in reg.artifact_runs("hawkes_attention", "table9", "paper")]
    points = {(c["series"], c["pred_len"], c["e_layers"], c["n_heads"], c["d_model"]) for c in paper}
    assert len(paper) == len(points) == 8 * 4 * 3 * 2 * 4
    assert points == set(itertools.product(SERIES, [96, 192, 336, 720], [2, 3, 4], [2, 4], [32, 64, 128, 256]))
    c = paper[0]
    assert (c["task"], c["model"], c["standin"], c["seq_len"], c["lr"], c["max_epochs"]) == (
        "forecasting", "hawkes_ts", None, 96, 0.001, 10)
    assert c["max_train_windows"] is None and c["max_eval_windows"] is None and c["lradj"] == "type1"
    offline = [r.config for r in reg.artifact_runs("hawkes_attention", "table9", "offline")]
    assert sorted((c["series"], c["pred_len"]) for c in offline) == sorted(itertools.product(SERIES, [96, 192, 336]))
    assert all(c["standin"] == "offline" and c["max_epochs"] == 2 and c["max_train_windows"] == 320 for c in offline)
    (smoke,) = [r.config for r in reg.artifact_runs("hawkes_attention", "table9", "smoke")]
    assert (smoke["series"], smoke["pred_len"], smoke["standin"]) == ("exchange", 24, "smoke")
    assert reg.artifact("hawkes_attention", "table9")["status"] == "implemented"
