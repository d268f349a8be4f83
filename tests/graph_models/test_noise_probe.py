"""The noise probe's wiring (dyg_mamba Figures 8, 9; docs/dyg_mamba.md M08): `noise_mode` from the config reaches the
noisy neighbours (absent: the authors' replacement), the two modes give the model different inputs, the authors'
mode replaces int(ratio * n) entries of a history of n, and the probe scores the test and new-node test edges in
`noise_batch_size` batches (absent: the clean test's)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from timerepro.data.ctdg import link_prediction_split, load_processed
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.tasks.probes import noise


class FakeTrained:
    """What the probe reads of a trained model; `evaluate` records the neighbour graph and batch size it is given."""

    def __init__(self, data, split):
        self.data, self.split, self.graph = data, split, TemporalNeighbors.from_data(data)
        self.calls = []

    def start_pass(self):
        pass

    def evaluate(self, idx, sampler, graph, size):
        self.calls.append({"idx": idx, "graph": graph, "size": size})
        return {"ap": 0.5 + len(self.calls) / 1000, "auc": 0.5}


@pytest.fixture(scope="module")
def trained(standin_root):
    data = load_processed(standin_root("uci") / "standin" / "smoke" / "processed" / "uci")
    return lambda: FakeTrained(data, link_prediction_split(data))


def rows(graph, nodes, times) -> list[Counter]:
    """Each query's whole history as a multiset of (neighbour, edge, time) triples."""
    h = graph.history(nodes, times)
    return [Counter(zip(h.neighbor_ids[r, :n].tolist(), h.edge_ids[r, :n].tolist(), h.times[r, :n].tolist()))
            for r, n in enumerate(h.lengths)]


def run_probe(trained, **config):
    t = trained()
    out = noise.probe(t, {"batch_size": 20, "noise_ratios": [0.0, 0.5], **config}, ctx=None)
    return t, out


def test_mode_from_the_config_reaches_the_neighbours_and_changes_the_inputs(trained):
    (t_default, _), (t_replace, _), (t_insert, _) = (run_probe(trained), run_probe(trained, noise_mode="replace"),
                                                      run_probe(trained, noise_mode="insert"))
    assert [c["graph"].mode for c in t_default.calls] == [c["graph"].mode for c in t_replace.calls]
    assert {c["graph"].mode for c in t_default.calls} == {"replace"}  # absent: the authors'
    assert {c["graph"].mode for c in t_insert.calls} == {"insert"}
    split, data = t_default.split, t_default.data
    test = np.flatnonzero(split.test)
    nodes, times = data.src[test], data.ts[test]
    clean = rows(t_default.graph, nodes, times)
    n = np.array([sum(c.values()) for c in clean])
    assert n.max() >= 4  # histories long enough for int(0.5 n) >= 2
    half = [c["graph"] for c in t_replace.calls if c["graph"].ratio == 0.5][0]
    inserted = [c["graph"] for c in t_insert.calls if c["graph"].ratio == 0.5][0]
    replaced_rows, inserted_rows = rows(half, nodes, times), rows(inserted, nodes, times)
    for r in range(len(test)):
        # the authors' mode: the same count, int(0.5 n) entries replaced (new triples), the rest kept
        assert sum(replaced_rows[r].values()) == n[r]
        assert sum((replaced_rows[r] - clean[r]).values()) == int(0.5 * n[r])
        # the project's mode: round(0.5 n) entries added, every real one kept
        assert sum(inserted_rows[r].values()) == n[r] + int(np.rint(0.5 * n[r]))
        assert not (clean[r] - inserted_rows[r])
    assert replaced_rows != inserted_rows  # the two modes feed the model different histories
    zero = [c["graph"] for c in t_replace.calls if c["graph"].ratio == 0.0][0]
    assert rows(zero, nodes, times) == clean


def test_test_and_new_node_test_edges_in_the_noise_batch(trained):
    t, out = run_probe(trained, noise_batch_size=400, eval_batch_size=200)
    split = t.split
    assert split.new_node_test.any()
    parts = [len(c["idx"]) for c in t.calls]
    assert parts == [int(split.test.sum()), int(split.new_node_test.sum())] * 2  # per ratio: test, new-node test
    assert {c["size"] for c in t.calls} == {400}
    assert set(out) == {f"test_{s}_random_noise{r}_{m}" for s in ("transductive", "inductive") for r in ("0", "0.5")
                        for m in ("ap", "auc")}
    assert {c["size"] for c in run_probe(trained, eval_batch_size=200)[0].calls} == {200}  # absent: the clean test's
    assert {c["size"] for c in run_probe(trained)[0].calls} == {20}


def test_unknown_mode_is_refused(trained):
    with pytest.raises(ValueError, match="noise mode"):
        run_probe(trained, noise_mode="shuffle")
