"""SWINIT (swinit sections 5-6): the randomized SVD against torch.linalg.svd on a known spectrum, the rank rule,
the framelet transform against its definition (tight frame, perfect reconstruction, adjointness), the batch
graph, Theta inherited across batches, embeddings independent of what else is queried, the memory never ahead
of the stream, and a killed link-prediction run resuming to the same metrics. Tiny sizes: seconds."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from timerepro import registry, runs
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.graphs.batch_graph import glued_graph
from timerepro.models.graph.framelet import Framelet, directed_laplacian, exact_operators, normalized_laplacian
from timerepro.models.graph.spectral import (fit_projection, randomized_svd, spectral_norm_error,
                                             truncation_errors)
from timerepro.models.graph.swinit import SWINIT, star_graphs
from timerepro.tasks import link_prediction as lp


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def known_spectrum(sigma: np.ndarray, m: int, seed: int = 0) -> torch.Tensor:
    """X = Q1 diag(sigma) Q2^T (m, len(sigma)) with random orthonormal Q1, Q2: singular values exactly sigma."""
    g = torch.Generator().manual_seed(seed)
    n = len(sigma)
    q1, _ = torch.linalg.qr(torch.randn(m, n, generator=g, dtype=torch.float64))
    q2, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
    return (q1 * torch.as_tensor(sigma)) @ q2.T


# ------------------------------------------------------------------ randomized SVD and the rank rule

def test_randomized_svd_matches_the_exact_svd_on_a_known_spectrum():
    sigma = 0.6 ** np.arange(40)  # fast decay: two power iterations recover the leading triplets
    x = known_spectrum(sigma, 300)
    u, s, v = randomized_svd(x.float(), 12, seed=3)
    exact = torch.linalg.svd(x, full_matrices=False)
    torch.testing.assert_close(s.double(), exact.S[:12], rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(exact.S, torch.as_tensor(sigma), rtol=1e-9, atol=1e-12)  # the construction
    # the error of the rank-12 approximation is Eckart-Young's optimum sigma_13 / sigma_1, computed two ways
    direct = torch.linalg.matrix_norm(x - (u * s).double() @ v.double().T, ord=2).item() / sigma[0]
    assert spectral_norm_error(x.float(), u, s, v, chunk=64) == pytest.approx(direct, rel=1e-4)
    assert direct == pytest.approx(sigma[12] / sigma[0], rel=1e-3)
    errors = truncation_errors(x.float(), u, s, v, [4, 8, 12])
    assert [errors[r] for r in (4, 8, 12)] == pytest.approx([sigma[r] / sigma[0] for r in (4, 8, 12)], rel=1e-3)
    # seeded: the caller's random stream is untouched and the result repeats
    state = torch.get_rng_state()
    torch.testing.assert_close(randomized_svd(x.float(), 12, seed=3)[1], s)
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.parametrize("step", [57, 83])
def test_rank_rule_takes_the_smallest_rank_below_the_tolerance(step):
    # singular values 1 up to `step`, then 0.05: every rank >= step has relative error 0.05 < 0.1, below it 1
    sigma = np.r_[np.ones(step), np.full(120 - step, 0.05)]
    fit = fit_projection(known_spectrum(sigma, 400).float())
    assert fit.rank == step and fit.error == pytest.approx(0.05, rel=1e-3)
    assert sorted(fit.errors) == list(range(50, 101))  # every candidate rank's error was computed
    assert all(fit.errors[r] == pytest.approx(1.0 if r < step else 0.05, rel=1e-3) for r in fit.errors)
    assert fit.projection.shape == (120, step)


def test_rank_rule_edges():
    sigma = np.r_[np.ones(60), np.full(60, 0.05)]
    fit = fit_projection(known_spectrum(sigma, 400).float(), tol=0.01)  # never below: the largest rank
    assert fit.rank == 100 and fit.error == pytest.approx(0.05, rel=1e-3)
    few = fit_projection(known_spectrum(np.linspace(1, 0.5, 20), 200).float())  # 20 features < 50
    assert few.rank == 20 and few.error < 1e-2 and few.projection.shape == (20, 20)  # 0 up to float32 rounding


# ------------------------------------------------------------------ the framelet transform

def random_graph(n: int, seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    edges = np.array([(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.3]).T
    return normalized_laplacian(edges, rng.uniform(0.5, 2.0, edges.shape[1]), n)


@pytest.mark.parametrize("levels", [1, 2, 3])
def test_exact_framelet_operators_form_a_tight_frame(levels):
    ops = exact_operators(random_graph(15, levels).to_dense(), levels=levels)
    assert len(ops) == 1 + levels
    frame = sum(w.T @ w for w in ops)
    torch.testing.assert_close(frame, torch.eye(15, dtype=torch.float64), rtol=0, atol=1e-12)


def test_chebyshev_transform_converges_to_the_definition_and_reconstructs_perfectly():
    lap = random_graph(20, 0)
    x = torch.randn(20, 4, generator=torch.Generator().manual_seed(0))
    ops = exact_operators(lap.to_dense())
    errors = []
    for degree in (1, 2, 4, 10):
        fr = Framelet(lap, degree=degree)
        bands = fr.decompose(x)
        errors.append(max((b - (w.float() @ x)).abs().max().item() for b, w in zip(bands, ops)))
        if degree == 10:
            torch.testing.assert_close(fr.reconstruct(bands), x, rtol=0, atol=1e-5)  # perfect reconstruction
    assert errors == sorted(errors, reverse=True) and errors[-1] < 1e-5 and errors[0] > 1e-2


def test_reconstruction_is_the_adjoint_of_decomposition_at_any_degree():
    lap = random_graph(12, 1)
    g = torch.Generator().manual_seed(1)
    for degree in (1, 3):
        fr = Framelet(lap.double(), degree=degree, levels=2)
        x = torch.randn(12, 3, generator=g, dtype=torch.float64)
        ys = [torch.randn(12, 3, generator=g, dtype=torch.float64) for _ in range(fr.n_bands)]
        lhs = sum((b * y).sum() for b, y in zip(fr.decompose(x), ys))
        assert lhs.item() == pytest.approx((x * fr.reconstruct(ys)).sum().item(), rel=1e-10)


def test_isolated_node_and_symmetry_of_the_laplacian():
    lap = normalized_laplacian(np.array([[0], [1]]), np.array([2.0]), 3).to_dense()
    torch.testing.assert_close(lap, torch.tensor([[1.0, -1.0, 0.0], [-1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))


def test_glued_graph_and_pygs_unsymmetrised_laplacian_by_hand():
    """The authors' graph: one node set (centres first, then the other neighbours in id order), one edge
    neighbour -> centre per stored interaction; PyG's get_laplacian(sym) on them: degrees over the source row, a
    centre nobody lists (9) has degree 0, so its incoming edge weighs 0; nothing symmetrised."""
    g = glued_graph(np.array([7, 9]), np.array([[0, 3, 3, 5], [0, 0, 7, 0]]))
    assert g.node_ids.tolist() == [7, 9, 3, 5] and not g.symmetric
    assert g.edges.tolist() == [[2, 2, 3, 0], [0, 0, 0, 1]]
    lap = directed_laplacian(g.edges, g.weights, 4).to_dense()
    want = torch.eye(4)
    want[2, 0], want[3, 0] = -2 / np.sqrt(2.0), -1.0  # deg(3) = 2 (two interactions), deg(5) = 1, deg(7) = 1
    torch.testing.assert_close(lap, want)


# ------------------------------------------------------------------ the model

def test_star_graphs_are_disjoint_and_weighted_by_multiplicity():
    g = star_graphs(np.array([7, 9]), np.array([[0, 3, 3, 5], [0, 0, 3, 0]]))
    assert g.node_ids.tolist() == [7, 9, 3, 5, 3]  # centres, then one leaf copy per (centre, neighbour)
    assert g.edges.tolist() == [[0, 0, 1], [2, 3, 4]] and g.weights.tolist() == [2.0, 1.0, 1.0]


def toy_stream(seed: int = 0, n_nodes: int = 12, n_edges: int = 60, d: int = 6):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(1, n_nodes + 1, n_edges), rng.integers(1, n_nodes + 1, n_edges)
    ts = np.sort(rng.uniform(0, 100, n_edges))
    edge_feat = np.vstack([np.zeros((1, d)), rng.normal(size=(n_edges, d))])
    return src, dst, ts, np.arange(1, n_edges + 1), edge_feat


def toy_swinit(edge_feat: np.ndarray, num_nodes: int, cell: str = "gru", readout: str = "embedding", seed: int = 0,
               inputs: str = "trsvd", fit_on: np.ndarray | None = None, graph: str = "stars",
               reuse: str = "fresh") -> SWINIT:
    """A small SWINIT whose projection is fitted on `fit_on` (default: the events' own features)."""
    torch.manual_seed(seed)
    fit = None if inputs == "raw" else fit_projection((edge_feat if fit_on is None else fit_on)[1:], ranks=(3,))
    return SWINIT(num_nodes, edge_feat, fit, inputs=inputs, memory_cell=cell, memory_dim=8, embedding_dim=6,
                  time_dim=4, encoder="cosine", num_neighbors=3, num_layers=2, framelet_levels=2, cheb_degree=1,
                  lambda_max=4.0, dilation=2.0, dropout=0.0, readout=readout, batch_graph=graph, graph_reuse=reuse)


def test_observe_keeps_each_nodes_latest_message():
    """PyG's LastAggregator: node 2 is a destination at t = 1 and a source at t = 3 of one batch; its pending
    message is the t = 3 one (its own memory first, node 4 second), whatever the place of its roles."""
    _, _, _, _, edge_feat = toy_stream()
    model = toy_swinit(edge_feat, num_nodes=6)
    model.observe(np.array([1, 2, 5]), np.array([2, 4, 3]), np.array([1.0, 3.0, 3.0]), np.array([1, 2, 3]))
    assert model.has_pending[2] and model.pending_time[2].item() == 3.0
    # node 3: destination of the last event only; node 1: source of the first only
    assert model.pending_time[3].item() == 3.0 and model.pending_time[1].item() == 1.0


@pytest.mark.parametrize("cell", ["gru", "mlp"])
def test_theta_written_by_batch_i_is_where_batch_i_plus_1_starts(cell):
    src, dst, ts, eids, edge_feat = toy_stream()
    net = toy_swinit(edge_feat, 13, cell)
    net.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=13))
    model = lp.LinkPredictionModel(net)
    opt = lp.make_optimizer({"optimizer": "adamw", "lr": 1e-2, "weight_decay": 0.01}, model.parameters())
    conv = net.convs[1]
    reads: list[list] = []  # per batch: (node ids, Theta entries read) of each call
    original = conv.theta_for

    def spy(node_ids):
        out = original(node_ids)
        reads[-1].append((node_ids.clone(), out.detach().clone()))
        return out

    conv.theta_for = spy
    written, before = [], []
    rng = np.random.default_rng(0)
    for start in range(0, 40, 10):  # 4 batches, the task's order: score, backward, observe, step
        reads.append([])
        b = slice(start, start + 10)
        logits = torch.cat([model(src[b], dst[b], ts[b]), model(src[b], rng.integers(1, 13, 10), ts[b])])
        loss = F.binary_cross_entropy_with_logits(logits, torch.cat([torch.ones(10), torch.zeros(10)]))
        opt.zero_grad()
        loss.backward()
        net.observe(src[b], dst[b], ts[b], eids[b])
        before.append(conv.theta.detach().clone())
        opt.step()
        written.append(conv.theta.detach().clone())
        if start == 20:
            net.reset_state()  # a new epoch's memory reset leaves Theta alone
    for i in range(1, 4):
        assert len(reads[i]) == 2  # the positives' and the negatives' graphs
        for ids, values in reads[i]:
            torch.testing.assert_close(values, written[i - 1][:, ids], rtol=0, atol=0)
            assert (values != before[i - 1][:, ids]).all()  # batch i-1's step did write these entries


def test_in_the_glued_graph_a_source_reads_its_true_destination():
    """The finding behind the stars option: u interacted with v before the batch; u's embedding in the authors'
    glued graph changes with whether v is queried beside it (as the batch's positive), and not in the stars."""
    src, dst = np.array([1, 1, 2, 3]), np.array([5, 6, 5, 6])
    ts, eids = np.array([1.0, 2.0, 3.0, 4.0]), np.arange(1, 5)
    feat = np.vstack([np.zeros((1, 6)), np.random.default_rng(0).normal(size=(4, 6))])
    moved = {}
    for graph in ("glued", "stars"):
        net = toy_swinit(feat, 8, graph=graph).eval()
        net.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=8))
        net.observe(src, dst, ts, eids)
        with torch.no_grad():
            with_v = net.embed(np.array([1, 5]), np.array([9.0, 9.0]))[0]  # v = 5: 1 is among 5's neighbours
            without = net.embed(np.array([1, 7]), np.array([9.0, 9.0]))[0]  # 7: never interacted
        moved[graph] = float((with_v - without).abs().max())
    assert moved["glued"] > 1e-3 and moved["stars"] < 1e-6


@pytest.mark.parametrize("cell", ["gru", "mlp"])
def test_an_embedding_does_not_depend_on_what_else_is_queried(cell):
    src, dst, ts, eids, edge_feat = toy_stream(1)
    net = toy_swinit(edge_feat, 13, cell).eval()
    net.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=13))
    net.observe(src[:30], dst[:30], ts[:30], eids[:30])
    net.observe(src[30:40], dst[30:40], ts[30:40], eids[30:40])  # pending messages for the next batch
    b = slice(40, 50)
    with torch.no_grad():
        h_pos, _ = net.pair_embeddings(src[b], dst[b], ts[b])
        h_neg, _ = net.pair_embeddings(src[b], (dst[b] % 12) + 1, ts[b])
        h_alone = torch.cat([net.pair_embeddings(src[b][i:i + 1], dst[b][i:i + 1], ts[b])[0] for i in range(10)])
    torch.testing.assert_close(h_pos, h_neg, rtol=0, atol=1e-6)
    torch.testing.assert_close(h_pos, h_alone, rtol=0, atol=1e-6)


@pytest.mark.parametrize("inputs", ["trsvd", "raw", "raw_trsvd"])
def test_memory_readout_sees_only_earlier_batches(inputs):
    """Node classification reads the memory: for the events of batch b it is the same whatever the events of
    batch b and later carry, and it changes with those of batch b - 1."""
    src, dst, ts, eids, edge_feat = toy_stream(2)

    def readout(feat) -> torch.Tensor:
        net = toy_swinit(feat, 13, readout="memory", inputs=inputs, fit_on=edge_feat).eval()
        net.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=13))
        out = []
        with torch.no_grad():
            for start in range(0, 60, 10):
                b = slice(start, start + 10)
                out.append(net.classification_embeddings(src[b], dst[b], ts[b])[0])
                net.observe(src[b], dst[b], ts[b], eids[b])
        return torch.stack(out)  # (6 batches, 10, d_mem)

    base = readout(edge_feat)
    later = edge_feat.copy()
    later[31:] += 5.0  # the events of batches 3-5 (edge ids 31..60)
    changed = readout(later)
    torch.testing.assert_close(changed[:4], base[:4], rtol=0, atol=0)  # batch 3 reads batches 0-2 only
    assert not torch.allclose(changed[4:], base[4:])


# ------------------------------------------------------------------ the task

BASE = dict(paper="swinit", experiment="lp_test", task="link_prediction", dataset="jodie_wikipedia", standin="smoke",
            model="swinit_gru", memory_cell="gru", spectral_input="trsvd", memory_dim=8, embedding_dim=8, d_T=4,
            encoder="cosine", num_neighbors=3, num_layers=2, framelet_levels=2, dilation=2.0, cheb_degree=1,
            lambda_max=4.0, dropout=0.1, svd_rank_min=50, svd_rank_max=100, svd_tolerance=0.1, svd_power_iterations=2,
            nc_readout="memory", batch_graph="glued", graph_reuse="prepass", optimizer="adamw", weight_decay=0.01, monitor_setting="inductive", lr=1e-3,
            batch_size=100, max_epochs=3, patience=5, eval_negatives=["random"], monitor_negatives="random",
            monitor_metric="ap", seed=0)


def make_config(**over) -> dict:
    cfg = {**BASE, **over}
    cfg["run_id"] = registry.run_id(cfg)
    return cfg


@pytest.fixture
def task(standin_root, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("jodie_wikipedia")))


def test_killed_run_resumes_to_the_same_metrics(task, tmp_path, kill_then_resume):
    cfg = make_config()
    expected = json.loads((runs.execute(cfg, results=tmp_path / "a", show_progress=False) / "metrics.json").read_text())
    assert 50 <= expected["svd_rank"] <= 100 and (expected["svd_error"] < 0.1 or expected["svd_rank"] == 100)
    assert expected["n_parameters"] > 0
    assert 0 <= expected["test_inductive_random_ap"] <= 1 and 0 <= expected["test_transductive_random_auc"] <= 1
    d = kill_then_resume(cfg, tmp_path / "b", after=2)
    got = json.loads((d / "metrics.json").read_text())
    assert json.loads((d / "provenance.json").read_text())["resumed_from_epoch"] == 1
    cost = {"epoch_time_s", "peak_rss_mb", "peak_gpu_memory_mb"}  # measurements, not results
    assert {k: v for k, v in got.items() if k not in cost} == {k: v for k, v in expected.items() if k not in cost}


def test_stopped_mid_epoch_resumes_at_its_pre_pass_batch_to_the_same_metrics(task, tmp_path, monkeypatch):
    """The pre-pass place (which stored batch graph the next training call reuses) rides in the checkpoint: a job
    stopped by SIGTERM mid-epoch resumes at that batch's place, not at the epoch's first."""
    from timerepro import stopping

    from .test_link_prediction_stop import COST, counting_scores

    cfg = make_config(max_epochs=2, batch_size=25)
    calls = counting_scores(monkeypatch)
    expected = json.loads((runs.execute(cfg, results=tmp_path / "a", show_progress=False) / "metrics.json").read_text())
    per_epoch = calls["n"] // 2
    assert per_epoch >= 4
    counting_scores(monkeypatch, kill_at=per_epoch + 3)  # the third batch of the second epoch
    with pytest.raises(stopping.JobStopped):
        runs.execute(cfg, results=tmp_path / "b", show_progress=False)
    d = tmp_path / "b" / "runs" / cfg["paper"] / cfg["run_id"]
    ckpt = torch.load(d / "checkpoint.pt", weights_only=False)
    assert (ckpt["epoch"], ckpt["batch"]) == (0, 3)  # as in test_link_prediction_stop
    got = json.loads((runs.execute(cfg, results=tmp_path / "b", show_progress=False) / "metrics.json").read_text())
    assert {k: v for k, v in got.items() if k not in COST} == {k: v for k, v in expected.items() if k not in COST}


def test_a_call_after_batches_passed_over_takes_the_next_pre_pass_batch_with_its_cut():
    """A rehearsal times an epoch's last batches only: the calls before them never come, so the next call takes the
    first later pre-pass batch with its cut; a cut no later batch has (a batch embedded twice) is still refused."""
    model = toy_swinit(toy_stream()[4], 13, graph="glued", reuse="prepass")
    model.set_prepass([(np.array([1, 2]), 1.0), (np.array([3, 4]), 2.0), (np.array([5, 6]), 2.0),
                       (np.array([7, 8]), 3.0)])
    model._train_batch = 0
    assert model._prepass_place(1.0) == 0
    assert model._prepass_place(2.0) == 1  # the next in order, of two with that cut
    assert model._prepass_place(3.0) == 3  # batches 1 and 2 passed over
    model._train_batch = 2
    assert model._prepass_place(2.0) == 2
    with pytest.raises(RuntimeError, match="no later pre-pass batch"):
        model._prepass_place(1.0)
    model.backup_state("train_end")
    saved = model.state_dict()
    assert saved["_extra_state"]["train_batch"] == 2 and "train_end" in saved["_extra_state"]["saved_states"]
    other = toy_swinit(toy_stream()[4], 13, graph="glued", reuse="prepass")
    other.load_state_dict(saved)  # the place and the saved stream states ride in the state dict
    assert other._train_batch == 2 and set(other.saved_states) == {"train_end"}


def test_bad_swinit_settings_are_refused():
    _, _, _, _, edge_feat = toy_stream()
    with pytest.raises(ValueError, match="memory_cell"):
        toy_swinit(edge_feat, 13, cell="lstm")
    with pytest.raises(ValueError, match="optimizer"):
        lp.make_optimizer({"optimizer": "sgd", "lr": 1e-3}, [torch.nn.Parameter(torch.zeros(1))])
    with pytest.raises(ValueError, match="monitor_setting"):
        lp.run(make_config(monitor_setting="both"), ctx=None)
