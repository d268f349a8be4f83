"""The reference side of the graph benchmarks (`reference_table.py`, `graph_dyglib_bench.py`): one of DyGLib's
backbones (or the DyG-Mamba authors') with DyGLib's MergeLayer, driven as DyGLib's train_link_prediction.py drives
it, read from local checkouts (never vendored), on a graph the benchmark gives.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

HERE = Path(__file__).resolve().parent
N_FEAT = 172  # DyGLib's zero node and edge features for UCI
LR = 1e-4  # DyGLib's learning rate (train_link_prediction.py's argparse default)

# reference configuration per model: DyGLib's best for UCI (utils/load_configs.py:76-234 and argparse defaults
# :16-39: time_feat_dim 100, num_heads 2, position_feat_dim 172, walk_length 1, num_walk_heads 8, time_gap 2000,
# channel_embedding_dim 50); DyG-Mamba: its load_link_prediction_mamba for uci (load_configs.py:111-197)
REFERENCE = {
    "tgat": dict(cls="TGAT", num_neighbors=20, num_layers=2, dropout=0.1, strategy="recent"),
    "dygformer": dict(cls="DyGFormer", num_layers=2, dropout=0.1, max_len=32, patch=1, strategy="recent"),
    "tgn": dict(cls="TGN", num_neighbors=10, num_layers=1, dropout=0.1, strategy="recent"),
    "cawn": dict(cls="CAWN", num_neighbors=64, dropout=0.1, strategy="time_interval_aware", scaling=1e-6),
    "tcl": dict(cls="TCL", num_neighbors=20, num_layers=2, dropout=0.0, strategy="recent"),
    "graphmixer": dict(cls="GraphMixer", num_neighbors=20, num_layers=2, dropout=0.4, strategy="recent"),
    "jodie": dict(cls="JODIE", num_neighbors=10, num_layers=1, dropout=0.4, strategy="recent"),
    "dyrep": dict(cls="DyRep", num_neighbors=10, num_layers=1, dropout=0.0, strategy="recent"),
    "edgebank": dict(cls="EdgeBank", memory="unlimited_memory"),
    "dyg_mamba": dict(cls="DyGMamba", num_layers=2, dropout=0.1, max_len=1024, batch=20, strategy="recent"),
}
MEMORY = ("tgn", "jodie", "dyrep")


class Reference:
    """A DyGLib (or DyG-Mamba authors') backbone with DyGLib's MergeLayer, driven as train_link_prediction.py.

    graph: (src, dst, ts, eids, node_feat, edge_feat, train) with `train` the mask of the edges the training
    neighbour sampler sees (the evaluation sampler sees every edge); paths: checkout per key ("dyglib", and for
    DyG-Mamba "dyg_mamba" and "mamba_ssm"); `seed` seeds torch right before the backbone is built; `device`: DyGLib's
    own argument (where its modules put the sampled neighbours), the model moved there as train_link_prediction.py
    does (`convert_to_gpu`)."""

    def __init__(self, name: str, paths: dict, seed: int, graph: tuple, device: str = "cpu"):
        import torch
        from torch import nn

        cfg = REFERENCE[name]
        self.name, self.cfg, self.torch = name, cfg, torch
        src, dst, ts, eids, node_feat, edge_feat, train = graph
        part = lambda m: SimpleNamespace(src_node_ids=src[m], dst_node_ids=dst[m], node_interact_times=ts[m],  # noqa: E731
                                         edge_ids=eids[m], labels=np.zeros(int(np.sum(np.ones(len(src))[m]))))
        self.history = part(np.ones(len(src), bool))
        if name == "edgebank":
            sys.path.insert(0, paths["dyglib"])
            from models.EdgeBank import edge_bank_link_prediction

            self.edge_bank, self.model = edge_bank_link_prediction, None
            return
        if name == "dyg_mamba":
            sys.path.insert(0, str(HERE / "equivalence"))
            from build_fixtures import _mamba_ssm_shims

            _mamba_ssm_shims(Path(paths["mamba_ssm"]))
        sys.path.insert(0, paths["dyg_mamba" if name == "dyg_mamba" else "dyglib"])
        from models.modules import MergeLayer
        from utils.utils import get_neighbor_sampler

        samplers = [get_neighbor_sampler(part(m), cfg["strategy"], time_scaling_factor=cfg.get("scaling", 0.0), seed=s)
                    for m, s in ((train, 0), (np.ones(len(src), bool), 1))]
        self.train_sampler, self.full_sampler = samplers
        torch.manual_seed(seed)
        common = dict(node_raw_features=node_feat, edge_raw_features=edge_feat, neighbor_sampler=self.train_sampler,
                      time_feat_dim=100, dropout=cfg["dropout"], device=device)
        if name == "tgat":
            from models.TGAT import TGAT
            backbone = TGAT(num_layers=cfg["num_layers"], num_heads=2, **common)
        elif name == "dygformer":
            from models.DyGFormer import DyGFormer
            backbone = DyGFormer(channel_embedding_dim=50, patch_size=cfg["patch"], num_layers=cfg["num_layers"],
                                 num_heads=2, max_input_sequence_length=cfg["max_len"], **common)
        elif name in MEMORY:
            from models.MemoryModel import MemoryModel, compute_src_dst_node_time_shifts
            shifts = compute_src_dst_node_time_shifts(src[train], dst[train], ts[train])
            backbone = MemoryModel(model_name=cfg["cls"], num_layers=cfg["num_layers"], num_heads=2,
                                   src_node_mean_time_shift=shifts[0], src_node_std_time_shift=shifts[1],
                                   dst_node_mean_time_shift_dst=shifts[2], dst_node_std_time_shift=shifts[3], **common)
        elif name == "cawn":
            from models.CAWN import CAWN
            backbone = CAWN(position_feat_dim=172, walk_length=1, num_walk_heads=8, **common)
        elif name == "tcl":
            from models.TCL import TCL
            backbone = TCL(num_layers=cfg["num_layers"], num_heads=2, num_depths=cfg["num_neighbors"] + 1, **common)
        elif name == "graphmixer":
            from models.GraphMixer import GraphMixer
            backbone = GraphMixer(num_tokens=cfg["num_neighbors"], num_layers=cfg["num_layers"], **common)
        else:
            import contextlib

            from mamba_ssm.models.config_mamba import MambaConfig
            from models.DyGMamba import DyGMamba
            config = MambaConfig()
            config.ssm_cfg = {"d_state": 16, "d_conv": 4, "expand": 2}  # train_link_prediction.py:136-137
            with contextlib.redirect_stdout(sys.stderr):  # the constructor prints its layers
                backbone = DyGMamba(config=config, channel_embedding_dim=50, patch_size=1, num_layers=cfg["num_layers"],
                                    max_input_sequence_length=cfg["max_len"], **common)
        self.model = nn.Sequential(backbone, MergeLayer(N_FEAT, N_FEAT, N_FEAT, 1)).to(device)
        self.loss = nn.BCELoss()

    def optimizer(self):
        return None if self.model is None else self.torch.optim.Adam(self.model.parameters(), lr=LR)

    def start(self, training: bool) -> None:
        """Train or evaluation mode with that phase's neighbour sampler; a training pass starts from empty memories."""
        if self.model is None:
            return
        self.model.train(training)
        if self.name != "jodie":  # JODIE reads no neighbours (DyGLib's loop leaves it out)
            self.model[0].set_neighbor_sampler(self.train_sampler if training else self.full_sampler)
        if training and self.name in MEMORY:
            self.model[0].memory_bank.__init_memory_bank__()

    def _embed(self, src, dst, ts, eids, positive: bool):
        bb, k = self.model[0], self.cfg.get("num_neighbors")
        if self.name in ("tgat", "cawn", "tcl"):
            return bb.compute_src_dst_node_temporal_embeddings(src, dst, ts, num_neighbors=k)
        if self.name == "graphmixer":
            return bb.compute_src_dst_node_temporal_embeddings(src, dst, ts, num_neighbors=k, time_gap=2000)
        if self.name == "dygformer":
            return bb.compute_src_dst_node_temporal_embeddings(src, dst, ts)
        if self.name == "dyg_mamba":
            return bb.compute_src_dst_node_temporal_embeddings(src, dst, ts, edge_ids=eids if positive else None,
                                                               edges_are_positive=positive)
        return bb.compute_src_dst_node_temporal_embeddings(src, dst, ts, edge_ids=eids if positive else None,
                                                           edges_are_positive=positive, num_neighbors=k)

    def probabilities(self, batch):
        """(B,), (B,) sigmoid scores of the positives and the negatives (memory models: negatives first)."""
        src, dst, ts, eids, neg_dst = batch
        if self.model is None:  # EdgeBank: DyGLib's evaluation, the history being every edge before the batch
            first = int(eids[0]) - 1
            hist = SimpleNamespace(**{k: v[:first] for k, v in vars(self.history).items()})
            pos, neg = self.edge_bank(hist, (src, dst), (src, neg_dst), self.cfg["memory"], "fixed_proportion", 0.15)
            return self.torch.from_numpy(np.asarray(pos)), self.torch.from_numpy(np.asarray(neg))
        if self.name in MEMORY + ("dyg_mamba",):  # their loops embed the negatives first
            neg = self._embed(src, neg_dst, ts, None, False)
            pos = self._embed(src, dst, ts, eids, True)
        else:
            pos = self._embed(src, dst, ts, eids, True)
            neg = self._embed(src, neg_dst, ts, None, False)
        head = self.model[1]
        return (head(input_1=pos[0], input_2=pos[1]).squeeze(-1).sigmoid(),
                head(input_1=neg[0], input_2=neg[1]).squeeze(-1).sigmoid())

    def train_step(self, opt, batch) -> float:
        torch = self.torch
        pos, neg = self.probabilities(batch)
        loss = self.loss(torch.cat([pos, neg]), torch.cat([torch.ones_like(pos), torch.zeros_like(neg)]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if self.name in MEMORY:
            self.model[0].memory_bank.detach_memory_bank()
        return float(loss.item())

    def eval_step(self, batch):
        with self.torch.no_grad():
            return self.probabilities(batch)

    def n_parameters(self) -> int:
        # trainable only: DyGLib's MemoryBank holds its memories as frozen nn.Parameters (state, not weights)
        return 0 if self.model is None else int(sum(p.numel() for p in self.model.parameters() if p.requires_grad))
