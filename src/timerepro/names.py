"""Display names: the one table of the labels tables and figures print, without importing torch.

* encoders: ENCODER_LABELS (`timerepro.encoders` registers one class per key and refuses any other name);
* models: MODEL_LABELS (a paper that prints a model under another name, e.g. hawkes_attention's "Ours"
  or its typo "IFTTP", swinit's "JODIE-rnn", says so in its report module, on top of this table);
* datasets: `dataset_label(name, paper)`, read from params/datasets.lock.yaml (`papers.<paper>.name`),
  the dataset's only record, since papers print the same dataset differently ("US Legis", "US Legis.").
"""

from __future__ import annotations

from functools import lru_cache

ENCODER_LABELS = {
    "linear": "Linear",
    "cosine": "Sinusoidal",
    "sine_cosine": "Sine-cosine",
    "cosine_scale": "Sinusoidal-scale",
    "time2vec": "Time2Vec",
    "fixed_cosine": "Fixed sinusoidal",  # GraphMixer's untrained encoder (dyg_mamba)
    "none": "No time information",       # dyg_mamba Figure 1's w/o-time arms
}

STANDIN_SCALES = ("smoke", "offline", "paper")  # the scales a labelled synthetic stand-in can be made at

MODEL_LABELS = {
    # link prediction (linear_time Tables 1-10)
    "tgat": "TGAT",
    "dygformer": "DyGFormer",
    "dygformer_separate": "DyGFormer-separate",
    "dygdecoder": "DyGDecoder",
    "tgn": "TGN",
    "cawn": "CAWN",
    # dyg_mamba's other baselines and its model (Tables 2-11)
    "jodie": "JODIE",
    "dyrep": "DyRep",
    "edgebank": "EdgeBank",
    "tcl": "TCL",
    "graphmixer": "GraphMixer",
    "dyg_mamba": "DyG-Mamba",
    # swinit (Tables 1-4; its report prints JODIE and TGN with their memory cell)
    "jodie_gru": "JODIE-gru",
    "swinit_mlp": "SWINIT-mlp",
    "swinit_gru": "SWINIT-GRU",
    # temporal point processes (hawkes_attention Tables 2-6)
    "hawkes_attention": "Hawkes Attention",
    "rmtpp": "RMTPP",
    "nhp": "NHP",
    "sahp": "SAHP",
    "thp": "THP",
    "attnhp": "AttNHP",
    "odetpp": "ODETPP",
    "fullynn": "FullyNN",
    "intensity_free": "IFTPP",
}


@lru_cache(maxsize=4)
def _lock(path: str):
    from timerepro.data.lock import load_lock

    return load_lock(path)


def dataset_label(name: str, paper: str) -> str:
    """How `paper` prints dataset `name` (params/datasets.lock.yaml); the name itself when the lock does
    not list it for that paper."""
    from timerepro.data.lock import default_lock_path

    ds = _lock(str(default_lock_path())).datasets.get(name)
    return ds.papers[paper]["name"] if ds is not None and paper in ds.papers else name
