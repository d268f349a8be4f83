"""The link-prediction task keeps the last-layer attention of sampled test edges (linear_time Figures 7-12)."""

import numpy as np

from timerepro import registry, runs


def test_decoder_run_writes_causal_attention_records(tmp_path):
    reg = registry.load()
    run = next(r for r in reg.runs("smoke", paper="linear_time")
               if r.config["task"] == "link_prediction" and r.config["model"] == "dygdecoder")
    assert run.config["record_attention"] > 0
    d = runs.execute(run.config, results=tmp_path, show_progress=False, threads=1)
    cols = np.load(d / "attention_records.npz")
    assert set(cols.files) >= {"side", "dt_query", "dt_key", "score", "query", "key"}
    assert len(cols["score"]) > 0 and np.all((cols["score"] >= 0) & (cols["score"] <= 1))
    assert np.all(cols["key"] <= cols["query"])  # the decoder's causal mask: no key after its query
    assert np.all(cols["dt_key"] >= 0) and np.all(cols["dt_query"] >= 0)  # only past interactions
    assert set(np.unique(cols["side"])) == {0, 1}


def test_tgat_positional_input_encodes_recency_indices():
    """Table 6: with time_input='position' the encoder sees 1 for the latest neighbour up to k, and Phi(0) for the query."""
    import torch

    from timerepro.graphs.neighbors import TemporalNeighbors
    from timerepro.models.graph.tgat import TGAT, recency_ranks

    assert recency_ranks(np.array([[0.0, 3.0, 5.0], [2.0, 9.0, 4.0]])).tolist() == [[3, 2, 1], [3, 1, 2]]
    src, dst = np.array([1, 1, 1, 2]), np.array([2, 3, 2, 3])
    ts, eids = np.array([1.0, 5.0, 7.0, 8.0]), np.arange(1, 5)
    graph = TemporalNeighbors(src, dst, ts, eids)
    model = TGAT(np.zeros((4, 4)), np.zeros((5, 4)), time_dim=4, num_layers=1, num_neighbors=3, time_input="position")
    model.set_graph(graph)
    seen = []
    model.time_encoder.register_forward_hook(lambda mod, args, out: seen.append(args[0].clone()))
    model.embed(np.array([1]), np.array([10.0]))
    inputs = torch.cat([s.reshape(-1) for s in seen]).tolist()
    assert sorted(inputs) == [0.0, 1.0, 2.0, 3.0]  # three neighbours ranked by recency, and the query's 0
