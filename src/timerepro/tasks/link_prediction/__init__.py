"""Future link prediction on a continuous-time dynamic graph, DyGLib's protocol (`train_link_prediction.py`,
`evaluate_link_prediction.py`, `evaluate_models_utils.py`), for any backbone of the model registry.

* data: `prepare(dataset, standin=...)`, DyGLib's chronological 70/15/15 split with held-out new nodes;
* training: the training edges in time order, batches of `batch_size`, one random negative per
  positive (the positive source with a random destination), BCE, Adam(lr) (or `optimizer: adamw` with
  `weight_decay`, swinit's protocol); the model sees only the training edges while training and every
  edge while evaluating;
* model selection: early stopping on a validation metric (`monitor_metric`, DyGLib's batch-averaged
  AP by default) under `monitor_negatives` (random by default) on the validation edges of
  `monitor_setting` (transductive: all of them, by default; inductive: the new-node ones, as swinit's
  inductive runs), best weights restored;
* evaluation: validation and test, transductive (all edges of the split) and inductive (edges with a
  node unseen in training), under every sampler of `eval_negatives`, with DyGLib's batch-averaged AP
  and AUC and beside them the whole-split figures (`*_whole`);
* cost: mean training time per epoch, peak process RSS (and peak GPU memory on CUDA), parameters,
  and what the backbone reports about itself (`extra_metrics()`, optional).

Metric names: `{val|test}_{transductive|inductive}_{negatives}_{ap|auc|ap_whole|auc_whole}`.
A backbone is a model of params/models.yaml serving link_prediction (MODELS, a view of that file), whose
builder `build(config, data, split, train_graph) -> module` returns a module with
`pair_embeddings(src, dst, times) -> (h_src, h_dst)`, `set_graph(neighbors, rng)` and `out_dim`.
Optional, compatible extensions of that contract:
* `embed(nodes, times)` and `queries_independent` (`backbone.NodeEmbedder`): a backbone whose embedding
  of a (node, time) query does not depend on the other queries (TGAT, TGN, GraphMixer with `recent` sampling) has a
  batch's 4B endpoint queries embedded in one call, so the sources shared by the positives and the
  random negatives (and any repeat) are embedded once (`LinkPredictionModel.score`);
* `pairs_independent`: a backbone whose embeddings of a pair do not depend on the other pairs of the call (TCL
  with `recent` sampling, JODIE) gets a batch's positives and negatives as one call of 2B pairs and shares what
  they share itself (a source's sequence or memory);
* a state that evolves with the stream (TGN's memory) is a `memory.StreamState`, which the loops call
  explicitly through `stream_state(backbone)` (a no-op for backbones without one): reset at the start of
  every training epoch, observe each batch after it is scored, detach after each optimizer step, backup
  and restore named copies around validation and test (`models/graph/memory.py` says when and why).

Settings: `amp: bfloat16` runs the forward passes under autocast (`none`, float32, by default; not exact).
`eval_batch_size` (absent: `batch_size`, DyGLib's one size) batches validation and test apart from training, so
a laptop cut that trains in small batches still evaluates, and is floored by EdgeBank, under the paper's batching
(the batch-averaged AP and a memory model's updates depend on it).
The batch loops keep losses and probabilities on the model's device and read them back once per epoch
or evaluation; neighbour retrieval results are moved once per batch (`backbone.to_device`).

Modules: `loop` (the run), `model` (backbone + head), `training` (optimizer, precision), `evaluation` (one
pass, the parts and the selection metric), `data` (the graph a run reads); the evaluation probes a config
asks for (attention maps, noise, case study) are `tasks/probes/`. What node classification and the cost
measurement share is exported here.
"""

from timerepro.graphs.neighbors import EVAL_NEIGHBOR_SEED, TRAIN_NEIGHBOR_SEED, neighbor_rng
from timerepro.tasks.effective import effective_config
from timerepro.tasks.link_prediction.data import load_data
from timerepro.tasks.link_prediction.evaluation import METRIC_KEYS, MONITOR_MODE, MONITOR_PARTS, PARTS, evaluate
from timerepro.tasks.link_prediction.loop import run
from timerepro.tasks.link_prediction.model import (MODELS, LinkPredictionModel, build_model, count_parameters,
                                                   device_of, trainable)
from timerepro.tasks.link_prediction.training import AMP, OPTIMIZERS, adam, autocast, make_optimizer

__all__ = ["AMP", "EVAL_NEIGHBOR_SEED", "METRIC_KEYS", "MODELS", "MONITOR_MODE", "MONITOR_PARTS", "OPTIMIZERS", "PARTS",
           "TRAIN_NEIGHBOR_SEED", "LinkPredictionModel", "adam", "autocast", "build_model", "count_parameters",
           "device_of", "effective_config", "evaluate", "load_data", "make_optimizer", "neighbor_rng", "run",
           "trainable"]
