"""TCL, GraphMixer and JODIE compute what a batch shares once (docs/graph_speed.md): each fast path against the
computation written DyGLib's plain way on the same weights, outputs and gradients, with and without all-zero
feature tables; and the task's one-call scoring against separate calls."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.backbone import NodeEmbedder
from timerepro.models.graph.graphmixer import MASK_VALUE, GraphMixer
from timerepro.models.graph.jodie import JODIE
from timerepro.models.graph import tcl as tcl_module
from timerepro.models.graph.tcl import TCL
from timerepro.tasks.link_prediction.model import LinkPredictionModel

torch.set_num_threads(1)
TOL = dict(rtol=1e-5, atol=1e-5)
N_NODES, NODE_DIM, EDGE_DIM = 8, 6, 5


def toy(seed: int = 0, zero_node: bool = False, zero_edge: bool = False, n_edges: int = 60):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(1, N_NODES + 1, n_edges), rng.integers(1, N_NODES + 1, n_edges)
    ts = np.sort(rng.integers(0, 40, n_edges)).astype(float)
    node = np.vstack([np.zeros((1, NODE_DIM)), rng.normal(size=(N_NODES, NODE_DIM))])
    edge = np.vstack([np.zeros((1, EDGE_DIM)), rng.normal(size=(n_edges, EDGE_DIM))])
    node, edge = (np.zeros_like(node) if zero_node else node), (np.zeros_like(edge) if zero_edge else edge)
    return TemporalNeighbors(src, dst, ts, np.arange(1, n_edges + 1), num_nodes=N_NODES + 1), node, edge


def batch():
    """Positives and negatives of one batch as the task builds them: the sources twice, a repeated pair, a node
    without history (8 at time 0) and one queried at two times."""
    src = np.array([1, 2, 3, 1, 8, 4])
    dst = np.array([2, 3, 1, 2, 5, 4])
    neg = np.array([5, 6, 7, 3, 1, 2])
    ts = np.array([41.0, 41.0, 30.0, 41.0, 0.0, 20.0])
    return src, dst, neg, ts


def grads(model) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def assert_same_grads(fast: dict, slow: dict) -> None:
    assert fast.keys() <= slow.keys()  # a zero table's weight gets no gradient here, zeros in the plain computation
    for name, g in slow.items():
        torch.testing.assert_close(fast.get(name, torch.zeros_like(g)), g, **TOL, msg=name)


def both_ways(model, fast, slow):
    """fast() and slow() -> tensors of one shape; their values and the gradients of one weighted sum."""
    out = []
    for fn in (fast, slow):
        model.zero_grad(set_to_none=True)
        h = fn()
        (h * torch.linspace(-1, 1, h.numel()).view(h.shape)).sum().backward()
        out.append((h.detach(), grads(model)))
    (h_fast, g_fast), (h_slow, g_slow) = out
    torch.testing.assert_close(h_fast, h_slow, **TOL)
    assert_same_grads(g_fast, g_slow)


# ------------------------------------------------------------------ TCL

def tcl_plain_sequence(model: TCL, nodes, times):
    """DyGLib's get_features: every table projected (zeros included), node + edge + time + depth."""
    hood = model._sample(nodes, times, model.num_neighbors)
    ids = np.concatenate([nodes[:, None], hood.neighbor_ids], axis=1)
    eids = np.concatenate([np.zeros((len(nodes), 1), np.int64), hood.edge_ids], axis=1)
    dt = torch.from_numpy(times[:, None] - np.concatenate([times[:, None], hood.times], axis=1)).float()
    p = model.projection
    x = (p["node"](model.node_feat[torch.from_numpy(ids)]) + p["edge"](model.edge_feat[torch.from_numpy(eids)])
         + p["time"](model.time_encoder(dt)) + model.depth_embedding.weight)
    return x, torch.from_numpy(ids == 0)


def tcl_dyglib(model: TCL, src, dst, times):
    """DyGLib's compute_src_dst_node_temporal_embeddings: both sides, every position, nn.MultiheadAttention."""
    x_u, pad_u = tcl_plain_sequence(model, src, times)
    x_v, pad_v = tcl_plain_sequence(model, dst, times)
    for layer in model.layers:
        x_u, x_v = layer(x_u, x_u, pad_u), layer(x_v, x_v, pad_v)
        x_u, x_v = layer(x_u, x_v, pad_v), layer(x_v, x_u, pad_u)
    return torch.cat([model.output(x_u[:, 0]), model.output(x_v[:, 0])])


@pytest.mark.parametrize("layers", [1, 2, 3])
@pytest.mark.parametrize("zero_node, zero_edge", [(False, False), (True, True), (True, False)])
def test_tcl_pair_pass_is_dyglibs_loop(layers, zero_node, zero_edge):
    """Positives and negatives in one call (sequences shared, Q/K/V once per sequence, zero tables as biases, the
    last co-attention at position 0) against DyGLib's two calls, each side at every position."""
    graph, node, edge = toy(0, zero_node, zero_edge)
    torch.manual_seed(0)
    model = TCL(node, edge, time_dim=4, num_neighbors=3, num_layers=layers, num_heads=2, dropout=0.0).train()
    model.set_graph(graph)
    assert model.pairs_independent and (model.node_feat_zero, model.edge_feat_zero) == (zero_node, zero_edge)
    src, dst, neg, ts = batch()
    u, v, t = np.concatenate([src, src]), np.concatenate([dst, neg]), np.tile(ts, 2)

    def slow():
        pos, negative = tcl_dyglib(model, src, dst, ts), tcl_dyglib(model, src, neg, ts)
        n = len(src)  # (2n, d) each: [u-sides; v-sides] -> the one-call layout
        return torch.cat([pos[:n], negative[:n], pos[n:], negative[n:]])

    both_ways(model, lambda: torch.cat(model.pair_embeddings(u, v, t)), slow)


def test_tcl_blocks_of_tokens_give_the_outputs_of_all_tokens_at_once(monkeypatch):
    """The row-wise rest of each block (`TransformerBlock.block_tokens`) in blocks of 7 tokens against all tokens
    at once, in evaluation (no gradient recorded)."""
    graph, node, edge = toy(6)
    torch.manual_seed(0)
    model = TCL(node, edge, time_dim=4, num_neighbors=3, num_layers=2, num_heads=2, dropout=0.0).eval()
    model.set_graph(graph)
    src, dst, neg, ts = batch()
    out = []
    for block_tokens in (0, 7):
        for layer in model.layers:
            monkeypatch.setattr(layer, "block_tokens", block_tokens)
        with torch.no_grad():
            out.append(torch.cat(model.pair_embeddings(np.concatenate([src, src]), np.concatenate([dst, neg]),
                                                       np.tile(ts, 2))))
    torch.testing.assert_close(out[1], out[0], **TOL)


def test_tcl_training_never_runs_in_blocks(monkeypatch):
    """With gradients recorded the rest of each block runs on all tokens at once: blocks would sum the weights'
    gradients block by block, another float order, and a run would no longer repeat main's bits."""
    graph, node, edge = toy(6)
    torch.manual_seed(0)
    model = TCL(node, edge, time_dim=4, num_neighbors=3, num_layers=2, num_heads=2, dropout=0.0).train()
    model.set_graph(graph)
    for layer in model.layers:
        monkeypatch.setattr(layer, "block_tokens", 7)
    rows = []
    real = tcl_module.in_blocks
    monkeypatch.setattr(tcl_module, "in_blocks", lambda fn, n, *xs: rows.append(n) or real(fn, n, *xs))
    src, dst, neg, ts = batch()
    torch.cat(model.pair_embeddings(np.concatenate([src, src]), np.concatenate([dst, neg]), np.tile(ts, 2))).sum().backward()
    assert rows and set(rows) == {0}
    with torch.no_grad():
        model.pair_embeddings(src, dst, ts)
    assert 7 in rows


def test_tcl_uniform_sampling_draws_as_dyglib_and_is_scored_in_two_calls():
    graph, node, edge = toy(1)
    torch.manual_seed(0)
    model = TCL(node, edge, time_dim=4, num_neighbors=3, num_layers=2, num_heads=2, dropout=0.0,
                sampling="uniform").eval()
    assert not model.pairs_independent  # the draws of a call depend on the calls before it
    src, dst, _, ts = batch()
    with torch.no_grad():
        model.set_graph(graph, np.random.RandomState(3))
        got = torch.cat(model.pair_embeddings(src, dst, ts))
        model.set_graph(graph, np.random.RandomState(3))
        torch.testing.assert_close(got, tcl_dyglib(model, src, dst, ts), **TOL)


# ------------------------------------------------------------------ GraphMixer

def graphmixer_dyglib(model: GraphMixer, nodes, times):
    """DyGLib's compute_node_temporal_embeddings: [x_e ; phi] projected, mixers, mean; the (B, time_gap, d_node)
    softmax-weighted mean of the neighbours' features; output."""
    hood = model._sample(nodes, times, model.num_neighbors)
    phi = model.time_encoder(torch.from_numpy(times[:, None] - hood.times).float())
    phi = phi * torch.from_numpy(hood.neighbor_ids != 0).unsqueeze(-1)
    x = model.projection(torch.cat([model.edge_feat[torch.from_numpy(hood.edge_ids)], phi], dim=-1))
    for mixer in model.mixers:
        x = mixer(x)
    gap = model._sample(nodes, times, model.time_gap).neighbor_ids
    scores = torch.softmax(torch.from_numpy(np.where(gap > 0, 1.0, MASK_VALUE)).float(), dim=1)
    mean = (model.node_feat[torch.from_numpy(gap)] * scores.unsqueeze(-1)).mean(dim=1)
    return model.output(torch.cat([x.mean(dim=1), mean + model.node_feat[torch.from_numpy(nodes)]], dim=-1))


@pytest.mark.parametrize("zero_node, zero_edge", [(False, False), (True, True), (False, True)])
def test_graphmixer_embed_is_dyglibs_computation(zero_node, zero_edge):
    """The 4B endpoint queries in one call, repeats once, zero tables dropped: DyGLib's per-query result."""
    graph, node, edge = toy(2, zero_node, zero_edge)
    torch.manual_seed(0)
    model = GraphMixer(node, edge, time_dim=4, num_neighbors=3, time_gap=5, dropout=0.0).train()
    model.set_graph(graph)
    assert isinstance(model, NodeEmbedder) and model.queries_independent
    src, dst, neg, ts = batch()
    nodes, times = np.concatenate([src, src, dst, neg]), np.tile(ts, 4)
    both_ways(model, lambda: model.embed(nodes, times), lambda: graphmixer_dyglib(model, nodes, times))


def test_graphmixer_uniform_sampling_keeps_dyglibs_draws_with_a_zero_node_table():
    """The time_gap neighbours of a zero node table are still drawn under uniform sampling (DyGLib's stream)."""
    graph, node, edge = toy(3, zero_node=True)
    torch.manual_seed(0)
    model = GraphMixer(node, edge, time_dim=4, num_neighbors=3, time_gap=5, dropout=0.0, sampling="uniform").eval()
    assert not model.queries_independent
    src, dst, _, ts = batch()
    with torch.no_grad():
        model.set_graph(graph, np.random.RandomState(4))
        got = torch.cat(model.pair_embeddings(src, dst, ts))
        model.set_graph(graph, np.random.RandomState(4))
        expected = torch.cat([graphmixer_dyglib(model, src, ts), graphmixer_dyglib(model, dst, ts)])
    torch.testing.assert_close(got, expected, **TOL)


# ------------------------------------------------------------------ JODIE

def make_jodie(zero_edge: bool = False) -> JODIE:
    graph, node, edge = toy(4, zero_edge=zero_edge)
    torch.manual_seed(0)
    model = JODIE(node, edge, time_dim=4, dropout=0.0, shift_stats=(1.0, 2.0, -3.0, 0.5))
    rng = np.random.default_rng(0)
    for i in range(3):  # pending messages and committed memories on most nodes
        s, d = rng.integers(1, N_NODES + 1, 4), rng.integers(1, N_NODES + 1, 4)
        model.observe(s, d, np.full(4, 5.0 * (i + 1)), np.arange(4 * i + 1, 4 * i + 5))
    assert model.has_pending.any() and model.memory.abs().sum() > 0
    return model.train()


def jodie_dyglib(model: JODIE, src, dst, times):
    """Every row read on its own: memory after its pending message, t - last, standardized by its role."""
    ids = torch.from_numpy(np.concatenate([src, dst]))
    n = len(src)
    mean = torch.tensor([model.shift_stats[0]] * n + [model.shift_stats[2]] * n, dtype=torch.float64)
    std = torch.tensor([model.shift_stats[1]] * n + [model.shift_stats[3]] * n, dtype=torch.float64)
    dt = torch.from_numpy(np.tile(times, 2)) - model._last_update_of(ids)
    return model.project(model._memory_of(ids), ((dt - mean) / std).float())


def test_jodie_pair_embeddings_commit_each_node_once_with_the_rows_result():
    model = make_jodie()
    assert model.pairs_independent
    src, dst, neg, ts = batch()
    u, v, t = np.concatenate([src, src]), np.concatenate([dst, neg]), np.tile(ts, 2)
    both_ways(model, lambda: torch.cat(model.pair_embeddings(u, v, t)), lambda: jodie_dyglib(model, u, v, t))


# ------------------------------------------------------------------ through the task

def backbone(name: str):
    graph, node, edge = toy(5, zero_node=True)
    torch.manual_seed(0)
    if name == "tcl":
        model = TCL(node, edge, time_dim=4, num_neighbors=3, num_layers=2, num_heads=2, dropout=0.1)
    elif name == "graphmixer":
        model = GraphMixer(node, edge, time_dim=4, num_neighbors=3, time_gap=5, dropout=0.1)
    else:
        return make_jodie(zero_edge=True)
    model.set_graph(graph)
    return model


@pytest.mark.parametrize("name", ["tcl", "graphmixer", "jodie"])
def test_one_call_scores_are_the_scores_of_separate_calls(name):
    model = LinkPredictionModel(backbone(name)).eval()
    src, dst, neg, ts = batch()
    with torch.no_grad():
        pos, negative = model.score(src, dst, src, neg, ts)
        torch.testing.assert_close(pos, model(src, dst, ts), **TOL)
        torch.testing.assert_close(negative, model(src, neg, ts), **TOL)


def test_the_fused_attention_block_is_the_module():
    """TCL's block on projected inputs (one Q/K/V product, an additive -inf key mask) is nn.MultiheadAttention's
    block, in training with attention dropout 0, for the first two positions as queries."""
    torch.manual_seed(0)
    model = TCL(np.ones((3, 8)), np.ones((3, 2)), time_dim=4, num_neighbors=4, num_layers=1, num_heads=2, dropout=0.0)
    layer = model.layers[0].train()
    q_in, kv_in = torch.randn(3, 5, 8), torch.randn(3, 5, 8)
    pad = torch.tensor([[0, 0, 1, 1, 0], [0, 0, 0, 0, 0], [0, 1, 1, 1, 1]], dtype=torch.bool)
    bias = torch.zeros(pad.shape).masked_fill_(pad, float("-inf"))
    q = layer.project(q_in[:, :2], "q")
    k, v = layer.project(kv_in, "kv").split(8, dim=-1)
    torch.testing.assert_close(layer.attend_projected(q_in[:, :2], q, k, v, bias), layer(q_in[:, :2], kv_in, pad),
                               **TOL)


def test_tcl_training_with_dropout_draws_masks_in_every_attention():
    """Dropout > 0 in training (the attention weights included, through models.dropout): finite outputs that change
    from call to call, a gradient on every weight the data reaches."""
    graph, node, edge = toy(6, zero_edge=True)
    torch.manual_seed(0)
    model = TCL(node, edge, time_dim=4, num_neighbors=3, num_layers=2, num_heads=2, dropout=0.5).train()
    model.set_graph(graph)
    src, dst, neg, ts = batch()
    u, v, t = np.concatenate([src, src]), np.concatenate([dst, neg]), np.tile(ts, 2)
    a, b = (torch.cat(model.pair_embeddings(u, v, t)) for _ in range(2))
    assert torch.isfinite(a).all() and not torch.allclose(a, b)
    a.square().sum().backward()
    assert {n for n, p in model.named_parameters() if p.grad is None} == {"projection.edge.weight"}  # zero table


def test_tcl_residual_dropout_in_one_pass_is_the_sum_of_dropouts_output_bit_for_bit(monkeypatch):
    """`TransformerBlock._rest` (`add_dropout` on both residuals) against LN(q + Drop(h)) and the FFN spelled out
    with `Dropout`: the same masks (the same seed), outputs and gradients equal exactly, signs of zeros included."""
    from timerepro.models import dropout as drop

    monkeypatch.setattr(drop, "MIN_ELEMENTS", 0)  # the fast masks on toy shapes
    torch.manual_seed(0)
    block = tcl_module.TransformerBlock(8, 2, 0.3).train()
    query, hidden, grad = torch.randn(50, 8), torch.randn(50, 8), torch.randn(50, 8)
    weights = [p for n, p in block.named_parameters() if not n.startswith("attention.")]  # what `_rest` uses

    def spelled_out(q, h):
        out = block.norm_attn(q + block.dropout(h))
        return block.norm_ffn(out + block.dropout(block.ffn_out(block.dropout(torch.relu(block.ffn_in(out))))))

    results = []
    for fn in (spelled_out, block._rest):
        q, h = query.clone().requires_grad_(), hidden.clone().requires_grad_()
        torch.manual_seed(3)
        out = fn(q, h)
        grads = torch.autograd.grad(out, [q, h, *weights], grad)
        results.append([t.view(torch.int32) for t in (out.detach(), *grads)])
    for expected, got in zip(*results):
        assert torch.equal(got, expected)
    assert (results[1][0] != 0).any() and (results[1][2] == 0).any()  # some of h's entries dropped


class _OnGPU(torch.Tensor):
    """A CPU tensor that says it is on a GPU (the rule below reads `is_cuda` only)."""

    @property
    def is_cuda(self) -> bool:
        return True


def test_blocks_of_tokens_on_the_cpu_one_call_on_a_gpu():
    """`in_blocks`: row blocks on the CPU (cache), one call for tensors on a GPU (launches); the same rows either way."""
    from timerepro.models.graph.dygformer import in_blocks

    x = torch.randn(10, 3)
    calls = []
    fn = lambda t: calls.append(len(t)) or t * 2  # noqa: E731
    assert torch.equal(in_blocks(fn, 4, x), x * 2) and calls == [4, 4, 2]
    calls.clear()
    assert torch.equal(in_blocks(fn, 4, x.as_subclass(_OnGPU)), x * 2) and calls == [10]
