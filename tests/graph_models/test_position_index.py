"""Table 6's position index (linear_time): the authors' rank among distinct earlier times (`distinct_times`) against
the project's one index per event (`per_event`), in the shared function, TGAT and the DyGFormer family."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from timerepro import registry
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.dygformer import DyGFormer, position_input, recency_index
from timerepro.models.graph.position_index import distinct_time_index
from timerepro.models.graph.tgat import TGAT, recency_ranks

torch.set_num_threads(1)


def test_ties_share_an_index_and_padding_sits_one_past_the_oldest():
    # one TGAT row, oldest first, left-padded (time 0): two padding slots, times 3, 5, 5, 8, query at 10
    times = np.array([[0.0, 0.0, 3.0, 5.0, 5.0, 8.0]])
    every = np.ones(times.shape, dtype=bool)
    assert distinct_time_index(times, np.array([10.0]), every).tolist() == [[4, 4, 3, 2, 2, 1]]
    assert recency_ranks(times).tolist() == [[5, 6, 4, 2, 3, 1]]  # per_event: ties get distinct indices, in row order


def test_distinct_time_index_edge_cases():
    every = lambda t: np.ones(np.shape(t), dtype=bool)  # noqa: E731
    # a real neighbour at time 0 ties with the padding (the authors compare t - t_k, equal for both)
    t = np.array([[0.0, 0.0, 2.0]])
    assert distinct_time_index(t, np.array([5.0]), every(t)).tolist() == [[2, 2, 1]]
    # no history: padding alone is index 1 (one past an empty history); at query time 0 everything is 0
    t = np.zeros((2, 3))
    assert distinct_time_index(t, np.array([4.0, 0.0]), every(t)).tolist() == [[1, 1, 1], [0, 0, 0]]
    # entries left out (DyGFormer's padding) get 0 and do not count; an entry at the query's time is the query's 0
    t = np.array([[2.0, 2.0, 6.0, 9.0, 0.0]])
    counted = np.array([[True, True, True, True, False]])
    assert distinct_time_index(t, np.array([9.0]), counted).tolist() == [[2, 2, 1, 0, 0]]


def test_distinct_time_index_matches_a_direct_count_on_random_rows():
    rng = np.random.default_rng(0)
    times = rng.integers(0, 6, size=(50, 9)).astype(float)
    query = times.max(axis=1) + rng.integers(0, 2, 50)  # some rows hold the query's own time
    counted = rng.random((50, 9)) < 0.8
    got = distinct_time_index(times, query, counted)
    for b in range(50):
        pool = set(times[b][counted[b] & (times[b] < query[b])])
        want = [sum(t <= p for p in pool) if counted[b, j] and t < query[b] else 0 for j, t in enumerate(times[b])]
        assert got[b].tolist() == want


def _fed(model) -> list[torch.Tensor]:
    fed = []
    model.time_encoder.register_forward_pre_hook(lambda mod, args: fed.append(args[0].clone()))
    return fed


def test_tgat_feeds_the_authors_index_by_hand():
    """Node 1 interacted at 1, 4, 4 (twice at the same time), 7: with k = 5 recent neighbours and a query at 10 the
    authors' TGAT encodes [padding, 1, 4, 4, 7] as [4, 3, 2, 2, 1]; per_event as [5, 4, 2, 3, 1]."""
    src, dst = np.array([1, 1, 1, 1]), np.array([2, 3, 2, 3])
    ts, eids = np.array([1.0, 4.0, 4.0, 7.0]), np.arange(1, 5)
    graph = TemporalNeighbors(src, dst, ts, eids)
    seen = {}
    for index in ("distinct_times", "per_event"):
        model = TGAT(np.zeros((4, 4)), np.zeros((5, 4)), time_dim=4, num_layers=1, num_neighbors=5,
                     time_input="position", position_index=index)
        model.set_graph(graph)
        fed = _fed(model)
        model.embed(np.array([1]), np.array([10.0]))
        seen[index] = fed[0].reshape(-1).tolist()  # the neighbours' input; the query's Phi(0) comes second
        assert fed[1].reshape(-1).tolist() == [0.0]
    assert seen == {"distinct_times": [4.0, 3.0, 2.0, 2.0, 1.0], "per_event": [5.0, 4.0, 2.0, 3.0, 1.0]}


def test_dygformer_feeds_the_authors_index_by_hand():
    """Node 1's history before 10: times 1, 4, 4, 7. DyGFormer's layout [self, 1, 4, 4, 7] is encoded as
    [0, 3, 2, 2, 1] (the authors' np.unique rank + 1); the decoder's [1, 4, 4, 7, self] as [3, 2, 2, 1, 0]."""
    src, dst = np.array([1, 1, 1, 1, 2]), np.array([2, 3, 2, 3, 3])
    ts, eids = np.array([1.0, 4.0, 4.0, 7.0, 8.0]), np.arange(1, 6)
    graph = TemporalNeighbors(src, dst, ts, eids, num_nodes=4)
    expected = {"dygformer": [0, 3, 2, 2, 1], "dygdecoder": [3, 2, 2, 1, 0]}
    for variant, want in expected.items():
        torch.manual_seed(0)
        model = DyGFormer(np.zeros((4, 4)), np.zeros((6, 4)), variant=variant, encoder="cosine", time_dim=4,
                          channel_dim=4, max_input_sequence_length=8, num_layers=1, num_heads=2,
                          time_input="position", position_index="distinct_times").eval()
        model.set_graph(graph)
        fed = _fed(model)
        model.pair_embeddings(np.array([1]), np.array([2]), np.array([10.0]))
        real = model.sequences(np.array([1]), np.array([10.0])).neighbor_ids[0] != 0
        assert fed[0][0].numpy()[real].tolist() == want
        seq = model.sequences(np.array([1]), np.array([10.0]))
        per_event = recency_index(seq, node_last=variant == "dygdecoder")[0][real].tolist()
        assert per_event == ([0, 4, 3, 2, 1] if variant == "dygformer" else [4, 3, 2, 1, 0])
        assert position_input(seq, np.array([10.0]), variant == "dygdecoder", "per_event")[0][real].tolist() == per_event


def test_tgat_with_positions_cannot_tell_featureless_nodes_apart():
    """Why TGAT-Position sits at chance on the featureless UCI and Enron stand-ins (docs/decisions.md, offline
    scale): with zero node and edge features and positions in place of times, two nodes whose k most recent
    interactions have distinct times get the same embedding, whoever their partners were and whenever they
    interacted; with times they do not."""
    # node 1: partners 5, 6, 7 at 1, 2, 3; node 2: partners 8, 9, 5 at 0.5, 4, 6 (distinct times each)
    src, dst = np.array([1, 2, 1, 1, 2, 2]), np.array([5, 8, 6, 7, 9, 5])
    ts, eids = np.array([1.0, 0.5, 2.0, 3.0, 4.0, 6.0]), np.arange(1, 7)
    graph = TemporalNeighbors(src, dst, ts, eids, num_nodes=10)
    out = {}
    for time_input in ("position", "time"):
        torch.manual_seed(0)
        model = TGAT(np.zeros((10, 4)), np.zeros((7, 4)), time_dim=4, num_layers=1, num_neighbors=3,
                     time_input=time_input).eval()
        model.set_graph(graph)
        with torch.no_grad():
            out[time_input] = model.embed(np.array([1, 2]), np.array([10.0, 10.0]))
    torch.testing.assert_close(out["position"][0], out["position"][1])
    assert not torch.allclose(out["time"][0], out["time"][1])


def test_unknown_position_index_is_refused():
    with pytest.raises(ValueError, match="position_index"):
        TGAT(np.zeros((3, 4)), np.zeros((3, 4)), time_dim=4, num_layers=1, num_neighbors=2, position_index="rank")
    with pytest.raises(ValueError, match="position_index"):
        DyGFormer(np.zeros((3, 4)), np.zeros((3, 4)), time_dim=4, channel_dim=4, position_index="rank")


def test_table6_runs_use_the_authors_index_and_no_other_run_sets_it():
    reg = registry.load()
    for scale in ("smoke", "offline"):
        for run in reg.runs(scale):
            c = run.config
            if c["paper"] == "linear_time" and c.get("time_input") == "position":
                assert c["position_index"] == "distinct_times", c["experiment"]
            else:
                assert "position_index" not in c, (c["paper"], c["experiment"])
