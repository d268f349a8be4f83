"""SWINIT-mlp and SWINIT-GRU: the project's SWINIT (models/graph/swinit.py, driven as tasks/link_prediction/loop.py
drives it) against the authors' modules driven as their `link_prediction_transductive.py` drives them
(bzho3923/GNN_SWINIT, `--swinit DIR`, read from the checkout, never copied).

Their script runs at import (argparse, dataset download), so its loop bodies are followed here line for line
(~116-166 train(), ~224-271 test()) around their own modules: `tgn_mlp.TGNMemory` (SWINIT-mlp) or PyG's
`TGNMemory` (SWINIT-GRU) with PyG's IdentityMessage and LastAggregator, `cus_tgn.LastNeighborLoader(size)`,
`ufg_global.Net` inside their GraphAttentionEmbedding (2 UFGConv layers over all N nodes, LayerNorm), their
LinkPredictor, AdamW, BCE-with-logits. torch_geometric must be importable (a scratch environment: `--pyg-python`,
both sides run in it); the compiled extensions their modules import are replaced where absent: torch_scatter by
the fixture builder's stand-ins (`build_fixtures._pyg_extension_shims`) and torch_sparse's `spmm` by its own
algorithm (index_select, scale, scatter-add: torch_sparse/spmm.py) on PyG's `scatter`, not the fixture builder's
sparse-tensor product, so that their convolution costs what it costs with the extension.

Inputs, the same on both sides: a Wikipedia-shaped bipartite stream (JODIE: 8,227 users, 1,000 items, 172-wide
edge features; Zipf-skewed endpoints, strictly increasing integer times), the projection V of the training
events' features fitted by the project's `spectral.fit_projection` as its `build` fits it (the rank rule of
params/models.yaml; the authors' `findMode` takes `--num_modes` (100) of fbpca.pca: both sides use this V), the run
config of params/swinit.yaml's Wikipedia row at paper scale (batch 1000, lr 1e-4, AdamW weight decay 1e-2, memory 150,
embedding 100, time 100, 10 neighbours, dropout 0.3). Training: the first `WARM` + 1 + n batches of an epoch
from an empty memory (both implementations start every epoch so), the first `WARM` + 1 untimed; negatives one
per positive, uniform over the items (the authors' rule), the same draws on both sides. Graph operators: the
authors' `pre_train` builds every training batch's operators once with negatives of its own and `train()`
reuses them (the project's `graph_reuse: prepass` does the same); that pass is untimed on both sides.
Evaluation: 1 + n batches of the following edges (no gradients, memory fed after each batch, first untimed);
the authors' per-epoch `test()` reuses the operators of their first pass (`pre_test`, same negatives): their
rate is that of `test()` on cached operators (`eval_bps`) and, for reference, of the building pass
(`eval_build_bps`). Metrics: the mean BCE of the timed training steps (their `loss` is the sum of the positive
and negative means: halved), the AP of the timed evaluation batches pooled; the two sides draw their weights
differently (different modules), so the metrics are two draws of one process.
"""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

SOURCE = "GNN_SWINIT authors (their loop)"
METRIC = "AP of the timed evaluation batches (pooled)"
LOSS = "mean BCE of the timed training steps"
MODELS = ("swinit_mlp", "swinit_gru")
STEPS = 8  # timed steps per phase and process (reference_rows: --batches overrides)
NEEDS = ("swinit",)
PYTHON = "pyg_python"
USERS, ITEMS, FEAT, WARM = 8227, 1000, 172, 8  # JODIE Wikipedia's node counts and feature width; untimed batches


def config(model: str) -> dict:
    """The effective config of params/swinit.yaml's first paper-scale run of the model on Wikipedia."""
    from timerepro import registry
    from timerepro.tasks import link_prediction as lp

    runs = [r for r in registry.load().experiment_runs("swinit", f"lp_{model}", "paper")
            if r.config.get("dataset") == "jodie_wikipedia" and int(r.config["seed"]) == 0]
    return lp.effective_config(dict(runs[0].config))


def batch_size(model: str) -> int:
    return int(config(model)["batch_size"])


def stream(n: int, batch: int, seed: int) -> SimpleNamespace:
    """The events of one process: WARM + 1 + n training batches, then 1 + n evaluation batches, their negatives
    (uniform over the items) and the pre-pass's own negatives; ids 1-based (users 1..U, items U+1..U+I)."""
    rng = np.random.default_rng(seed)
    n_train, n_eval = (WARM + 1 + n) * batch, (1 + n) * batch
    e = n_train + n_eval
    users = np.minimum(rng.zipf(1.6, e), USERS)  # a few very active users, as in Wikipedia
    src = rng.permutation(USERS)[users - 1] + 1
    dst = USERS + 1 + np.minimum(rng.zipf(1.4, e), ITEMS) - 1
    ts = np.cumsum(1 + rng.integers(0, 32, e)).astype(np.int64)  # strictly increasing seconds
    edge_feat = np.concatenate([np.zeros((1, FEAT), np.float32), rng.normal(size=(e, FEAT)).astype(np.float32)])
    neg = USERS + 1 + rng.integers(0, ITEMS, e)
    prepass_neg = USERS + 1 + rng.integers(0, ITEMS, e)
    return SimpleNamespace(src=src, dst=dst, ts=ts, eids=np.arange(1, e + 1), edge_feat=edge_feat, neg=neg,
                           prepass_neg=prepass_neg, n_train=n_train, num_nodes=USERS + ITEMS + 1)


def batches(s, lo: int, hi: int, batch: int) -> list[slice]:
    return [slice(a, min(a + batch, hi)) for a in range(lo, hi, batch)]


def projection(s, cfg: dict):
    """V (d, r) of the training events' features: the project's rank rule and the run's seed, as its `build`
    fits it (so both sides project on the same V)."""
    from timerepro.models.graph.spectral import fit_projection

    x = s.edge_feat[s.eids[: s.n_train]]
    return fit_projection(x, range(int(cfg["svd_rank_min"]), int(cfg["svd_rank_max"]) + 1),
                          float(cfg["svd_tolerance"]), power_iterations=int(cfg["svd_power_iterations"]),
                          seed=int(cfg["seed"]))


def measure(impl: str, model: str, paths: dict, n: int, seed: int) -> dict:
    cfg = {**config(model), "seed": seed}
    B = int(cfg["batch_size"])
    s = stream(n, B, seed)
    train = batches(s, 0, s.n_train, B)
    evals = batches(s, s.n_train, len(s.src), B)
    side = (Project(cfg, s) if impl == "project" else Authors(cfg, s, projection(s, cfg), Path(paths["swinit"])))
    side.prepare(train)
    side.start(True)
    for sl in train[: WARM + 1]:
        side.train_step(sl)
    t0 = time.perf_counter()
    losses = [side.train_step(sl) for sl in train[WARM + 1:]]
    out = {"train_bps": n / (time.perf_counter() - t0), "loss": float(np.mean(losses))}
    out.update(side.evaluate(evals))
    out["n_parameters"] = side.n_parameters()
    return out


def _ap(pos: list, neg: list) -> float:
    from sklearn.metrics import average_precision_score

    scores = np.concatenate(pos + neg)
    return float(average_precision_score(np.r_[np.ones(sum(map(len, pos))), np.zeros(sum(map(len, neg)))], scores))


class Project:
    """The registry's SWINIT in `LinkPredictionModel`, stepped as tasks/link_prediction/loop.py steps it."""

    def __init__(self, cfg: dict, s):
        import torch
        import torch.nn.functional as F

        from timerepro.data.ctdg import CTDGData, LinkSplit
        from timerepro.graphs.neighbors import TemporalNeighbors
        from timerepro.models.graph.memory import stream_state
        from timerepro.tasks import link_prediction as lp

        e = len(s.src)
        train = np.arange(e) < s.n_train
        data = CTDGData("jodie_wikipedia", s.src, s.dst, s.ts.astype(np.float64), s.eids, np.zeros(e), s.edge_feat,
                        np.zeros((s.num_nodes, FEAT), np.float32), {})
        split = LinkSplit(float(s.ts[train].max()), float(s.ts[-1]), train, ~train, np.zeros(e, bool),
                          np.zeros(e, bool), np.zeros(e, bool), frozenset(), frozenset())
        self.train_graph = TemporalNeighbors(s.src[train], s.dst[train], data.ts[train], s.eids[train],
                                             num_nodes=s.num_nodes)
        self.full_graph = TemporalNeighbors(s.src, s.dst, data.ts, s.eids, num_nodes=s.num_nodes)
        torch.manual_seed(int(cfg["seed"]))
        self.model = lp.build_model(cfg, data, split, self.train_graph)  # fits V as `projection` does
        self.opt = lp.make_optimizer(cfg, self.model.parameters())
        self.state = stream_state(self.model.backbone)
        self.s, self.torch, self.F = s, torch, F

    def prepare(self, train: list[slice]) -> None:
        """The pre-pass (graph_reuse prepass): the training batches' queried nodes with the pre-pass negatives."""
        s = self.s
        self.model.backbone.set_prepass([(np.concatenate([s.src[sl], s.dst[sl], s.prepass_neg[sl]]), float(s.ts[sl][0]))
                                         for sl in train])

    def start(self, training: bool) -> None:
        self.model.train(training)
        self.model.backbone.set_graph(self.train_graph if training else self.full_graph, np.random.RandomState(0))
        if training:
            self.state.reset_state()

    def train_step(self, sl: slice) -> float:
        s, torch = self.s, self.torch
        src, dst, ts, neg = s.src[sl], s.dst[sl], s.ts[sl].astype(np.float64), s.neg[sl]
        pos, negs = self.model.score(src, dst, src, neg, ts)
        logits = torch.cat([pos, negs]).float()  # (2B,)
        labels = torch.cat([torch.ones_like(pos), torch.zeros_like(negs)]).float()
        loss = self.F.binary_cross_entropy_with_logits(logits, labels)
        self.opt.zero_grad()
        loss.backward()
        self.state.observe(src, dst, ts, s.eids[sl])
        self.opt.step()
        self.state.detach_state()
        return float(loss.item())

    def eval_step(self, sl: slice):
        s = self.s
        with self.torch.no_grad():
            pos, neg = self.model.score(s.src[sl], s.dst[sl], s.src[sl], s.neg[sl], s.ts[sl].astype(np.float64))
            self.state.observe(s.src[sl], s.dst[sl], s.ts[sl].astype(np.float64), s.eids[sl])
        return self.torch.sigmoid(pos).numpy(), self.torch.sigmoid(neg).numpy()

    def evaluate(self, evals: list[slice]) -> dict:
        self.start(False)
        self.eval_step(evals[0])
        pos, neg = [], []
        t0 = time.perf_counter()
        for sl in evals[1:]:
            p, q = self.eval_step(sl)
            pos.append(p)
            neg.append(q)
        return {"eval_bps": (len(evals) - 1) / (time.perf_counter() - t0), "metric": _ap(pos, neg)}

    def n_parameters(self) -> int:
        return int(sum(p.numel() for p in self.model.parameters() if p.requires_grad))


def _spmm_shim() -> None:
    """torch_sparse.spmm as torch_sparse/spmm.py computes it (gather the columns' rows, scale, scatter-add into
    the rows), on PyG's scatter: registered only where torch_sparse is not importable."""
    import importlib.util
    import types

    if "torch_sparse" in sys.modules or importlib.util.find_spec("torch_sparse") is not None:
        return
    from torch_geometric.utils import scatter

    def spmm(index, value, m, n, matrix):
        row, col = index[0], index[1]
        out = matrix.index_select(-2, col) * value.unsqueeze(-1)  # (nnz, d)
        return scatter(out, row, dim=-2, dim_size=m, reduce="sum")  # (m, d)

    sys.modules["torch_sparse"] = types.SimpleNamespace(spmm=spmm)


class Authors:
    """The authors' modules, stepped as the bodies of their train() and test() step them."""

    def __init__(self, cfg: dict, s, fit, checkout: Path):
        import torch

        _spmm_shim()
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "equivalence"))
        from build_fixtures import _pyg_extension_shims

        _pyg_extension_shims()  # torch_scatter stand-ins, numpy.trapz, pytorch_wavelets (imported, unused)
        sys.path.insert(0, str(checkout))
        from cus_tgn import LastNeighborLoader
        from torch.nn import Linear
        from torch_geometric.nn.models.tgn import IdentityMessage, LastAggregator
        from ufg_global import Net, get_d_list

        if cfg["memory_cell"] == "mlp":
            from tgn_mlp import TGNMemory
        else:
            from torch_geometric.nn import TGNMemory

        class GraphAttentionEmbedding(torch.nn.Module):  # link_prediction_transductive.py ~24-35
            def __init__(self, in_channels, out_channels, num_nodes, batch_norm=True, drop_out=0.5):
                super().__init__()
                self.conv = Net(in_channels, out_channels, out_channels, r=2, Lev=2, num_nodes=num_nodes,
                                shrinkage=None, threshold=1e-3, dropout_prob=drop_out, num_layers=2,
                                batch_norm=batch_norm)

            def forward(self, x, d_list, n_id):
                return self.conv(x, d_list, n_id)

        class LinkPredictor(torch.nn.Module):  # ~38-48
            def __init__(self, in_channels):
                super().__init__()
                self.lin_src, self.lin_dst = Linear(in_channels, in_channels), Linear(in_channels, in_channels)
                self.lin_final = Linear(in_channels, 1)

            def forward(self, z_src, z_dst):
                return self.lin_final((self.lin_src(z_src) + self.lin_dst(z_dst)).relu())

        N, msg_dim = s.num_nodes, fit.rank
        mdim, tdim, edim = int(cfg["memory_dim"]), int(cfg["d_T"]), int(cfg["embedding_dim"])
        torch.manual_seed(int(cfg["seed"]))
        self.memory = TGNMemory(N, msg_dim, mdim, tdim, message_module=IdentityMessage(msg_dim, mdim, tdim),
                                aggregator_module=LastAggregator())
        self.gnn = GraphAttentionEmbedding(mdim, edim, N, batch_norm=True, drop_out=float(cfg["dropout"]))
        self.link_pred = LinkPredictor(edim)
        self.loader = LastNeighborLoader(N, size=int(cfg["num_neighbors"]))
        params = set(self.memory.parameters()) | set(self.gnn.parameters()) | set(self.link_pred.parameters())
        self.opt = torch.optim.AdamW(params, lr=float(cfg["lr"]), weight_decay=float(cfg["weight_decay"]))
        self.criterion = torch.nn.BCEWithLogitsLoss()
        self.mode = fit.projection.float()  # (d, r): their `mode`
        self.msg = torch.from_numpy(s.edge_feat)  # (E + 1, d)
        self.get_d_list, self.torch, self.s, self.N, self.mdim = get_d_list, torch, s, N, mdim
        self.d_list_batch, self.t_batch = [], 0

    def _batch(self, sl: slice, neg=None):
        torch, s = self.torch, self.s
        src, dst = torch.from_numpy(s.src[sl]), torch.from_numpy(s.dst[sl])
        return (src, dst, torch.from_numpy(s.ts[sl]), self.msg[torch.from_numpy(s.eids[sl])] @ self.mode,
                torch.from_numpy((s.neg if neg is None else neg)[sl]))

    def prepare(self, train: list[slice]) -> None:
        """pre_train's operators (~52-109): only the loader's state and the node sets shape them; then reset."""
        for sl in train:
            src, dst, _, _, neg = self._batch(sl, self.s.prepass_neg)
            _, edge_index, _ = self.loader(self.torch.cat([src, dst, neg]).unique())
            self.d_list_batch.append(self.get_d_list(edge_index, self.N))
            self.loader.insert(src, dst)

    def start(self, training: bool) -> None:
        for m in (self.memory, self.gnn, self.link_pred):
            m.train(training)
        if training:  # train(): a fresh memory and an empty graph at every epoch
            self.memory.reset_state()
            self.loader.reset_state()
            self.t_batch = 0

    def _scores(self, src, dst, neg, d_list):
        """n_id, memory, s[n_id] = z, gnn over all N nodes, link predictor (their loop bodies)."""
        n_id, _, _ = self.loader(self.torch.cat([src, dst, neg]).unique())
        z, _ = self.memory(n_id)
        x = self.torch.zeros(self.N, self.mdim, dtype=self.torch.float32)
        x[n_id] = z
        z_full = self.gnn(x, d_list, n_id)  # (N, d_emb)
        return self.link_pred(z_full[src], z_full[dst]), self.link_pred(z_full[src], z_full[neg])

    def train_step(self, sl: slice) -> float:
        torch = self.torch
        self.opt.zero_grad()
        src, dst, t, msg, neg = self._batch(sl)
        pos_out, neg_out = self._scores(src, dst, neg, self.d_list_batch[self.t_batch])
        self.t_batch += 1
        loss = self.criterion(pos_out, torch.ones_like(pos_out)) + self.criterion(neg_out, torch.zeros_like(neg_out))
        self.memory.update_state(src, dst, t, msg)
        self.loader.insert(src, dst)
        loss.backward()
        self.opt.step()
        self.memory.detach()
        return loss.item() / 2  # their loss sums the positives' and the negatives' means

    def _eval_pass(self, evals: list[slice], d_lists: list | None) -> tuple[float, list, list, list]:
        """pre_test (d_lists None: operators built per batch and returned) or test() on the given operators."""
        torch = self.torch
        built, pos, neg = [], [], []
        with torch.no_grad():
            for i, sl in enumerate(evals):
                if i == 1:
                    t0 = time.perf_counter()
                src, dst, t, msg, negs = self._batch(sl)
                if d_lists is None:
                    _, edge_index, _ = self.loader(torch.cat([src, dst, negs]).unique())
                    built.append(self.get_d_list(edge_index, self.N))
                p, q = self._scores(src, dst, negs, built[-1] if d_lists is None else d_lists[i])
                if i:
                    pos.append(p.sigmoid().squeeze(-1).numpy())
                    neg.append(q.sigmoid().squeeze(-1).numpy())
                self.memory.update_state(src, dst, t, msg)
                self.loader.insert(src, dst)
        return (len(evals) - 1) / (time.perf_counter() - t0), built, pos, neg

    def evaluate(self, evals: list[slice]) -> dict:
        with self.torch.no_grad():  # their test() is a no_grad function that begins with memory.eval(): a flush
            self.start(False)
        memory, loader = copy.deepcopy(self.memory), copy.deepcopy(self.loader)
        build_bps, d_lists, _, _ = self._eval_pass(evals, None)  # their first evaluation: pre_test
        self.memory, self.loader = memory, loader
        bps, _, pos, neg = self._eval_pass(evals, d_lists)  # every later epoch: test() on pre_test's operators
        return {"eval_bps": bps, "eval_build_bps": build_bps, "metric": _ap(pos, neg)}

    def n_parameters(self) -> int:
        return int(sum(p.numel() for m in (self.memory, self.gnn, self.link_pred) for p in m.parameters()
                       if p.requires_grad))
