"""benchmarks/offline_breakdown.py's accounting of a run's time: stacked seeds share one clock but each records its
share of every stacked epoch, a node-classification run trains its backbone inside its own wall time, a loop
without per-epoch rows times itself (provenance train_time_s), and the timed phases (test evaluation, probes) come
out of the rest."""

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def breakdown():
    spec = importlib.util.spec_from_file_location("offline_breakdown", REPO / "benchmarks" / "offline_breakdown.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(results: Path, run_id: str, wall: float, history: list[dict], *, stacked: bool = False,
            backbone: list[dict] | None = None, **provenance) -> SimpleNamespace:
    config = {"paper": "p", "experiment": "e", "run_id": run_id, "seed": 0}
    d = results / "runs" / "p" / run_id
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps(config))
    (d / "history.json").write_text(json.dumps(history))
    prov = {"wall_time_s": wall, **provenance}
    if stacked:
        prov["trained_with"] = "stacked ensemble of 2 seeds (wall time shared)"
    (d / "provenance.json").write_text(json.dumps(prov))
    if backbone is not None:
        (d / "backbone").mkdir()
        (d / "backbone" / "history.json").write_text(json.dumps(backbone))
    (d / "metrics.json").write_text(json.dumps({"run_id": run_id}))
    return SimpleNamespace(config=config, experiment="e")


def _registry(jobs: dict[str, list]):
    return SimpleNamespace(jobs=lambda scale: [SimpleNamespace(job_id=j, paper="p", runs=runs)
                                               for j, runs in jobs.items()])


def test_stacked_seeds_share_the_wall_and_sum_their_epoch_shares(breakdown, tmp_path):
    runs = [_record(tmp_path, "a", 10.0, [{"epoch": 0, "epoch_time_s": 3.0}, {"epoch": 1, "epoch_time_s": 2.0}],
                    stacked=True),
            _record(tmp_path, "b", 9.0, [{"epoch": 0, "epoch_time_s": 3.0}], stacked=True)]
    got = breakdown.run_times(_registry({"j": runs}), "offline", tmp_path)["j"]
    assert (got["wall"], got["train"], got["val"]) == (10.0, 8.0, 0.0)  # one clock; 3 + 2 + 3 seconds of epochs


def test_separate_runs_sum_their_walls(breakdown, tmp_path):
    runs = [_record(tmp_path, "a", 10.0, [{"epoch": 0, "epoch_time_s": 4.0, "val_time_s": 1.0}]),
            _record(tmp_path, "b", 6.0, [{"epoch": 0, "epoch_time_s": 2.0, "val_time_s": 0.5}])]
    got = breakdown.run_times(_registry({"j": runs}), "offline", tmp_path)["j"]
    assert (got["wall"], got["train"], got["val"]) == (16.0, 6.0, 1.5)


def test_the_backbone_and_a_loop_timed_as_a_whole_count_as_training(breakdown, tmp_path):
    nc = _record(tmp_path, "nc", 20.0, [{"epoch": 0, "epoch_time_s": 1.0, "val_time_s": 0.5}],
                 backbone=[{"epoch": 0, "epoch_time_s": 8.0, "val_time_s": 2.0}])
    assert breakdown.history_seconds(tmp_path / "runs" / "p" / "nc") == (9.0, 2.5)
    # periodic_classification: rows every 1000 epochs, the loop's seconds (each member's share) in provenance
    stack = [_record(tmp_path, s, 30.0, [{"epoch": 999}], stacked=True, train_time_s=12.5) for s in ("s0", "s1")]
    got = breakdown.run_times(_registry({"nc": [nc], "stack": stack}), "offline", tmp_path)
    assert (got["nc"]["train"], got["stack"]["wall"], got["stack"]["train"]) == (9.0, 30.0, 25.0)


def test_timed_phases_leave_the_rest(breakdown, tmp_path):
    runs = [_record(tmp_path, "a", 10.0, [{"epoch": 0, "epoch_time_s": 4.0, "val_time_s": 1.0}],
                    test_time_s=2.0, probe_time_s=0.5)]
    reg = _registry({"j": runs})
    got = breakdown.run_times(reg, "offline", tmp_path)["j"]
    assert (got["test"], got["probes"]) == (2.0, 0.5)
    b = breakdown.breakdown(reg, "offline", tmp_path, tmp_path / "no-metadata")
    seconds = b["seconds"]
    assert seconds[breakdown.TEST] == 2.0 and seconds[breakdown.PROBES] == 0.5
    assert seconds[breakdown.REST] == pytest.approx(10.0 - 4.0 - 1.0 - 2.0 - 0.5)
