"""Dynamic node classification (DyGLib's protocol) on the smoke Wikipedia stand-in: the backbone stays
frozen, its embeddings never see the future, the AUC is scikit-learn's on the head's outputs, a killed
run resumes to the same metrics, and a kept link-prediction record gives the same backbone. Tiny TGAT
(d_T 4, 3 neighbours) so that the file stays within seconds."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from sklearn.metrics import roc_auc_score

from timerepro import registry, runs
from timerepro.data import standins
from timerepro.data.ctdg import CTDGData, load_processed, node_classification_split
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.dyg_mamba import DyGMamba
from timerepro.models.graph.dygformer import DyGFormer
from timerepro.models.graph.graphmixer import GraphMixer
from timerepro.models.graph.spectral import fit_projection
from timerepro.models.graph.swinit import SWINIT
from timerepro.models.graph.tcl import TCL
from timerepro.models.graph.tgat import TGAT
from timerepro.tasks import link_prediction as lp
from timerepro.tasks import node_classification as nc
from timerepro.tasks.registry import TASKS

from .conftest import resolved

BASE = dict(paper="linear_time", experiment="nc_test", task="node_classification", dataset="wikipedia",
            standin="smoke", model="tgat", encoder="linear", d_T=4, dropout=0.1, num_neighbors=3, num_layers=2,
            num_heads=2, lr=1e-3, batch_size=200, max_epochs=4, patience=5, backbone_epochs=2, backbone_lr=1e-4,
            backbone_patience=20, backbone_eval_negatives=["random"], monitor_negatives="random",
            monitor_metric="ap", seed=0)
COST = {"epoch_time_s", "embedding_time_s", "peak_rss_mb", "backbone_epoch_time_s", "backbone_peak_rss_mb",
        "backbone_peak_gpu_memory_mb"}  # measurements, not results


def make_config(**over) -> dict:
    cfg = resolved("node_classification", BASE["model"], {**BASE, **over})
    cfg["run_id"] = registry.run_id(cfg)
    return cfg


def results_of(folder) -> dict:
    metrics = json.loads((folder / "metrics.json").read_text())
    return {k: v for k, v in metrics.items() if k not in COST}


@pytest.fixture(scope="module")
def data_root(standin_root):
    """The session's data folder, holding the smoke wikipedia stand-in."""
    return standin_root("wikipedia")


def spy_on_the_head(mp: pytest.MonkeyPatch, fit: str) -> dict:
    """Spies, set with `mp`, on the head's training (`nc.train_head`: the data, the backbone's weights before and
    after, the model's parameters, their requires_grad and modes) and on its fit function `nc.<fit>` (the parameters
    it optimises, the head's weights before and after); returns what they see."""
    seen: dict = {}
    train_head, fit_head = nc.train_head, getattr(nc, fit)

    def spy_train_head(model, data, config, ctx):
        seen["data"] = data
        seen["backbone_before"] = {k: v.clone() for k, v in model.backbone.state_dict().items()}
        seen["requires_grad"] = [p.requires_grad for p in model.parameters()]
        seen["training"] = [m.training for m in model.modules()]
        seen["backbone_params"] = {id(p) for p in model.parameters()}
        out = train_head(model, data, config, ctx)
        seen["backbone_after"] = {k: v.clone() for k, v in model.backbone.state_dict().items()}
        return out

    def spy_fit(model, optimizer, **kw):
        seen["optimized"] = {id(p) for g in optimizer.param_groups for p in g["params"]}
        seen["head_before"] = [p.detach().clone() for p in model.parameters()]
        out = fit_head(model, optimizer, **kw)
        seen["head_after"] = [p.detach().clone() for p in model.parameters()]
        return out

    mp.setattr(nc, "train_head", spy_train_head)
    mp.setattr(nc, fit, spy_fit)
    return seen


@pytest.fixture(scope="module")
def reference(data_root, tmp_path_factory):
    """One uninterrupted run of BASE with spies on the head's evaluation, its training and `fit`."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIMEREPRO_DATA", str(data_root))
        seen = spy_on_the_head(mp, "fit")
        seen["evals"], evaluate_head = [], nc.evaluate_head

        def spy_evaluate(head, emb, labels, batch_size):
            out = evaluate_head(head, emb, labels, batch_size)
            seen["evals"].append((np.array(labels), out))
            return out

        mp.setattr(nc, "evaluate_head", spy_evaluate)
        t0 = time.perf_counter()
        seen["dir"] = runs.execute(make_config(), results=tmp_path_factory.mktemp("ref"), show_progress=False)
        seen["seconds"] = time.perf_counter() - t0
    return seen


@pytest.fixture
def task(data_root, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_DATA", str(data_root))


def test_registered_with_defaults_for_every_key_the_run_reads():
    assert TASKS["node_classification"] == "timerepro.tasks.node_classification:run"
    spec = yaml.safe_load((Path(__file__).parents[2] / "params" / "tasks.yaml").read_text())["node_classification"]
    read = (*nc.BACKBONE_KEYS, "lr", "batch_size", "max_epochs", "patience", "monitor_negatives", "monitor_metric",
            "backbone_run_dir")
    assert all(k in spec["defaults"] and k in spec["parameters"] for k in read)
    assert (spec["defaults"]["lr"], spec["defaults"]["batch_size"], spec["defaults"]["patience"]) == (1e-4, 200, 20)
    assert spec["defaults"]["backbone_run_dir"] is None


def test_stand_in_labels_cover_every_split(data_root):
    data = load_processed(data_root / "standin" / "smoke" / "processed" / "wikipedia")
    split = node_classification_split(data)
    for mask in (split.train, split.val, split.test):  # both classes everywhere: AUC is defined
        assert set(np.unique(data.labels[mask]).tolist()) == {0.0, 1.0}
    # the stand-in's state change by hand: gaps of source 1 are 10, 10, 1 (median 10): only the 1 is a burst
    src, ts = np.array([1, 2, 1, 1, 2, 1]), np.array([0.0, 1.0, 10.0, 20.0, 30.0, 21.0])
    assert standins.burst_labels(src, ts).tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]


def test_end_to_end_metrics_and_auc_equals_sklearn(reference):
    d = reference["dir"]
    metrics = json.loads((d / "metrics.json").read_text())
    history = json.loads((d / "history.json").read_text())
    print(f"smoke end-to-end run: {reference['seconds']:.2f} s")
    assert metrics["epochs_run"] == len(history) == 4 and 0 <= metrics["best_epoch"] < 4
    assert metrics["backbone_epochs_run"] == 2  # the backbone's own link-prediction training
    assert 0 <= metrics["backbone_test_transductive_random_ap"] <= 1
    assert metrics["n_parameters"] == 172 * 80 + 80 + 80 * 10 + 10 + 10 + 1  # DyGLib's MLPClassifier on 172-d
    assert (d / "backbone" / "backbone.pt").is_file() and not (d / "backbone" / "checkpoint.pt").exists()
    assert not (d / "checkpoint.pt").exists()
    # the last two evaluations are the best head's validation and test: AUC = scikit-learn's on its outputs
    data = reference["data"]
    split = node_classification_split(data)
    (val_labels, val_out), (test_labels, test_out) = reference["evals"][-2:]
    assert np.array_equal(val_labels, data.labels[split.val]) and np.array_equal(test_labels, data.labels[split.test])
    assert metrics["val_auc"] == pytest.approx(roc_auc_score(val_labels, val_out["probs"]), abs=1e-12)
    assert metrics["test_auc"] == pytest.approx(roc_auc_score(test_labels, test_out["probs"]), abs=1e-12)
    assert len(test_out["probs"]) == metrics["n_test"] == int(split.test.sum())
    best = history[metrics["best_epoch"]]
    assert best["val_auc"] == metrics["val_auc"] == max(row["val_auc"] for row in history)


def test_backbone_is_frozen_and_is_the_selected_link_predictor(reference):
    before, after = reference["backbone_before"], reference["backbone_after"]
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert not any(reference["requires_grad"]) and not any(reference["training"])
    assert not (reference["optimized"] & reference["backbone_params"])  # only the head is optimized
    assert any(not torch.equal(a, b) for a, b in zip(reference["head_before"], reference["head_after"]))
    saved = torch.load(reference["dir"] / "backbone" / "backbone.pt", weights_only=False)["state"]
    selected = {k[len("backbone."):]: v for k, v in saved.items() if k.startswith("backbone.")}
    assert selected.keys() == before.keys() and all(torch.equal(selected[k], before[k]) for k in before)


def toy_data(src, dst, ts, edge_feat, node_feat) -> CTDGData:
    """A CTDGData from arrays (ids 1-based, row 0 of the feature tables = padding); random labels."""
    n = len(src)
    labels = np.random.default_rng(n).integers(0, 2, n).astype(float)
    return CTDGData(name="toy", src=src, dst=dst, ts=ts, edge_ids=np.arange(1, n + 1), labels=labels,
                    edge_feat=edge_feat, node_feat=node_feat, manifest={})


def toy_backbone(kind: str, node_feat, edge_feat) -> lp.LinkPredictionModel:
    torch.manual_seed(0)
    if kind in ZOO:  # dyg_mamba's models (issue 12)
        return nc.freeze(lp.LinkPredictionModel(ZOO[kind](node_feat, edge_feat)))
    if kind == "dygformer":
        net = DyGFormer(node_feat, edge_feat, variant="dygformer", encoder="linear", time_dim=1, channel_dim=4,
                        max_input_sequence_length=6, num_layers=1, num_heads=2, time_mean=10.0, time_std=5.0)
    elif kind.startswith("swinit"):  # the UFGConv output: memory and batch graph (the memory readout: test_swinit)
        net = SWINIT(node_feat.shape[0], edge_feat, fit_projection(edge_feat[1:], ranks=(3,)), inputs="trsvd",
                     memory_cell=kind.split("-")[1], memory_dim=6, embedding_dim=6, time_dim=4, encoder="cosine",
                     num_neighbors=3, num_layers=2, framelet_levels=2, cheb_degree=1, lambda_max=4.0, dilation=2.0,
                     dropout=0.0, readout="embedding", batch_graph="glued", graph_reuse="fresh")
    else:
        net = TGAT(node_feat, edge_feat, encoder="linear", time_dim=4, time_mean=10.0, time_std=5.0,
                   num_layers=2, num_heads=2, num_neighbors=3, sampling=kind.split("-")[1])
    return nc.freeze(lp.LinkPredictionModel(net))


ZOO = {  # tiny configurations of dyg_mamba's models
    "tcl": lambda n, e: TCL(n, e, time_dim=4, num_neighbors=3, num_layers=1, num_heads=2),
    "graphmixer": lambda n, e: GraphMixer(n, e, time_dim=4, num_neighbors=3, time_gap=5, sampling="uniform"),
    "dyg_mamba": lambda n, e: DyGMamba(n, e, time_dim=4, channel_dim=4, cooccurrence_dim=4, d_state=4, d_out=6,
                                       max_input_sequence_length=6),
}


@pytest.mark.parametrize("kind", ["tgat-recent", "tgat-uniform", "dygformer", "swinit-gru", "swinit-mlp", *ZOO])
@pytest.mark.parametrize("seed", [0, 1])
def test_embeddings_never_see_the_future(kind, seed):
    """The head's inputs for every edge up to time T (ties at T included) are unchanged when more edges
    at T and later edges, with their own features and labels, are added; after T they do change. Every pass
    starts from an empty memory (SWINIT's state would otherwise carry over from the previous pass)."""
    rng = np.random.default_rng(seed)
    n_nodes, n_past, n_new = 10, 40, 20
    src, dst = rng.integers(1, n_nodes + 1, n_past), rng.integers(1, n_nodes + 1, n_past)
    ts = np.sort(rng.integers(0, 30, n_past)).astype(float)
    cut = float(ts[-1])  # the last past time: new edges at exactly T come after the past edges at T
    new_src, new_dst = rng.integers(1, n_nodes + 1, n_new), rng.integers(1, n_nodes + 1, n_new)
    new_ts = np.sort(np.r_[np.full(5, cut), cut + rng.integers(1, 9, n_new - 5)]).astype(float)
    node_feat = np.vstack([np.zeros((1, 6)), rng.normal(size=(n_nodes, 6))])
    edge_feat = np.vstack([np.zeros((1, 6)), rng.normal(size=(n_past + n_new, 6))])
    past = toy_data(src, dst, ts, edge_feat[:n_past + 1], node_feat)
    grown = toy_data(np.r_[src, new_src], np.r_[dst, new_dst], np.r_[ts, new_ts], edge_feat, node_feat)
    idx = np.arange(n_past)
    model = toy_backbone(kind, node_feat, edge_feat)
    h_past = nc.source_embeddings(model, past, idx, TemporalNeighbors.from_data(past), batch_size=7, reset=True)
    h_grown = nc.source_embeddings(model, grown, idx, TemporalNeighbors.from_data(grown), batch_size=7, reset=True)
    assert h_past.shape == (n_past, 6)
    torch.testing.assert_close(h_past, h_grown, rtol=0, atol=0)
    # control: the new edges after T do see the new interactions (those at T and before them)
    later = np.flatnonzero(grown.ts > cut)
    h_seen = nc.source_embeddings(model, grown, later, TemporalNeighbors.from_data(grown), batch_size=7, reset=True)
    h_blind = nc.source_embeddings(model, grown, later, TemporalNeighbors.from_data(past), batch_size=7, reset=True)
    assert not torch.allclose(h_seen, h_blind)


def test_killed_run_resumes_to_the_same_metrics(task, reference, tmp_path, kill_then_resume):
    cfg = make_config()
    # checkpoints 1-2 are the backbone's epochs, 3-4 the head's: killed after the head's second epoch
    d = kill_then_resume(cfg, tmp_path / "head", after=4)
    assert json.loads((d / "provenance.json").read_text())["resumed_from_epoch"] == 1
    assert results_of(d) == results_of(reference["dir"])


def test_killed_during_backbone_training_resumes_to_the_same_metrics(task, reference, tmp_path, monkeypatch):
    class Killed(Exception):
        pass

    original, calls = runs.RunContext.save_checkpoint, {"n": 0}

    def dying(self, state):
        original(self, state)
        calls["n"] += 1
        if calls["n"] == 1:
            raise Killed

    cfg = make_config()
    monkeypatch.setattr(runs.RunContext, "save_checkpoint", dying)
    with pytest.raises(Killed):
        runs.execute(cfg, results=tmp_path, show_progress=False)
    d = tmp_path / "runs" / cfg["paper"] / cfg["run_id"]
    assert (d / "backbone" / "checkpoint.pt").is_file() and not (d / "backbone" / "backbone.pt").exists()
    monkeypatch.setattr(runs.RunContext, "save_checkpoint", original)
    runs.execute(cfg, results=tmp_path, show_progress=False)
    assert results_of(d) == results_of(reference["dir"])


def test_kept_link_prediction_record_gives_the_same_backbone(task, reference, tmp_path):
    lp_cfg = {k: v for k, v in nc.backbone_config(make_config()).items() if k != "run_id"}
    lp_cfg = {**lp_cfg, "experiment": "lp_for_nc", "keep_checkpoint": True}
    lp_cfg["run_id"] = registry.run_id(lp_cfg)
    lp_dir = runs.execute(lp_cfg, results=tmp_path, show_progress=False)
    got = results_of(runs.execute(make_config(backbone_run_dir=str(lp_dir)), results=tmp_path, show_progress=False))
    ref = results_of(reference["dir"])
    for key in ("val_auc", "test_auc", "best_epoch", "backbone_test_transductive_random_ap"):
        assert got[key] == ref[key], key
    assert got["backbone_run_id"] == lp_cfg["run_id"]
    with pytest.raises(ValueError, match="dataset"):
        nc.load_backbone(make_config(dataset="reddit", backbone_run_dir=str(lp_dir)), reference["data"])


def test_single_class_split_is_refused_before_any_training():
    with pytest.raises(ValueError, match="single class"):
        nc._check_labels("test", np.zeros(10))
    with pytest.raises(ValueError, match="0/1"):
        nc._check_labels("val", np.array([0.0, 2.0]))


def test_last_epoch_head_with_its_own_dropout(task, reference, tmp_path, monkeypatch):
    """swinit's authors (node_classification.py ~509-526): the head has dropout 0.1 whatever the backbone's, and the
    reported test AUC is the last epoch's head, not the best validation epoch's."""
    made = []
    head_cls = nc.MLPClassifier
    monkeypatch.setattr(nc, "MLPClassifier", lambda dim, dropout: made.append(dropout) or head_cls(dim, dropout))
    d = runs.execute(make_config(head_dropout=0.3, head_epoch="last"), results=tmp_path, show_progress=False)
    metrics = json.loads((d / "metrics.json").read_text())
    history = json.loads((d / "history.json").read_text())
    assert made == [0.3]
    assert metrics["best_epoch"] == len(history) - 1 == 3
    assert metrics["val_auc"] == pytest.approx(history[-1]["val_auc"], abs=1e-12)
    with pytest.raises(ValueError, match="head_epoch"):
        runs.execute(make_config(head_epoch="middle"), results=tmp_path / "bad", show_progress=False)


# ------------------------------------------------------------------ DyG-Mamba's script (docs/dyg_mamba.md M09)

class ScriptedCtx:
    """The run context `fit_test_stepped` uses, in memory."""

    run_id = "scripted"

    def __init__(self):
        self.checkpoint, self.history = None, []

    def load_checkpoint(self):
        return self.checkpoint

    def save_checkpoint(self, state):
        self.checkpoint = state

    def read_history(self):
        return self.history

    def write_history(self, rows):
        self.history = list(rows)

    def progress(self, it, **kw):
        return it

    def log(self, msg):
        pass


def scripted_fit(val: list, test: dict, patience: int, interval: int = 2):
    """`fit_test_stepped` on a one-weight head whose weight is the epoch number, with scripted AUCs."""
    from timerepro.tasks.node_classification_stopping import fit_test_stepped

    head = torch.nn.Linear(1, 1, bias=False)
    opt = torch.optim.SGD(head.parameters(), lr=0.0)
    epoch_of = {"e": -1}

    def train_epoch(epoch):
        epoch_of["e"] = epoch
        with torch.no_grad():
            head.weight.fill_(float(epoch))
        return {"train_loss": 0.0}

    result = fit_test_stepped(head, opt, train_epoch=train_epoch,
                              validate=lambda: {"auc": val[epoch_of["e"]], "loss": 0.0},
                              test=lambda: {"auc": test[epoch_of["e"]], "loss": 0.0},
                              interval=interval, max_epochs=len(val), patience=patience, ctx=ScriptedCtx())
    return result, float(head.weight.detach())


def test_test_auc_steps_the_shared_early_stopping():
    """train_node_classification.py:286-322: at epoch 2 (1-based) the test AUC 0.9 is stepped first and becomes the
    best; validation 0.8 at epoch 3 does not beat it (validation-only stopping would have kept epoch 3); the test step
    at epoch 4 and the validation step after it each add one to the counter, which reaches the patience of 3 at the
    test step: the loop ends after epoch 4 with the head of epoch 2."""
    val, test = [0.5, 0.6, 0.8, 0.7, 0.99, 0.99], {1: 0.9, 3: 0.85, 5: 0.9}
    result, weight = scripted_fit(val, test, patience=3)
    assert result.best_epoch == 1 and weight == 1.0
    assert result.epochs_run == 4  # stopped: epochs 5-6 never run
    rows = result.history
    assert [("test_auc" in r) for r in rows] == [False, True, False, True]
    assert [r["saved"] for r in rows] == [True, True, False, False]
    assert [r["stop_counter"] for r in rows] == [0, 1, 2, 4]
    # validation AUC alone (DyGLib's head, `head_epoch: best`) keeps the best validation epoch instead
    assert int(np.argmax(val[:4])) == 2


def test_the_stop_is_kept_after_a_saving_validation_step():
    """EarlyStopping.early_stop is never reset (utils/EarlyStopping.py:58-63): the test step at epoch 4 reaches the
    patience, the validation step after it still saves (>= the best), and the loop ends there."""
    val, test = [0.5, 0.6, 0.7, 0.95, 0.99], {1: 0.9, 3: 0.8}
    result, weight = scripted_fit(val, test, patience=3)
    assert result.epochs_run == 4 and result.best_epoch == 3 and weight == 3.0
    assert [r["stop_counter"] for r in result.history] == [0, 1, 2, 0]


DM = dict(paper="dyg_mamba", experiment="nc_test", task="node_classification", dataset="wikipedia", standin="smoke",
          model="dyg_mamba", max_input_sequence_length=8, d_ch=4, d_cooc=4, d_T=4, d_state=4, expand=1, d_out=8,
          lr=1e-3, batch_size=200, max_epochs=6, patience=3, backbone_weights="random", head_epoch="test_stepped",
          test_interval_epochs=2, seed=0)


def dm_config(**over) -> dict:
    cfg = resolved("node_classification", "dyg_mamba", {**DM, **over})
    cfg["run_id"] = registry.run_id(cfg)
    return cfg


def test_random_frozen_backbone_and_test_stepped_head(task, tmp_path, monkeypatch):
    """DyG-Mamba's script (train_node_classification.py:118-146, 286-325): the backbone is the model as built from the
    seed, never trained, unchanged by the head's training and not optimised; the history steps test AUC every
    `test_interval_epochs`; the reported head is the one the shared early stopping saved last."""
    from timerepro.records import read_effective_config
    from timerepro.tasks.node_classification_stopping import SharedStopper

    seen = spy_on_the_head(monkeypatch, "fit_test_stepped")
    cfg = dm_config()
    d = runs.execute(cfg, results=tmp_path, show_progress=False)
    metrics = json.loads((d / "metrics.json").read_text())
    history = json.loads((d / "history.json").read_text())
    # frozen: the same weights after the head's training, none of them optimised
    before, after = seen["backbone_before"], seen["backbone_after"]
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert not (seen["optimized"] & seen["backbone_params"]) and not any(seen["requires_grad"])
    # random: the model as built from the run's seed (no link prediction ran, nothing under backbone/)
    fresh = nc.random_backbone(read_effective_config(d), None, seen["data"])[0].backbone.state_dict()
    assert all(torch.equal(fresh[k], before[k]) for k in before)
    assert not (d / "backbone").exists() and not any(k.startswith("backbone_") for k in metrics)
    # the shared stopping replayed on the recorded AUCs gives the recorded selection
    stopper = SharedStopper(patience=3)
    for row in history:
        saved = stopper.step(row["test_auc"], row["epoch"]) if "test_auc" in row else False
        saved |= stopper.step(row["val_auc"], row["epoch"])
        assert row["saved"] == saved
    assert [("test_auc" in r) for r in history] == [(r["epoch"] + 1) % 2 == 0 for r in history]
    assert metrics["best_epoch"] == stopper.best_epoch and metrics["epochs_run"] == len(history)
    best = history[metrics["best_epoch"]]
    assert metrics["val_auc"] == pytest.approx(best["val_auc"], abs=1e-12)
    if "test_auc" in best:
        assert metrics["test_auc"] == pytest.approx(best["test_auc"], abs=1e-12)


def test_test_stepped_run_resumes_to_the_same_metrics(task, tmp_path, kill_then_resume):
    cfg = dm_config()
    ref = results_of(runs.execute(cfg, results=tmp_path / "ref", show_progress=False))
    d = kill_then_resume(cfg, tmp_path / "killed", after=3)  # after the head's third epoch (a test step at 2)
    assert json.loads((d / "provenance.json").read_text())["resumed_from_epoch"] == 2
    assert results_of(d) == ref


def test_bad_protocol_keys_are_refused_before_any_training(task, tmp_path):
    for over, match in (({"backbone_weights": "pretrained"}, "backbone_weights"),
                        ({"test_interval_epochs": None}, "test_interval_epochs"),
                        ({"backbone_run_dir": str(tmp_path)}, "backbone_run_dir")):
        with pytest.raises(ValueError, match=match):
            runs.execute(dm_config(**over), results=tmp_path / "bad", show_progress=False)
