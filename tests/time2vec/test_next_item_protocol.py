"""TimeLSTM's training protocol for Last.FM and CiteULike (DarryO/time_lstm main.py ~414-484), by hand, and the
CiteULike runs left out at paper scale before any job starts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from timerepro import registry
from timerepro.tasks.next_item import added_test_prefixes, prefix_length, prefixes_for_epoch


def seq(types, tau):
    return {"types": np.array(types), "tau": np.array(tau, np.float32), "targets": np.array([99])}


TEST = [seq([5, 6, 7], [1, 2, 3]), seq([8, 9], [4, 5])]  # inputs (the held-out targets 99 are never added)


def as_lists(rows):
    return [(r["types"].tolist(), r["targets"].tolist(), r["tau"].tolist()) for r in rows]


def test_prefix_length_grows_after_the_fixed_epochs():
    """After epoch e (1-based) > 10 of 50, int((e - 10) * width / 40) feeds the next epoch (0-based index e)."""
    assert [prefix_length(e, 10, 50, 199) for e in (0, 9, 10)] == [0, 0, 0]
    assert prefix_length(11, 10, 50, 199) == 4 and prefix_length(49, 10, 50, 199) == 194
    assert prefix_length(5, 10, 10, 199) == 0  # no second stage


def test_test_prefixes_by_hand():
    """n = length where the input is longer, else length - 1; the targets are the next items; beyond an input the
    code's padding enters as item 0 at tau 0; n = 0 adds nothing; the held-out target never appears."""
    assert as_lists(added_test_prefixes(TEST, 1)) == [([5], [6], [1.0]), ([8], [9], [4.0])]
    assert as_lists(added_test_prefixes(TEST, 2)) == [([5, 6], [6, 7], [1.0, 2.0]), ([8], [9], [4.0])]
    assert as_lists(added_test_prefixes(TEST, 3)) == [([5, 6], [6, 7], [1.0, 2.0]), ([8, 9], [9, 0], [4.0, 5.0])]
    assert added_test_prefixes(TEST, 0) == []
    assert all(99 not in r["targets"] for n in (1, 2, 3) for r in added_test_prefixes(TEST, n))


def test_protocol_switch():
    config = {"test_prefixes": "timelstm", "fixed_epochs": 1, "max_epochs": 3}
    assert prefixes_for_epoch(config, TEST, 1) == []
    assert as_lists(prefixes_for_epoch(config, TEST, 2)) == as_lists(added_test_prefixes(TEST, 1))  # int(1 * 3 / 2)
    assert prefixes_for_epoch({**config, "test_prefixes": "none"}, TEST, 2) == []
    with pytest.raises(ValueError, match="test_prefixes"):
        prefixes_for_epoch({**config, "test_prefixes": "all"}, TEST, 2)


def test_citeulike_is_left_out_at_paper_scale_with_the_locks_reason():
    """CiteULike is unobtainable: its real-data runs are not planned at paper scale (stand-ins still run), and
    `left_out` says which experiments and why."""
    reg = registry.load()
    paper = [r for r in reg.runs("paper", paper="time2vec") if r.config.get("dataset") == "citeulike"]
    offline = [r for r in reg.runs("offline", paper="time2vec") if r.config.get("dataset") == "citeulike"]
    assert paper == [] and offline and all(r.config["standin"] for r in offline)
    lines = reg.left_out("paper")
    assert any(line.startswith("time2vec/cite_tlstm_t2v: citeulike (citeulike.org shut down") for line in lines)
    assert reg.left_out("offline") == []


def test_hold_out_last_items_by_hand():
    """Validation = each training sequence's last target from all its inputs; training keeps the rest; a sequence
    with a single target stays whole."""
    from timerepro.tasks.next_item import hold_out_last_items

    two = {"types": np.array([1, 2, 3]), "tau": np.array([1.0, 2.0, 3.0], np.float32), "targets": np.array([2, 3, 4])}
    one = {"types": np.array([7]), "tau": np.array([1.0], np.float32), "targets": np.array([8])}
    fit_part, val = hold_out_last_items([two, one])
    assert as_lists(fit_part) == [([1, 2], [2, 3], [1.0, 2.0]), ([7], [8], [1.0])]
    assert as_lists(val) == [([1, 2, 3], [4], [1.0, 2.0, 3.0])]


def test_run_records_selection_metrics_and_trains_on_test_prefixes(standin_root, tmp_path, monkeypatch):
    """A smoke Last.FM run under the TimeLSTM protocol: the prefixes enter the second epoch's training (more steps),
    and the run records the held-out training items' metrics beside the test curve's."""
    from timerepro import runs
    from timerepro.tasks import next_item

    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("lastfm_1k")))
    reg = registry.load()
    cfg = {**reg.tasks["next_item"]["defaults"], **reg.models["lstm"]["defaults"],
           "paper": "time2vec", "experiment": "t", "task": "next_item", "dataset": "lastfm_1k", "standin": "smoke",
           "model": "lstm", "time_input": "t2v", "k_sines": 4, "hidden": 8, "max_epochs": 2, "fixed_epochs": 0,
           "candidates": 11, "candidate_repeats": 2, "seed": 0}
    seen = []
    real = next_item.prefixes_for_epoch
    monkeypatch.setattr(next_item, "prefixes_for_epoch", lambda c, t, e: seen.append(e) or real(c, t, e))
    cfg["run_id"] = registry.run_id(cfg)
    metrics = json.loads((runs.execute(cfg, results=tmp_path, show_progress=False) / "metrics.json").read_text())
    assert 0 <= metrics["selection_recall_at_10"] <= 1 and 0 <= metrics["recall_at_10"] <= 1
    assert seen[1:] == [0, 1]
    assert real(cfg, [{"types": np.arange(4), "tau": np.zeros(4, np.float32)}], 1)  # epoch 1 adds prefixes
