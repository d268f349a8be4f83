"""The names of the metrics a run records (metrics.json, history.json): built here, once, for the tasks that write
them and the report that reads them back (imports nothing of the project: every layer may use it).

Link prediction evaluates each split of each setting under each negative sampler (DyGLib's evaluation):
`<split>_<setting>_<sampler>_<measure>`, e.g. `test_transductive_random_ap`; dyg_mamba's noise probe adds
`test_<setting>_random_noise<ratio>_<measure>`. Node classification records `<split>_<measure>`
(`test_auc`); a history row prefixes the validation metrics of an epoch with `val_`.
"""

from __future__ import annotations

SPLITS = ("val", "test")
SETTINGS = ("transductive", "inductive")  # seen nodes; new nodes (DyGLib's new_node_* edges)
SAMPLERS = ("random", "historical", "inductive")  # DyGLib's negative sampling strategies
MEASURES = ("ap", "auc", "ap_whole", "auc_whole")  # batch-mean AP/AUC and the whole-split ones


def evaluated(split: str, setting: str, sampler: str) -> str:
    """One evaluation of link prediction ("test_transductive_random"): the key of its edge count, the stem of its
    metrics."""
    return f"{split}_{setting}_{sampler}"


def link_prediction(split: str, setting: str, sampler: str, measure: str) -> str:
    """A link-prediction metric: "test_transductive_random_ap"."""
    return f"{evaluated(split, setting, sampler)}_{measure}"


def noise(ratio: float, measure: str, setting: str = "transductive") -> str:
    """dyg_mamba Figures 8-9: a test metric (random negatives) with a `ratio` of noisy neighbours
    ("test_transductive_random_noise0.2_ap"; ratio printed with :g, so 0.0 -> "noise0")."""
    return f"{evaluated('test', setting, 'random')}_noise{ratio:g}_{measure}"


def node_classification(split: str, measure: str) -> str:
    """A node-classification metric: "test_auc", "val_loss"."""
    return f"{split}_{measure}"


def validation(key: str) -> str:
    """A validation metric in a history row (train.fit): "val_test_accuracy" for `test_accuracy`."""
    return f"val_{key}"
