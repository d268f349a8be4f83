"""DyGFormer, DyGFormer-separate and DyGDecoder: patching, causal mask, BOS, co-occurrence wiring, no
future leakage, the temporal-channel ablation's parameter count, the positional input, training
through the link-prediction task, and the attention records of Figures 7-12."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from timerepro import registry, runs
from timerepro.data.ctdg import link_prediction_split
from timerepro.graphs.cooccurrence import cooccurrence_counts, dygformer_sequences
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.io import atomic_write_json, read_json
from timerepro.models.graph.dygformer import (VARIANTS, DyGFormer, TransformerLayer, decoder_sequences,
                                              dygformer_hparams, recency_index, recency_index_stats, side_means)
from timerepro.tasks.probes.attention_maps import (attention_records, average_by_time_pair, patch_times,
                                                   record_attention, sample_edges)

from .conftest import resolved

torch.set_num_threads(1)
NODE_DIM, EDGE_DIM, N_NODES = 6, 5, 10


def toy_graph(seed: int = 0, n_edges: int = 60):
    """Random chronological edges with ties in time; ids 1-based (0 = padding)."""
    rng = np.random.default_rng(seed)
    src = rng.integers(1, N_NODES + 1, n_edges)
    dst = rng.integers(1, N_NODES + 1, n_edges)
    ts = np.sort(rng.integers(0, 40, n_edges)).astype(float)
    return src, dst, ts, np.arange(1, n_edges + 1)


def features(n_edges: int, seed: int = 0):
    rng = np.random.default_rng(seed + 100)
    node = np.vstack([np.zeros((1, NODE_DIM)), rng.normal(size=(N_NODES, NODE_DIM))])
    edge = np.vstack([np.zeros((1, EDGE_DIM)), rng.normal(size=(n_edges, EDGE_DIM))])
    return node, edge


def make(variant: str, n_edges: int = 60, **kw) -> DyGFormer:
    torch.manual_seed(0)
    node, edge = features(n_edges)
    args = dict(variant=variant, encoder="linear", time_dim=1, time_mean=10.0, time_std=6.0, channel_dim=4,
                time_channel_dim=4, patch_size=1, max_input_sequence_length=6, num_layers=2, num_heads=2, dropout=0.1)
    args.update(kw)
    return DyGFormer(node, edge, **args).eval()


def graph(seed: int = 0, n_edges: int = 60) -> TemporalNeighbors:
    return TemporalNeighbors(*toy_graph(seed, n_edges), num_nodes=N_NODES + 1)


@pytest.fixture(scope="module")
def model_defaults() -> dict:
    """params/models.yaml's defaults of the three models (the registry loaded once)."""
    models = registry.Registry(registry.params_dir()).models
    return {v: models[v]["defaults"] for v in VARIANTS}


SRC, DST, T = np.array([1, 2, 3, 4]), np.array([5, 6, 7, 8]), np.array([20.0, 25.0, 39.0, 41.0])


# ------------------------------------------------------------------ patching and the causal mask

@pytest.mark.parametrize("variant", VARIANTS)
def test_patches_have_the_stated_shape_and_concatenate_consecutive_positions(variant):
    model = make(variant, patch_size=3, time_channel_dim=2)
    model.set_graph(graph())
    seen = []
    model.projection["node"].register_forward_pre_hook(lambda mod, args: seen.append(args[0].clone()))
    enc_u, enc_v = model.encode_inputs(SRC, DST, T)
    for enc in (enc_u, enc_v):
        width = enc.seq.neighbor_ids.shape[1]
        assert width % 3 == 0 and width <= 6
        assert enc.patches.shape == (4, width // 3, 3 * 4 + 2)  # (B, L/P, 3 d_ch + d_tc)
    # projection input of patch j = node features of positions 3j, 3j+1, 3j+2 concatenated
    ids = enc_u.seq.neighbor_ids
    feats = model.node_feat[torch.from_numpy(ids)]  # (B, L, d)
    for j in range(ids.shape[1] // 3):
        expected = torch.cat([feats[:, 3 * j + i] for i in range(3)], dim=-1)
        torch.testing.assert_close(seen[0][:, j], expected)


def test_causal_mask_keeps_earlier_outputs_and_full_attention_does_not():
    torch.manual_seed(0)
    layers = [TransformerLayer(8, 2, dropout=0.0) for _ in range(2)]
    x = torch.randn(3, 7, 8)
    x2 = x.clone()
    x2[:, 4] += 3.0 * torch.randn(3, 8)  # change position 4 only (not a constant: LayerNorm removes shifts)

    def run(inp, causal):
        for layer in layers:
            inp, _ = layer(inp, causal=causal)
        return inp

    causal_a, causal_b = run(x, True), run(x2, True)
    torch.testing.assert_close(causal_a[:, :4], causal_b[:, :4])  # earlier positions untouched
    assert not torch.allclose(causal_a[:, 4:], causal_b[:, 4:])
    full_a, full_b = run(x, False), run(x2, False)
    assert (full_a[:, :4] - full_b[:, :4]).abs().max() > 1e-3  # full attention: earlier outputs move

    _, weights = layers[-1](x, causal=True, need_weights=True)  # (B, L, L)
    assert weights.shape == (3, 7, 7)
    assert torch.all(weights.triu(1) == 0)


def test_decoder_embedding_ignores_padding_after_the_target_unlike_mean_pooling():
    """In the decoder the target's patch cannot see the right padding, so a node's embedding does
    not depend on which other queries share its batch (they set the padded width). DyGLib's mean
    pooling over every patch does depend on it (kept as DyGLib has it)."""
    g = graph()
    lone, crowd = (np.array([3]), np.array([4]), np.array([12.0])), (np.array([3, 1]), np.array([4, 2]), np.array([12.0, 41.0]))
    for variant, same in (("dygdecoder", True), ("dygformer_separate", False)):
        model = make(variant, max_input_sequence_length=12)
        model.set_graph(g)
        assert model.sequences(*crowd[::2]).neighbor_ids.shape[1] > model.sequences(*lone[::2]).neighbor_ids.shape[1]
        with torch.no_grad():
            a, b = model.pair_embeddings(*lone)[0][0], model.pair_embeddings(*crowd)[0][0]
        assert torch.allclose(a, b, atol=1e-6) is same, variant


def test_decoder_sequence_puts_the_node_after_its_history():
    g = graph()
    dec = decoder_sequences(g, SRC, T, 6, patch_size=4)
    ref = dygformer_sequences(g, SRC, T, 6, patch_size=4)
    assert dec.neighbor_ids.shape == ref.neighbor_ids.shape and dec.neighbor_ids.shape[1] % 4 == 0
    rows = np.arange(len(SRC))
    assert np.array_equal(dec.neighbor_ids[rows, dec.lengths - 1], SRC)
    assert np.array_equal(dec.times[rows, dec.lengths - 1], T)
    for b, n in enumerate(dec.lengths):  # same history, same order, shifted by one
        assert np.array_equal(dec.neighbor_ids[b, :n - 1], ref.neighbor_ids[b, 1:n])
        assert np.array_equal(dec.edge_ids[b, :n - 1], ref.edge_ids[b, 1:n])
        assert np.all(dec.neighbor_ids[b, n:] == 0)


# ------------------------------------------------------------------ BOS, co-occurrence, leakage

def test_bos_embedding_is_used_and_learnable():
    model = make("dygdecoder").train()
    model.set_graph(graph())
    assert isinstance(model.bos, torch.nn.Parameter) and model.bos.requires_grad
    assert any(p is model.bos for p in model.parameters())
    h_u, h_v = model.pair_embeddings(SRC, DST, T)
    (h_u.sum() + h_v.sum()).backward()
    assert model.bos.grad is not None and model.bos.grad.abs().sum() > 0
    model.eval()
    with torch.no_grad():
        before = model.pair_embeddings(SRC, DST, T)[0]
        model.bos.add_(torch.randn_like(model.bos))  # not a constant shift, which LayerNorm removes
        after = model.pair_embeddings(SRC, DST, T)[0]
    assert not torch.allclose(before, after)
    assert not hasattr(make("dygformer_separate"), "bos")


@pytest.mark.parametrize("variant", VARIANTS)
def test_cooccurrence_features_wired_into_the_model_are_the_graphs_module_counts(variant):
    model = make(variant)
    g = graph()
    model.set_graph(g)
    fed = []
    model.cooccurrence.register_forward_pre_hook(lambda mod, args: fed.append(args[0].clone()))
    model.pair_embeddings(SRC, DST, T)
    build = decoder_sequences if variant == "dygdecoder" else dygformer_sequences
    seq_u, seq_v = build(g, SRC, T, 6), build(g, DST, T, 6)
    exp_u, exp_v = cooccurrence_counts(seq_u.neighbor_ids, seq_v.neighbor_ids)
    assert np.array_equal(fed[0].numpy(), exp_u) and np.array_equal(fed[1].numpy(), exp_v)
    assert fed[0][..., 0].sum() > 0 and fed[0][..., 1].sum() > 0  # the toy pairs do share neighbours
    # the node's own entry gets the same counts in either layout
    ref_u, _ = cooccurrence_counts(dygformer_sequences(g, SRC, T, 6).neighbor_ids, dygformer_sequences(g, DST, T, 6).neighbor_ids)
    own = (seq_u.lengths - 1) if variant == "dygdecoder" else np.zeros(len(SRC), int)
    assert np.array_equal(exp_u[np.arange(len(SRC)), own], ref_u[:, 0])


@pytest.mark.parametrize("variant", VARIANTS)
def test_no_future_leakage(variant):
    """Embeddings at time t do not change when edges at or after t are added to the graph."""
    src, dst, ts, eids = toy_graph(1, 60)
    rng = np.random.default_rng(5)
    t0 = 30.0
    past = ts < t0
    extra_src, extra_dst = rng.integers(1, N_NODES + 1, 15), rng.integers(1, N_NODES + 1, 15)
    extra_ts = np.sort(np.concatenate([[t0, t0, t0], rng.uniform(t0, 60.0, 12)]))
    all_src = np.concatenate([src[past], extra_src])
    all_dst = np.concatenate([dst[past], extra_dst])
    all_ts = np.concatenate([ts[past], extra_ts])
    all_eids = np.arange(1, len(all_src) + 1)
    model = make(variant, n_edges=len(all_src), max_input_sequence_length=8)
    times = np.full(len(SRC), t0)
    model.set_graph(TemporalNeighbors(src[past], dst[past], ts[past], all_eids[:past.sum()], num_nodes=N_NODES + 1))
    with torch.no_grad():
        before = model.pair_embeddings(SRC, DST, times)
        model.set_graph(TemporalNeighbors(all_src, all_dst, all_ts, all_eids, num_nodes=N_NODES + 1))
        after = model.pair_embeddings(SRC, DST, times)
        later = model.pair_embeddings(SRC, DST, times + 25.0)  # a later query does see the new edges
    for a, b in zip(before, after):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert not torch.allclose(before[0], later[0])


# ------------------------------------------------------------------ d_tc ablation, positional input, configs

@pytest.mark.parametrize("variant", VARIANTS)
def test_temporal_channel_width_and_parameter_count(variant):
    """Figure 6: attention width 3 d_ch + d_tc; parameters change exactly as the architecture says:
    time projection (P d_T + 1) d_tc, per layer 12 D^2 + 13 D (MHA 4D^2 + 4D, two LayerNorms 4D,
    FFN 8D^2 + 5D), output layer D (d_node + 0) + ..., BOS D."""
    def count(d_tc):
        m = make(variant, encoder="cosine", time_dim=100, channel_dim=50, time_channel_dim=d_tc)
        return m.model_dim, sum(p.numel() for p in m.parameters())

    counts = {d: count(d) for d in (50, 24, 2)}
    assert [counts[d][0] for d in (50, 24, 2)] == [200, 174, 152]

    def dependent(d_tc, dim):
        return (100 + 1) * d_tc + 2 * (12 * dim**2 + 13 * dim) + dim * NODE_DIM + (dim if variant == "dygdecoder" else 0)

    for d in (24, 2):
        assert counts[50][1] - counts[d][1] == dependent(50, 200) - dependent(d, counts[d][0])
    assert counts[50][1] > counts[24][1] > counts[2][1]


def test_positional_input_feeds_recency_indices_to_the_encoder():
    g = graph()
    for variant in ("dygformer", "dygdecoder"):
        model = make(variant, encoder="cosine", time_dim=4, time_input="position")
        model.set_graph(g)
        fed = []
        model.time_encoder.register_forward_pre_hook(lambda mod, args: fed.append(args[0].clone()))
        model.pair_embeddings(SRC, DST, T)
        seq = model.sequences(SRC, T)
        index = fed[0].numpy()
        for b, n in enumerate(seq.lengths):
            real = seq.neighbor_ids[b] != 0
            # the node itself 0, then n-1 .. 1 from the oldest kept interaction to the most recent
            expected = np.concatenate([[0], np.arange(n - 1, 0, -1)]) if variant == "dygformer" else np.arange(n - 1, -1, -1)
            assert np.array_equal(index[b][real], expected)
        assert np.array_equal(recency_index(seq, node_last=variant == "dygdecoder"), index)


def test_recency_index_stats_match_brute_force():
    g = graph()
    nodes, times = np.repeat(np.arange(1, N_NODES + 1), 3), np.tile([5.0, 20.0, 41.0], N_NODES)
    mean, std = recency_index_stats(g, nodes, times, max_len=7)
    values = np.concatenate([np.arange(1, min(n, 7) + 1) for n in g.count_before(nodes, times)])
    assert mean == pytest.approx(values.mean()) and std == pytest.approx(values.std())


def test_hparams_resolve_config_then_dataset_then_default(model_defaults):
    """Through the effective config (the run resolves it): a key set in the config wins, then the dataset's
    value, then dataset_defaults' `default`; a config without them is refused."""
    from timerepro.tasks.effective import effective_config

    defaults = model_defaults["dygformer"]
    hp = dygformer_hparams(effective_config({**defaults, "model": "dygformer", "dataset": "uslegis", "encoder": "linear"}))
    assert (hp["max_input_sequence_length"], hp["patch_size"], hp["dropout"], hp["time_dim"]) == (256, 8, 0.0, 1)
    assert hp["time_channel_dim"] is None and hp["channel_dim"] == 50
    hp = dygformer_hparams(effective_config({**defaults, "model": "dygdecoder", "dataset": "uci", "encoder": "cosine",
                                             "dropout": 0.3, "d_tc": 2}))
    assert (hp["max_input_sequence_length"], hp["patch_size"], hp["dropout"], hp["time_dim"]) == (32, 1, 0.3, 100)
    assert hp["time_channel_dim"] == 2 and hp["variant"] == "dygdecoder"
    with pytest.raises(KeyError):
        dygformer_hparams({**defaults, "model": "dygformer", "dataset": "uslegis", "encoder": "linear"})


# ------------------------------------------------------------------ attention records

@pytest.mark.parametrize("variant", ["dygformer_separate", "dygdecoder"])
def test_attention_records_have_the_stated_shapes_and_rows_sum_to_one(variant, tmp_path):
    model = make(variant, patch_size=2, max_input_sequence_length=8).train()
    model.set_graph(graph())
    edges = sample_edges(np.arange(4), 3, seed=1)
    rec = record_attention(model, SRC[edges], DST[edges], T[edges])
    assert model.training  # mode restored
    bos = 1 if variant == "dygdecoder" else 0
    for side, src in (("src", SRC[edges]), ("dst", DST[edges])):
        r = rec[side]
        seq = model.sequences(src, T[edges])
        n_patches = seq.neighbor_ids.shape[1] // 2 + bos
        assert r["attention"].shape == (3, n_patches, n_patches)
        assert r["dt"].shape == r["real"].shape == (3, n_patches)
        np.testing.assert_allclose(r["attention"].sum(-1), 1.0, atol=1e-5)
        if bos:
            assert np.all(np.triu(r["attention"], 1) == 0) and not r["real"][:, 0].any()
        expected_dt = T[edges][:, None] - patch_times(seq.neighbor_ids, seq.times, 2)
        np.testing.assert_array_equal(r["dt"][:, bos:], expected_dt)
        assert np.all(r["dt"][r["real"]] >= 0)
    cols = attention_records(rec, causal=model.causal)
    assert len({len(v) for v in cols.values()}) == 1 and len(cols["score"]) > 0
    assert np.all(cols["dt_query"] >= 0) and np.all(cols["dt_key"] >= 0) and set(np.unique(cols["side"])) == {0, 1}
    e, q, k, s = cols["edge"][0], cols["query"][0], cols["key"][0], cols["side"][0]
    assert cols["score"][0] == rec[("src", "dst")[s]]["attention"][e, q, k]
    if model.causal:
        assert np.all(cols["key"] <= cols["query"])
    avg = average_by_time_pair(cols)
    assert avg["count"].sum() == len(cols["score"])
    # what ctx.write_artifact does with them (JSON of the columns) round-trips
    back = read_json(atomic_write_json(tmp_path / "attention.json", {"records": cols, "by_pair": avg}))
    np.testing.assert_allclose(back["records"]["score"], cols["score"])
    assert back["by_pair"]["count"] == avg["count"].tolist()
    with pytest.raises(ValueError, match="separate-sequence"):
        record_attention(make("dygformer"), SRC, DST, T)


def test_average_by_time_pair_by_hand():
    cols = {"dt_query": np.array([0.0, 0.0, 1.0, 0.0]), "dt_key": np.array([2.0, 2.0, 2.0, 3.0]),
            "score": np.array([0.2, 0.4, 0.9, 0.5]), "side": np.array([0, 0, 1, 0])}
    avg = average_by_time_pair(cols)
    assert avg["dt_query"].tolist() == [0.0, 0.0, 1.0] and avg["dt_key"].tolist() == [2.0, 3.0, 2.0]
    np.testing.assert_allclose(avg["score"], [0.3, 0.5, 0.9])
    assert avg["count"].tolist() == [2, 1, 1]
    assert average_by_time_pair(cols, side=1)["count"].tolist() == [1]


# ------------------------------------------------------------------ through the link-prediction task

@pytest.fixture(scope="module")
def data_root(standin_root):
    """The session's data folder, holding the smoke uci stand-in."""
    return standin_root("uci")


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_trains_end_to_end_through_the_task(variant, data_root, tmp_path, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_DATA", str(data_root))
    cfg = {**resolved("link_prediction", variant), "paper": "linear_time", "experiment": "dyg_test", "task": "link_prediction",
           "dataset": "uci", "standin": "smoke", "model": variant, "encoder": "linear", "d_ch": 4, "d_tc": 2,
           "max_input_sequence_length": 8, "patch_size": 2, "lr": 1e-3, "batch_size": 100, "max_epochs": 2,
           "patience": 5, "eval_negatives": ["random"], "seed": 0}
    cfg["run_id"] = registry.run_id(cfg)
    d = runs.execute(cfg, results=tmp_path, show_progress=False)
    metrics = json.loads((d / "metrics.json").read_text())
    history = json.loads((d / "history.json").read_text())
    assert metrics["epochs_run"] == len(history) == 2
    assert all(np.isfinite(row["train_loss"]) for row in history)
    assert 0.0 <= metrics["test_transductive_random_ap"] <= 1.0
    assert metrics["time_diff_std"] > 0 and metrics["n_parameters"] > 0
    # a different d_tc is a different model size (Figure 6's parameter counts come from here)
    from timerepro.tasks import link_prediction

    data, _ = link_prediction.load_data(cfg)
    split = link_prediction_split(data)
    graph_ = TemporalNeighbors.from_data(data, split.train)
    sizes = [link_prediction.count_parameters(link_prediction.build_model(link_prediction.effective_config(
             {**cfg, "d_tc": d}), data, split, graph_))
             for d in (4, 2)]
    assert sizes[0] > sizes[1]


@pytest.mark.parametrize("n_u", [16, 5])
def test_side_means_are_the_slices_means_bit_for_bit_with_their_gradients(n_u):
    """`side_means` (a (B, 2, L, d) view for equal sides, the slices otherwise) against out[:, :n_u].mean(1) and
    out[:, n_u:].mean(1): the same bits forward and backward, on DyGFormer's widths."""
    torch.manual_seed(0)
    base = torch.randn(7, 32, 200, dtype=torch.float32)
    cotangent = torch.randn(7, 2, 200)
    results = []
    for fn in (lambda o: side_means(o, n_u), lambda o: torch.stack([o[:, :n_u].mean(1), o[:, n_u:].mean(1)], 1)):
        out = base.clone().requires_grad_(True)
        got = fn(out)
        got.backward(cotangent)
        results.append((got.detach(), out.grad))
    assert results[0][0].shape == (7, 2, 200)
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


@pytest.mark.parametrize("case", ["train", "eval", "small"])
def test_gelu_dropout_in_one_buffer_gives_the_modules_outputs_and_gradients_bit_for_bit(case, monkeypatch):
    """A layer's FFN with Drop(GELU(.)) in one buffer (`_GeluDropout`, the default) against `Dropout` on `F.gelu`
    (the switch off), the same seed: outputs, the input's and every weight's gradient equal; `_GeluDropout` runs in
    training only, and not under `MIN_ELEMENTS` (there both ways are torch's dropout)."""
    from timerepro.models import dropout as drop
    from timerepro.models.graph import dygformer

    if case == "small":
        monkeypatch.setattr(drop, "MIN_ELEMENTS", 1 << 30)
    calls = []
    apply = dygformer._GeluDropout.apply
    monkeypatch.setattr(dygformer._GeluDropout, "apply", lambda *a: calls.append(1) or apply(*a))
    torch.manual_seed(0)
    layer = TransformerLayer(16, 2, 0.3).train(case != "eval")
    x0, weight = torch.randn(8, 64, 16), torch.randn(8, 64, 16)  # FFN hidden: 8 * 64 * 64 = MIN_ELEMENTS entries
    results = []
    for fuse in (False, True):
        monkeypatch.setattr(TransformerLayer, "fuse_gelu_dropout", fuse)
        layer.zero_grad()
        x = x0.clone().requires_grad_()
        torch.manual_seed(1)
        out, _ = layer(x)
        (out * weight).sum().backward()
        results.append([out.detach(), x.grad] + [p.grad.clone() for p in layer.parameters()])
    for expected, got in zip(*results):
        assert torch.equal(got, expected)
    assert len(calls) == (case == "train")
    with torch.no_grad():
        assert (case != "eval") == (not torch.equal(results[0][0], layer.eval()(x0)[0]))
