"""A reproduced link-prediction AP below EdgeBank's on the same data is flagged as suspect (issue 15)."""

import pandas as pd

from timerepro.report.floors import below_edgebank


def _row(model, encoder, dataset, mean, metric="AP_random_NS_test", scale="offline", data="stand-in"):
    return {"paper": "linear_time", "artifact": "table1", "row_group": model, "row": encoder, "column": dataset,
            "metric": metric, "mean": mean, "std": 0.0, "scale": scale, "data": data}


def test_cells_below_edgebank_on_the_same_data_are_returned_worst_first():
    rows = pd.DataFrame([_row("TGAT", "Linear", "UCI", 70.0), _row("TGAT", "Sinusoidal", "UCI", 80.0),
                         _row("TGN", "Linear", "UCI", 60.0), _row("TGAT", "Linear", "Enron", 50.0),
                         _row("TGAT", "Linear", "UCI", 40.0, metric="AP_historical_NS_test"),
                         _row("TGAT", "Linear", "Reddit", 10.0)])  # no EdgeBank row for Reddit: not judged
    edgebank = pd.DataFrame([_row("EdgeBank", "-", "UCI", 75.0), _row("EdgeBank", "tw", "UCI", 72.0),
                             _row("EdgeBank", "-", "Enron", 50.0),
                             _row("EdgeBank", "-", "UCI", 30.0, metric="AP_historical_NS_test")])
    out = below_edgebank(rows, edgebank)
    assert list(zip(out["row_group"], out["row"], out["column"])) == [("TGN", "Linear", "UCI"), ("TGAT", "Linear", "UCI")]
    assert out["edgebank_mean"].tolist() == [75.0, 75.0]  # the best EdgeBank variant is the floor
    assert out["margin"].tolist() == [-15.0, -5.0]  # equal to EdgeBank (Enron) is not below it


def test_a_stand_in_is_never_held_against_a_real_graph_or_another_scale():
    rows = pd.DataFrame([_row("TGAT", "Linear", "UCI", 70.0, data="stand-in"),
                         _row("TGAT", "Linear", "Enron", 70.0, scale="smoke")])
    edgebank = pd.DataFrame([_row("EdgeBank", "-", "UCI", 90.0, data="real data"),
                             _row("EdgeBank", "-", "Enron", 90.0, scale="offline")])
    assert below_edgebank(rows, edgebank).empty
    # without scale/data columns only dataset and metric are matched
    assert len(below_edgebank(rows.drop(columns=["scale", "data"]), edgebank.drop(columns=["scale", "data"]))) == 2


def test_smoke_and_offline_stand_ins_of_one_dataset_are_different_data():
    """An EdgeBank run on the smoke stand-in must not judge cells on the offline stand-in of the same dataset (the
    labels used to be identical, when dyg_mamba's offline cut ran on the smoke stand-ins)."""
    from timerepro.report.aggregate import _data_label

    def record(scale: str) -> dict:
        return {"provenance": {"data": {"kind": "standin", "standin": True, "source": "standin",
                                        "label": "synthetic stand-in for Enron (not the real data)",
                                        "sources": [{"generated": f"standins.py scale={scale} seed=0"}]}}}

    smoke, offline = _data_label([record("smoke")]), _data_label([record("offline")])
    assert smoke != offline and smoke.endswith("smoke size") and offline.endswith("offline size")
    # records written since carry the size as its own field (data_identity), which wins over the generator line
    from timerepro.data.manifest import data_identity

    fielded = {"provenance": {"data": data_identity("enron", "offline", {"label": record("smoke")["provenance"]["data"]["label"],
                                                                          "sources": [{"generated": "by hand"}]})}}
    assert fielded["provenance"]["data"]["standin_size"] == "offline" and _data_label([fielded]) == offline
    assert "standin_size" not in data_identity("enron", None, {"label": "Enron (real data)", "sources": []})
    rows = pd.DataFrame([_row("TGAT", "Linear", "Enron", 50.0, data=offline)])
    assert below_edgebank(rows, pd.DataFrame([_row("EdgeBank", "-", "Enron", 60.0, data=smoke)])).empty
    assert len(below_edgebank(rows, pd.DataFrame([_row("EdgeBank", "-", "Enron", 60.0, data=offline)]))) == 1
