"""DyG-Mamba: the parallel scan against the naive recurrence, both discretisations, causality, padding and
empty histories, the cross-attention against Eqs. 10-13 written out, every named variant, the mamba_ssm fast
path (CUDA only), and training plus kill-and-resume through the link-prediction task (tiny widths)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from .conftest import resolved
from timerepro import registry, runs
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph import dyg_mamba as dm
from timerepro.models.graph.selective_scan import (linear_recurrence, mamba_ssm_available, naive_recurrence,
                                                   selective_scan)

torch.set_num_threads(1)
NODE_DIM, EDGE_DIM, N_NODES = 6, 5, 10
SMALL = dict(time_dim=4, channel_dim=4, cooccurrence_dim=4, d_state=4, expand=2, d_out=6, num_blocks=2, dropout=0.0)
MODELS_YAML = yaml.safe_load((Path(__file__).parents[2] / "params" / "models.yaml").read_text())
VARIANTS = MODELS_YAML["dyg_mamba"]["defaults"]["variants"]


def toy(seed: int = 0, n_edges: int = 60):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(1, N_NODES + 1, n_edges), rng.integers(1, N_NODES + 1, n_edges)
    ts = np.sort(rng.integers(0, 40, n_edges)).astype(float)
    node = np.vstack([np.zeros((1, NODE_DIM)), rng.normal(size=(N_NODES, NODE_DIM))])
    edge = np.vstack([np.zeros((1, EDGE_DIM)), rng.normal(size=(n_edges, EDGE_DIM))])
    return src, dst, ts, np.arange(1, n_edges + 1), node, edge


def make(node, edge, **kw) -> dm.DyGMamba:
    torch.manual_seed(0)
    return dm.DyGMamba(node, edge, **{**SMALL, "max_input_sequence_length": 8, **kw}).eval()


# ------------------------------------------------------------------ the scan

@pytest.mark.parametrize("length", [1, 2, 7, 64, 333])
def test_parallel_scan_matches_the_naive_recurrence(length):
    torch.manual_seed(length)
    a = torch.rand(3, length, 5, 4, dtype=torch.float64)  # decays in (0, 1)
    b = torch.randn(3, length, 5, 4, dtype=torch.float64)
    torch.testing.assert_close(linear_recurrence(a, b), naive_recurrence(a, b), rtol=0, atol=1e-12)
    a32, b32 = a.float(), b.float()
    assert (linear_recurrence(a32, b32) - naive_recurrence(a32, b32)).abs().max() < 1e-5


@pytest.mark.parametrize("zoh", ["simplified", "exact"])
@pytest.mark.parametrize("selective", [True, False])
def test_selective_scan_is_the_discretised_ssm_step_by_step(zoh, selective):
    torch.manual_seed(1)
    batch, length, d, n = 2, 50, 3, 4
    u, delta = torch.randn(batch, length, d), torch.rand(batch, length, d) * 0.5
    A = -torch.rand(d, n) - 0.1
    B = torch.randn(batch, length, n) if selective else torch.randn(d, n)
    C = torch.randn(batch, length, n) if selective else torch.randn(d, n)
    y = selective_scan(u, delta, A, B, C, zoh=zoh, backend="torch")
    h, ys = torch.zeros(batch, d, n), []
    for k in range(length):
        dA = delta[:, k, :, None] * A  # (batch, d, n)
        Bk = B[:, k, None, :] if selective else B
        Ck = C[:, k, None, :] if selective else C
        # Eq. 8 (exact ZOH, diagonal A) or Algorithm 1 (B_bar = Delta B)
        Bbar = (torch.exp(dA) - 1) / A * Bk if zoh == "exact" else delta[:, k, :, None] * Bk
        h = torch.exp(dA) * h + Bbar * u[:, k, :, None]
        ys.append((h * Ck).sum(-1))
    assert (y - torch.stack(ys, 1)).abs().max() < 1e-5


@pytest.mark.skipif(not mamba_ssm_available(), reason="mamba_ssm's CUDA kernel needs CUDA and mamba-ssm")
def test_mamba_ssm_kernel_gives_the_pytorch_scan_outputs():
    torch.manual_seed(2)
    dev = torch.device("cuda")
    batch, length, d, n = 2, 300, 16, 8
    u, delta = torch.randn(batch, length, d, device=dev), torch.rand(batch, length, d, device=dev) * 0.3
    A = -torch.rand(d, n, device=dev) - 0.1
    B, C = torch.randn(batch, length, n, device=dev), torch.randn(batch, length, n, device=dev)
    ref = selective_scan(u, delta, A, B, C, backend="torch")
    fast = selective_scan(u, delta, A, B, C, backend="mamba_ssm")
    torch.testing.assert_close(fast, ref, rtol=1e-4, atol=1e-4)
    src, dst, ts, eids, node, edge = toy()
    model = make(node, edge).to(dev)
    model.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=N_NODES + 1))
    with torch.no_grad():
        outs = {}
        for backend in ("torch", "mamba_ssm"):
            for blk in model.blocks:
                for direction in blk.directions:
                    direction.cfg["scan_backend"] = backend
            outs[backend] = model.pair_embeddings(src[:8], dst[:8], np.full(8, 35.0))
    for a, b in zip(outs["torch"], outs["mamba_ssm"]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ causality, padding, empty histories

def _blocks_out(model, z, mask, spans):
    return model._blocks(z, mask, spans)[-1]


@pytest.mark.parametrize("bidirectional", [False, True])
def test_no_position_sees_a_later_one_in_the_causal_configuration(bidirectional):
    _, _, _, _, node, edge = toy()
    model = make(node, edge, bidirectional=bidirectional)
    torch.manual_seed(3)
    z, spans = torch.randn(2, 12, model.width), torch.randn(2, 12, model.width)
    mask = torch.ones(2, 12, dtype=torch.bool)
    z2, spans2 = z.clone(), spans.clone()
    z2[:, 7:] += torch.randn(2, 5, model.width)  # change positions 7.. (inputs and time signal)
    spans2[:, 7:] += 1.0
    with torch.no_grad():
        a, b = _blocks_out(model, z, mask, spans), _blocks_out(model, z2, mask, spans2)
    if bidirectional:  # Algorithm 1's backward scan: earlier positions do see later ones
        assert not torch.allclose(a[:, :7], b[:, :7])
    else:
        torch.testing.assert_close(a[:, :7], b[:, :7], rtol=0, atol=0)
        assert not torch.allclose(a[:, 7:], b[:, 7:])


@pytest.mark.parametrize("variant", ["dyg_mamba", "wo_selective", "vanilla_mamba", "paper_reading"])
def test_a_longer_window_than_the_history_changes_nothing(variant):
    """L beyond every history gives the same results. Rows padded to a batch's longest history give the unpadded
    results in the masked node-last layout; in the authors' layout padding is seen (cross-attention keys, the
    read-out's softmax), so a shorter row's embedding depends on its batch, as in their code."""
    src, dst, ts, eids, node, edge = toy()
    g = TemporalNeighbors(src, dst, ts, eids, num_nodes=N_NODES + 1)
    hp = dm.dyg_mamba_hparams({**MODELS_YAML["dyg_mamba"]["defaults"], "variant": variant, "dataset": "toy"})
    hp.update(SMALL)
    models = []
    for L in (61, 500):  # both longer than any history (60 edges)
        models.append(make(node, edge, **{**hp, "max_input_sequence_length": L}))
        models[-1].set_graph(g)
    u, v, t = src[:6], dst[:6], np.full(6, 39.0)
    with torch.no_grad():
        a, b = models[0].pair_embeddings(u, v, t), models[1].pair_embeddings(u, v, t)
        alone = [models[0].pair_embeddings(u[i:i + 1], v[i:i + 1], t[i:i + 1]) for i in range(6)]
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y)
    same = [torch.allclose(alone[i][0][0], a[0][i], rtol=1e-5, atol=1e-5) for i in range(6)]
    if hp["layout"] == "node_last":  # each row alone (no padding) equals its padded row in the batch
        assert all(same)
    else:
        assert not all(same)


def test_empty_history_gives_a_finite_embedding_of_the_node_itself():
    src, dst, ts, eids, node, edge = toy()
    model = make(node, edge)
    model.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=N_NODES + 1))
    early = np.array([ts[0], ts[0]])  # nobody has a history strictly before the first time
    seq = model.sequences(src[:2], early)
    # the node and the authors' one padding column (DyGMamba.py:292-297)
    assert seq.neighbor_ids.shape == (2, 2) and seq.valid[:, 0].all() and not seq.valid[:, 1].any()
    assert (seq.neighbor_ids[:, 0] == src[:2]).all()
    with torch.no_grad():
        h_u, h_v = model.pair_embeddings(src[:2], dst[:2], early)
    assert torch.isfinite(h_u).all() and torch.isfinite(h_v).all()


def test_dataset_without_edge_features_runs():
    src, dst, ts, eids, node, _ = toy()
    for edge in (np.zeros((len(src) + 1, 0)), np.zeros((len(src) + 1, 172))):
        model = make(node, edge)
        model.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=N_NODES + 1))
        with torch.no_grad():
            h_u, _ = model.pair_embeddings(src[:4], dst[:4], np.full(4, 30.0))
        assert h_u.shape == (4, 6) and torch.isfinite(h_u).all()


def test_no_future_leakage():
    src, dst, ts, eids, node, edge = toy()
    t0 = 25.0
    past = ts < t0
    model = make(node, edge)
    q_src, q_dst, q_t = src[:5], dst[:5], np.full(5, t0)
    with torch.no_grad():
        model.set_graph(TemporalNeighbors(src[past], dst[past], ts[past], eids[past], num_nodes=N_NODES + 1))
        before = model.pair_embeddings(q_src, q_dst, q_t)
        model.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=N_NODES + 1))
        after = model.pair_embeddings(q_src, q_dst, q_t)
        later = model.pair_embeddings(q_src, q_dst, q_t + 10)
    for x, y in zip(before, after):
        torch.testing.assert_close(x, y, rtol=0, atol=0)
    assert not torch.allclose(before[0], later[0])


# ------------------------------------------------------------------ cross-attention, variants

def test_linear_cross_attention_is_eqs_10_to_13():
    torch.manual_seed(4)
    att = dm.LinearCrossAttention(3, dropout=0.0).eval()
    zq, zk = torch.randn(1, 2, 3), torch.randn(1, 4, 3)
    mask = torch.tensor([[False, True, True, True]])  # the first key is padding
    phi = lambda x: torch.nn.functional.elu(x) + 1  # noqa: E731
    q, k, v = att.q(zq)[0], att.k(zk)[0][1:], att.v(zk)[0][1:]
    rows = []
    for i in range(2):
        num = sum(phi(q[i]) @ phi(k[j]) * v[j] for j in range(3))  # phi(Q_i)^T phi(K_j) V_j
        den = sum(phi(q[i]) @ phi(k[j]) for j in range(3))
        rows.append(num / den)
    expected = att.norm(att.proj(torch.stack(rows) + q))  # Eq. 13: LN(Linear(O + Q))
    torch.testing.assert_close(att(zq, zk, mask)[0], expected)


def test_every_named_variant_builds_trains_a_step_and_changes_what_it_says():
    src, dst, ts, eids, node, edge = toy()
    g = TemporalNeighbors(src, dst, ts, eids, num_nodes=N_NODES + 1)
    base = {**MODELS_YAML["dyg_mamba"]["defaults"], "dataset": "toy"}
    widths = {}
    for name in VARIANTS:
        hp = {**dm.dyg_mamba_hparams({**base, "variant": name}), **SMALL}
        model = dm.DyGMamba(node, edge, **hp)
        model.set_graph(g)
        h_u, h_v = model.pair_embeddings(src[:4], dst[:4], np.full(4, 30.0))
        (h_u.sum() + h_v.sum()).backward()
        unused = ("time_encoder", "span_signal") if name == "wo_selective" else ("time_encoder",)  # spans replaced by ones
        assert all(p.grad is not None for n, p in model.named_parameters() if not any(u in n for u in unused)), name
        widths[name] = model.width
    assert widths["wo_time_encoding"] == 3 * SMALL["channel_dim"] == widths["node_classification"]
    assert widths["dyg_mamba"] == 4 * SMALL["channel_dim"]
    s4 = dm.DyGMamba(node, edge, **{**dm.dyg_mamba_hparams({**base, "variant": "wo_selective_s4"}), **SMALL})
    direction = s4.blocks[0].directions[0]
    assert isinstance(direction.B, torch.nn.Parameter) and not hasattr(direction, "dt_proj")


def test_wo_selective_is_one_delta_b_c_for_every_position_and_input():
    """The authors' w/o Selective (mamba_simple.py:508-527): the scan's inputs Delta, B, C do not depend on the
    sequence, so two batches with different spans give the same Delta, B, C (captured at the scan)."""
    from timerepro.models.graph import selective_scan as ss

    src, dst, ts, eids, node, edge = toy()
    model = make(node, edge, selective=False)
    model.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=N_NODES + 1))
    seen = []
    original = dm.selective_scan
    dm.selective_scan = lambda u, delta, A, B, C, **kw: (seen.append((delta, B, C)), original(u, delta, A, B, C, **kw))[1]
    try:
        with torch.no_grad():
            model.pair_embeddings(src[:3], dst[:3], np.array([20.0, 30.0, 39.0]))
    finally:
        dm.selective_scan = original
    assert ss.selective_scan is original
    for delta, B, C in seen:
        for t in (delta, B, C):  # (batch, L, .): one row repeated
            torch.testing.assert_close(t, t[:1, :1].expand_as(t), rtol=0, atol=0)


def test_softmax_cross_attention_and_gate_read_out_by_hand():
    """DyGMamba.py:1125-1166 and 229-257 written out: softmax over features for Q, over positions for K, 1/sqrt(w),
    residual and LayerNorm; the read-out keeps the k largest softmax weights, renormalised."""
    torch.manual_seed(4)
    att = dm.SoftmaxCrossAttention(3, dropout=0.0).eval()
    zq, zk = torch.randn(1, 2, 3), torch.randn(1, 4, 3)
    q = att.q(zq)[0].softmax(-1) / np.sqrt(3)
    k, v = att.k(zk)[0].softmax(0), att.v(zk)[0]
    o = torch.stack([sum((q[i] @ k[j]) * v[j] for j in range(4)) for i in range(2)])
    expected = att.norm(zq[0] + att.proj(o))
    torch.testing.assert_close(att(zq, zk, torch.ones(1, 4, dtype=torch.bool))[0], expected)
    x, logits = torch.randn(1, 5, 3), torch.tensor([[[0.1], [2.0], [-1.0], [1.5], [0.3]]])
    w = logits[0, :, 0].softmax(0)
    keep = torch.tensor([1, 3, 4])  # the three largest
    manual = (w[keep, None] * x[0, keep]).sum(0) / w[keep].sum()
    torch.testing.assert_close(dm.gate_topk(x, logits, torch.ones(1, 5, dtype=torch.bool), 3)[0], manual)


def test_authors_span_ratios_by_hand():
    """DyGMamba.py:356-365 on a node-first batch: row 0 the node at 10 with history 2, 5; row 1 a node alone at 4."""
    from timerepro.encoders import dygmamba_span_ratios

    times = np.array([[10.0, 2.0, 5.0, 0.0], [4.0, 0.0, 0.0, 0.0]])
    valid = np.array([[True, True, True, False], [True, False, False, False]])
    r = dygmamba_span_ratios(times, valid, np.array([10.0, 4.0]), eps=0.0)
    # row 0: t_seq = 8, 3 positions: the node 1/8 + 1/3, the oldest 0 + 1/3, then 3/8 + 1/3
    np.testing.assert_allclose(r[0], [1 / 8 + 1 / 3, 1 / 3, 3 / 8 + 1 / 3, 0.0])
    np.testing.assert_allclose(r[1], [1 / 4 + 1.0, 0.0, 0.0, 0.0])  # t_seq = 4 - 0, one position


@pytest.mark.parametrize("layout", ["node_first", "node_last"])
@pytest.mark.parametrize("span_encoder", ["trainable", "fixed"])
def test_span_ratios_do_not_depend_on_the_layout(layout, span_encoder):
    """Both span formulas give each real interaction the same value in either layout (only the columns move)."""
    src, dst, ts, eids, _, _ = toy()
    g = TemporalNeighbors(src, dst, ts, eids, num_nodes=N_NODES + 1)
    t = np.array([20.0, 30.0, 39.0])
    first = dm.mamba_sequences(g, src[:3], t, 8, "node_first")
    last = dm.mamba_sequences(g, src[:3], t, 8, "node_last")
    r_first = dm.span_ratios(first, t, "node_first", span_encoder)
    r_last = dm.span_ratios(last, t, "node_last", span_encoder)
    for b in range(3):
        n = int(first.valid[b].sum())
        order_last = np.r_[last.valid.shape[1] - 1, np.flatnonzero(last.valid[b])[:-1]]  # node, then history
        np.testing.assert_allclose(r_first[b, :n], r_last[b, order_last], rtol=1e-12)


def test_unknown_variant_or_switch_value_is_refused_with_its_key():
    base = {**MODELS_YAML["dyg_mamba"]["defaults"], "dataset": "toy"}
    with pytest.raises(KeyError, match="variant"):
        dm.dyg_mamba_hparams({**base, "variant": "w/o everything"})
    _, _, _, _, node, edge = toy()
    with pytest.raises(ValueError, match="cross_attention"):
        dm.DyGMamba(node, edge, **{**SMALL, "cross_attention": "self"})
    with pytest.raises(ValueError, match="pairing"):
        dm.DyGMamba(node, edge, **{**SMALL, "pairing": "joint"})  # joint needs cross_attention none


def test_table7_and_table8_are_the_defaults():
    base = {**MODELS_YAML["dyg_mamba"]["defaults"]}
    hp = dm.dyg_mamba_hparams({**base, "dataset": "canparl"})
    assert (hp["time_dim"], hp["channel_dim"], hp["cooccurrence_dim"], hp["num_blocks"], hp["d_state"],
            hp["expand"], hp["d_out"]) == (100, 50, 50, 2, 16, 2, 172)
    assert hp["max_input_sequence_length"] == 2048
    assert dm.dyg_mamba_hparams({**base, "dataset": "uslegis"})["max_input_sequence_length"] == 272
    tasks = yaml.safe_load((Path(__file__).parents[2] / "params" / "tasks.yaml").read_text())
    for task in ("link_prediction", "node_classification"):  # the validated names are the defined variants
        assert set(tasks[task]["parameters"]["variant"]["enum"]) == set(VARIANTS)


# ------------------------------------------------------------------ through the task

BASE = dict(paper="dyg_mamba", experiment="lp_test", task="link_prediction", dataset="uci", standin="smoke",
            model="dyg_mamba", lr=1e-3, batch_size=100, max_epochs=2, patience=5, eval_negatives=["random"], seed=0)
TINY = dict(d_T=4, d_ch=4, d_cooc=4, d_state=4, expand=1, d_out=8, num_blocks=1, max_input_sequence_length=6)


def make_config(**over) -> dict:
    cfg = resolved("link_prediction", "dyg_mamba", {**BASE, **TINY, **over})
    cfg["run_id"] = registry.run_id(cfg)
    return cfg


@pytest.fixture
def task(standin_root, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("uci")))


def test_killed_run_resumes_to_the_same_metrics(task, tmp_path, kill_then_resume):
    """Also the noisy-neighbour evaluation (Figures 8, 9) and the case study (Figure 6) of a run."""
    cfg = make_config(max_epochs=3, noise_ratios=[0.0, 0.5], case_study_edges=1)
    a = runs.execute(cfg, results=tmp_path / "a", show_progress=False)
    expected = json.loads((a / "metrics.json").read_text())
    assert 0 <= expected["test_transductive_random_ap"] <= 1 and expected["n_parameters"] > 0
    # ratio 0 is the clean evaluation; 50% inserted noise changes the scores
    assert expected["test_transductive_random_noise0_ap"] == expected["test_transductive_random_ap"]
    assert expected["test_transductive_random_noise0.5_ap"] != expected["test_transductive_random_ap"]
    with np.load(a / "case_study.npz") as z:
        n = len(z["cos_target_0"])
        assert z["sim_layers_0"].shape == (n, n) and 1 <= n <= TINY["max_input_sequence_length"]
        assert np.all(np.abs(z["cos_target_0"]) <= 1 + 1e-6)
        assert z["u_neighbours_0"].shape == (n, 1) and z["u_neighbours_0"][0, 0] == z["src"][0]  # the node itself first
    d = kill_then_resume(cfg, tmp_path / "b", after=2)
    got = json.loads((d / "metrics.json").read_text())
    assert json.loads((d / "provenance.json").read_text())["resumed_from_epoch"] == 1
    cost = {"epoch_time_s", "peak_rss_mb", "peak_gpu_memory_mb"}
    assert {k: v for k, v in got.items() if k not in cost} == {k: v for k, v in expected.items() if k not in cost}


@pytest.mark.parametrize("zoh", ["simplified", "exact"])
@pytest.mark.parametrize("selective", [True, False])
def test_scan_gradients_are_the_autograd_gradients_of_the_recurrence(zoh, selective):
    """The hand-written adjoint (states recomputed in backward) against finite differences (gradcheck)."""
    torch.manual_seed(5)
    batch, length, d, n = 2, 9, 3, 2
    kw = dict(dtype=torch.float64, requires_grad=True)
    u, delta = torch.randn(batch, length, d, **kw), (torch.rand(batch, length, d, dtype=torch.float64) * 0.5 + 0.1)
    delta.requires_grad_(True)
    A = (-torch.rand(d, n, dtype=torch.float64) - 0.2).requires_grad_(True)
    shape = (batch, length, n) if selective else (d, n)
    B, C = torch.randn(*shape, **kw), torch.randn(*shape, **kw)
    assert torch.autograd.gradcheck(lambda *x: selective_scan(*x, zoh=zoh, backend="torch"), (u, delta, A, B, C))


def test_dyglib_early_stopping_needs_every_metric_and_counts_ties():
    """utils/EarlyStopping.py:40-55 (DyGLib, the DyG-Mamba code): a new best when AP and AUC are both >= their
    bests; the project's default stays strictly better on one metric."""
    from timerepro.train import EarlyStopping

    dyglib = EarlyStopping(patience=2, mode="max", ties=True)
    assert dyglib.update([0.8, 0.7], 0)
    assert dyglib.update([0.8, 0.7], 1)  # a tie is a new best (saved again)
    assert not dyglib.update([0.9, 0.69], 2)  # AP better, AUC worse: not a best
    assert dyglib.best == [0.8, 0.7] and dyglib.best_epoch == 1
    assert not dyglib.update([0.7, 0.9], 3) and dyglib.should_stop
    strict = EarlyStopping(patience=2, mode="max")
    assert strict.update(0.8, 0) and not strict.update(0.8, 1)


def test_noise_probe_evaluates_in_the_clean_tests_batches(task, tmp_path):
    """Training in batches of 10, evaluating in batches of 30 (45 test edges): the probe's ratio 0 is the clean test
    (batch-mean AP depends on the batching, so a probe in training batches would differ)."""
    cfg = make_config(max_epochs=1, batch_size=10, eval_batch_size=30, noise_ratios=[0.0])
    metrics = json.loads((runs.execute(cfg, results=tmp_path, show_progress=False) / "metrics.json").read_text())
    assert metrics["test_transductive_random_noise0_ap"] == metrics["test_transductive_random_ap"]
    assert metrics["test_transductive_random_noise0_auc"] == metrics["test_transductive_random_auc"]


@pytest.mark.parametrize("length", [1, 2, 3, 16, 17, 18, 33])
def test_reverse_recurrence_is_the_flipped_scan_bit_for_bit(length):
    """The backward's adjoint recurrence read in place is the former flip / scan / flip, exactly (issue 27)."""
    from timerepro.models.graph.selective_scan import reverse_recurrence

    torch.manual_seed(length)
    a, b = torch.rand(5, length, 40, 16), torch.randn(5, length, 40, 16)
    assert torch.equal(reverse_recurrence(a, b), linear_recurrence(a.flip(1), b.flip(1)).flip(1))


@pytest.mark.parametrize("zoh", ["simplified", "exact"])
@pytest.mark.parametrize("selective", [True, False])
def test_kept_states_give_the_recomputed_gradients_bit_for_bit(zoh, selective, monkeypatch):
    """A scan small enough to keep its decays and states for backward gives the outputs and gradients of one
    that recomputes them, exactly, at the offline shape (batch 50, width 17, D 400, N 16)."""
    from timerepro.models.graph import selective_scan as ss

    torch.manual_seed(7)
    batch, length, d, n = 50, 17, 400, 16
    assert batch * length * d * n <= ss.KEEP_STATES_MAX  # the offline shape keeps its states
    shape = (batch, length, n) if selective else (d, n)
    inputs = (torch.randn(batch, length, d), torch.rand(batch, length, d) * 0.1, -torch.rand(d, n) - 0.1,
              torch.randn(*shape), torch.randn(*shape))
    dy = torch.randn(batch, length, d)
    results = []
    for limit in (ss.KEEP_STATES_MAX, 0):  # kept, then recomputed
        monkeypatch.setattr(ss, "KEEP_STATES_MAX", limit)
        ins = [t.clone().requires_grad_(True) for t in inputs]
        y = ss.selective_scan(*ins, zoh=zoh, backend="torch")
        y.backward(dy)
        results.append([y.detach(), *(t.grad for t in ins)])
    assert all(torch.equal(kept, recomputed) for kept, recomputed in zip(*results))


@pytest.mark.parametrize("zoh", ["simplified", "exact"])
@pytest.mark.parametrize("selective", [True, False])
def test_a_scan_too_large_for_one_piece_runs_over_batch_rows_with_the_same_results(zoh, selective, monkeypatch):
    """Above CHUNK_STATES_MAX states a scan runs a few batch rows at a time (DyG-Mamba at L = 2048 with batches of
    200 held 130 GB of an H200 in one piece): no (batch, L, D, N) tensor of more rows is made, outputs and per-row
    gradients equal the one-piece scan's, and dA (and a fixed B/C's gradient) equal it up to summation order."""
    from timerepro.models.graph import selective_scan as ss

    torch.manual_seed(11)
    batch, length, d, n = 7, 13, 5, 3
    shape = (batch, length, n) if selective else (d, n)
    inputs = (torch.randn(batch, length, d, dtype=torch.float64), torch.rand(batch, length, d, dtype=torch.float64) * 0.3,
              -torch.rand(d, n, dtype=torch.float64) - 0.1, torch.randn(*shape, dtype=torch.float64),
              torch.randn(*shape, dtype=torch.float64))
    dy = torch.randn(batch, length, d, dtype=torch.float64)
    seen_rows = []
    recurrence = ss.linear_recurrence
    monkeypatch.setattr(ss, "linear_recurrence", lambda a, b: (seen_rows.append(a.shape[0]), recurrence(a, b))[1])
    monkeypatch.setattr(ss, "KEEP_STATES_MAX", 0)  # both runs recompute their states in backward
    results = []
    for rows in (batch, 2):  # one piece, then pieces of 2 rows (the last one of 1)
        monkeypatch.setattr(ss, "CHUNK_STATES_MAX", rows * length * d * n)
        seen_rows.clear()
        ins = [t.clone().requires_grad_(True) for t in inputs]
        y = ss.selective_scan(*ins, zoh=zoh, backend="torch")
        y.backward(dy)
        assert set(seen_rows) == ({batch} if rows == batch else {2, 1})  # pieces of 2 rows and the last of 1
        results.append([y.detach(), *(t.grad for t in ins)])
    for name, whole, pieces in zip(["y", "du", "ddelta", "dA", "dB", "dC"], *results):
        assert torch.allclose(whole, pieces, rtol=1e-12, atol=1e-12), name


def _saved_storages(step) -> dict:
    """Bytes of each distinct storage autograd keeps for backward while `step()` builds its graph."""
    saved = {}

    def pack(t):
        saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = step()
    return out, saved


@pytest.mark.parametrize("kw", [{}, {"bidirectional": True}, {"pairing": "joint", "cross_attention": "none"},
                                {"cross_attention": "elu", "readout": "mean"}, {"block_dropout": 0.2}])
def test_a_step_too_large_to_keep_recomputes_its_stages_with_the_same_results(kw, monkeypatch):
    """Above RECOMPUTE_ACTIVATIONS_MIN a training step keeps only the inputs of its stages (DyG-Mamba at Enron's
    L = 2048 with batches of 200 kept ~370 MB per row, 74 GB; docs/dyg_mamba.md M11): no (B, L, inner) activation
    is kept (the largest kept storage is a (B, L, width) state), the kept bytes fall more than 4x, the blocks run
    in row pieces (whole where their dropout draws), the loss is the same float and the gradients equal the plain
    path's up to summation order; Enron's 2048 x 200 recomputes, UCI's 1024 x 200 (and every offline shape) not."""
    src, dst, ts, eids, node, edge = toy(3, n_edges=120)
    graph = TemporalNeighbors(src, dst, ts, eids)
    rows, length = 9, 12
    q = np.arange(len(src) - rows, len(src))
    seen_rows = []
    block_forward = dm.MambaBlock.forward
    monkeypatch.setattr(dm.MambaBlock, "forward", lambda self, z, *a: (seen_rows.append(z.shape[0]),
                                                                       block_forward(self, z, *a))[1])

    def step():
        model = make(node, edge, max_input_sequence_length=length, dropout=0.1, **kw).train()
        model.set_graph(graph)
        torch.manual_seed(5)  # the cross-attention's (and the blocks') dropout masks
        h_u, h_v = model.pair_embeddings(src[q], dst[q], ts[q])
        return model, (h_u * h_v).sum() + h_u.square().mean()

    results = []
    for recompute in (False, True):
        if recompute:  # every stage recomputed, the blocks 2 rows at a time
            seq = model.sequences(src[q], ts[q]).valid.shape[1] * (2 if kw.get("pairing") == "joint" else 1)
            monkeypatch.setattr(dm, "RECOMPUTE_ACTIVATIONS_MIN", 0)
            monkeypatch.setattr(dm, "RECOMPUTE_PIECE_STATES", 2 * seq * model.blocks[0].inner * SMALL["d_state"])
        seen_rows.clear()
        (model, loss), saved = _saved_storages(step)
        forward_rows = set(seen_rows)
        loss.backward()
        inner, width = model.blocks[0].inner, model.width
        results.append((loss.detach(), {n: p.grad for n, p in model.named_parameters() if p.grad is not None},
                        saved, forward_rows, set(seen_rows) - forward_rows))
    (plain, g_plain, kept_plain, _, _), (frugal, g_frugal, kept_frugal, fwd_rows, bwd_rows) = results
    assert torch.equal(plain, frugal)
    assert g_plain.keys() == g_frugal.keys()
    for name in g_plain:
        assert torch.allclose(g_plain[name], g_frugal[name], rtol=1e-5, atol=1e-7), name
    assert max(kept_plain.values()) >= rows * seq * 2 * inner * 4  # the plain path keeps [x ; z] (B, L, 2 inner)
    assert max(kept_frugal.values()) <= rows * seq * width * 4  # (B, L, width) states
    assert sum(kept_frugal.values()) * 4 < sum(kept_plain.values())
    whole = kw.get("block_dropout", 0) > 0
    assert fwd_rows == ({rows} if whole else {2, 1}) and bwd_rows <= fwd_rows | {rows}  # pieces of 2 (the last 1)
    monkeypatch.undo()
    big = dm.DyGMamba(node, edge)  # Table 7's widths: 4 x 50 channels, inner 400
    with torch.enable_grad():
        assert big._recomputes(200, 2048 + 1) and not big._recomputes(200, 1024 + 2)
    assert not big._recomputes(50, 17) and not big._recomputes(20, 1026)
