"""Build the equivalence fixtures: the reference implementations and the project's, same weights, same inputs.

For every case below, the reference module (DyGLib, hsinghuan/dg-linear-time or the Hawkes Attention
authors' code, from a local checkout given on the command line) is built on a small temporal graph
(or a small batch of event sequences) with seeded random weights (perturbed so that no parameter sits
at a special value such as a zero phase), run in eval mode on a fixed batch of queries, and its outputs
stored. Its weights are renamed to the project's state_dict keys (the maps below, one per model) and
stored with the inputs as `tests/fixtures/equivalence/<case>.npz`; `tests/equivalence/` loads them into
the project's modules offline and compares to 1e-5. The builder runs that comparison too and prints
the largest absolute difference per case.

Neighbours are fixed on both sides by construction: "recent" sampling on the same graph (both sides
take the k latest interactions strictly before the query time), or DyGLib's seeded uniform stream,
which the project reproduces draw for draw (`graphs.neighbors.TemporalNeighbors.uniform`). Times are
integers below 2^24 so DyGLib's float32 times are exact.

The reference code is only read from the given paths (sys.path), never copied or installed.

Run (from the repository root, with the project's .venv):
    python benchmarks/equivalence/build_fixtures.py --dyglib /path/to/DyGLib \
        --dg-linear-time /path/to/dg-linear-time --hawkes /path/to/Time-aware-Hawkes-Attention
A missing path skips its cases and says so; `--only CASE ...` builds a subset.

The SWINIT cases (`--swinit /path/to/GNN_SWINIT`) import torch_geometric, which the project's .venv does not
have: run them from a scratch environment outside the repository, torch first and pinned, e.g.
    python3.11 -m venv /tmp/pyg-venv && /tmp/pyg-venv/bin/pip install torch==2.13.0   # or the local wheel
    /tmp/pyg-venv/bin/pip install torch_geometric numpy scipy scikit-learn
    PYTHONPATH=src /tmp/pyg-venv/bin/python benchmarks/equivalence/build_fixtures.py --swinit /path/to/GNN_SWINIT \
        --only swinit_authors swinit_gru_authors swinit_glued_authors swinit_glued_prepass_authors
(fixtures built with torch 2.13.0, torch_geometric 2.8.1, numpy 2). The compiled extensions the authors' modules
import (torch_scatter, torch_sparse) are replaced by small torch stand-ins where absent (`_pyg_extension_shims`).

The DyG-Mamba cases (`--dyg-mamba /path/to/DyG-Mamba --mamba-ssm /path/to/mamba`, checkouts of
Clearloveyuan/DyG-Mamba and state-spaces/mamba) run the authors' module on mamba_ssm's pure-PyTorch reference
functions (`selective_scan_ref`, `rms_norm_ref`, read from the mamba checkout into stand-in modules by
`_mamba_ssm_shims`; mamba_ssm itself, a CUDA build, is not installed). Their code imports `einops`: put it on the
path from a scratch install, e.g.
    pip install --target /tmp/pylib einops
    PYTHONPATH=src:/tmp/pylib python benchmarks/equivalence/build_fixtures.py --dyg-mamba DIR --mamba-ssm DIR \
        --only dyg_mamba_authors dyg_mamba_wo_selective_authors dyg_mamba_time_bc_authors
(fixtures built with torch 2.13.0, einops 0.8.2, DyG-Mamba 05e397a, mamba e9594ce).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.equivalence.project_side import FIXTURES, expected_outputs, project_outputs  # noqa: E402

NODE_DIM, EDGE_DIM, TIME_DIM = 6, 5, 4
TOL = 1e-5


# ------------------------------------------------------------------ the shared inputs

def make_graph(seed: int = 0, num_nodes: int = 10, num_edges: int = 40, ties: bool = False, max_step: int = 40) -> dict:
    """A small temporal graph: integer, strictly increasing times, steps below `max_step` (`ties`: non-decreasing,
    about half of the steps 0 and the first edge at time 0, as padding's); node 10 first interacts late (cold start for early
    queries); node and edge features standard normal, row 0 (padding) zero."""
    rng = np.random.default_rng(seed)
    src = rng.integers(1, num_nodes, size=num_edges)  # nodes 1..9
    dst = (src + rng.integers(1, num_nodes - 1, size=num_edges) - 1) % (num_nodes - 1) + 1
    src[-4:] = num_nodes  # node 10 appears only in the last edges
    ts = np.cumsum(rng.integers(1, max_step, size=num_edges)).astype(np.float64)
    if ties:
        steps = rng.integers(1, 40, size=num_edges) * (rng.random(num_edges) < 0.5)
        steps[0] = 0
        ts = np.cumsum(steps).astype(np.float64)
    node_feat = rng.standard_normal((num_nodes + 1, NODE_DIM)).astype(np.float32)
    edge_feat = rng.standard_normal((num_edges + 1, EDGE_DIM)).astype(np.float32)
    node_feat[0] = 0.0
    edge_feat[0] = 0.0
    return dict(src=src.astype(np.int64), dst=dst.astype(np.int64), ts=ts, edge_ids=np.arange(1, num_edges + 1),
                node_feat=node_feat, edge_feat=edge_feat)


# Steps of 1-5 (times below 200) where a time difference spans the whole graph (a memory's first message
# encodes t - 0; uniform sampling draws old neighbours): the learnable encoder's angle w dt + b in float32
# rounds differently in DyGLib's fused Linear(1, d) and the project's w * dt + b (up to 6e-5 on cos at
# dt ~ 1000, 1.1e-5 on the embeddings of the 40-step graph); smaller times keep it near 1e-6.
SMALL_TIMES = dict(max_step=6)


def make_queries(graph: dict) -> dict:
    """Six candidate edges: late queries with full histories, one at an edge's exact time (that edge is
    not visible), one with the cold-start node 10 before its first interaction, one node without any."""
    t_end = float(graph["ts"][-1])
    t_mid = float(graph["ts"][20])
    return dict(src=np.array([1, 2, 3, 10, 4, 5]), dst=np.array([6, 7, 8, 9, 10, 1]),
                ts=np.array([t_end + 5, t_end + 1, t_mid, t_mid, t_end + 9, float(graph["ts"][2])]))


def perturb(module: torch.nn.Module, seed: int, scale: float = 0.1) -> None:
    """Add seeded noise to every parameter, so zero-initialised phases, biases and BOS rows are not special."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(scale * torch.randn(p.shape, generator=gen))


# ------------------------------------------------------------------ reference checkouts on sys.path

@contextlib.contextmanager
def reference_path(path: Path, packages: tuple[str, ...]):
    """Import from `path` only inside the block; the reference repos share top-level names (models, utils)."""
    for name in [m for m in sys.modules if m.split(".")[0] in packages]:
        del sys.modules[name]
    sys.path.insert(0, str(path))
    try:
        yield
    finally:
        sys.path.remove(str(path))
        for name in [m for m in sys.modules if m.split(".")[0] in packages]:
            del sys.modules[name]


def dyglib_sampler(graph: dict, strategy: str = "recent", seed: int | None = None):
    from utils.utils import get_neighbor_sampler

    data = SimpleNamespace(src_node_ids=graph["src"], dst_node_ids=graph["dst"], edge_ids=graph["edge_ids"],
                           node_interact_times=graph["ts"])
    return get_neighbor_sampler(data, sample_neighbor_strategy=strategy, seed=seed)


def dglt_sampler(graph: dict, strategy: str = "recent", seed: int | None = None):
    from src.utils.data import get_neighbor_sampler

    data = SimpleNamespace(src_node_ids=graph["src"], dst_node_ids=graph["dst"], edge_ids=graph["edge_ids"],
                           node_interact_times=graph["ts"])
    return get_neighbor_sampler(data=data, sample_neighbor_strategy=strategy, seed=seed)


# ------------------------------------------------------------------ state_dict renaming

def rename(state: dict, rules: list[tuple[str, str]], transforms: dict[str, Callable] | None = None) -> dict:
    """Reference state_dict -> project keys by ordered regex rules (first match wins); keys matching no
    rule are dropped (duplicates of a shared module, non-parameters). `transforms[project_key]` reshapes."""
    out = {}
    for key, value in state.items():
        for pattern, repl in rules:
            if re.fullmatch(pattern, key):
                new = re.sub(pattern, repl, key)
                out[new] = (transforms or {}).get(new, lambda v: v)(value.detach().clone())
                break
    return out


FLAT = lambda v: v.reshape(-1)  # noqa: E731  nn.Linear(1, d).weight (d, 1) -> (d,)

TIME_ENCODER = [(r"(?:embedding_module\.)?time_encoder\.w\.weight", "time_encoder.w"),
                (r"(?:embedding_module\.)?time_encoder\.w\.bias", "time_encoder.phi"),
                (r"time_encoder\.linear\.(weight|bias)", r"time_encoder.proj.\1")]
TIME_TRANSFORMS = {"time_encoder.w": FLAT}
ATTENTION = [(r"(?:embedding_module\.)?temporal_conv_layers\.(\d+)\.query_projection\.weight", r"attention.\1.w_q.weight"),
             (r"(?:embedding_module\.)?temporal_conv_layers\.(\d+)\.key_projection\.weight", r"attention.\1.w_k.weight"),
             (r"(?:embedding_module\.)?temporal_conv_layers\.(\d+)\.value_projection\.weight", r"attention.\1.w_v.weight"),
             (r"(?:embedding_module\.)?temporal_conv_layers\.(\d+)\.residual_fc\.(weight|bias)", r"attention.\1.w_o.\2"),
             (r"(?:embedding_module\.)?temporal_conv_layers\.(\d+)\.layer_norm\.(weight|bias)", r"attention.\1.norm.\2"),
             (r"(?:embedding_module\.)?merge_layers\.(\d+)\.fc1\.(weight|bias)", r"merge.\1.fc0.\2"),
             (r"(?:embedding_module\.)?merge_layers\.(\d+)\.fc2\.(weight|bias)", r"merge.\1.fc1.\2")]
TGAT_RULES = TIME_ENCODER + ATTENTION
TGN_RULES = TIME_ENCODER + ATTENTION + [(r"memory_updater\.memory_updater\.(.*)", r"memory_updater.\1")]
DYGFORMER_RULES = TIME_ENCODER + [
    (r"neighbor_co_occurrence_encoder\.neighbor_co_occurrence_encode_layer\.(\d)\.(weight|bias)",
     r"cooccurrence.encode.\1.\2"),
    (r"projection_layer\.neighbor_co_occurrence\.(weight|bias)", r"projection.cooccurrence.\1"),
    (r"projection_layer\.(node|edge|time)\.(weight|bias)", r"projection.\1.\2"),
    (r"transformers\.(\d+)\.multi_head_attention\.(.*)", r"layers.\1.attention.\2"),
    (r"transformers\.(\d+)\.linear_layers\.0\.(weight|bias)", r"layers.\1.ffn_in.\2"),
    (r"transformers\.(\d+)\.linear_layers\.1\.(weight|bias)", r"layers.\1.ffn_out.\2"),
    (r"transformers\.(\d+)\.norm_layers\.0\.(weight|bias)", r"layers.\1.norm_attn.\2"),
    (r"transformers\.(\d+)\.norm_layers\.1\.(weight|bias)", r"layers.\1.norm_ffn.\2"),
    (r"output_layer\.(weight|bias)", r"output.\1"),
    (r"bos_embedding", "bos")]
DYGFORMER_TRANSFORMS = {**TIME_TRANSFORMS, "bos": lambda v: v.reshape(1, 1, -1)}
CAWN_RULES = TIME_ENCODER + [
    (r"position_encoder\.position_encode_layer\.(\d)\.(weight|bias)", r"position_mlp.\1.\2"),
    (r"walk_encoder\.feature_encoder\.bilstm_encoder\.(.*)", r"feature_lstm.lstm.\1"),
    (r"walk_encoder\.position_encoder\.bilstm_encoder\.(.*)", r"position_lstm.lstm.\1"),
    (r"walk_encoder\.transformer_encoder\.multi_head_attention\.(.*)", r"transformer.attention.\1"),
    (r"walk_encoder\.transformer_encoder\.linear_layers\.0\.(weight|bias)", r"transformer.ffn.0.\1"),
    (r"walk_encoder\.transformer_encoder\.linear_layers\.1\.(weight|bias)", r"transformer.ffn.3.\1"),
    (r"walk_encoder\.transformer_encoder\.norm_layers\.0\.(weight|bias)", r"transformer.norm0.\1"),
    (r"walk_encoder\.transformer_encoder\.norm_layers\.1\.(weight|bias)", r"transformer.norm1.\1"),
    (r"walk_encoder\.projection_layers\.0\.(weight|bias)", r"project_in.\1"),
    (r"walk_encoder\.projection_layers\.1\.(weight|bias)", r"project_out.\1")]


def project_state(project_module: torch.nn.Module, mapped: dict) -> dict:
    """The project's full state_dict with every tensor the reference provides; refuses a mapped key the
    project lacks or a project parameter the reference did not provide (buffers such as the encoders'
    standardization statistics and TGN's empty memory keep the project's values)."""
    state = project_module.state_dict()
    unknown = sorted(set(mapped) - set(state))
    params = {k for k, _ in project_module.named_parameters()}
    unfilled = sorted(params - set(mapped))
    if unknown or unfilled:
        raise KeyError(f"weight map incomplete: reference keys without a project key {unknown}, "
                       f"project parameters without a reference value {unfilled}")
    out = {}
    for key, value in state.items():
        if not isinstance(value, torch.Tensor):
            continue  # TGN's extra state (named memory copies), empty here
        src = mapped.get(key, value)
        if tuple(src.shape) != tuple(value.shape):
            raise ValueError(f"{key}: reference shape {tuple(src.shape)} != project shape {tuple(value.shape)}")
        out[key] = src.detach().cpu().numpy().astype(value.detach().cpu().numpy().dtype)
    return out


# ------------------------------------------------------------------ cases

CASES: dict[str, dict] = {}


def case(name: str, reference: str, kind: str):
    def deco(fn):
        CASES[name] = dict(fn=fn, reference=reference, kind=kind)
        return fn

    return deco


def _pair_fixture(name, kind, ref_module, ref_embed, project_cls, ctor, rules, transforms, graph, queries,
                  reference, options=None, documented=None):
    """Common tail of the pair-embedding cases: reference outputs, project weights, fixture dict."""
    ref_module.eval()
    with torch.no_grad():
        h_src, h_dst = ref_embed()
    proj = project_cls(graph["node_feat"], graph["edge_feat"], **ctor)
    weights = project_state(proj, rename(ref_module.state_dict(), rules, transforms))
    return dict(meta=dict(case=name, kind=kind, reference=reference, ctor=ctor, options=options or {},
                          tolerance=TOL, documented_difference=documented),
                graph=graph, inputs=queries, weights=weights, outputs={"src": h_src.numpy(), "dst": h_dst.numpy()})


# ---- TGAT

def _tgat_dyglib(name, strategy, seed=None):
    from models.TGAT import TGAT as RefTGAT

    from timerepro.models.graph.tgat import TGAT

    graph, queries = make_graph(), None
    queries = make_queries(graph)
    torch.manual_seed(1)
    sampler = dyglib_sampler(graph, strategy, seed)
    ref = RefTGAT(graph["node_feat"], graph["edge_feat"], sampler, time_feat_dim=TIME_DIM, num_layers=2, num_heads=2,
                  dropout=0.1)
    perturb(ref, 2)
    ref.set_neighbor_sampler(sampler)  # DyGLib resets the uniform stream here
    ctor = dict(encoder="cosine", time_dim=TIME_DIM, num_layers=2, num_heads=2, num_neighbors=3, dropout=0.1,
                sampling=strategy)
    return _pair_fixture(name, "tgat", ref, lambda: ref.compute_src_dst_node_temporal_embeddings(
        queries["src"], queries["dst"], queries["ts"], num_neighbors=3), TGAT, ctor, TGAT_RULES, TIME_TRANSFORMS,
        graph, queries, "DyGLib models/TGAT.py TGAT.compute_src_dst_node_temporal_embeddings",
        options={"neighbor_seed": seed})


@case("tgat_cosine_dyglib", "DyGLib", "tgat")
def tgat_cosine_dyglib():
    """DyGLib's TGAT (sinusoidal encoder), 2 layers, 3 most recent neighbours."""
    return _tgat_dyglib("tgat_cosine_dyglib", "recent")


@case("tgat_cosine_uniform_dyglib", "DyGLib", "tgat")
def tgat_cosine_uniform_dyglib():
    """DyGLib's TGAT with uniform neighbour sampling (seeded stream 0): the project draws the same neighbours."""
    return _tgat_dyglib("tgat_cosine_uniform_dyglib", "uniform", seed=0)


# Table 6's positional input as the authors' code computes it (use_positional_embedding=True): the project's
# TGAT / DyGFormer with time_input="position", position_index="distinct_times"
AUTHORS_POSITION = dict(time_input="position", position_index="distinct_times")


def _tgat_dglt(name, method, encoder, mean, std, encoder_options=None, position=False):
    from src.models.modules.tgat import TGAT as RefTGAT

    from timerepro.models.graph.tgat import TGAT

    graph = make_graph(ties=position)
    queries = make_queries(graph)
    torch.manual_seed(3)
    sampler = dglt_sampler(graph)
    ref = RefTGAT(graph["node_feat"], graph["edge_feat"], sampler, time_feat_dim=TIME_DIM, num_layers=2, num_heads=2,
                  dropout=0.1, time_encoding_method=method, avg_time_diff=mean, std_time_diff=std,
                  use_positional_embedding=position)
    perturb(ref, 4)
    ctor = dict(encoder=encoder, time_dim=TIME_DIM, time_mean=mean, time_std=std, num_layers=2, num_heads=2,
                num_neighbors=3, dropout=0.1, sampling="recent", encoder_options=encoder_options,
                **(AUTHORS_POSITION if position else {}))
    return _pair_fixture(name, "tgat", ref, lambda: ref.compute_src_dst_node_temporal_embeddings(
        queries["src"], queries["dst"], queries["ts"], num_neighbors=3), TGAT, ctor, TGAT_RULES, TIME_TRANSFORMS,
        graph, queries, f"dg-linear-time src/models/modules/tgat.py TGAT (time_encoding_method={method!r}"
                        f"{', use_positional_embedding=True' if position else ''})")


@case("tgat_linear_dglt", "dg-linear-time", "tgat")
def tgat_linear_dglt():
    """The authors' TGAT with the linear encoder (LinearTimeEncoder: Linear(1, d) on (dt - mu)/sigma)."""
    return _tgat_dglt("tgat_linear_dglt", "linear", "linear", 150.0, 90.0)


@case("tgat_cosine_scale_dglt", "dg-linear-time", "tgat")
def tgat_cosine_scale_dglt():
    """The authors' sinusoidal-scale TGAT (CosineTimeEncoder on (dt - mu)/sigma)."""
    return _tgat_dglt("tgat_cosine_scale_dglt", "sinusoidal", "cosine_scale", 150.0, 90.0)


@case("tgat_sine_cosine_dglt", "dg-linear-time", "tgat")
def tgat_sine_cosine_dglt():
    """The authors' sine-cosine TGAT (Table 4): no sqrt(1/k) factor, a learnable phase; the project's
    sine_cosine encoder in its code variant (scale=False, phase=True)."""
    return _tgat_dglt("tgat_sine_cosine_dglt", "sinecosine", "sine_cosine", 0.0, 1.0,
                      encoder_options={"scale": False, "phase": True})


@case("tgat_position_dglt", "dg-linear-time", "tgat")
def tgat_position_dglt():
    """The authors' TGAT with the positional input of Table 6 on a graph with tied times: each neighbour's rank
    among the distinct earlier times (ties share one), padding one past the oldest."""
    return _tgat_dglt("tgat_position_dglt", "sinusoidal", "cosine", 0.0, 1.0, position=True)


# ---- DyGFormer and its variants

DYGFORMER_SHAPE = dict(channel_dim=4, patch_size=2, max_input_sequence_length=6, num_layers=2, num_heads=2,
                       dropout=0.1)


@case("dygformer_cosine_dyglib", "DyGLib", "dygformer")
def dygformer_cosine_dyglib():
    """DyGLib's DyGFormer: joint sequences, patches of 2, histories cut to 5 interactions."""
    from models.DyGFormer import DyGFormer as RefDyGFormer

    from timerepro.models.graph.dygformer import DyGFormer

    graph = make_graph()
    queries = make_queries(graph)
    torch.manual_seed(5)
    ref = RefDyGFormer(graph["node_feat"], graph["edge_feat"], dyglib_sampler(graph), time_feat_dim=TIME_DIM,
                       channel_embedding_dim=4, patch_size=2, num_layers=2, num_heads=2, dropout=0.1,
                       max_input_sequence_length=6)
    perturb(ref, 6)
    ctor = dict(variant="dygformer", encoder="cosine", time_dim=TIME_DIM, **DYGFORMER_SHAPE)
    return _pair_fixture("dygformer_cosine_dyglib", "dygformer", ref, lambda: ref.compute_src_dst_node_temporal_embeddings(
        queries["src"], queries["dst"], queries["ts"]), DyGFormer, ctor, DYGFORMER_RULES, DYGFORMER_TRANSFORMS, graph,
        queries, "DyGLib models/DyGFormer.py DyGFormer.compute_src_dst_node_temporal_embeddings")


def _dglt_dygformer(name, variant, method, encoder, time_dim, mean=0.0, std=1.0, d_tc=None, encoder_options=None,
                    position=False):
    from src.models.modules.dygdecoder import DyGDecoder as RefDecoder
    from src.models.modules.dygformer import DyGFormer as RefDyGFormer

    from timerepro.models.graph.dygformer import DyGFormer

    graph = make_graph(ties=position)
    queries = make_queries(graph)
    torch.manual_seed(7)
    common = dict(node_raw_features=graph["node_feat"], edge_raw_features=graph["edge_feat"],
                  neighbor_sampler=dglt_sampler(graph), time_feat_dim=time_dim, channel_embedding_dim=4,
                  output_dim=NODE_DIM, patch_size=2, num_layers=2, num_heads=2, dropout=0.1,
                  max_input_sequence_length=6, time_encoding_method=method, avg_time_diff=mean, std_time_diff=std)
    if variant == "dygdecoder":
        ref = RefDecoder(**common, embed_method="separate", add_bos=True)
        source = "dg-linear-time src/models/modules/dygdecoder.py DyGDecoder (embed_method='separate', add_bos=True)"
    else:
        embed = "separate" if variant == "dygformer_separate" else "original"
        ref = RefDyGFormer(**common, embed_method=embed, time_channel_embedding_dim=d_tc,
                           use_positional_embedding=position)
        source = (f"dg-linear-time src/models/modules/dygformer.py DyGFormer (embed_method={embed!r}"
                  f"{', use_positional_embedding=True' if position else ''})")
    perturb(ref, 8)
    ctor = dict(variant=variant, encoder=encoder, time_dim=time_dim, time_mean=mean, time_std=std,
                time_channel_dim=d_tc, encoder_options=encoder_options, **DYGFORMER_SHAPE,
                **(AUTHORS_POSITION if position else {}))
    return _pair_fixture(name, "dygformer", ref, lambda: ref.compute_src_dst_node_temporal_embeddings(
        queries["src"], queries["dst"], queries["ts"]), DyGFormer, ctor, DYGFORMER_RULES, DYGFORMER_TRANSFORMS, graph,
        queries, f"{source}, time_encoding_method={method!r}")


@case("dygformer_linear_dglt", "dg-linear-time", "dygformer")
def dygformer_linear_dglt():
    """The authors' DyGFormer with the linear encoder: NoTimeEncoder, d_T = 1, i.e. the standardized
    difference fed to the time channel's projection; the project's linear encoder with affine=False."""
    return _dglt_dygformer("dygformer_linear_dglt", "dygformer", "linear", "linear", 1, 150.0, 90.0,
                           encoder_options={"affine": False})


@case("dygformer_dtc_dglt", "dg-linear-time", "dygformer")
def dygformer_dtc_dglt():
    """The authors' DyGFormer with a narrower temporal channel (Figure 6's d_tc = 2)."""
    return _dglt_dygformer("dygformer_dtc_dglt", "dygformer", "sinusoidal", "cosine", TIME_DIM, d_tc=2)


@case("dygformer_position_dglt", "dg-linear-time", "dygformer")
def dygformer_position_dglt():
    """The authors' DyGFormer with Table 6's positional input on a graph with tied times (np.unique rank + 1)."""
    return _dglt_dygformer("dygformer_position_dglt", "dygformer", "sinusoidal", "cosine", TIME_DIM, position=True)


@case("dygformer_separate_cosine_dglt", "dg-linear-time", "dygformer")
def dygformer_separate_cosine_dglt():
    """DyGFormer-separate (the authors' embed_method='separate')."""
    return _dglt_dygformer("dygformer_separate_cosine_dglt", "dygformer_separate", "sinusoidal", "cosine", TIME_DIM)


@case("dygdecoder_cosine_dglt", "dg-linear-time", "dygformer")
def dygdecoder_cosine_dglt():
    """DyGDecoder: BOS, causal attention, the target node's patch read out."""
    return _dglt_dygformer("dygdecoder_cosine_dglt", "dygdecoder", "sinusoidal", "cosine", TIME_DIM)


@case("dygdecoder_linear_dglt", "dg-linear-time", "dygformer")
def dygdecoder_linear_dglt():
    """DyGDecoder with the authors' linear encoder (NoTimeEncoder, d_T = 1)."""
    return _dglt_dygformer("dygdecoder_linear_dglt", "dygdecoder", "linear", "linear", 1, 150.0, 90.0,
                           encoder_options={"affine": False})


# ---- TGN

def _tgn_batches(graph: dict, batch: int = 5, n_batches: int = 4, seed: int = 11) -> dict:
    rng = np.random.default_rng(seed)
    out = {"n_batches": np.array(n_batches)}
    start = len(graph["src"]) - batch * n_batches
    for b in range(n_batches):
        sl = slice(start + b * batch, start + (b + 1) * batch)
        out[f"b{b}_src"], out[f"b{b}_dst"] = graph["src"][sl], graph["dst"][sl]
        out[f"b{b}_ts"], out[f"b{b}_edge_ids"] = graph["ts"][sl], graph["edge_ids"][sl]
        out[f"b{b}_neg_dst"] = rng.integers(1, graph["node_feat"].shape[0], size=batch)
    return out


def _dyglib_stream(ref, inputs: dict, state: bool = False) -> dict:
    """DyGLib's MemoryModel over the stored batches from an empty memory bank, as its training loop drives it:
    per batch the negatives, then the positives (which update the memory); with `state`, the bank's memory
    and last-update times after the last batch."""
    ref.eval()
    ref.memory_bank.__init_memory_bank__()
    outputs = {}
    with torch.no_grad():
        for b in range(int(inputs["n_batches"])):
            src, dst, neg, ts, eids = (inputs[f"b{b}_{k}"] for k in ("src", "dst", "neg_dst", "ts", "edge_ids"))
            outputs[f"b{b}_neg_src"], outputs[f"b{b}_neg_dst"] = (h.numpy() for h in ref.compute_src_dst_node_temporal_embeddings(
                src, neg, ts, edge_ids=None, edges_are_positive=False, num_neighbors=3))
            outputs[f"b{b}_pos_src"], outputs[f"b{b}_pos_dst"] = (h.numpy() for h in ref.compute_src_dst_node_temporal_embeddings(
                src, dst, ts, edge_ids=eids, edges_are_positive=True, num_neighbors=3))
    if state:
        outputs["memory"] = ref.memory_bank.node_memories.detach().numpy().copy()
        outputs["last_update"] = ref.memory_bank.node_last_updated_times.detach().numpy().copy()
    return outputs


def _memory_fixture(name, kind, ref, project_cls, ctor, rules, graph, inputs, outputs, options=None):
    proj = project_cls(graph["node_feat"], graph["edge_feat"], **ctor)
    weights = project_state(proj, rename(ref.state_dict(), rules, TIME_TRANSFORMS))
    reference = (f"DyGLib models/MemoryModel.py MemoryModel(model_name={ref.model_name!r})"
                 ".compute_src_dst_node_temporal_embeddings")
    return dict(meta=dict(case=name, kind=kind, reference=reference, ctor=ctor, options=options or {},
                          tolerance=TOL, documented_difference=None),
                graph=graph, inputs=inputs, weights=weights, outputs=outputs)


@case("tgn_cosine_dyglib", "DyGLib", "tgn")
def tgn_cosine_dyglib():
    """DyGLib's TGN (MemoryModel, GRU memory, 1 attention layer, 3 recent neighbours) over 4 batches:
    negatives then positives scored per batch (DyGLib's order), the positives then update the memory."""
    from models.MemoryModel import MemoryModel

    from timerepro.models.graph.tgn import TGN

    graph = make_graph()
    inputs = _tgn_batches(graph)
    torch.manual_seed(9)
    ref = MemoryModel(graph["node_feat"], graph["edge_feat"], dyglib_sampler(graph), time_feat_dim=TIME_DIM,
                      model_name="TGN", num_layers=1, num_heads=2, dropout=0.1)
    perturb(ref, 10)
    ctor = dict(encoder="cosine", time_dim=TIME_DIM, num_layers=1, num_heads=2, num_neighbors=3, dropout=0.1)
    return _memory_fixture("tgn_cosine_dyglib", "tgn", ref, TGN, ctor, TGN_RULES, graph, inputs,
                           _dyglib_stream(ref, inputs))


# ---- JODIE and DyRep (DyGLib's MemoryModel with an RNN cell)

JODIE_RULES = TIME_ENCODER + [(r"memory_updater\.memory_updater\.(.*)", r"memory_updater.\1"),
                              (r"embedding_module\.linear_layer\.(weight|bias)", r"projection.\1")]
MEMORY_TRAIN_EDGES = 28  # the graph's "training" prefix (70%): JODIE's time-shift statistics


@case("jodie_dyglib", "DyGLib", "jodie")
def jodie_dyglib():
    """DyGLib's JODIE (MemoryModel, RNN memory, time-projection embedding) over 6 batches of 5 edges, with
    the source/destination time-shift statistics of the first 28 edges (DyGLib's
    compute_src_dst_node_time_shifts; the project recomputes them with `jodie_shift_stats`); also the
    memory bank after the stream."""
    from models.MemoryModel import MemoryModel, compute_src_dst_node_time_shifts

    from timerepro.models.graph.jodie import JODIE

    graph = make_graph(**SMALL_TIMES)
    inputs = _tgn_batches(graph, n_batches=6)
    cut = MEMORY_TRAIN_EDGES
    stats = compute_src_dst_node_time_shifts(graph["src"][:cut], graph["dst"][:cut], graph["ts"][:cut])
    torch.manual_seed(14)
    ref = MemoryModel(graph["node_feat"], graph["edge_feat"], dyglib_sampler(graph), time_feat_dim=TIME_DIM,
                      model_name="JODIE", num_layers=1, num_heads=2, dropout=0.1, src_node_mean_time_shift=stats[0],
                      src_node_std_time_shift=stats[1], dst_node_mean_time_shift_dst=stats[2],
                      dst_node_std_time_shift=stats[3])
    perturb(ref, 15)
    outputs = _dyglib_stream(ref, inputs, state=True)
    outputs["shift_stats"] = np.array(stats, dtype=np.float64)
    ctor = dict(encoder="cosine", time_dim=TIME_DIM, memory_updater="rnn", dropout=0.1)
    return _memory_fixture("jodie_dyglib", "jodie", ref, JODIE, ctor, JODIE_RULES, graph, inputs, outputs,
                           options={"train_edges": cut})


@case("dyrep_dyglib", "DyGLib", "dyrep")
def dyrep_dyglib():
    """DyGLib's DyRep (MemoryModel, RNN memory; messages carry the other endpoint's 1-layer graph-attention
    embedding over 3 recent neighbours; the embedding is the memory) over 6 batches of 5 edges; also the
    memory bank after the stream."""
    from models.MemoryModel import MemoryModel

    from timerepro.models.graph.dyrep import DyRep

    graph = make_graph(**SMALL_TIMES)
    inputs = _tgn_batches(graph, n_batches=6)
    torch.manual_seed(16)
    ref = MemoryModel(graph["node_feat"], graph["edge_feat"], dyglib_sampler(graph), time_feat_dim=TIME_DIM,
                      model_name="DyRep", num_layers=1, num_heads=2, dropout=0.1)
    perturb(ref, 17)
    ctor = dict(encoder="cosine", time_dim=TIME_DIM, memory_updater="rnn", num_layers=1, num_heads=2,
                num_neighbors=3, dropout=0.1, sampling="recent")
    return _memory_fixture("dyrep_dyglib", "dyrep", ref, DyRep, ctor, TGN_RULES, graph, inputs,
                           _dyglib_stream(ref, inputs, state=True))


# ---- GraphMixer

GRAPHMIXER_RULES = [  # the time encoder is not mapped: both sides' frequencies are fixed, the project's own are stored
    (r"projection_layer\.(weight|bias)", r"projection.\1"),
    (r"mlp_mixers\.(\d+)\.(token|channel)_norm\.(weight|bias)", r"mixers.\1.\2_norm.\3"),
    (r"mlp_mixers\.(\d+)\.token_feedforward\.ffn\.(\d)\.(weight|bias)", r"mixers.\1.token_mix.net.\2.\3"),
    (r"mlp_mixers\.(\d+)\.channel_feedforward\.ffn\.(\d)\.(weight|bias)", r"mixers.\1.channel_mix.net.\2.\3"),
    (r"output_layer\.(weight|bias)", r"output.\1")]


def _graphmixer_dyglib(name, strategy, seed=None):
    from models.GraphMixer import GraphMixer as RefGraphMixer

    from timerepro.models.graph.graphmixer import GraphMixer

    graph = make_graph()
    queries = make_queries(graph)
    torch.manual_seed(18)
    sampler = dyglib_sampler(graph, strategy, seed)
    ref = RefGraphMixer(graph["node_feat"], graph["edge_feat"], sampler, time_feat_dim=TIME_DIM, num_tokens=4,
                        num_layers=2, dropout=0.1)
    frozen = {k: v.clone() for k, v in ref.time_encoder.state_dict().items()}
    perturb(ref, 19)
    ref.time_encoder.load_state_dict(frozen)  # never trained in DyGLib (parameter_requires_grad=False)
    ref.set_neighbor_sampler(sampler)  # DyGLib resets the uniform stream here
    ctor = dict(encoder="fixed_cosine", time_dim=TIME_DIM, num_neighbors=4, num_layers=2, time_gap=5, dropout=0.1,
                sampling=strategy)
    return _pair_fixture(name, "graphmixer", ref, lambda: ref.compute_src_dst_node_temporal_embeddings(
        queries["src"], queries["dst"], queries["ts"], num_neighbors=4, time_gap=5), GraphMixer, ctor,
        GRAPHMIXER_RULES, None, graph, queries,
        "DyGLib models/GraphMixer.py GraphMixer.compute_src_dst_node_temporal_embeddings",
        options={"neighbor_seed": seed})


@case("graphmixer_dyglib", "DyGLib", "graphmixer")
def graphmixer_dyglib():
    """DyGLib's GraphMixer: 4 most recent interactions (tokens), 2 mixer blocks, fixed cosine encoder,
    node encoder over time_gap = 5 recent neighbours."""
    return _graphmixer_dyglib("graphmixer_dyglib", "recent")


@case("graphmixer_uniform_dyglib", "DyGLib", "graphmixer")
def graphmixer_uniform_dyglib():
    """DyGLib's GraphMixer with uniform sampling (seeded stream 0): the project draws the same tokens and
    time-gap neighbours in DyGLib's order (source k, source time_gap, destination k, destination time_gap)."""
    return _graphmixer_dyglib("graphmixer_uniform_dyglib", "uniform", seed=0)


# ---- TCL

TCL_RULES = DYGFORMER_RULES + [(r"depth_embedding\.weight", "depth_embedding.weight")]  # DyGLib's TransformerEncoder too


def _tcl_dyglib(name, strategy, seed=None):
    from models.TCL import TCL as RefTCL

    from timerepro.models.graph.tcl import TCL

    graph = make_graph(**(SMALL_TIMES if strategy == "uniform" else {}))
    queries = make_queries(graph)
    torch.manual_seed(20)
    sampler = dyglib_sampler(graph, strategy, seed)
    ref = RefTCL(graph["node_feat"], graph["edge_feat"], sampler, time_feat_dim=TIME_DIM, num_layers=2, num_heads=2,
                 num_depths=5, dropout=0.1)
    perturb(ref, 21)
    ref.set_neighbor_sampler(sampler)  # DyGLib resets the uniform stream here
    ctor = dict(encoder="cosine", time_dim=TIME_DIM, num_neighbors=4, num_layers=2, num_heads=2, dropout=0.1,
                sampling=strategy)
    return _pair_fixture(name, "tcl", ref, lambda: ref.compute_src_dst_node_temporal_embeddings(
        queries["src"], queries["dst"], queries["ts"], num_neighbors=4), TCL, ctor, TCL_RULES, TIME_TRANSFORMS, graph,
        queries, "DyGLib models/TCL.py TCL.compute_src_dst_node_temporal_embeddings", options={"neighbor_seed": seed})


@case("tcl_dyglib", "DyGLib", "tcl")
def tcl_dyglib():
    """DyGLib's TCL: the node and its 4 most recent interactions (num_depths 5), 2 layers of self- and
    co-attention sharing one TransformerEncoder per layer, learnable cosine encoder."""
    return _tcl_dyglib("tcl_dyglib", "recent")


@case("tcl_uniform_dyglib", "DyGLib", "tcl")
def tcl_uniform_dyglib():
    """DyGLib's TCL with uniform sampling (seeded stream 0): the source's draws, then the destination's."""
    return _tcl_dyglib("tcl_uniform_dyglib", "uniform", seed=0)


# ---- CAWN

@case("cawn_cosine_dyglib", "DyGLib", "cawn")
def cawn_cosine_dyglib():
    """DyGLib's CAWN with 'recent' walks (deterministic; the time-interval-aware sampler differs on purpose,
    docs/tgn_cawn.md), walk length 2, 3 walks per hop: anonymisation, BiLSTMs, walk Transformer."""
    from models.CAWN import CAWN as RefCAWN

    from timerepro.models.graph.cawn import CAWN

    graph = make_graph()
    queries = make_queries(graph)
    torch.manual_seed(12)
    ref = RefCAWN(graph["node_feat"], graph["edge_feat"], dyglib_sampler(graph), time_feat_dim=TIME_DIM,
                  position_feat_dim=6, walk_length=2, num_walk_heads=2, dropout=0.1)
    perturb(ref, 13)
    ctor = dict(encoder="cosine", time_dim=TIME_DIM, position_dim=6, walk_length=2, num_walk_heads=2,
                num_neighbors=3, dropout=0.1, sampling="recent")
    return _pair_fixture("cawn_cosine_dyglib", "cawn", ref, lambda: ref.compute_src_dst_node_temporal_embeddings(
        queries["src"], queries["dst"], queries["ts"], num_neighbors=3), CAWN, ctor, CAWN_RULES, TIME_TRANSFORMS, graph,
        queries, "DyGLib models/CAWN.py CAWN.compute_src_dst_node_temporal_embeddings")


# ---- the authors' standardization statistic

@case("time_stats_dglt", "dg-linear-time", "time_stats")
def time_stats_dglt():
    """The authors' statistic of time differences (per-query means, then their mean and std), as their
    `setup` computes it for TGAT/TGN (k = num_neighbors), DyGFormer (k = max_input_sequence_length) and
    CAWN (walks), on the same graph; the project's `time_difference_stats(statistic='per_query_mean')`
    and `walk_time_stats`."""
    from src.models.modules.cawn import convert_format_from_tree_to_array
    from src.utils.analysis import analyze_target_historical_event_time_diff

    graph = make_graph()
    cut = len(graph["src"]) * 7 // 10  # the "training" edges
    train = {k: (v[:cut] if k in ("src", "dst", "ts", "edge_ids") else v) for k, v in graph.items()}
    sampler = dglt_sampler(train)
    nodes = np.concatenate([train["src"], train["dst"]])
    times = np.concatenate([train["ts"], train["ts"]])
    _, _, neighbor_times = sampler.get_all_first_hop_neighbors(node_ids=nodes, node_interact_times=times)
    outputs = {}
    windows = [3, 6]
    with warnings.catch_warnings():  # nan means of queries without history, as in the authors' runs
        warnings.simplefilter("ignore", RuntimeWarning)
        for k in windows:
            avg, _, _, _ = analyze_target_historical_event_time_diff(neighbor_times, times, k, "recent")
            outputs[f"k{k}"] = np.array([np.nanmean(avg), np.nanstd(avg)])
    # CAWN (src/models/cawn.py setup): walks of the training sampler, position 0 and padding included
    multi = sampler.get_multi_hop_neighbors(num_hops=2, node_ids=nodes, node_interact_times=times, num_neighbors=2)
    _, _, walk_times = convert_format_from_tree_to_array(node_ids=nodes, node_interact_times=times,
                                                         node_multi_hop_graphs=multi, num_neighbors=2, walk_length=2)
    delta = walk_times[:, :, 0][:, :, np.newaxis] - walk_times
    avg = np.nanmean(delta, axis=1)
    outputs["walks"] = np.array([np.nanmean(avg), np.nanstd(avg)])
    return dict(meta=dict(case="time_stats_dglt", kind="time_stats",
                          reference="dg-linear-time src/utils/analysis.py analyze_target_historical_event_time_diff "
                                    "+ np.nanmean/np.nanstd (src/models/tgat.py, dygformer.py setup); "
                                    "src/models/cawn.py setup (walks)",
                          ctor={}, options=dict(statistic="per_query_mean", windows=windows, walk_neighbors=2,
                                                walk_length=2), tolerance=TOL, documented_difference=None),
                graph=train, inputs={"nodes": nodes, "times": times}, weights={}, outputs=outputs)


# ---- Hawkes Attention

def _hawkes_batch(num_types: int, seed: int = 21) -> dict:
    """Three sequences of 7, 5 and 3 events (right-padded with the pad id K as EasyTPP pads), and
    offsets after each event at which intensities are evaluated."""
    rng = np.random.default_rng(seed)
    lengths, L = [7, 5, 3], 7
    times = np.full((3, L), float(num_types), dtype=np.float32)
    types = np.full((3, L), num_types, dtype=np.int64)
    for i, n in enumerate(lengths):
        times[i, :n] = np.cumsum(rng.exponential(0.7, size=n)).astype(np.float32)
        types[i, :n] = rng.integers(0, num_types, size=n)
    return {"time_seqs": times, "type_seqs": types,
            "sample_dtimes": rng.uniform(0.0, 2.0, size=(3, L, 4)).astype(np.float32)}


def _hawkes_case(name: str, d_rnn: int | None):
    from models.model.torch_model.torch_Hawkesthp import HawkesTHP

    from timerepro.models.tpp.hawkes_attention import HawkesAttention

    K, D = 3, 8
    config = SimpleNamespace(
        loss_integral_num_sample_per_step=20, hidden_size=16, num_event_types=K, num_event_types_pad=K + 1,
        pad_token_id=K, thinning=None, gpu=-1, use_mc_samples=True, d_model=D, use_ln=True, num_layers=2,
        num_heads=2, dropout_rate=0.1, d_k=D, d_v=D, d_rnn=d_rnn or 4, phi_width=4, phi_depth=2, rnn=d_rnn is not None)
    torch.manual_seed(22)
    ref = HawkesTHP(config)
    perturb(ref, 23, scale=0.3)
    with torch.no_grad():  # large enough pre-activations that some fall in the softplus clamp band
        ref.factor_intensity_base.add_(torch.tensor([[0.0, 12.0, 40.0]]))
    ref.eval()
    inputs = _hawkes_batch(K)
    times, types = torch.from_numpy(inputs["time_seqs"]), torch.from_numpy(inputs["type_seqs"])
    with torch.no_grad():
        mask = torch.triu(torch.ones(7, 7, dtype=torch.bool), 1)[None].expand(3, -1, -1)
        hidden = ref.forward(times, types, mask)
        pre = ref.compute_states_at_sample_times(hidden, torch.from_numpy(inputs["sample_dtimes"]))
        lam = ref.softplus(pre)
    # project weights: the authors' separate base rate joins the read-out bias (docs/hawkes_attention.md)
    state = ref.state_dict()
    rules = [(r"encoder\.event_emb\.weight", "type_emb.weight"),
             (r"encoder\.layer_stack\.(\d+)\.self_attn\.w_qs\.weight", r"layers.\1.attn.w_q.weight"),
             (r"encoder\.layer_stack\.(\d+)\.self_attn\.w_ks\.weight", r"layers.\1.attn.w_k.weight"),
             (r"encoder\.layer_stack\.(\d+)\.self_attn\.w_vs\.weight", r"layers.\1.attn.w_v.weight"),
             (r"encoder\.layer_stack\.(\d+)\.self_attn\.fc\.weight", r"layers.\1.attn.fc.weight"),
             (r"encoder\.layer_stack\.(\d+)\.self_attn\.layer_norm\.(weight|bias)", r"layers.\1.attn.layer_norm.\2"),
             (r"encoder\.layer_stack\.(\d+)\.pos_ffn\.(w_1|w_2|layer_norm)\.(weight|bias)", r"layers.\1.ffn.\2.\3"),
             (r"rnn\.rnn\.(.*)", r"rnn.\1"), (r"rnn\.projection\.(weight|bias)", r"rnn_proj.\1"),
             (r"layer_intensity_hidden\.weight", "intensity.weight"),
             (r"factor_intensity_decay", "decay"), (r"softplus\.log_beta", "log_beta")]
    mapped = rename(state, rules)
    mapped["intensity.bias"] = state["layer_intensity_hidden.bias"] + state["factor_intensity_base"][0]
    ctor = dict(num_event_types=K, d_model=D, d_inner=16, d_k=D, d_v=D, num_layers=2, num_heads=2, phi_width=4,
                phi_depth=2, dropout=0.1, d_rnn=d_rnn)
    proj = HawkesAttention(**ctor)
    if d_rnn is None:
        mapped = {k: v for k, v in mapped.items() if not k.startswith(("rnn.", "rnn_proj."))}
    # kernels: phi_dict[type][head] = Sequential(Linear(1, W), GELU, Dropout, Linear(W, W), GELU, Dropout, Linear(W, 1))
    for layer in range(2):
        kern = proj.layers[layer].attn.phi
        w0, b0 = torch.zeros_like(kern.w0), torch.zeros_like(kern.b0)
        wh, bh = torch.zeros_like(kern.wh), torch.zeros_like(kern.bh)
        wo, bo = torch.zeros_like(kern.wo), torch.zeros_like(kern.bo)
        for c in range(K):
            for h in range(2):
                p = f"encoder.layer_stack.{layer}.self_attn.phi_dict.{c}.{h}"
                w0[c, h], b0[c, h] = state[f"{p}.0.weight"][:, 0], state[f"{p}.0.bias"]
                for i in range(kern.wh.shape[0]):  # hidden Linear(W, W) at index 3(i+1); stored (W_in, W_out)
                    wh[i, c, h], bh[i, c, h] = state[f"{p}.{3 * (i + 1)}.weight"].T, state[f"{p}.{3 * (i + 1)}.bias"]
                last = 3 * (kern.wh.shape[0] + 1)
                wo[c, h], bo[c, h] = state[f"{p}.{last}.weight"][0], state[f"{p}.{last}.bias"][0]
        base = f"layers.{layer}.attn.phi"
        mapped.update({f"{base}.w0": w0, f"{base}.b0": b0, f"{base}.wh": wh, f"{base}.bh": bh, f"{base}.wo": wo,
                       f"{base}.bo": bo})
    weights = project_state(proj, mapped)
    beta = ref.softplus.log_beta.exp().detach().numpy()
    return dict(meta=dict(case=name, kind="hawkes", reference="Time-aware-Hawkes-Attention models/model/torch_model/"
                          "torch_Hawkesthp.py HawkesTHP.forward + compute_states_at_sample_times + softplus",
                          ctor=ctor, options={}, tolerance=TOL, documented_difference="hawkes_softplus_clamp",
                          reference_mode={"softplus": "easytpp"}),
                graph={}, inputs=inputs, weights=weights,
                outputs={"hidden": hidden.numpy(), "intensities": lam.numpy()},
                aux={"pre_activation": pre.numpy(), "beta": np.broadcast_to(beta, pre.shape).astype(np.float32)})


@case("hawkes_attention_rnn", "Time-aware-Hawkes-Attention", "hawkes")
def hawkes_attention_rnn():
    """The authors' HawkesTHP with the LSTM layer (Table 8's d_rnn), 3 types, 2 layers, 2 heads."""
    return _hawkes_case("hawkes_attention_rnn", d_rnn=4)


@case("hawkes_attention_nornn", "Time-aware-Hawkes-Attention", "hawkes")
def hawkes_attention_nornn():
    """The authors' HawkesTHP without the RNN layer (Table 8's Taxi 'NA')."""
    return _hawkes_case("hawkes_attention_nornn", d_rnn=None)


# ---- SWINIT (the authors' memory and UFGConv stack, bzho3923/GNN_SWINIT)

def _pyg_extension_shims() -> None:
    """The authors' modules import torch_scatter (scatter, scatter_max) and torch_sparse (spmm), compiled
    PyG extensions without wheels for this torch: where they are not importable, register minimal stand-ins
    written on torch and torch_geometric.utils (sparse (m, n) @ dense; scatter; the max and its argmax, empty
    groups pointing past the end as torch_scatter's do). The fixture's times have no ties, so argmax is unique.
    NumPy 2 renamed `trapz` (ufg_global's ChebyshevApprox) to `trapezoid`: the old name is restored."""
    import importlib.util
    import types

    from torch_geometric.utils import scatter

    if "torch_scatter" not in sys.modules and importlib.util.find_spec("torch_scatter") is None:
        def scatter_max(src, index, dim=0, dim_size=None):
            size = int(dim_size if dim_size is not None else int(index.max()) + 1)
            out = torch.full((size,), float("-inf"), dtype=torch.float64).scatter_reduce(
                0, index, src.double(), reduce="amax")
            hit = src.double() == out[index]  # (E,) entries equal to their group's max
            arg = torch.full((size,), src.size(0), dtype=torch.long).scatter_reduce(
                0, index[hit], torch.arange(src.size(0))[hit], reduce="amin")
            return out.to(src.dtype), arg

        sys.modules["torch_scatter"] = types.SimpleNamespace(scatter=scatter, scatter_max=scatter_max)
    if "torch_sparse" not in sys.modules and importlib.util.find_spec("torch_sparse") is None:
        def spmm(index, value, m, n, matrix):
            return torch.sparse_coo_tensor(index, value, (m, n), check_invariants=False).coalesce() @ matrix

        sys.modules["torch_sparse"] = types.SimpleNamespace(spmm=spmm)
    if not hasattr(np, "trapz"):
        np.trapz = np.trapezoid
    if "pytorch_wavelets" not in sys.modules and importlib.util.find_spec("pytorch_wavelets") is None:
        sys.modules["pytorch_wavelets"] = types.SimpleNamespace(DWT1DForward=None)  # cus_tgn imports it, unused


def make_bipartite_graph(seed: int = 27, users: int = 5, items: int = 5, num_edges: int = 40) -> dict:
    """A JODIE-style stream (Wikipedia, Reddit and MOOC are user -> item): sources 1..users, destinations the
    items after them, steps 1-5 (SMALL_TIMES' float32-exact angles), features as `make_graph`'s."""
    graph = make_graph(seed, num_nodes=users + items, num_edges=num_edges, **SMALL_TIMES)
    rng = np.random.default_rng(seed)
    graph["src"] = rng.integers(1, users + 1, size=num_edges)
    graph["dst"] = rng.integers(users + 1, users + items + 1, size=num_edges)
    return graph


SWINIT_SHAPE = dict(memory_dim=6, embedding_dim=5, num_neighbors=3, num_layers=2, rank=3)


def swinit_rules(memory_dim: int, time_dim: int, feature_dim: int) -> tuple[list, dict]:
    """The authors' TGNMemory (mlp: tgn_mlp.py; gru: PyG's) + Net -> the project's SWINIT. IdentityMessage
    orders a message [s_own; s_other; x; Phi(dt)], the project [s_own; s_other; Phi(dt); x]: the input columns
    of the first memory layer (the GRU's input weights) are permuted; the three per-node filters (N, 1)
    become the rows of Theta (3, N) (added by the caller)."""
    m2 = 2 * memory_dim
    perm = torch.cat([torch.arange(m2), m2 + feature_dim + torch.arange(time_dim), m2 + torch.arange(feature_dim),
                      torch.arange(m2 + feature_dim + time_dim, m2 + feature_dim + time_dim + memory_dim)])
    rules = [(r"time_enc\.lin\.weight", "time_encoder.w"), (r"time_enc\.lin\.bias", "time_encoder.phi"),
             (r"mlp\.net\.(\d)\.(weight|bias)", r"memory_updater.net.\1.\2"),
             (r"gru\.(weight|bias)_(ih|hh)", r"memory_updater.\1_\2"),
             (r"conv\.convs\.(\d+)\.weight", r"convs.\1.weight"),
             (r"conv\.bns\.(\d+)\.(weight|bias)", r"norms.\1.\2")]
    columns = lambda v: v[:, perm[: v.shape[1]]]  # noqa: E731  (GRU: the message columns only)
    return rules, {"time_encoder.w": FLAT, "memory_updater.net.0.weight": columns, "memory_updater.weight_ih": columns}


def _authors_embeddings(gnn_global, loader, memory, nodes: np.ndarray, k: int) -> dict:
    """The authors' Net on the project's batch graph, built from the authors' LastNeighborLoader rows: each
    node with a leaf per distinct neighbour among its (up to k) stored interactions, one edge per interaction
    both ways (get_laplacian sums them: weight = count), the Net rebuilt on these n local nodes with the
    global filters' rows of their node ids, X = the authors' memory of those nodes. Returns node -> (d,)."""
    from ufg_global import Net, get_d_list

    centres, leaves, edges = list(nodes), [], []
    for c, q in enumerate(nodes):
        row, eid = loader.neighbors[q], loader.e_id[q]
        nbrs, counts = np.unique(row[eid >= 0].numpy(), return_counts=True)
        for v, cnt in zip(nbrs, counts):
            leaf = len(centres) + len(leaves)
            leaves.append(int(v))
            edges += [(leaf, c), (c, leaf)] * int(cnt)
    ids = torch.tensor(centres + leaves, dtype=torch.long)
    n = len(ids)
    edge_index = torch.tensor(edges, dtype=torch.long).reshape(-1, 2).T  # (2, E)
    conv0 = gnn_global.conv.convs[0]
    net = Net(conv0.weight.shape[0], conv0.weight.shape[1], gnn_global.conv.convs[-1].weight.shape[1], r=2, Lev=2,
              num_nodes=n, dropout_prob=gnn_global.conv.dropout_prob, num_layers=len(gnn_global.conv.convs))
    state = {key: (value[ids] if ".filter" in key else value) for key, value in gnn_global.conv.state_dict().items()}
    net.load_state_dict(state)
    net.eval()
    h = net(memory.memory[ids], get_d_list(edge_index, n), ids)  # (n, d_emb)
    return {int(q): h[c].detach().numpy() for c, q in enumerate(nodes)}


def _swinit_setup(cell: str, loader_cls, prepass: bool = False) -> SimpleNamespace:
    """What both SWINIT builders run on: the bipartite stream of 40 events in 8 batches of 5, negatives among the
    items as the authors draw them (min_dst_idx..max_dst_idx; `prepass`: a second set for a pre-pass), the message
    feature x V with a fixed V (top-3 right singular vectors of the first 28 edges' features, numpy's exact SVD:
    the randomized fbpca SVD is not compared), the authors' memory (`cell` mlp: tgn_mlp.TGNMemory with its
    IdentityMessage, LastAggregator and 2-layer FeedForward; gru: PyG's TGNMemory, IdentityMessage,
    LastAggregator, which their script imports for it) and UFGConv Net (ufg_global.py: Haar, 2 levels, Chebyshev
    n = 2, bands d_list[1:4], LayerNorm between the 2 layers), perturbed, in eval mode from an empty memory, and
    an empty `loader_cls` (LastNeighborLoader, size 3)."""
    from ufg_global import Net

    if cell == "mlp":
        from tgn_mlp import IdentityMessage, LastAggregator, TGNMemory

        memory_source, extra = "tgn_mlp.py TGNMemory (mem_func='mlp')", dict(mem_func="mlp")
    else:
        from torch_geometric.nn import TGNMemory
        from torch_geometric.nn.models.tgn import IdentityMessage, LastAggregator

        memory_source, extra = "torch_geometric.nn.TGNMemory (GRU)", {}
    shape = SWINIT_SHAPE
    graph = make_bipartite_graph()
    inputs = _tgn_batches(graph, n_batches=8)
    for b in range(8):  # negatives among the items, as the authors draw them (min_dst_idx..max_dst_idx)
        inputs[f"b{b}_neg_dst"] = np.random.default_rng(28 + b).integers(6, 11, size=5)
        if prepass:
            inputs[f"b{b}_prepass_neg_dst"] = np.random.default_rng(48 + b).integers(6, 11, size=5)
    num_nodes = graph["node_feat"].shape[0]
    # V (d, r): exact top right singular vectors of the "training" edges' features
    _, _, vt = np.linalg.svd(graph["edge_feat"][graph["edge_ids"][:MEMORY_TRAIN_EDGES]].astype(np.float64))
    projection = torch.from_numpy(vt[: shape["rank"]].T.astype(np.float32))
    torch.manual_seed(24)
    mdim, r = shape["memory_dim"], shape["rank"]
    memory = TGNMemory(num_nodes, r, mdim, TIME_DIM, IdentityMessage(r, mdim, TIME_DIM), LastAggregator(), **extra)
    gnn = torch.nn.Module()
    gnn.conv = Net(mdim, shape["embedding_dim"], shape["embedding_dim"], r=2, Lev=2, num_nodes=num_nodes,
                   dropout_prob=0.3, num_layers=shape["num_layers"], batch_norm=True)
    perturb(memory, 25)
    perturb(gnn, 26)
    memory.eval()  # eval() flushes the (empty) store through the cell: start from an empty memory again
    memory.reset_state()
    gnn.eval()
    return SimpleNamespace(shape=shape, graph=graph, inputs=inputs, num_nodes=num_nodes, projection=projection,
                           mdim=mdim, r=r, memory=memory, gnn=gnn, memory_source=memory_source,
                           loader=loader_cls(num_nodes, size=shape["num_neighbors"]),
                           feats=torch.from_numpy(graph["edge_feat"]) @ projection)  # (E + 1, r): x V per edge id


def _swinit_fixture(name: str, s: SimpleNamespace, outputs: dict, reference: str, **ctor) -> dict:
    """The fixture of a SWINIT stream: the memory after it, the project's SWINIT built with `ctor` over the common
    settings, the authors' weights renamed (swinit_rules; each Net layer's three filters as its theta)."""
    from timerepro.models.graph.spectral import SpectralFit
    from timerepro.models.graph.swinit import SWINIT

    outputs["memory"] = s.memory.memory.detach().numpy().copy()
    outputs["last_update"] = s.memory.last_update.detach().numpy().astype(np.float32)
    shape = s.shape
    ctor = {**dict(inputs="trsvd", memory_cell="mlp", memory_dim=s.mdim, embedding_dim=shape["embedding_dim"],
                   time_dim=TIME_DIM, encoder="cosine", num_neighbors=shape["num_neighbors"],
                   num_layers=shape["num_layers"], framelet_levels=2, cheb_degree=1, lambda_max=4.0, dilation=2.0,
                   dropout=0.3, readout="memory", batch_graph="stars", graph_reuse="fresh"), **ctor}
    proj = SWINIT(s.num_nodes, s.graph["edge_feat"], SpectralFit(s.r, 0.0, s.projection), **ctor)
    rules, transforms = swinit_rules(s.mdim, TIME_DIM, s.r)
    mapped = rename({**{f"{k}": v for k, v in s.memory.state_dict().items()},
                     **{f"conv.{k}": v for k, v in s.gnn.conv.state_dict().items()}}, rules, transforms)
    for i, conv in enumerate(s.gnn.conv.convs):
        mapped[f"convs.{i}.theta"] = torch.cat([conv.filter1, conv.filter2, conv.filter3], dim=1).T.detach()
    mapped["projection"] = s.projection
    weights = project_state(proj, mapped)
    return dict(meta=dict(case=name, kind="swinit", reference=reference, ctor=ctor, options={"rank": s.r},
                          tolerance=TOL, documented_difference=None),
                graph=s.graph, inputs=s.inputs, weights=weights, outputs=outputs)


def _swinit_authors(name: str, cell: str):
    """The authors' memory and Net (`_swinit_setup`) in eval mode (their test() loop) over the whole stream from
    an empty memory: per batch the embeddings of the sources, destinations and negatives, then update_state and
    insert; the memory after the stream. The batch graph is the project's (disjoint stars, docs/swinit.md),
    built from the authors' loader rows: their glued graph over global rows is `_swinit_glued`'s."""
    # the transductive script imports cus_tgn's LastNeighborLoader, whose insert/reset_state are tgn_mlp's line
    # for line (only __call__'s relabelling, unused here, differs); cus_tgn itself needs pytorch_wavelets
    from tgn_mlp import LastNeighborLoader

    s = _swinit_setup(cell, LastNeighborLoader)
    inputs, memory, loader = s.inputs, s.memory, s.loader
    outputs = {}
    with torch.no_grad():
        for b in range(int(inputs["n_batches"])):
            src, dst, neg, ts, eids = (torch.from_numpy(np.asarray(inputs[f"b{b}_{k}"]))
                                       for k in ("src", "dst", "neg_dst", "ts", "edge_ids"))
            nodes = torch.cat([src, dst, neg]).unique().numpy()
            emb = _authors_embeddings(s.gnn, loader, memory, nodes, s.shape["num_neighbors"])
            for role, ids in (("pos_src", src), ("pos_dst", dst), ("neg_src", src), ("neg_dst", neg)):
                outputs[f"b{b}_{role}"] = np.stack([emb[int(i)] for i in ids])
            memory.update_state(src, dst, ts.long(), s.feats[eids])
            loader.insert(src, dst)
    return _swinit_fixture(name, s, outputs, "GNN_SWINIT link_prediction_transductive.py test() loop: "
                           f"{s.memory_source} + LastNeighborLoader + ufg_global.py Net/get_d_list", memory_cell=cell)


@case("swinit_authors", "GNN_SWINIT", "swinit")
def swinit_authors():
    """SWINIT-mlp: the authors' own memory module (tgn_mlp.py)."""
    return _swinit_authors("swinit_authors", "mlp")


@case("swinit_gru_authors", "GNN_SWINIT", "swinit")
def swinit_gru_authors():
    """SWINIT-GRU: PyG's TGNMemory as the authors' script imports it (the installed PyG's)."""
    return _swinit_authors("swinit_gru_authors", "gru")


def _swinit_glued(name: str, reuse: bool):
    """SWINIT-mlp on the AUTHORS' batch graph, their code end to end: per batch n_id = unique(src, pos_dst,
    neg_dst), `n_id, edge_index, _ = neighbor_loader(n_id)` (cus_tgn.py LastNeighborLoader: neighbour -> centre
    edges, global ids, its relabelling commented out), `z = memory(n_id)`, `d_list = get_d_list(edge_index,
    num_nodes)` (PyG's get_laplacian, not symmetrised, over all N nodes), `s[n_id] = z`, `gnn(s, d_list, n_id)`
    (link_prediction_transductive.py test(), ~224-271), then update_state and insert. `reuse`: the operators
    come from a pre-pass over the same stream with negatives of its own (their pre_train, ~52-109, and train()'s
    `d_list_batch[t_batch]`, ~145), so the scored batches run on graphs built for other negatives; both sides in
    eval mode (the project's reuse is active in training mode: its runner trains with dropout 0, the same
    function). Memory, loader, Net and stream: `_swinit_setup` (mlp)."""
    from cus_tgn import LastNeighborLoader
    from ufg_global import get_d_list

    s = _swinit_setup("mlp", LastNeighborLoader, prepass=reuse)
    inputs, memory, loader, num_nodes = s.inputs, s.memory, s.loader, s.num_nodes
    batches = [{k: torch.from_numpy(np.asarray(inputs[f"b{b}_{k}"])) for k in ("src", "dst", "neg_dst", "ts", "edge_ids")}
               for b in range(8)]
    prepass = []
    if reuse:  # pre_train: only the loader's state and the node sets shape d_list
        for b, bt in enumerate(batches):
            neg = torch.from_numpy(np.asarray(inputs[f"b{b}_prepass_neg_dst"]))
            _, edge_index, _ = loader(torch.cat([bt["src"], bt["dst"], neg]).unique())
            prepass.append(get_d_list(edge_index, num_nodes))
            loader.insert(bt["src"], bt["dst"])
        loader.reset_state()
    outputs = {}
    with torch.no_grad():
        for b, bt in enumerate(batches):
            src, dst, neg = bt["src"], bt["dst"], bt["neg_dst"]
            n_id, edge_index, _ = loader(torch.cat([src, dst, neg]).unique())
            z, _ = memory(n_id)
            d_list = prepass[b] if reuse else get_d_list(edge_index, num_nodes)
            state = torch.zeros(num_nodes, s.mdim)
            state[n_id] = z
            z_full = s.gnn.conv(state, d_list, n_id)  # (N, d_emb)
            for role, ids in (("pos_src", src), ("pos_dst", dst), ("neg_src", src), ("neg_dst", neg)):
                outputs[f"b{b}_{role}"] = z_full[ids].numpy().copy()
            memory.update_state(src, dst, bt["ts"].long(), s.feats[bt["edge_ids"]])
            loader.insert(src, dst)
    loop = "train() on pre_train's d_list_batch (eval mode)" if reuse else "test()"
    return _swinit_fixture(name, s, outputs, f"GNN_SWINIT link_prediction_transductive.py {loop}: tgn_mlp.py "
                           "TGNMemory + cus_tgn.py LastNeighborLoader + ufg_global.py get_d_list/Net on N global rows",
                           dropout=0.0 if reuse else 0.3, batch_graph="glued",
                           graph_reuse="prepass" if reuse else "fresh")


@case("swinit_glued_authors", "GNN_SWINIT", "swinit")
def swinit_glued_authors():
    """SWINIT-mlp on the authors' glued batch graph, operators built per batch (their test() loop)."""
    return _swinit_glued("swinit_glued_authors", reuse=False)


@case("swinit_glued_prepass_authors", "GNN_SWINIT", "swinit")
def swinit_glued_prepass_authors():
    """SWINIT-mlp on the authors' glued graphs from a pre-pass with other negatives, reused (their train())."""
    return _swinit_glued("swinit_glued_prepass_authors", reuse=True)


# ---- DyG-Mamba (the authors' code on mamba_ssm's pure-PyTorch reference scan)

MAMBA_SSM: dict = {"path": None}  # the state-spaces/mamba checkout (--mamba-ssm), read for its reference functions


def _function_source(path: Path, name: str) -> str:
    """The source of the top-level function `name` of a Python file (read, never imported)."""
    import ast

    text = path.read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(text, node)
    raise KeyError(f"{name} not found in {path}")


def _mamba_ssm_shims(checkout: Path) -> None:
    """Stand-ins for the `mamba_ssm` modules DyG-Mamba's code imports, built from the checkout's pure-PyTorch
    reference functions: `selective_scan_fn` = `selective_scan_ref` (ops/selective_scan_interface.py), the
    fused add+RMSNorm = `rms_norm_ref` (ops/triton/layer_norm.py), `MambaConfig` and `_init_weights` (models/);
    the CUDA and Triton kernels are not needed (causal_conv1d absent: the code's nn.Conv1d path)."""
    import math
    import types

    import torch.nn.functional as F
    from einops import rearrange, repeat

    pkg = checkout / "mamba_ssm"
    env = {"torch": torch, "F": F, "nn": torch.nn, "math": math, "rearrange": rearrange, "repeat": repeat}

    def module(name: str, **attrs) -> types.ModuleType:
        mod = types.ModuleType(name)
        mod.__path__ = []  # a package, so that the code's optional submodule imports fail as ImportError
        mod.__dict__.update(attrs)
        sys.modules[name] = mod
        return mod

    for name in ("selective_scan_ref", "rms_norm_ref", "layer_norm_ref", "_init_weights"):
        source = pkg / {"selective_scan_ref": "ops/selective_scan_interface.py", "rms_norm_ref": "ops/triton/layer_norm.py",
                        "layer_norm_ref": "ops/triton/layer_norm.py", "_init_weights": "models/mixer_seq_simple.py"}[name]
        exec(_function_source(source, name), env)  # noqa: S102 (reference code read from the checkout)
    config_ns: dict = {}
    exec((pkg / "models" / "config_mamba.py").read_text(), config_ns)  # noqa: S102 (a dataclass)

    class RMSNorm(torch.nn.Module):  # mamba_ssm's RMSNorm (ops/triton/layer_norm.py) on rms_norm_ref
        def __init__(self, hidden_size, eps=1e-5, device=None, dtype=None):
            super().__init__()
            self.eps = eps
            self.weight = torch.nn.Parameter(torch.ones(hidden_size, device=device, dtype=dtype))
            self.register_parameter("bias", None)

        def forward(self, x, residual=None, prenorm=False, residual_in_fp32=False):
            return env["rms_norm_ref"](x, self.weight, self.bias, residual=residual, eps=self.eps, prenorm=prenorm)

    def fused(ref):
        def fn(x, weight, bias, residual=None, prenorm=False, residual_in_fp32=False, eps=1e-6, **_):
            out = ref(x, weight, bias, residual=residual, eps=eps, prenorm=prenorm)
            if prenorm and residual_in_fp32:
                return out[0], out[1].float()
            return out
        return fn

    module("mamba_ssm")
    module("mamba_ssm.models")
    module("mamba_ssm.models.config_mamba", MambaConfig=config_ns["MambaConfig"])
    module("mamba_ssm.models.mixer_seq_simple", _init_weights=env["_init_weights"])
    module("mamba_ssm.ops")
    module("mamba_ssm.ops.selective_scan_interface", selective_scan_fn=env["selective_scan_ref"], mamba_inner_fn=None)
    module("mamba_ssm.ops.triton")
    module("mamba_ssm.ops.triton.layernorm", RMSNorm=RMSNorm, rms_norm_fn=fused(env["rms_norm_ref"]),
           layer_norm_fn=fused(env["layer_norm_ref"]))


def dyg_mamba_rules(rank: int, d_state: int) -> tuple[list, dict, Callable[[dict], dict]]:
    """The authors' DyGMamba state_dict -> the project's keys; x_proj's rows [dt | B | C] split into B and C
    (its dt rows are never used: MambaTimeDelta overwrites dt from the spans, mamba_simple.py:527)."""
    layer = r"encoders\.0\.layers\.(\d+)\."
    rules = [(r"time_encoder\.w\.weight", "time_encoder.w"), (r"time_encoder\.w\.bias", "time_encoder.phi"),
             (r"dt_time_encoder\.w\.weight", "span_signal.encode.w"),
             (r"dt_time_encoder\.w\.bias", "span_signal.encode.phi"),
             (r"projection_dt\.(weight|bias)", r"span_signal.proj.\1"),
             (r"neighbor_co_occurrence_encoder\.neighbor_co_occurrence_encode_layer\.(\d)\.(weight|bias)",
              r"cooccurrence.encode.\1.\2"),
             (r"projection_layer\.neighbor_co_occurrence\.(weight|bias)", r"projection.cooccurrence.\1"),
             (r"projection_layer\.(node|edge|time)\.(weight|bias)", r"projection.\1.\2"),
             (r"cross_linear_attention\.to_([qkv])\.weight", r"coupling.\1.weight"),
             (r"cross_linear_attention\.to_out\.(weight|bias)", r"coupling.proj.\1"),
             (r"cross_linear_attention\.ln\.(weight|bias)", r"coupling.norm.\1"),
             (layer + r"mixer\.in_proj\.weight", r"blocks.\1.in_proj.weight"),
             (layer + r"mixer\.conv1d\.(weight|bias)", r"blocks.\1.directions.0.conv.\2"),
             (layer + r"mixer\.x_proj\.weight", r"blocks.\1.directions.0.x_proj"),
             (layer + r"mixer\.dt_proj\.(weight|bias)", r"blocks.\1.directions.0.dt_proj.\2"),
             (layer + r"mixer\.dt_generate_layer\.weight", r"blocks.\1.directions.0.dt_down.weight"),
             (layer + r"mixer\.(A_log|D)", r"blocks.\1.directions.0.\2"),
             (layer + r"mixer\.out_proj\.weight", r"blocks.\1.out.weight"),
             (layer + r"norm\.weight", r"blocks.\1.norm.weight"),
             (r"encoders\.0\.norm_f\.weight", "final_norm.weight"),
             (r"src_gate\.weight", "gate_u.weight"), (r"dst_gate\.weight", "gate_v.weight"),
             (r"output_layer\.(weight|bias)", r"output.\1")]
    transforms = {"time_encoder.w": FLAT, "span_signal.encode.w": FLAT}

    def split_x_proj(mapped: dict) -> dict:
        out = {}
        for key, value in mapped.items():
            if key.endswith(".x_proj"):
                base = key[: -len("x_proj")]
                out[base + "B.weight"] = value[rank: rank + d_state]
                out[base + "C.weight"] = value[rank + d_state:]
            else:
                out[key] = value
        return out

    return rules, transforms, split_x_proj


def _dyg_mamba_authors(name: str, flags: dict, switches: dict):
    """The authors' DyGMamba (models/DyGMamba.py with mamba_simple.MambaTimeDelta, MambaConfig's RMSNorm and
    fused add-norm) on selective_scan_ref: histories cut to 5 interactions, the read-out's top-k set to 3 of up
    to 7 positions (the code's 64 keeps every position of so short a sequence), a cold-start node. `flags`:
    MambaTimeDelta's ablation switches (ssm_cfg), `switches`: the project's equivalents."""
    if MAMBA_SSM["path"] is None:
        raise SystemExit("dyg_mamba_authors needs --mamba-ssm (a checkout of state-spaces/mamba)")
    _mamba_ssm_shims(Path(MAMBA_SSM["path"]))
    from mamba_ssm.models.config_mamba import MambaConfig
    from models.DyGMamba import DyGMamba as RefDyGMamba

    from timerepro.models.graph.dyg_mamba import DyGMamba

    graph = make_graph(seed=3)
    queries = make_queries(graph)
    torch.manual_seed(9)
    d_state, channel = 4, 4
    config = MambaConfig()
    config.ssm_cfg = {"d_state": d_state, "d_conv": 4, "expand": 2, **flags}
    with contextlib.redirect_stdout(None):  # the constructor prints its layers
        ref = RefDyGMamba(graph["node_feat"], graph["edge_feat"], dyglib_sampler(graph), config=config,
                          time_feat_dim=TIME_DIM, channel_embedding_dim=channel, num_layers=2, dropout=0.1,
                          max_input_sequence_length=6, device="cpu")
    ref.top_k = 3
    perturb(ref, 10)
    ctor = dict(time_encoder="cosine", time_dim=TIME_DIM, channel_dim=channel, cooccurrence_dim=channel,
                max_input_sequence_length=6, num_blocks=2, d_state=d_state, expand=2, conv_kernel=4,
                d_out=NODE_DIM, dropout=0.1, top_k=3, scan_backend="torch", **switches)
    rules, transforms, split = dyg_mamba_rules(rank=1, d_state=d_state)  # dt_rank = ceil(4 * 4 / 16)
    ref.eval()
    with torch.no_grad():
        h_src, h_dst = ref.compute_src_dst_node_temporal_embeddings(queries["src"], queries["dst"], queries["ts"],
                                                                    edge_ids=None)
    proj = DyGMamba(graph["node_feat"], graph["edge_feat"], **ctor)
    weights = project_state(proj, split(rename(ref.state_dict(), rules, transforms)))
    return dict(meta=dict(case=name, kind="dyg_mamba", ctor=ctor, options={}, tolerance=TOL,
                          documented_difference=None,
                          reference="Clearloveyuan/DyG-Mamba models/DyGMamba.py DyGMamba.compute_src_dst_node_temporal_embeddings"
                                    f" (mamba_ssm selective_scan_ref; ssm_cfg {flags})"),
                graph=graph, inputs=queries, weights=weights, outputs={"src": h_src.numpy(), "dst": h_dst.numpy()})


@case("dyg_mamba_authors", "DyG-Mamba", "dyg_mamba")
def dyg_mamba_authors():
    """The full model as released (every MambaTimeDelta flag at its default)."""
    return _dyg_mamba_authors("dyg_mamba_authors", {}, {})


@case("dyg_mamba_wo_selective_authors", "DyG-Mamba", "dyg_mamba")
def dyg_mamba_wo_selective_authors():
    """w/o Selective (Figures 5, 11): `no_selective=True`: the span input replaced by ones, so Delta, B and C are
    constants computed from the weights (mamba_simple.py:508-527)."""
    return _dyg_mamba_authors("dyg_mamba_wo_selective_authors", {"no_selective": True}, {"selective": False})


@case("dyg_mamba_time_bc_authors", "DyG-Mamba", "dyg_mamba")
def dyg_mamba_time_bc_authors():
    """All time-dependent (Table 5): `time_mamba=True`, B and C from W_in s (mamba_simple.py:497-507)."""
    return _dyg_mamba_authors("dyg_mamba_time_bc_authors", {"time_mamba": True}, {"bc_source": "time"})


# ------------------------------------------------------------------ writing and checking

REFERENCES = {"DyGLib": ("dyglib", ("models", "utils")),
              "dg-linear-time": ("dg_linear_time", ("src",)),
              "Time-aware-Hawkes-Attention": ("hawkes", ("models",)),
              "GNN_SWINIT": ("swinit", ("cus_tgn", "tgn_mlp", "ufg_global", "utils")),
              "DyG-Mamba": ("dyg_mamba", ("models", "utils", "mamba_ssm"))}


def write(fx: dict, out_dir: Path) -> Path:
    arrays = {"meta": np.array(json.dumps(fx["meta"]))}
    for group, key in (("graph", "graph"), ("in", "inputs"), ("w", "weights"), ("out", "outputs"), ("aux", "aux")):
        for name, value in fx.get(key, {}).items():
            arrays[f"{group}/{name}"] = np.asarray(value)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{fx['meta']['case']}.npz"
    np.savez_compressed(path, **arrays)
    return path


def max_abs_diff(got: dict, want: dict) -> float:
    if set(got) != set(want):
        raise KeyError(f"outputs {sorted(got)} vs expected {sorted(want)}")
    return max(float(np.max(np.abs(got[k] - want[k]))) if want[k].size else 0.0 for k in want)


def check(path: Path) -> float:
    """Max abs difference between the project's outputs and the reference's (with the documented difference
    applied where there is one; and, in reference mode, the raw reference outputs)."""
    from tests.equivalence.project_side import load

    fx = load(path)
    diff = max_abs_diff(project_outputs(fx), expected_outputs(fx))
    if fx["meta"].get("reference_mode"):
        diff = max(diff, max_abs_diff(project_outputs(fx, reference_mode=True), fx["out"]))
    return diff


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--dyglib", type=Path, help="checkout of yule-BUAA/DyGLib")
    parser.add_argument("--dg-linear-time", dest="dg_linear_time", type=Path, help="checkout of hsinghuan/dg-linear-time")
    parser.add_argument("--hawkes", type=Path, help="checkout of TanXZfra/Time-aware-Hawkes-Attention")
    parser.add_argument("--swinit", type=Path, help="checkout of bzho3923/GNN_SWINIT (needs torch_geometric)")
    parser.add_argument("--dyg-mamba", dest="dyg_mamba", type=Path, help="checkout of Clearloveyuan/DyG-Mamba (needs --mamba-ssm)")
    parser.add_argument("--mamba-ssm", dest="mamba_ssm", type=Path, help="checkout of state-spaces/mamba (read, not imported)")
    parser.add_argument("--out", type=Path, default=FIXTURES, help="output folder (default %(default)s)")
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), help="build only these cases")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    MAMBA_SSM["path"] = args.mamba_ssm
    failures = 0
    for name in args.only or sorted(CASES):
        spec = CASES[name]
        attr, packages = REFERENCES[spec["reference"]]
        path = getattr(args, attr)
        if path is None or not path.is_dir():
            print(f"{name:34s} SKIPPED: no checkout of {spec['reference']} (--{attr.replace('_', '-')})")
            continue
        if spec["reference"] == "GNN_SWINIT":
            _pyg_extension_shims()
        with reference_path(path.resolve(), packages):
            fx = spec["fn"]()
        written = write(fx, args.out)
        diff = check(written)
        ok = diff <= fx["meta"]["tolerance"]
        failures += not ok
        print(f"{name:34s} {'ok  ' if ok else 'FAIL'} max abs diff {diff:.2e}  {written.stat().st_size / 1024:.0f} KiB"
              f"  <- {fx['meta']['reference']}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
