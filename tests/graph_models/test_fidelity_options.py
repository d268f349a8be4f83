"""The link-prediction builders pass the authors' variants through (docs/fidelity.md, item 5):
`time_diff_statistic` chooses the standardization statistic, `encoder_options` the encoder's form.
Absent keys give today's behaviour, so existing run configurations are unchanged."""

import numpy as np
import pytest

from timerepro import registry
from timerepro.encoders import standardization_stats
from timerepro.data.ctdg import link_prediction_split
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.tasks import link_prediction as lp


@pytest.fixture(scope="module")
def setting():
    models = registry.Registry(registry.params_dir()).models
    data, _ = lp.load_data({"dataset": "uci", "standin": "smoke"})
    split = link_prediction_split(data)
    graph = TemporalNeighbors.from_data(data, split.train)
    src, dst, ts = data.src[split.train], data.dst[split.train], data.ts[split.train]
    queries = (np.concatenate([src, dst]), np.concatenate([ts, ts]))
    return models, data, split, graph, queries


def build(setting, model: str, **cfg):
    models, data, split, graph, _ = setting
    config = {**models[model]["defaults"], "model": model, "dataset": "uci", "seed": 3, "encoder": "linear", **cfg}
    if model == "tgat":
        config["d_T"] = 4
    return lp.MODELS[model](lp.effective_config(config), data, split, graph)  # as the run resolves it


def per_query(setting, k: int, rng=None):
    graph, (nodes, times) = setting[3], setting[4]
    hood = graph.most_recent(nodes, times, k) if rng is None else graph.uniform(nodes, times, k, rng)
    dt = times[:, None] - hood.times
    return standardization_stats(dt, hood.neighbor_ids != 0, "per_query_mean")


@pytest.mark.parametrize("model", ["tgat", "tgn"])
def test_statistic_option_reaches_the_encoder(setting, model):
    pooled = build(setting, model)
    authors = build(setting, model, time_diff_statistic="per_query_mean")
    k = int(setting[0][model]["defaults"].get("num_neighbors", 10))
    assert (authors.time_mean, authors.time_std) == pytest.approx(per_query(setting, k))
    assert authors.time_std != pytest.approx(pooled.time_std)  # the spread of means, not of the differences
    assert float(authors.time_encoder.standardize.std) == pytest.approx(authors.time_std)


def test_uniform_runs_take_uniform_windows_for_the_authors_statistic(setting):
    authors = build(setting, "tgat", time_diff_statistic="per_query_mean", neighbor_sampling="uniform")
    expected = per_query(setting, 20, np.random.RandomState(3))  # the run's seed
    assert (authors.time_mean, authors.time_std) == pytest.approx(expected)
    assert (authors.time_mean, authors.time_std) != pytest.approx(per_query(setting, 20))


def test_dygformer_authors_window_is_the_full_sequence_length(setting):
    authors = build(setting, "dygformer", time_diff_statistic="per_query_mean", max_input_sequence_length=8,
                    patch_size=1, encoder_options={"affine": False})
    assert (authors.time_mean, authors.time_std) == pytest.approx(per_query(setting, 8))
    assert authors.time_encoder.proj is None and authors.time_dim == 1


def test_cawn_authors_statistic_averages_over_walk_positions(setting):
    cfg = dict(time_diff_statistic="per_query_mean", num_neighbors=4, neighbor_sampling="recent",
               position_dim=8, num_walk_heads=2, d_T=4)
    authors = build(setting, "cawn", **cfg)
    graph, (nodes, times) = setting[3], setting[4]
    hood = graph.most_recent(nodes, times, 4)
    # walk length 1: position 0 gives 0 for every walk, position 1 gives t - t_w (t itself for padding)
    rows = np.concatenate([np.zeros((len(nodes), 4)), times[:, None] - hood.times])
    assert (authors.time_mean, authors.time_std) == pytest.approx(standardization_stats(rows, None, "per_query_mean"))


def test_encoder_options_reach_every_backbone(setting):
    tgat = build(setting, "tgat", encoder="sine_cosine", encoder_options={"scale": False, "phase": True})
    assert not tgat.time_encoder.scale and tgat.time_encoder.phi is not None
    default = build(setting, "tgat", encoder="sine_cosine")
    assert default.time_encoder.scale and default.time_encoder.phi is None
    tgn = build(setting, "tgn", encoder="sine_cosine", encoder_options={"phase": True})
    assert tgn.time_encoder.phi is not None
