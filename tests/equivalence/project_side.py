"""The project's half of an equivalence fixture: rebuild the project's module from a fixture's stored
configuration, load the stored weights by state_dict key, feed the stored inputs, return its outputs.

A fixture (`tests/fixtures/equivalence/<case>.npz`, written by
`benchmarks/equivalence/build_fixtures.py` from a checkout of the reference code) holds:

* `meta`: JSON with `case`, `kind` (which runner below), `reference` (file and function of the
  reference code that produced `out/*`), `ctor` (the project constructor's keyword arguments),
  `options` (run settings: neighbour sampling seed, ...), `tolerance`, and for a model that differs
  from the reference on purpose `documented_difference` (a key of DIFFERENCES: the reference's outputs
  transformed by exactly that difference) and `reference_mode` (constructor options with which the
  project's module reproduces the reference itself);
* `graph/*`: a small temporal graph (src, dst, ts, edge_ids, node_feat, edge_feat);
* `in/*`: the queries (and for the memory models the batches), `w/<key>`: the project's state_dict,
  `out/*`: the reference's outputs, `aux/*`: other reference values a documented difference needs.

The reference code is never needed here: the tests run offline on the stored arrays. The builder
calls the same functions to check the fixture it writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import numpy as np
import torch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "equivalence"
MEMORY_STATE = ("memory", "last_update")  # the memory models' bank after the stream (DyGLib's MemoryBank)


def load(path: Path) -> dict:
    """An .npz fixture as {'meta': dict, 'graph': {...}, 'in': {...}, 'w': {...}, 'out': {...}, 'aux': {...}}."""
    with np.load(path, allow_pickle=False) as z:
        fx: dict = {"meta": json.loads(str(z["meta"])), "graph": {}, "in": {}, "w": {}, "out": {}, "aux": {}}
        for key in z.files:
            if "/" in key:
                group, name = key.split("/", 1)
                fx[group][name] = z[key]
    return fx


def _graph(fx: dict):
    from timerepro.graphs.neighbors import TemporalNeighbors

    g = fx["graph"]
    return TemporalNeighbors(g["src"], g["dst"], g["ts"], g["edge_ids"], num_nodes=g["node_feat"].shape[0])


def _load_weights(module: torch.nn.Module, weights: dict) -> None:
    """Load by state_dict key; every stored key must exist and every tensor of the module be stored."""
    state = {k: torch.from_numpy(np.array(v)) for k, v in weights.items()}
    missing, unexpected = module.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("_extra_state")]
    if missing or unexpected:
        raise KeyError(f"state_dict mismatch: missing {missing}, unexpected {unexpected}")


def _rng(fx: dict):
    seed = fx["meta"]["options"].get("neighbor_seed")
    return None if seed is None else np.random.RandomState(seed)


# ------------------------------------------------------------------ runners, one per kind

def _pair_model(cls) -> Callable[[dict], dict]:
    def run(fx: dict) -> dict:
        g = fx["graph"]
        model = cls(g["node_feat"], g["edge_feat"], **fx["meta"]["ctor"])
        _load_weights(model, fx["w"])
        model.eval()
        model.set_graph(_graph(fx), _rng(fx))
        with torch.no_grad():
            h_src, h_dst = model.pair_embeddings(fx["in"]["src"], fx["in"]["dst"], fx["in"]["ts"])
        return {"src": h_src.numpy(), "dst": h_dst.numpy()}

    return run


def run_tgat(fx: dict) -> dict:
    from timerepro.models.graph.tgat import TGAT

    return _pair_model(TGAT)(fx)


def run_dygformer(fx: dict) -> dict:
    from timerepro.models.graph.dygformer import DyGFormer

    return _pair_model(DyGFormer)(fx)


def run_dyg_mamba(fx: dict) -> dict:
    from timerepro.models.graph.dyg_mamba import DyGMamba

    return _pair_model(DyGMamba)(fx)


def run_cawn(fx: dict) -> dict:
    from timerepro.models.graph.cawn import CAWN

    return _pair_model(CAWN)(fx)


def _stream(cls, fx: dict, ctor: dict | None = None, state: tuple[str, ...] = ()) -> dict:
    """A stream of batches as DyGLib drives its MemoryModel: each batch's positives and negatives are scored
    on the memory left by the earlier batches, then the positives are observed (memory update); `state`:
    buffers returned after the last batch (float32, as DyGLib's memory bank holds them)."""
    g, inp = fx["graph"], fx["in"]
    model = cls(g["node_feat"], g["edge_feat"], **(ctor or fx["meta"]["ctor"]))
    _load_weights(model, fx["w"])
    model.eval()
    model.set_graph(_graph(fx), _rng(fx))
    out: dict = {}
    with torch.no_grad():
        for b in range(int(inp["n_batches"])):
            src, dst, neg, ts, eids = (inp[f"b{b}_{k}"] for k in ("src", "dst", "neg_dst", "ts", "edge_ids"))
            out[f"b{b}_pos_src"], out[f"b{b}_pos_dst"] = (h.numpy() for h in model.pair_embeddings(src, dst, ts))
            out[f"b{b}_neg_src"], out[f"b{b}_neg_dst"] = (h.numpy() for h in model.pair_embeddings(src, neg, ts))
            model.observe(src, dst, ts, eids)
    out.update({name: getattr(model, name).numpy().astype(np.float32) for name in state})
    return out


def run_graphmixer(fx: dict) -> dict:
    from timerepro.models.graph.graphmixer import GraphMixer

    return _pair_model(GraphMixer)(fx)


def run_tcl(fx: dict) -> dict:
    from timerepro.models.graph.tcl import TCL

    return _pair_model(TCL)(fx)


def run_tgn(fx: dict) -> dict:
    from timerepro.models.graph.tgn import TGN

    return _stream(TGN, fx)


def run_jodie(fx: dict) -> dict:
    """JODIE's stream, with the time-projection statistics computed by the project's builder function from
    the fixture's training prefix (`options.train_edges`); they are an output too (DyGLib's
    compute_src_dst_node_time_shifts), and so are the memory and last-update times after the last batch."""
    from timerepro.models.graph.jodie import JODIE, jodie_shift_stats

    g = fx["graph"]
    train = np.arange(len(g["src"])) < fx["meta"]["options"]["train_edges"]
    stats = jodie_shift_stats(SimpleNamespace(src=g["src"], dst=g["dst"], ts=g["ts"]), SimpleNamespace(train=train))
    out = _stream(JODIE, fx, {**fx["meta"]["ctor"], "shift_stats": stats}, state=MEMORY_STATE)
    out["shift_stats"] = np.array(stats)
    return out


def run_dyrep(fx: dict) -> dict:
    """DyRep's stream: its embeddings are the memory, which the messages' attention embeddings feed."""
    from timerepro.models.graph.dyrep import DyRep

    return _stream(DyRep, fx, state=MEMORY_STATE)


def run_swinit(fx: dict) -> dict:
    """SWINIT's stream (the authors' test-loop order: score a batch, then observe it) on the fixture's fixed
    spectral projection (a buffer among the weights); after the stream each node's memory with its pending
    message applied and its last event time (the authors' bank commits at once, the project one batch later)."""
    from timerepro.models.graph.spectral import SpectralFit
    from timerepro.models.graph.swinit import SWINIT

    g, rank = fx["graph"], fx["meta"]["options"]["rank"]
    fit = SpectralFit(rank, 0.0, torch.zeros(g["edge_feat"].shape[1], rank))  # V itself is among the weights
    built: list = []

    def make(node_feat, edge_feat, **ctor):
        built.append(SWINIT(node_feat.shape[0], edge_feat, fit, **ctor))
        return built[0]

    # fixtures built before the batch_graph option ran the project's stars
    ctor = {"batch_graph": "stars", "graph_reuse": "fresh", **fx["meta"]["ctor"]}
    out = _stream(make, fx, ctor) if ctor["batch_graph"] == "stars" else _whole_batch_stream(make, fx, ctor)
    model = built[0]
    with torch.no_grad():
        out["memory"] = model.current_memory(np.arange(model.num_nodes)).numpy()
    last = torch.where(model.has_pending, model.pending_time, model.last_update)  # (N,)
    out["last_update"] = last.numpy().astype(np.float32)
    return out


def _whole_batch_stream(make, fx: dict, ctor: dict) -> dict:
    """The stream as the link-prediction task drives a backbone whose graph spans the batch (SWINIT's glued
    graph): one `embed` call per batch over [src; src; dst; neg_dst] (LinkPredictionModel.score), then observe;
    with `graph_reuse: prepass` on the fixture's pre-pass batches (their own negatives)."""
    g, inp = fx["graph"], fx["in"]
    model = make(g["node_feat"], g["edge_feat"], **ctor)
    _load_weights(model, fx["w"])
    model.eval()
    if ctor["graph_reuse"] == "prepass":  # the stored graphs are used in training mode (the fixture's dropout: 0)
        model.set_prepass([(np.concatenate([inp[f"b{b}_src"], inp[f"b{b}_dst"], inp[f"b{b}_prepass_neg_dst"]]),
                            float(np.min(inp[f"b{b}_ts"]))) for b in range(int(inp["n_batches"]))])
        model.train()
    model.set_graph(_graph(fx), None)
    out: dict = {}
    with torch.no_grad():
        for b in range(int(inp["n_batches"])):
            src, dst, neg, ts, eids = (inp[f"b{b}_{k}"] for k in ("src", "dst", "neg_dst", "ts", "edge_ids"))
            n = len(src)
            h = model.embed(np.concatenate([src, src, dst, neg]), np.tile(ts, 4)).numpy()  # (4B, d)
            out[f"b{b}_pos_src"], out[f"b{b}_neg_src"] = h[:n], h[n:2 * n]
            out[f"b{b}_pos_dst"], out[f"b{b}_neg_dst"] = h[2 * n:3 * n], h[3 * n:]
            model.observe(src, dst, ts, eids)
    return out


def run_hawkes(fx: dict) -> dict:
    """Hidden states after every event and intensities at the stored offsets after each event."""
    from timerepro.models.tpp.hawkes_attention import HawkesAttention

    inp = fx["in"]
    model = HawkesAttention(**fx["meta"]["ctor"])
    _load_weights(model, fx["w"])
    model.eval()
    times, types = torch.from_numpy(inp["time_seqs"]), torch.from_numpy(inp["type_seqs"])
    with torch.no_grad():
        hidden = model.encode(times, types)
        lam = model.intensities_at(torch.from_numpy(inp["sample_dtimes"]), hidden)
    return {"hidden": hidden.numpy(), "intensities": lam.numpy()}


def run_time_stats(fx: dict) -> dict:
    """The standardization statistics of time differences (`encoders.standardization_stats`) as the
    link-prediction builders compute them on the graph, against the authors' `setup` code."""
    from timerepro.models.graph.cawn import walk_time_stats
    from timerepro.models.graph.time_stats import time_difference_stats

    graph, inp, opt = _graph(fx), fx["in"], fx["meta"]["options"]
    out = {}
    for window in opt["windows"]:
        mean, std = time_difference_stats(graph, inp["nodes"], inp["times"], window, opt["statistic"])
        out[f"k{window}"] = np.array([mean, std])
    if "walk_neighbors" in opt:
        mean, std = walk_time_stats(graph, inp["nodes"], inp["times"], opt["walk_neighbors"], opt["walk_length"],
                                    "recent", 0.0)
        out["walks"] = np.array([mean, std])
    return out


RUNNERS: dict[str, Callable[[dict], dict]] = {
    "tgat": run_tgat,
    "dygformer": run_dygformer,
    "cawn": run_cawn,
    "dyg_mamba": run_dyg_mamba,
    "graphmixer": run_graphmixer,
    "tcl": run_tcl,
    "tgn": run_tgn,
    "jodie": run_jodie,
    "dyrep": run_dyrep,
    "swinit": run_swinit,
    "hawkes": run_hawkes,
    "time_stats": run_time_stats,
}


def project_outputs(fx: dict, reference_mode: bool = False) -> dict:
    """The project's outputs on the fixture's inputs; with `reference_mode`, the project's module built with
    the fixture's `reference_mode` options (the documented switch that reproduces the reference exactly)."""
    if reference_mode:
        meta = fx["meta"]
        fx = {**fx, "meta": {**meta, "ctor": {**meta["ctor"], **meta["reference_mode"]}}}
    return RUNNERS[fx["meta"]["kind"]](fx)


def expected_outputs(fx: dict) -> dict:
    """The reference's outputs, with a documented, intended difference applied where the fixture names
    one (see `DIFFERENCES`), so that equality to the tolerance shows the difference is exactly that."""
    name = fx["meta"].get("documented_difference")
    return DIFFERENCES[name](fx) if name else dict(fx["out"])


def _hawkes_softplus_clamp(fx: dict) -> dict:
    """The authors' ScaledSoftplus (torch_baselayer.py:29-39) clamps beta*x at log(1e5) inside the exp
    for beta*x <= 20: there it returns log1p(1e5)/beta, a flat plateau, where the project (and the
    formula softplus_beta) gives log(1 + exp(beta x)) / beta. The fixture stores the pre-activation
    and beta; outside that band the two are the same function."""
    out = dict(fx["out"])
    pre, beta = fx["aux"]["pre_activation"], fx["aux"]["beta"]
    bx = beta * pre
    band = (bx > np.log(1e5)) & (bx <= 20.0)
    exact = np.log1p(np.exp(np.minimum(bx, 20.0))) / beta
    out["intensities"] = np.where(band, exact, fx["out"]["intensities"]).astype(np.float32)
    return out


DIFFERENCES: dict[str, Callable[[dict], dict]] = {
    "hawkes_softplus_clamp": _hawkes_softplus_clamp,
}
