"""Claim rules on hand-made aggregated rows: holds, fails, cannot be evaluated."""

import pandas as pd

from timerepro.report import aggregate, claims
from timerepro.report.linear_time import synthetic


def fig2(linear, others):
    rows = []
    for panel in synthetic.PANELS:
        for enc, acc in [("Linear", linear)] + list(others.items()):
            for d, bonus in ((2, 0.0), (8, 0.1)):
                rows.append({"artifact": "fig2", "metric": "test_accuracy", "row_group": panel, "row": enc,
                             "column": str(d), "mean": acc + bonus})
    return pd.DataFrame(rows)


def test_c17_holds_and_fails():
    assert synthetic.linear_not_worse_at_min_dim(fig2(0.9, {"Sinusoidal": 0.8, "Sine-cosine": 0.85}))[0] == claims.HOLDS
    verdict, detail, _ = synthetic.linear_not_worse_at_min_dim(fig2(0.7, {"Sinusoidal": 0.8, "Sine-cosine": 0.6}))
    assert verdict == claims.FAILS and "NOT" in detail
    three_panels = fig2(0.9, {"Sinusoidal": 0.8, "Sine-cosine": 0.85}).query("row_group != '2-layer autoregressive'")
    verdict, detail, _ = synthetic.linear_not_worse_at_min_dim(three_panels)
    assert verdict == claims.PENDING and "2-layer autoregressive" in detail
    assert synthetic.linear_not_worse_at_min_dim(pd.DataFrame(columns=aggregate.COLUMNS))[0] == claims.PENDING


def fig3(learned2, learned8, true):
    rows = []
    for grp, learned in (("d_T=2", learned2), ("d_T=8", learned8)):
        for row, curve in (("Learned (linear)", learned), ("True", true)):
            for m, v in enumerate(curve, 1):
                rows.append({"artifact": "fig3", "metric": "attention_score", "row_group": grp, "row": row,
                             "column": str(m), "mean": v})
    return pd.DataFrame(rows)


def test_c18_uses_l1_distance_and_monotonicity():
    true = [0.1, 0.2, 0.3, 0.4]
    assert synthetic.attention_closer_at_larger_dim(fig3([0.22, 0.24, 0.26, 0.28], [0.12, 0.19, 0.31, 0.38], true))[0] == claims.HOLDS
    assert synthetic.attention_closer_at_larger_dim(fig3([0.12, 0.19, 0.31, 0.38], [0.22, 0.24, 0.26, 0.28], true))[0] == claims.FAILS
    assert synthetic.attention_closer_at_larger_dim(fig3([0.3, 0.2, 0.3, 0.2], [0.1, 0.2, 0.3, 0.4], true))[0] == claims.FAILS


def test_every_registered_rule_is_named_by_some_claim():
    from timerepro import registry

    reg = registry.load()
    named = {c.get("rule") for p in reg.papers.values() for c in p["claims"]}
    assert set(claims.RULES) <= named


def test_verdicts_on_stand_ins_are_withheld_with_what_they_would_be(tmp_path):
    """A claim judged on synthetic stand-ins proves the pipeline, not the paper: reported as not yet evaluable."""
    from timerepro import registry
    from timerepro.report import aggregate

    rows = [{"paper": "linear_time", "artifact": "fig2", "row_group": panel, "row": enc,
             "column": "2", "metric": "test_accuracy", "mean": acc, "std": 0.0, "note": "", "n_runs": 1,
             "scale": "offline", "data": data, "data_kind": "standin"}
            for panel in synthetic.PANELS for enc, acc in (("Linear", 0.9), ("Sinusoidal", 0.8), ("Sine-cosine", 0.7))
            for data in ["synthetic stand-in for UCI (not the real data)"]]
    out = tmp_path / "aggregated"
    out.mkdir()
    pd.DataFrame(rows, columns=aggregate.COLUMNS).to_csv(out / "linear_time.csv", index=False)
    verdicts = {c["id"]: c for c in claims.evaluate(registry.load(), tmp_path) if c["paper"] == "linear_time"}
    assert verdicts["c17"]["verdict"] == claims.PENDING
    assert verdicts["c17"]["detail"].startswith("on synthetic stand-ins only (would be holds)")
    real = pd.DataFrame(rows).assign(data="generated (paper's own synthetic task)", data_kind="synthetic_task")
    assert not claims.on_standins(real, "fig2") and claims.on_standins(pd.DataFrame(rows), "table1, fig2")
    # the field decides, not the words of the label: a real-data row whose label mentions a stand-in is real
    worded = pd.DataFrame(rows).assign(data="real data (not a stand-in)", data_kind="real")
    assert not claims.on_standins(worded, "fig2")
    mixed = pd.DataFrame(rows).assign(data_kind="real+standin")
    assert claims.on_standins(mixed, "fig2")
    assert claims.withheld_on_standins(claims.PENDING, "x") == (claims.PENDING, "x")
