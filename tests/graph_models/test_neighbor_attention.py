"""The speed-ups compute what DyGLib computes: the shared neighbour attention, the (node, time) sharing of
TGAT and TGN, the batched scoring of the task and DyGFormer's fused attention against the equations and
the recursion written out the plain way (same weights, to 1e-5, outputs and gradients); state_dict keys
unchanged; the memory models' state protocol; the models run on the `meta` device without reading a
value back (what a CUDA batch loop needs: no host-device copy inside it)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.backbone import NodeEmbedder, to_device
from timerepro.models.graph.cawn import CAWN
from timerepro.models.graph.dygformer import CooccurrenceEncoder, DyGFormer, TransformerLayer
from timerepro.models.graph.memory import NO_STATE, StreamState, stream_state
from timerepro.models.graph.neighbor_attention import MASK_VALUE, TemporalAttention, recency_ranks
from timerepro.models.graph.tgat import TGAT
from timerepro.models.graph.tgn import TGN
from timerepro.tasks.link_prediction import LinkPredictionModel, adam, autocast

NODE_DIM, EDGE_DIM, N_NODES, N_EDGES = 6, 5, 12, 80
TOL = dict(rtol=1e-5, atol=1e-5)


def toy(seed: int = 0, zero: bool = False):
    """Chronological edges with ties and repeated pairs; feature tables (row 0 = padding)."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(1, N_NODES + 1, N_EDGES), rng.integers(1, N_NODES + 1, N_EDGES)
    ts = np.sort(rng.integers(0, 50, N_EDGES)).astype(float)
    node = np.vstack([np.zeros((1, NODE_DIM)), rng.normal(size=(N_NODES, NODE_DIM))])
    edge = np.vstack([np.zeros((1, EDGE_DIM)), rng.normal(size=(N_EDGES, EDGE_DIM))])
    if zero:
        node, edge = np.zeros_like(node), np.zeros_like(edge)
    graph = TemporalNeighbors(src, dst, ts, np.arange(1, N_EDGES + 1), num_nodes=N_NODES + 1)
    return graph, node, edge, (src, dst, ts)


def batch(edges, lo: int = 60, hi: int = 76, seed: int = 1):
    """A batch whose negatives share the sources, with a repeated (node, time) query inside it."""
    src, dst, ts = (a[lo:hi].copy() for a in edges)
    src[3], ts[3] = src[2], ts[2]
    neg = np.random.default_rng(seed).integers(1, N_NODES + 1, len(src))
    return src, dst, ts + 0.5, neg


# ------------------------------------------------------------------ references, written the plain way

def reference_attention(att: TemporalAttention, h_self, phi_self, h_nbr, e_nbr, phi_nbr, valid):
    """DyGLib's MultiHeadAttention: project every neighbour row, then attend (models/modules.py)."""
    b, k = valid.shape
    heads, dh = att.num_heads, att.head_dim
    q_in = torch.cat([h_self, phi_self], -1)  # (B, d_q)
    rows = torch.cat([h_nbr, e_nbr, phi_nbr], -1)  # (B, k, d_kv)
    q = att.w_q(q_in).view(b, heads, 1, dh)
    key = att.w_k(rows).view(b, k, heads, dh).transpose(1, 2)  # (B, H, k, d_h)
    value = att.w_v(rows).view(b, k, heads, dh).transpose(1, 2)
    scores = (q @ key.transpose(-1, -2)).squeeze(2) / math.sqrt(dh)  # (B, H, k)
    attn = torch.softmax(scores.masked_fill(~valid.unsqueeze(1), MASK_VALUE), -1)
    out = (attn.unsqueeze(2) @ value).squeeze(2).reshape(b, -1)
    return att.norm(att.w_o(out) + q_in), attn


def reference_embed(model, nodes, times, layer: int) -> torch.Tensor:
    """DyGLib's TGAT recursion with `recent` sampling: every query recomputed, its neighbourhood
    retrieved again at each layer, rows projected one by one (reference_attention)."""
    nodes, times = np.asarray(nodes, dtype=np.int64), np.asarray(times, dtype=np.float64)
    ids = torch.from_numpy(nodes)
    base = model._base(nodes, ids)
    if layer == 0:
        return base
    n = len(nodes)
    h_self = reference_embed(model, nodes, times, layer - 1)
    hood = model.neighbors.most_recent(nodes, times, model.num_neighbors)
    k = hood.neighbor_ids.shape[1]
    h_nbr = reference_embed(model, hood.neighbor_ids.ravel(), hood.times.ravel(), layer - 1).reshape(n, k, -1)
    if model.time_input == "position":
        dt = torch.from_numpy(recency_ranks(hood.times)).float()
    else:
        dt = torch.from_numpy(times[:, None] - hood.times).float()
    phi_nbr, phi_self = model.time_encoder(dt), model.time_encoder(torch.zeros(n))
    e_nbr = model.edge_feat[torch.from_numpy(hood.edge_ids)]
    out, _ = reference_attention(model.attention[layer - 1], h_self, phi_self, h_nbr, e_nbr, phi_nbr,
                                 torch.from_numpy(hood.neighbor_ids != 0))
    return model.merge[layer - 1](out, base)


def make_tgat(node, edge, graph, **kw) -> TGAT:
    torch.manual_seed(0)
    args = dict(encoder="linear", time_dim=4, time_mean=12.0, time_std=7.0, num_layers=2, num_heads=2,
                num_neighbors=3, dropout=0.1)
    args.update(kw)
    model = TGAT(node, edge, **args).eval()
    model.set_graph(graph, np.random.RandomState(0))
    return model


def make_tgn(node, edge, graph, edges, **kw) -> TGN:
    torch.manual_seed(0)
    args = dict(encoder="cosine", time_dim=4, num_layers=1, num_heads=2, num_neighbors=3, dropout=0.1)
    args.update(kw)
    model = TGN(node, edge, **args).eval()
    model.set_graph(graph, np.random.RandomState(0))
    src, dst, ts = edges
    for lo in range(0, 60, 10):  # a memory with pending messages and committed rows
        model.observe(src[lo:lo + 10], dst[lo:lo + 10], ts[lo:lo + 10], np.arange(lo + 1, lo + 11))
    return model


def grads(model) -> dict:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


# ------------------------------------------------------------------ the attention

@pytest.mark.parametrize("heads", [1, 2, 5])
def test_absorbed_attention_matches_projecting_every_row(heads):
    torch.manual_seed(heads)
    att = TemporalAttention(NODE_DIM, EDGE_DIM, 4, num_heads=heads, dropout=0.0).eval()
    b, k = 7, 4
    inputs = [torch.randn(b, NODE_DIM), torch.randn(b, 4), torch.randn(b, k, NODE_DIM), torch.randn(b, k, EDGE_DIM),
              torch.randn(b, k, 4)]
    leaves = [x.requires_grad_(True) for x in inputs] + list(att.parameters())
    valid = torch.rand(b, k) > 0.3
    valid[0] = False  # a query without history: uniform over its padding rows
    cotangent = torch.randn(b, NODE_DIM + 4)
    results = []
    for attend in (att, lambda *a: reference_attention(att, *a)):
        out, attn = attend(*inputs, valid)
        (out * cotangent).sum().backward()
        results.append((out.detach(), attn.detach(), [x.grad.clone() for x in leaves]))
        for x in leaves:
            x.grad = None
    (out, attn, g), (ref_out, ref_attn, ref_g) = results
    torch.testing.assert_close(out, ref_out, **TOL)
    torch.testing.assert_close(attn, ref_attn, **TOL)
    for a, r in zip(g, ref_g):
        torch.testing.assert_close(a, r, **TOL)


def test_an_absent_part_is_the_same_as_a_zero_part():
    torch.manual_seed(0)
    att = TemporalAttention(NODE_DIM, EDGE_DIM, 4, num_heads=2, dropout=0.0).eval()
    h, phi0, phi = torch.randn(3, NODE_DIM), torch.randn(3, 4), torch.randn(3, 5, 4)
    valid = torch.ones(3, 5, dtype=torch.bool)
    zeros_n, zeros_e = torch.zeros(3, 5, NODE_DIM), torch.zeros(3, 5, EDGE_DIM)
    torch.testing.assert_close(att(h, phi0, None, None, phi, valid)[0], att(h, phi0, zeros_n, zeros_e, phi, valid)[0],
                               rtol=0, atol=0)


# ------------------------------------------------------------------ TGAT and TGN embeddings

@pytest.mark.parametrize("zero", [False, True])
@pytest.mark.parametrize("layers,time_input", [(1, "time"), (2, "time"), (3, "time"), (2, "position")])
def test_tgat_embeddings_and_gradients_match_dyglibs_recursion(zero, layers, time_input):
    graph, node, edge, edges = toy(0, zero)
    model = make_tgat(node, edge, graph, num_layers=layers, time_input=time_input)
    src, dst, ts, neg = batch(edges)
    nodes, times = np.concatenate([src, dst, src, neg]), np.tile(ts, 4)  # sources twice, a repeated query
    weight = torch.randn(len(nodes), NODE_DIM)
    fast = model.embed(nodes, times)
    (fast * weight).sum().backward()
    g_fast = grads(model)
    model.zero_grad(set_to_none=True)
    slow = reference_embed(model, nodes, times, layers)
    (slow * weight).sum().backward()
    torch.testing.assert_close(fast, slow, **TOL)
    g_slow = grads(model)
    assert g_fast.keys() <= g_slow.keys()  # a zero table's columns get no gradient, DyGLib's get zeros
    for name, g in g_slow.items():
        torch.testing.assert_close(g_fast.get(name, torch.zeros_like(g)), g, **TOL, msg=name)
    torch.testing.assert_close(model._embed_recursive(nodes, times, layers), slow, **TOL)


def test_tgn_embeddings_match_dyglibs_recursion_with_memory():
    graph, node, edge, edges = toy(2)
    model = make_tgn(node, edge, graph, edges)
    assert model.has_pending.any() and model.memory.abs().sum() > 0
    src, dst, ts, neg = batch(edges)
    nodes, times = np.concatenate([src, dst, src, neg]), np.tile(ts, 4)
    torch.testing.assert_close(model.embed(nodes, times), reference_embed(model, nodes, times, 1), **TOL)


@pytest.mark.parametrize("name", ["tgat", "tgn", "dygformer", "cawn"])
def test_batched_scores_are_the_scores_of_separate_calls(name):
    graph, node, edge, edges = toy(3)
    if name == "tgat":
        backbone = make_tgat(node, edge, graph)
    elif name == "tgn":
        backbone = make_tgn(node, edge, graph, edges)
    elif name == "dygformer":
        torch.manual_seed(0)
        backbone = DyGFormer(node, edge, encoder="cosine", time_dim=4, channel_dim=4, max_input_sequence_length=6)
    else:
        torch.manual_seed(0)
        backbone = CAWN(node, edge, time_dim=4, position_dim=6, walk_length=2, num_walk_heads=2, num_neighbors=3,
                        sampling="recent")
    backbone.set_graph(graph, np.random.RandomState(0))
    model = LinkPredictionModel(backbone).eval()
    assert isinstance(backbone, NodeEmbedder) == (name in ("tgat", "tgn"))
    src, dst, ts, neg = batch(edges)
    with torch.no_grad():
        pos, negative = model.score(src, dst, src, neg, ts)
        torch.testing.assert_close(pos, model(src, dst, ts), **TOL)
        torch.testing.assert_close(negative, model(src, neg, ts), **TOL)


def test_random_sampling_keeps_dyglibs_order_of_draws():
    """With uniform sampling nothing is shared: pair_embeddings draws for the sources, then the
    destinations, exactly as two separate calls of the recursion do."""
    graph, node, edge, edges = toy(4)
    model = make_tgat(node, edge, graph, sampling="uniform")
    assert not model.queries_independent
    src, dst, ts, _ = batch(edges)
    model.set_graph(graph, np.random.RandomState(5))
    got = torch.cat(model.pair_embeddings(src, dst, ts))
    model.set_graph(graph, np.random.RandomState(5))
    expected = torch.cat([model._embed_recursive(src, ts, 2), model._embed_recursive(dst, ts, 2)])
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


# ------------------------------------------------------------------ DyGFormer

def pass_and_grads(model, src, neg, ts) -> tuple:
    """One `pair_embeddings` pass from zeroed gradients: (h_u, h_v, the parameters' gradients)."""
    model.zero_grad(set_to_none=True)
    h_u, h_v = model.pair_embeddings(src, neg, ts)
    (h_u.sum() + 2 * h_v.sum()).backward()
    return h_u.detach(), h_v.detach(), grads(model)


def assert_same_pass(got: tuple, ref: tuple) -> None:
    """Two `pass_and_grads` results agree: embeddings and every parameter's gradient."""
    (u, v, g), (ref_u, ref_v, ref_g) = got, ref
    torch.testing.assert_close(u, ref_u, **TOL)
    torch.testing.assert_close(v, ref_v, **TOL)
    assert g.keys() == ref_g.keys()
    for name in g:
        torch.testing.assert_close(g[name], ref_g[name], **TOL, msg=name)


@pytest.mark.parametrize("causal", [False, True])
def test_fused_attention_layer_matches_the_module(causal):
    torch.manual_seed(0)
    layer = TransformerLayer(8, 2, dropout=0.1).eval()
    x = torch.randn(3, 7, 8, requires_grad=True)
    fused, _ = layer(x, causal=causal)
    fused.sum().backward()
    g_fused = [p.grad.clone() for p in layer.parameters()] + [x.grad.clone()]
    layer.zero_grad()
    x.grad = None
    layer.fused = False
    plain, _ = layer(x, causal=causal)
    plain.sum().backward()
    torch.testing.assert_close(fused, plain, **TOL)
    for a, b in zip(g_fused, [p.grad for p in layer.parameters()] + [x.grad]):
        torch.testing.assert_close(a, b, **TOL)


@pytest.mark.parametrize("variant", ["dygformer", "dygformer_separate", "dygdecoder"])
@pytest.mark.parametrize("patch_size,dropout,train", [(1, 0.1, False), (2, 0.1, False), (1, 0.0, True)])
def test_packed_tokens_give_the_outputs_of_the_padded_layout(variant, patch_size, dropout, train):
    """Padding computed once per row (or, behind the decoder's target, not at all) against every
    padded position computed: embeddings and gradients, where nothing is random (eval, or dropout 0)."""
    graph, node, edge, edges = toy(8)
    torch.manual_seed(0)
    model = DyGFormer(node, edge, variant=variant, encoder="cosine", time_dim=4, channel_dim=4, patch_size=patch_size,
                      max_input_sequence_length=10, dropout=dropout).train(train)
    model.set_graph(graph)
    src, dst, ts, neg = batch(edges, lo=20, hi=40)  # early edges: short histories, plenty of padding
    assert (model.sequences(neg, ts).neighbor_ids == 0).mean() > 0.2
    results = []
    for fused in (True, False):  # unfused: nn.MultiheadAttention on the padded layout
        for layer in model.layers:
            layer.fused = fused
        results.append(pass_and_grads(model, src, neg, ts))
    assert_same_pass(*results)


@pytest.mark.parametrize("variant", ["dygformer", "dygformer_separate", "dygdecoder"])
@pytest.mark.parametrize("train", [False, True])
def test_blocks_of_rows_give_the_outputs_of_the_whole_batch(variant, train, monkeypatch):
    """The padded layout through all layers in blocks of rows (`block_tokens`) against the whole batch at once:
    embeddings and gradients; in training with dropout on every tensor and nothing dropped (masks of ones)."""
    from timerepro.models import dropout as drop

    graph, node, edge, edges = toy(8)
    torch.manual_seed(0)
    model = DyGFormer(node, edge, variant=variant, encoder="cosine", time_dim=4, channel_dim=4,
                      max_input_sequence_length=10, dropout=0.1, fused_attention=train).train(train)
    model.set_graph(graph)
    monkeypatch.setattr(drop, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(drop, "kept_mask", lambda shape, p, dtype=torch.uint8: torch.ones(shape, dtype=torch.uint8))
    src, dst, ts, neg = batch(edges, lo=20, hi=40)
    width = model.sequences(src, ts).neighbor_ids.shape[1]
    results = []
    for block_tokens in (0, 2 * width):  # the whole batch; two rows per block (the joint variant: one row)
        monkeypatch.setattr(model, "block_tokens", block_tokens)
        results.append(pass_and_grads(model, src, neg, ts))
    assert_same_pass(*results)


@pytest.mark.parametrize("variant", ["dygformer", "dygdecoder"])
@pytest.mark.parametrize("dropout,train", [(0.1, False), (0.0, True)])
def test_packed_layers_in_blocks_of_tokens_give_the_outputs_of_all_tokens_at_once(variant, dropout, train, monkeypatch):
    """The packed layer's row-wise part (`TransformerLayer.block_tokens`, where no mask is drawn) in blocks of 5
    tokens against all tokens at once: embeddings and gradients."""
    graph, node, edge, edges = toy(8)
    torch.manual_seed(0)
    model = DyGFormer(node, edge, variant=variant, encoder="cosine", time_dim=4, channel_dim=4,
                      max_input_sequence_length=10, dropout=dropout).train(train)
    model.set_graph(graph)
    src, dst, ts, neg = batch(edges, lo=20, hi=40)
    results = []
    for block_tokens in (0, 5):
        for layer in model.layers:
            monkeypatch.setattr(layer, "block_tokens", block_tokens)
        results.append(pass_and_grads(model, src, neg, ts))
    assert_same_pass(*results)


def test_cooccurrence_table_is_the_encoder_applied_to_every_count():
    torch.manual_seed(0)
    enc = CooccurrenceEncoder(5)
    counts = torch.tensor([[[3.0, 0.0], [1.0, 7.0]], [[0.0, 0.0], [2.0, 2.0]]])  # a count above the width 2
    cotangent = torch.randn(2, 2, 5)
    got = enc(counts)
    (got * cotangent).sum().backward()
    g_table = [p.grad.clone() for p in enc.parameters()]
    enc.zero_grad()
    expected = enc.encode(counts.unsqueeze(-1)).sum(dim=2)  # DyGLib: the MLP on each entry
    (expected * cotangent).sum().backward()
    torch.testing.assert_close(got, expected, **TOL)
    torch.testing.assert_close(enc(counts, max_count=7), expected, **TOL)
    for a, b in zip(g_table, [p.grad for p in enc.parameters()]):
        torch.testing.assert_close(a, b, **TOL)


@pytest.mark.parametrize("variant", ["dygformer", "dygdecoder"])
def test_dygformer_zero_tables_give_the_projection_of_zeros(variant):
    graph, node, edge, edges = toy(5, zero=True)
    torch.manual_seed(0)
    model = DyGFormer(node, edge, variant=variant, encoder="cosine", time_dim=4, channel_dim=4,
                      max_input_sequence_length=6).eval()
    model.set_graph(graph)
    assert model.node_feat_zero and model.edge_feat_zero
    src, dst, ts, _ = batch(edges)
    with torch.no_grad():
        fast = model.pair_embeddings(src, dst, ts)
        model.node_feat_zero = model.edge_feat_zero = False  # gather and project the zeros
        slow = model.pair_embeddings(src, dst, ts)
    for a, b in zip(fast, slow):
        torch.testing.assert_close(a, b, **TOL)


# ------------------------------------------------------------------ checkpoints, protocol, devices

STATE_KEYS = {
    "tgat": ["attention.0.norm.bias", "attention.0.norm.weight", "attention.0.w_k.weight", "attention.0.w_o.bias",
             "attention.0.w_o.weight", "attention.0.w_q.weight", "attention.0.w_v.weight", "merge.0.fc0.bias",
             "merge.0.fc0.weight", "merge.0.fc1.bias", "merge.0.fc1.weight", "time_encoder.phi", "time_encoder.w"],
    "tgn": ["_extra_state", "attention.0.norm.bias", "attention.0.norm.weight", "attention.0.w_k.weight",
            "attention.0.w_o.bias", "attention.0.w_o.weight", "attention.0.w_q.weight", "attention.0.w_v.weight",
            "has_pending", "last_update", "memory", "memory_updater.bias_hh", "memory_updater.bias_ih",
            "memory_updater.weight_hh", "memory_updater.weight_ih", "merge.0.fc0.bias", "merge.0.fc0.weight",
            "merge.0.fc1.bias", "merge.0.fc1.weight", "pending_message", "pending_time", "time_encoder.phi",
            "time_encoder.w"],
}


def test_state_dict_keys_are_those_checkpoints_were_written_with():
    graph, node, edge, edges = toy(0)
    assert sorted(make_tgat(node, edge, graph, num_layers=1, encoder="cosine").state_dict()) == STATE_KEYS["tgat"]
    assert sorted(make_tgn(node, edge, graph, edges).state_dict()) == STATE_KEYS["tgn"]
    cawn = CAWN(node, edge, time_dim=4, position_dim=6, num_walk_heads=2, num_neighbors=3)
    assert {k.split(".")[0] for k in cawn.state_dict()} == {"time_encoder", "position_mlp", "feature_lstm",
                                                             "position_lstm", "project_in", "transformer", "project_out"}
    dyg = DyGFormer(node, edge, time_dim=4, channel_dim=4, num_layers=1)
    assert {k.split(".")[0] for k in dyg.state_dict()} == {"time_encoder", "cooccurrence", "projection", "layers", "output"}
    assert "layers.0.attention.in_proj_weight" in dyg.state_dict()


def test_memory_models_implement_the_state_protocol_and_others_get_no_state():
    graph, node, edge, edges = toy(0)
    tgn, tgat = make_tgn(node, edge, graph, edges), make_tgat(node, edge, graph)
    assert isinstance(tgn, StreamState) and stream_state(tgn) is tgn
    assert not isinstance(tgat, StreamState) and stream_state(tgat) is NO_STATE
    before = tgn.memory.clone()
    tgn.detach_state()  # observe keeps no graph: nothing to cut, nothing changes
    assert torch.equal(tgn.memory, before)
    NO_STATE.observe(*edges, None)  # a no-op, never an error


def test_to_device_keeps_dtypes_and_shares_host_memory_on_the_cpu():
    ints, floats64, floats32, flags = np.arange(6).reshape(2, 3), np.linspace(0, 1, 4), np.ones(3, np.float32), \
        np.array([True, False])
    out = to_device(torch.device("cpu"), ints, floats64, floats32, flags)
    assert [t.dtype for t in out] == [torch.int64, torch.float64, torch.float32, torch.bool]
    assert out[0].shape == (2, 3) and np.shares_memory(out[0].numpy(), ints)
    meta = to_device(torch.device("meta"), ints, floats64, flags)
    assert all(t.is_meta for t in meta) and meta[0].shape == (2, 3)


@pytest.mark.parametrize("name", ["tgat", "tgn", "dygformer"])
def test_a_training_step_runs_on_the_meta_device_without_reading_values_back(name):
    """On `meta` every value read (`.item()`, `.cpu()`, `bool(tensor)`) raises: a batch step that
    runs there moves data to the device and never back, as a CUDA batch loop should."""
    graph, node, edge, edges = toy(6)
    if name == "tgat":
        backbone = make_tgat(node, edge, graph)
    elif name == "tgn":
        backbone = make_tgn(node, edge, graph, edges)
    else:
        torch.manual_seed(0)
        backbone = DyGFormer(node, edge, encoder="cosine", time_dim=4, channel_dim=4, max_input_sequence_length=6)
    model = LinkPredictionModel(backbone).train().to("meta")
    backbone.set_graph(graph, np.random.RandomState(0))
    src, dst, ts, neg = batch(edges)
    pos, negative = model.score(src, dst, src, neg, ts)
    assert pos.is_meta and pos.shape == negative.shape == (len(src),)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(torch.cat([pos, negative]), torch.ones(2 * len(src),
                                                                                                     device="meta"))
    loss.backward()
    state = stream_state(backbone)
    state.observe(src, dst, ts, np.arange(61, 61 + len(src)))
    state.detach_state()
    assert all(p.grad is None or p.grad.is_meta for p in model.parameters())


def test_bfloat16_autocast_is_a_setting_close_to_float32():
    graph, node, edge, edges = toy(7)
    model = LinkPredictionModel(make_tgat(node, edge, graph))
    src, dst, ts, neg = batch(edges)
    with torch.no_grad():
        exact = model.score(src, dst, src, neg, ts)[0]
        with autocast("bfloat16", torch.device("cpu")):
            low = model.score(src, dst, src, neg, ts)[0]
        with autocast("none", torch.device("cpu")):
            off = model.score(src, dst, src, neg, ts)[0]
    torch.testing.assert_close(off, exact, rtol=0, atol=0)
    assert not torch.equal(low.float(), exact) and torch.allclose(low.float(), exact, atol=0.1)
    with pytest.raises(ValueError, match="amp"):
        autocast("float8", torch.device("cpu"))


def test_the_tasks_fused_adam_makes_torchs_default_adam_step():
    graph, node, edge, edges = toy(9)
    models = [LinkPredictionModel(make_tgat(node, edge, graph)).train() for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    opts = [adam(models[0], 1e-3), torch.optim.Adam(models[1].parameters(), lr=1e-3)]
    src, dst, ts, neg = batch(edges)
    for _ in range(3):
        for model, opt in zip(models, opts):
            model.eval()  # no dropout: the same gradients
            loss = torch.cat(model.score(src, dst, src, neg, ts)).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    for a, b in zip(models[0].parameters(), models[1].parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert opts[0].defaults["fused"]
