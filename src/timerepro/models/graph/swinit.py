"""SWINIT, the Spectral Window Unit (swinit sections 5-6, Algorithm 1; authors' code read, not copied:
`link_prediction_transductive.py`, `tgn_mlp.py`, `ufg_global.py`, `utils/data_processing.py`).

* spectral encoder: the event features are projected once on the top right singular vectors V of the
  training events' feature matrix (randomized SVD, rank by the paper's rule; `spectral.fit_projection`):
  an event's message feature is x V ("TRSVD"), or x ("RAW"), or [x; x V] ("RAW+TRSVD") for Table 4;
* memory window: events arrive in batches (the task's batches); per node a memory s_i (width d_mem), its
  last update time and one pending message. After a batch has been scored (`observe`) its endpoints commit
  their pending messages, s_i <- f(m_i, s_i), and get new ones on the committed state,
      m_u = [s_u; s_v; Phi(t - last_u); enc(x_e)],   m_v = [s_v; s_u; Phi(t - last_v); enc(x_e)],
  the last message per node kept; f is a GRU cell (SWINIT-GRU) or the authors' 2-layer MLP on [m; s] with
  GELU and LayerNorm (SWINIT-mlp). An embedding reads the memory with pending messages applied on the fly
  (with gradient, bank untouched), so a batch never sees its own events;
* graph of the batch G_i (`graphs/batch_graph.py`, option `batch_graph`): each query node with its
  `num_neighbors` most recent interactions strictly before the batch's first event (the state the authors'
  neighbour loader holds at the batch). `glued` (the authors' code, default): one graph over the batch's
  sources, positive and negative destinations and their neighbours, neighbour -> centre edges, PyG's
  Laplacian without symmetrisation; `graph_reuse: prepass` builds the training batches' graphs once, in a
  pass before training with its own negatives, and reuses them every epoch (the authors' `pre_train` and
  `d_list_batch`), `fresh` builds each call's own. `stars`: disjoint symmetrised stars, an embedding
  independent of the other queries (the project's leak-free option);
* UFGConv stack on G_i (X_i = memory of its nodes, FC inside each layer): `num_layers` layers, LayerNorm,
  ReLU and dropout between them (authors' Net); every layer's per-node band filters are rows of a global
  store Theta (n_bands, num_nodes): batch i reads the entries of its nodes as batch i-1's update left them
  and writes them back with its own (Algorithm 1's inheritance, one optimizer step per batch as coded).

State (memory, last update, pending messages) lives in persistent buffers and named copies
(`backup_state`) in the module's extra state, so both are in `state_dict()` and in every checkpoint.
docs/swinit.md records every decision and where the paper and the authors' code disagree.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from timerepro.encoders import make_encoder
from timerepro.graphs.batch_graph import GRAPHS, BatchGraph, build_batch_graph, star_graphs  # noqa: F401
from timerepro.graphs.negatives import train_sampler
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.dropout import Dropout
from timerepro.models.graph.features import FeatureTable
from timerepro.models.graph.memory import BufferedState
from timerepro.models.graph.framelet import Framelet, UFGConv, graph_laplacian
from timerepro.models.graph.spectral import SpectralFit, fit_projection

INPUTS = ("trsvd", "raw", "raw_trsvd")  # Table 4: TRSVD, RAW, RAW+TRSVD
CELLS = ("gru", "mlp")
READOUTS = ("memory", "embedding")  # node classification reads the memory (authors' code) or the UFGConv output
STATE = ("memory", "last_update", "pending_message", "pending_time", "has_pending")  # the live StreamState
REUSE = ("prepass", "fresh")  # training graphs: built once before training and reused (authors), or per call
PREPASS_STREAM = 2**32 - 1  # the pre-pass draws its negatives from RandomState([seed, this]); epochs use [seed, e]


class MemoryMLP(nn.Module):
    """SWINIT-mlp's memory update (authors' FeedForward, 2 layers): LN(GELU(W2 drop(GELU(W1 [m; s]))))."""

    def __init__(self, message_dim: int, memory_dim: int, dropout: float = 0.0):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(message_dim + memory_dim, memory_dim), nn.GELU(), Dropout(dropout),
                                 nn.Linear(memory_dim, memory_dim), nn.GELU(), nn.LayerNorm(memory_dim))

    def forward(self, message: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        """(P, d_msg), (P, d_mem) -> (P, d_mem)"""
        return self.net(torch.cat([message, memory], dim=-1))


class SWINIT(BufferedState, nn.Module):
    """SWINIT backbone: set_graph, and the memory as a `memory.StreamState` over the buffers of STATE."""

    state_names = STATE

    def __init__(self, num_nodes: int, edge_feat: np.ndarray, fit: SpectralFit | None, *, inputs: str,
                 memory_cell: str, memory_dim: int, embedding_dim: int, time_dim: int, encoder: str,
                 num_neighbors: int, num_layers: int, framelet_levels: int, cheb_degree: int, lambda_max: float,
                 dilation: float, dropout: float, readout: str, batch_graph: str, graph_reuse: str):
        super().__init__()
        for name, value, known in (("spectral_input", inputs, INPUTS), ("memory_cell", memory_cell, CELLS),
                                   ("nc_readout", readout, READOUTS), ("batch_graph", batch_graph, GRAPHS),
                                   ("graph_reuse", graph_reuse, REUSE)):
            if value not in known:
                raise ValueError(f"unknown {name} {value!r}; known: {known}")
        if graph_reuse == "prepass" and batch_graph != "glued":
            raise ValueError("graph_reuse prepass is the authors' reuse of their glued graphs: use batch_graph glued")
        if (fit is None) != (inputs == "raw"):
            raise ValueError(f"spectral_input {inputs!r} {'needs' if fit is None else 'takes no'} spectral projection")
        if num_layers < 1 or num_neighbors < 1:
            raise ValueError("num_layers and num_neighbors must be >= 1")
        self.edge_feat = FeatureTable(edge_feat)
        # V (d, r) of the spectral encoder: persistent, so a checkpoint carries the projection it was trained with
        self.register_buffer("projection", fit.projection.clone() if fit is not None else torch.zeros(0, 0))
        self.svd_rank, self.svd_error = (fit.rank, fit.error) if fit is not None else (None, None)
        self.inputs, self.memory_cell, self.readout = inputs, memory_cell, readout
        self.num_nodes, self.memory_dim, self.embedding_dim = int(num_nodes), memory_dim, embedding_dim
        self.num_neighbors, self.dropout = num_neighbors, dropout
        self.framelet_args = dict(levels=framelet_levels, degree=cheb_degree, lambda_max=lambda_max, dilation=dilation)
        raw_dim, rank = self.edge_feat.shape[1], (fit.rank if fit is not None else 0)
        self.feature_dim = {"trsvd": rank, "raw": raw_dim, "raw_trsvd": raw_dim + rank}[inputs]
        self.message_dim = 2 * memory_dim + time_dim + self.feature_dim
        self.time_encoder = make_encoder(encoder, time_dim)
        self.memory_updater = (nn.GRUCell(self.message_dim, memory_dim) if memory_cell == "gru"
                               else MemoryMLP(self.message_dim, memory_dim))
        n_bands = 1 + framelet_levels  # Haar: one low-pass band + one high-pass band per level
        dims = [memory_dim] + [embedding_dim] * num_layers
        self.convs = nn.ModuleList(UFGConv(dims[i], dims[i + 1], self.num_nodes, n_bands) for i in range(num_layers))
        self.norms = nn.ModuleList(nn.LayerNorm(embedding_dim) for _ in range(num_layers - 1))
        # live state, (N,) or (N, d); times in float64 (exact differences, docs/graphs.md)
        self.register_buffer("memory", torch.zeros(self.num_nodes, memory_dim))
        self.register_buffer("last_update", torch.zeros(self.num_nodes, dtype=torch.float64))
        self.register_buffer("pending_message", torch.zeros(self.num_nodes, self.message_dim))
        self.register_buffer("pending_time", torch.zeros(self.num_nodes, dtype=torch.float64))
        self.register_buffer("has_pending", torch.zeros(self.num_nodes, dtype=torch.bool))
        self.neighbors: TemporalNeighbors | None = None
        self.batch_graph_kind, self.graph_reuse = batch_graph, graph_reuse
        self.prepass: list[tuple[np.ndarray, float]] | None = None  # per training batch: (queried nodes, cut)
        self._train_batch = 0  # the training batch the next call embeds (reset by set_graph)

    @property
    def queries_independent(self) -> bool:
        """Stars: an embedding does not depend on the other queries of the call (backbone.NodeEmbedder)."""
        return self.batch_graph_kind == "stars"

    @property
    def embeds_whole_batch(self) -> bool:
        """The glued graph spans a batch's sources, destinations and negatives: the task embeds them in one call."""
        return self.batch_graph_kind == "glued"

    def set_prepass(self, batches: list[tuple[np.ndarray, float]]) -> None:
        """The pre-pass's training batches, in order: the queried nodes and the first event time of each."""
        self.prepass = [(np.unique(np.asarray(nodes, dtype=np.int64)), float(cut)) for nodes, cut in batches]

    @property
    def out_dim(self) -> int:
        return self.embedding_dim

    @property
    def classification_dim(self) -> int:
        return self.memory_dim if self.readout == "memory" else self.embedding_dim

    def extra_metrics(self) -> dict:
        """What a run records about the built model beyond its parameters."""
        return {"svd_rank": self.svd_rank, "svd_error": self.svd_error, "message_dim": self.message_dim}

    # ------------------------------------------------------------------ task hooks

    def set_graph(self, neighbors: TemporalNeighbors, rng=None) -> None:
        """Interactions the batch graphs are built from (most recent: no random stream needed). The task sets the
        graph before every training epoch and evaluation: the pre-pass's batches count from here."""
        self.neighbors = neighbors
        self._train_batch = 0

    def encode_events(self, edge_ids: torch.Tensor) -> torch.Tensor:
        """(B,) edge ids -> (B, feature_dim): x, x V or [x; x V]."""
        x = self.edge_feat[edge_ids]  # (B, d)
        if self.inputs == "raw":
            return x
        xv = x @ self.projection  # (B, r)
        return xv if self.inputs == "trsvd" else torch.cat([x, xv], dim=-1)

    @torch.no_grad()
    def observe(self, src, dst, times, edge_ids) -> None:
        """Feed a scored batch of positive events to the memory: commit the endpoints' pending messages,
        then store their new messages (the last one per node)."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        times = np.asarray(times, dtype=np.float64)
        nodes = self._index(np.unique(np.concatenate([src, dst])))  # (U,)
        nodes = nodes[self.has_pending[nodes]]
        if len(nodes):
            self.memory[nodes] = self.memory_updater(self.pending_message[nodes], self.memory[nodes])
            self.last_update[nodes] = self.pending_time[nodes]
            self.has_pending[nodes] = False
        owner, other = np.concatenate([src, dst]), np.concatenate([dst, src])  # (2B,) source roles first
        t2 = np.concatenate([times, times])
        own, oth = self._index(owner), self._index(other)
        dt = (torch.from_numpy(t2).to(self.memory.device) - self.last_update[own]).float()  # (2B,)
        feats = self.encode_events(self._index(np.concatenate([edge_ids, edge_ids])))  # (2B, feature_dim)
        # (2B, d_mem) ++ (2B, d_mem) ++ (2B, d_T) ++ (2B, feature_dim) -> (2B, message_dim)
        messages = torch.cat([self.memory[own], self.memory[oth], self.time_encoder(dt), feats], dim=-1)
        # PyG's LastAggregator: each owner keeps its latest message by time (a node that is a destination early
        # in the batch and a source later keeps the later one); ties go to the later place in [sources; destinations]
        order = np.lexsort((np.arange(len(owner)), t2))  # (2B,) places sorted by time, then by place
        _, first_rev = np.unique(owner[order][::-1], return_index=True)
        last = order[len(owner) - 1 - first_rev]  # (U,) place of each owner's latest message
        keep = self._index(owner[last])
        self.pending_message[keep] = messages[self._index(last)]
        self.pending_time[keep] = torch.from_numpy(t2[last]).to(self.memory.device)
        self.has_pending[keep] = True

    # ------------------------------------------------------------------ embeddings

    def _index(self, ids) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64)).to(self.memory.device)

    def current_memory(self, nodes) -> torch.Tensor:
        """(B,) ids -> (B, d_mem): the memory after committing pending messages, the bank untouched."""
        uniq, inverse = np.unique(np.asarray(nodes, dtype=np.int64), return_inverse=True)
        u = self._index(uniq)
        mem = self.memory[u]  # (U, d_mem)
        pending = self.has_pending[u]
        if bool(pending.any()):
            rows = torch.nonzero(pending).squeeze(1)
            updated = self.memory_updater(self.pending_message[u[rows]], mem[rows])  # (P, d_mem)
            mem = mem.index_put((rows,), updated)
        return mem[self._index(inverse)]

    def _hood(self, nodes: np.ndarray, cut: float) -> np.ndarray:
        """(Q,) nodes -> (Q, k) ids of their most recent interactions strictly before `cut` (0 = padding)."""
        if self.neighbors is None:
            raise RuntimeError("call set_graph(neighbors) before computing embeddings")
        return self.neighbors.most_recent(nodes, np.full(len(nodes), cut), self.num_neighbors).neighbor_ids

    def batch_graph(self, nodes: np.ndarray, cut: float) -> BatchGraph:
        """The graph of `batch_graph` kind over distinct `nodes` and their interactions strictly before `cut`."""
        return build_batch_graph(self.batch_graph_kind, nodes, self._hood(nodes, cut))

    def _graph_and_inputs(self, uniq: np.ndarray, cut: float) -> tuple[BatchGraph, np.ndarray, np.ndarray]:
        """The graph a call runs on, which of its nodes carry their memory (the others enter as zeros) and the
        rows of the queries `uniq` in it.

        Fresh: the graph of the queried nodes; every node carries its memory. Pre-pass (training): the stored
        graph of this training batch (the pre-pass's queries) with the call's queries absent from it appended as
        isolated nodes; only the call's queries and their neighbours carry memory, as the authors' `s[n_id] = z`
        over a reused `d_list`."""
        if not (self.training and self.graph_reuse == "prepass"):
            graph = self.batch_graph(uniq, cut)  # the queries are its first nodes (stars repeat ids in leaves)
            return graph, np.ones(len(graph.node_ids), dtype=bool), np.arange(len(uniq))
        if self.prepass is None:
            raise RuntimeError("graph_reuse prepass: no pre-pass batches (set_prepass, done by build)")
        self._train_batch = self._prepass_place(cut)
        stored, _ = self.prepass[self._train_batch]
        self._train_batch += 1
        graph = self.batch_graph(stored, cut)
        extra = np.setdiff1d(uniq, graph.node_ids)  # (X,) queries the stored graph lacks: isolated
        graph = BatchGraph(np.concatenate([graph.node_ids, extra]), graph.edges, graph.weights, graph.symmetric)
        hood = self._hood(uniq, cut)
        live = np.union1d(uniq, hood[hood != 0])  # the call's n_id: queries and their neighbours
        sorter = np.argsort(graph.node_ids)  # a glued graph's ids are distinct
        place = sorter[np.searchsorted(graph.node_ids, uniq, sorter=sorter)]  # (U,)
        return graph, np.isin(graph.node_ids, live), place

    def _prepass_place(self, cut: float) -> int:
        """The pre-pass batch of a training call: the next one in order; after batches passed over without a call
        (a rehearsal times an epoch's last batches only), the first later one whose cut is the call's."""
        places = range(self._train_batch, len(self.prepass))
        place = next((i for i in places if self.prepass[i][1] == cut), None)
        if place is None:
            raise RuntimeError(f"training call {self._train_batch} (cut {cut}) is no later pre-pass batch: the task "
                               "must embed each training batch once, in order")
        return place

    def get_extra_state(self) -> dict:
        """The saved stream states and the pre-pass place: a run stopped mid-epoch resumes at its batch's place."""
        return {**super().get_extra_state(), "train_batch": self._train_batch}

    def set_extra_state(self, state: dict) -> None:
        super().set_extra_state(state)
        self._train_batch = int(state["train_batch"])

    def _embed(self, nodes, cut: float) -> torch.Tensor:
        """(Q,) nodes of a batch whose first event is at `cut` -> (Q, d_emb); reads the memory, never changes it."""
        uniq, inverse = np.unique(np.asarray(nodes, dtype=np.int64), return_inverse=True)
        graph, live, place = self._graph_and_inputs(uniq, cut)
        n = len(graph.node_ids)
        laplacian = graph_laplacian(graph.edges, graph.weights, n, graph.symmetric)
        framelet = Framelet(laplacian.to(self.memory.device), **self.framelet_args)
        ids = self._index(graph.node_ids)
        x = self.current_memory(graph.node_ids)  # (n, d_mem): X_i = memory of the batch graph's nodes
        if not live.all():
            x = x * torch.from_numpy(live).to(x.device).unsqueeze(-1)  # nodes outside the call's n_id: zeros
        for i, conv in enumerate(self.convs):
            x = conv(x, framelet, ids)  # (n, d_emb)
            if i < len(self.norms):
                x = F.dropout(F.relu(self.norms[i](x)), p=self.dropout, training=self.training)
        return x[self._index(place)][self._index(inverse)]

    def embed(self, nodes, times) -> torch.Tensor:
        """(Q,) nodes queried at `times` (Q,), one batch (graph cut at its first time) -> (Q, d_emb)."""
        return self._embed(nodes, float(np.min(times)))

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        """Both endpoints of B candidate events of one batch: two (B, d_emb)."""
        src = np.asarray(src, dtype=np.int64)
        h = self._embed(np.concatenate([src, np.asarray(dst, dtype=np.int64)]), float(np.min(times)))
        return h[: len(src)], h[len(src):]

    def classification_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        """What node classification reads: the memory (authors' code) or the UFGConv output (`readout`)."""
        if self.readout == "memory":
            return self.current_memory(src), self.current_memory(dst)
        return self.pair_embeddings(src, dst, times)


def prepass_batches(data, split, batch_size: int, seed: int) -> list[tuple[np.ndarray, float]]:
    """The authors' pre-training pass (`link_prediction_transductive.py` pre_train, ~52-109): the training batches
    in the task's order with negatives of their own (the task's training sampler on a stream no epoch uses);
    per batch the queried nodes (sources, destinations, negative destinations) and its first event time."""
    sampler = train_sampler(data, split, seed=seed)
    sampler.random_state = np.random.RandomState([seed, PREPASS_STREAM])
    train_idx = np.flatnonzero(split.train)
    out = []
    for start in range(0, len(train_idx), batch_size):
        b = train_idx[start:start + batch_size]
        src, dst, ts = data.src[b], data.dst[b], data.ts[b]
        _, neg_dst = sampler.sample_for_batch(src, dst, ts)
        out.append((np.concatenate([src, dst, neg_dst]), float(np.min(ts))))
    return out


def build(config: dict, data, split, train_graph: TemporalNeighbors) -> SWINIT:
    """SWINIT from a resolved config: the spectral projection is fitted on the training events' features
    (authors' `findMode(train_data)`), with the run's seed for the random test matrix; with `graph_reuse: prepass`
    the pre-pass's training batches (`prepass_batches`)."""
    inputs = config["spectral_input"]
    fit = None
    if inputs != "raw":
        x = data.edge_feat[data.edge_ids[split.train]]  # (E_train, d)
        fit = fit_projection(x, range(int(config["svd_rank_min"]), int(config["svd_rank_max"]) + 1),
                             float(config["svd_tolerance"]), power_iterations=int(config["svd_power_iterations"]),
                             seed=int(config["seed"]))
    model = SWINIT(data.node_feat.shape[0], data.edge_feat, fit, inputs=inputs, memory_cell=config["memory_cell"],
                   memory_dim=int(config["memory_dim"]), embedding_dim=int(config["embedding_dim"]),
                   time_dim=int(config["d_T"]), encoder=config["encoder"], num_neighbors=int(config["num_neighbors"]),
                   num_layers=int(config["num_layers"]), framelet_levels=int(config["framelet_levels"]),
                   cheb_degree=int(config["cheb_degree"]), lambda_max=float(config["lambda_max"]),
                   dilation=float(config["dilation"]), dropout=float(config["dropout"]), readout=config["nc_readout"],
                   batch_graph=config["batch_graph"], graph_reuse=config["graph_reuse"])
    if model.graph_reuse == "prepass":
        model.set_prepass(prepass_batches(data, split, int(config["batch_size"]), int(config["seed"])))
    return model
