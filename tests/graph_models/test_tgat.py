"""TGAT: the query's time encoding is Phi(0), no information from the future, masking, shapes, and the
train-split statistics of time differences that standardize the linear and cosine_scale encoders."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.tgat import TGAT, LinkPredictor, TemporalAttention
from timerepro.models.graph.time_stats import time_difference_stats
from timerepro.tasks.link_prediction import LinkPredictionModel

NODE_DIM, EDGE_DIM = 6, 5


def toy_graph(seed: int, n_nodes: int = 10, n_edges: int = 50):
    """Random chronological edges with ties in time; ids 1-based (0 = padding)."""
    rng = np.random.default_rng(seed)
    src = rng.integers(1, n_nodes + 1, n_edges)
    dst = rng.integers(1, n_nodes + 1, n_edges)
    ts = np.sort(rng.integers(0, 40, n_edges)).astype(float)
    return src, dst, ts, np.arange(1, n_edges + 1)


def features(seed: int, n_nodes: int, n_edges: int):
    """Non-zero feature tables (row 0 = padding, zero), so every input can move an embedding."""
    rng = np.random.default_rng(seed + 100)
    node = np.vstack([np.zeros((1, NODE_DIM)), rng.normal(size=(n_nodes, NODE_DIM))])
    edge = np.vstack([np.zeros((1, EDGE_DIM)), rng.normal(size=(n_edges, EDGE_DIM))])
    return node, edge


def make_tgat(node, edge, **kw) -> TGAT:
    torch.manual_seed(0)
    args = dict(encoder="linear", time_dim=4, time_mean=12.0, time_std=7.0, num_layers=2, num_heads=2,
                num_neighbors=3, dropout=0.1)
    args.update(kw)
    return TGAT(node, edge, **args).eval()


def test_query_uses_phi_of_zero():
    src, dst, ts, eids = toy_graph(0)
    node, edge = features(0, 10, len(src))
    model = make_tgat(node, edge)  # linear encoder with mean 12, std 7: Phi(0) = w (-12/7) + b, not b
    model.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=11))
    phi0 = model.time_encoder(torch.zeros(1))[0]

    calls = []
    model.time_encoder.register_forward_hook(lambda mod, args, out: calls.append((args[0].clone(), out.clone())))
    queries = []
    for layer in model.attention:
        layer.register_forward_pre_hook(lambda mod, args: queries.append(args[1].clone()))

    nodes, times = np.array([1, 2, 3, 4]), np.array([20.0, 25.0, 39.0, 41.0])
    model.embed(nodes, times)

    assert len(queries) == 3  # top layer; layer 1 for the nodes themselves, then for their neighbours
    for phi_self in queries:
        torch.testing.assert_close(phi_self, phi0.expand_as(phi_self))
    # every query-side call of the encoder gets zeros; neighbour-side calls get t - t_k >= 0
    query_calls = [x for x, _ in calls if x.dim() == 1]
    neighbour_calls = [x for x, _ in calls if x.dim() == 2]
    assert len(query_calls) == len(neighbour_calls) == len(queries)
    assert all(torch.all(x == 0) for x in query_calls)
    top = neighbour_calls[-1]  # the last encoder call on neighbours is the top layer's, for `nodes` at `times`
    hood = model.neighbors.most_recent(nodes, times, 3)
    torch.testing.assert_close(top, torch.from_numpy(times[:, None] - hood.times).float())
    assert all(torch.all(x >= 0) for x in neighbour_calls)


@pytest.mark.parametrize("sampling", ["recent", "uniform"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_information_from_the_future(sampling, seed):
    """Embeddings at time t are unchanged by edges at or after t (ties included), with recursive
    2-layer aggregation; edges before t' > t do change embeddings at t'."""
    src, dst, ts, eids = toy_graph(seed)
    rng = np.random.default_rng(seed + 7)
    t = float(ts[len(ts) // 2])  # an interaction time: some edges happen exactly at t
    n_future = 20
    f_src, f_dst = rng.integers(1, 11, n_future), rng.integers(1, 11, n_future)
    f_ts = np.sort(np.r_[np.full(5, t), t + rng.integers(0, 10, n_future - 5)]).astype(float)
    past = ts < t
    node, edge = features(seed, 10, len(src) + n_future)
    model = make_tgat(node, edge, sampling=sampling)
    before = TemporalNeighbors(src[past], dst[past], ts[past], eids[past], num_nodes=11)
    after = TemporalNeighbors(np.r_[src, f_src], np.r_[dst, f_dst], np.r_[ts, f_ts],
                              np.r_[eids, len(src) + 1 + np.arange(n_future)], num_nodes=11)
    nodes = np.arange(1, 11)
    times = np.full(10, t)
    with torch.no_grad():
        model.set_graph(before, np.random.RandomState(1))
        h_before = model.embed(nodes, times)
        model.set_graph(after, np.random.RandomState(1))
        h_after = model.embed(nodes, times)
        torch.testing.assert_close(h_before, h_after, rtol=0, atol=0)
        # control: later in time the added edges are visible and matter
        later = np.full(10, t + 20.0)
        model.set_graph(before, np.random.RandomState(1))
        l_before = model.embed(nodes, later)
        model.set_graph(after, np.random.RandomState(1))
        l_after = model.embed(nodes, later)
    assert not torch.allclose(l_before, l_after)


def test_output_shapes_and_link_scores():
    src, dst, ts, eids = toy_graph(3)
    node, edge = features(3, 10, len(src))
    backbone = make_tgat(node, edge, time_dim=8, num_heads=2, num_neighbors=5)
    backbone.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=11))
    b_src, b_dst, b_t = src[-7:], dst[-7:], ts[-7:] + 1.0
    h_src, h_dst = backbone.pair_embeddings(b_src, b_dst, b_t)
    assert h_src.shape == h_dst.shape == (7, NODE_DIM) and backbone.out_dim == NODE_DIM
    assert backbone.embed(b_src, b_t, layer=0).shape == (7, NODE_DIM)
    assert backbone.embed(b_src, b_t, layer=1).shape == (7, NODE_DIM)
    model = LinkPredictionModel(backbone)
    logits = model(b_src, b_dst, b_t)
    assert logits.shape == (7,) and torch.isfinite(logits).all()
    # a node without any history (time 0) still gets a finite embedding
    assert torch.isfinite(backbone.embed(np.array([1, 5]), np.array([0.0, 0.0]))).all()
    assert LinkPredictor(NODE_DIM)(h_src, h_dst).shape == (7,)


def test_attention_masks_padding_and_heads_split_the_query_width():
    torch.manual_seed(0)
    att = TemporalAttention(NODE_DIM, EDGE_DIM, 4, num_heads=2, dropout=0.0).eval()
    B, k = 3, 4
    valid = torch.tensor([[False, False, False, True], [True, True, True, True], [False, False, False, False]])
    out, attn = att(torch.randn(B, NODE_DIM), torch.randn(B, 4), torch.randn(B, k, NODE_DIM),
                    torch.randn(B, k, EDGE_DIM), torch.randn(B, k, 4), valid)
    assert out.shape == (B, NODE_DIM + 4) and attn.shape == (B, 2, k)
    torch.testing.assert_close(attn.sum(-1), torch.ones(B, 2))
    assert torch.all(attn[0, :, :3] == 0) and torch.all(attn[0, :, 3] == 1)  # one real neighbour takes all
    torch.testing.assert_close(attn[2], torch.full((2, k), 1 / k))  # no history: uniform over padding (DyGLib)
    with pytest.raises(ValueError, match="divisible"):
        TemporalAttention(NODE_DIM, EDGE_DIM, 5, num_heads=2)


def test_single_head_matches_the_equations():
    """h = V^T softmax(K q / sqrt(d_h)) with q = W_Q^T [h_i; Phi(0)], rows [h_v; e; Phi(t - t_k)]."""
    torch.manual_seed(1)
    att = TemporalAttention(NODE_DIM, EDGE_DIM, 4, num_heads=1, dropout=0.0).eval()
    h, phi0 = torch.randn(2, NODE_DIM), torch.randn(2, 4)
    hn, e, phin = torch.randn(2, 3, NODE_DIM), torch.randn(2, 3, EDGE_DIM), torch.randn(2, 3, 4)
    out, attn = att(h, phi0, hn, e, phin, torch.ones(2, 3, dtype=torch.bool))
    q = torch.cat([h, phi0], -1) @ att.w_q.weight.T  # (2, d)
    rows = torch.cat([hn, e, phin], -1)  # (2, 3, d_kv)
    K, V = rows @ att.w_k.weight.T, rows @ att.w_v.weight.T
    w = torch.softmax((K @ q.unsqueeze(-1)).squeeze(-1) / (NODE_DIM + 4) ** 0.5, dim=-1)  # (2, 3)
    torch.testing.assert_close(attn[:, 0], w)
    h_att = (w.unsqueeze(-1) * V).sum(1)
    torch.testing.assert_close(out, att.norm(att.w_o(h_att) + torch.cat([h, phi0], -1)))


def test_time_difference_stats_by_hand():
    # node 1 interacts at 0, 2, 6; node 2 at 0; queries (1, t=10) and (2, t=1), k = 2 most recent
    g = TemporalNeighbors(np.array([1, 1, 1]), np.array([2, 3, 3]), np.array([0.0, 2.0, 6.0]), np.array([1, 2, 3]))
    mean, std = time_difference_stats(g, np.array([1, 2]), np.array([10.0, 1.0]), k=2)
    dts = np.array([10 - 2, 10 - 6, 1 - 0])  # padding and the older interaction of node 1 left out
    assert mean == pytest.approx(dts.mean()) and std == pytest.approx(dts.std())
    assert time_difference_stats(g, np.array([3]), np.array([0.0]), k=2) == (0.0, 1.0)  # no history at all
