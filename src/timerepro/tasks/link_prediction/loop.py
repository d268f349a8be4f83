"""One link-prediction run: data, split, training with early stopping, the evaluation of every part under every
sampler, the probes the config asks for, and what the run records (the package docstring says the protocol)."""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn.functional as F

from timerepro import metric_keys
from timerepro.data.ctdg import link_prediction_split
from timerepro.graphs.negatives import STRATEGIES, dyglib_eval_samplers, train_sampler
from timerepro.graphs.neighbors import TRAIN_NEIGHBOR_SEED, TemporalNeighbors, neighbor_rng
from timerepro.models.graph.memory import stream_state
from timerepro.tasks.link_prediction.data import load_data
from timerepro.tasks.link_prediction.evaluation import (METRIC_KEYS, MONITOR_MODE, MONITOR_PARTS, PARTS, early_stopping,
                                                         evaluate, evaluate_pass, reuses_positives,
                                                         selection_pass)
from timerepro.tasks.link_prediction.model import MODELS, LinkPredictionModel, count_parameters, trainable
from timerepro.tasks.link_prediction.training import autocast, make_optimizer
from timerepro.tasks.probes import Trained, run_probes
from timerepro.train import FitResult, fit


def run(config: dict, ctx) -> dict:
    """The run of an effective config (`tasks.effective.effective_config`, applied by the run before the task)."""
    seed = int(config["seed"])
    batch_size = int(config["batch_size"])
    eval_batch_size = int(config.get("eval_batch_size") or batch_size)
    eval_negatives = list(config["eval_negatives"])
    monitor_negatives = config["monitor_negatives"]
    monitor = config["monitor_metric"]
    for s in eval_negatives + [monitor_negatives]:
        if s not in STRATEGIES:
            raise ValueError(f"unknown negative sampling strategy {s!r}; known: {STRATEGIES}")
    if monitor not in MONITOR_MODE:
        raise ValueError(f"unknown monitor_metric {monitor!r}; known: {sorted(MONITOR_MODE)}")
    builder = MODELS[config["model"]]  # unknown names are refused here, before any data is read
    monitor_part = MONITOR_PARTS.get(config.get("monitor_setting", "transductive"))
    if monitor_part is None:
        raise ValueError(f"unknown monitor_setting {config['monitor_setting']!r}; known: {sorted(MONITOR_PARTS)}")
    stopping = early_stopping(config)  # train.fit's monitor, mode and ties

    data, data_info = load_data(config)
    split = link_prediction_split(data)
    train_graph = TemporalNeighbors.from_data(data, split.train)  # DyGLib: training sampler on training edges
    full_graph = TemporalNeighbors.from_data(data)  # validation and test see every edge (before t)
    train_idx = np.flatnonzero(split.train)

    device = torch.device(ctx.device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    torch.manual_seed(seed)
    model = LinkPredictionModel(builder(config, data, split, train_graph)).to(device)
    opt = make_optimizer(config, model.parameters()) if trainable(model) else None
    negatives = train_sampler(data, split, seed=seed)
    monitor_samplers = dyglib_eval_samplers(data, split, monitor_negatives)
    if monitor_part not in monitor_samplers:
        raise ValueError(f"{config['dataset']}: no new-node validation edge, so no inductive model selection")
    val_idx = np.flatnonzero(getattr(split, monitor_part))  # the edges of the monitored setting

    state = stream_state(model.backbone)
    amp = config.get("amp", "none")  # optional (absent from older configs, so their run ids stay)
    autocast(amp, device)  # refuse an unknown setting before the first epoch

    def train_epoch(epoch: int, cursor) -> dict:
        model.train()
        neighbors = neighbor_rng(TRAIN_NEIGHBOR_SEED)
        model.backbone.set_graph(train_graph, neighbors)
        # the training negatives of epoch e come from a stream seeded by (seed, e): a resumed run
        # draws exactly the negatives the uninterrupted run drew
        negatives.random_state = np.random.RandomState([seed, epoch])
        state.reset_state()  # DyGLib: fresh memory at the start of every epoch
        total = torch.zeros((), device=device, dtype=torch.float64)  # read back once, at the end of the epoch

        def save() -> dict:  # what a stopped epoch carries to its resumption (memory: in the model's buffers)
            return {"model": model.state_dict(), "neighbors": neighbors.get_state(),
                    "negatives": negatives.random_state.get_state(), "total": total.clone().cpu()}

        def load(saved: dict) -> None:
            model.load_state_dict(saved["model"])
            neighbors.set_state(saved["neighbors"])
            negatives.random_state.set_state(saved["negatives"])
            total.copy_(saved["total"])

        starts = range(0, len(train_idx), batch_size)
        for start in ctx.progress(cursor.batches(starts, save=save, load=load), desc=f"epoch {epoch}",
                                  initial=cursor.start, total=len(starts)):
            b = train_idx[start:start + batch_size]
            src, dst, ts = data.src[b], data.dst[b], data.ts[b]
            neg_src, neg_dst = negatives.sample_for_batch(src, dst, ts)  # neg_src = src (DyGLib training)
            with autocast(amp, device):
                pos_logits, neg_logits = model.score(src, dst, neg_src, neg_dst, ts)
            logits = torch.cat([pos_logits, neg_logits]).float()  # (2B,)
            labels = torch.cat([torch.ones(len(b), device=device), torch.zeros(len(b), device=device)])
            loss = F.binary_cross_entropy_with_logits(logits, labels)
            opt.zero_grad()
            loss.backward()
            state.observe(src, dst, ts, data.edge_ids[b])  # with the parameters that scored the batch
            opt.step()
            state.detach_state()  # DyGLib: no gradient back past this batch
            total += loss.detach().double() * len(b)
        state.backup_state("train_end")  # where validation starts (DyGLib's train backup)
        return {"train_loss": total.item() / max(len(train_idx), 1)}

    def validate() -> dict:
        m = evaluate(model, data, val_idx, monitor_samplers[monitor_part], full_graph, eval_batch_size, amp)
        return {k: v for k, v in m.items() if k != "n_edges"}

    if trainable(model):
        result = fit(model, opt, train_epoch=train_epoch, validate=validate, **stopping,
                     max_epochs=int(config["max_epochs"]),
                     patience=int(config["patience"]), ctx=ctx, mid_epoch=True)
    else:  # nothing to train (EdgeBank): evaluated as built, no epochs
        result = FitResult()

    metrics: dict = {}
    evaluated: dict = {}
    state.backup_state("val_end")  # the best state has seen the validation edges
    t_test = time.perf_counter()
    selected = selection_pass(result, monitor_part, monitor_negatives, len(val_idx))
    # a part's positives scored once, reused by its passes under the other samplers (same batches, same weights)
    positives: dict | None = {} if reuses_positives(model) else None
    for strategy in eval_negatives:
        samplers = monitor_samplers if strategy == monitor_negatives else dyglib_eval_samplers(data, split, strategy)
        for sampler_name, mask_name, part, setting in PARTS:
            if sampler_name not in samplers:
                continue  # no new-node edge in this split (tiny graphs)
            idx = np.flatnonzero(getattr(split, mask_name))
            if (sampler_name, strategy) in selected:  # the pass that selected the model: its figures, not a rerun
                m = selected[sampler_name, strategy]
            else:
                state.restore_state("train_end" if part == "val" else "val_end")
                known = None if positives is None else positives.get(sampler_name)
                m, pos = evaluate_pass(model, data, idx, samplers[sampler_name], full_graph, eval_batch_size, amp,
                                       positives=known)
                if positives is not None:
                    positives[sampler_name] = pos
            evaluated[metric_keys.evaluated(part, setting, strategy)] = m["n_edges"]
            for key in METRIC_KEYS:
                metrics[metric_keys.link_prediction(part, setting, strategy, key)] = m[key]

    # the probes the config asks for (attention maps, noise, case study), on the selected model
    trained = Trained(model, data, split, full_graph,
                      evaluate=lambda idx, sampler, graph, size: evaluate(model, data, idx, sampler, graph, size, amp))
    t_probes = time.perf_counter()
    metrics.update(run_probes(trained, config, ctx))
    timing = {"test_time_s": round(t_probes - t_test, 4), "probe_time_s": round(time.perf_counter() - t_probes, 4)}

    epoch_times = [row["epoch_time_s"] for row in result.history]
    metrics.update({
        "best_epoch": result.best_epoch,
        "epochs_run": result.epochs_run,
        "epoch_time_s": float(np.mean(epoch_times)) if epoch_times else None,
        "n_parameters": count_parameters(model),
        "peak_rss_mb": round(ctx.peak_memory_mb(), 1),  # this run's own peak (timerepro.memory)
        "peak_gpu_memory_mb": (round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
                               if device.type == "cuda" else None),
        # statistics of the training split's time differences handed to the encoder (used by
        # linear and cosine_scale, recorded for every encoder)
        "time_diff_mean": getattr(model.backbone, "time_mean", None),
        "time_diff_std": getattr(model.backbone, "time_std", None),
        **(model.backbone.extra_metrics() if hasattr(model.backbone, "extra_metrics") else {}),
    })
    return {
        "metrics": metrics,
        "data": {**data_info, "n_edges": int(len(data.src)), "n_train": int(split.train.sum()),
                 "n_val": int(split.val.sum()), "n_test": int(split.test.sum()),
                 "n_new_node_val": int(split.new_node_val.sum()), "n_new_node_test": int(split.new_node_test.sum()),
                 "evaluated_edges": evaluated},
        "resumed_from_epoch": result.resumed_from_epoch,
        "timing": timing,  # provenance: where the run's time after training went
    }

