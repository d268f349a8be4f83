"""Hawkes Attention: the project's model and loop against the authors' HawkesTHP in the authors' runner loop
(TanXZfra/Time-aware-Hawkes-Attention, a copy of EasyTPP; `--hawkes DIR`, read from the checkout, never copied).

Reference side, as their `scripts/train_experiment/run.py` -> `models/runner/tpp_runner.py` builds and runs it:
their `TPPDataLoader` (HF `json` loading, their EventTokenizer), `set_seed(seed)`, `HawkesTHP(ModelConfig)`,
their `TorchModelWrapper` (their `set_optimizer`: Adam, weight decay `l2_coef` on the phi_dict kernels only),
then `run_batch(batch, TRAIN)` and `run_batch(batch, VALIDATE)` (log-likelihood and one-step thinning
predictions). Their ModelConfig holds the project's values of hawkes_attention's Taxi run (Table 7 and 8: d_model
64, d_inner (their hidden_size) 128, d_k = d_v = 64, 2 layers, 2 heads, phi 8 x 2, no RNN (Taxi "NA"; their class
builds the LSTM anyway, unused), dropout 0.1, layer norm, lr 1e-4, phi decay 1e-3), their thinning settings the
task's. The two sides draw their initial weights differently (different modules): the metrics are two draws.
"""

from __future__ import annotations

import contextlib
import sys
from types import SimpleNamespace

from reference_rows.tpp import Inputs, K, project_measure, reference_loop, run_config

SOURCE = "Hawkes Attention authors (run_batch)"
METRIC = "evaluation log-likelihood per event (EasyTPP's 20-point grid)"
LOSS = "training NLL per event of the timed steps"
PYTHON = None  # the project's environment (reference_table's interpreter)
MODELS = ("hawkes_attention",)
STEPS = 4  # timed steps per phase and process (reference_rows: --batches overrides)
NEEDS = ("hawkes",)


def config(model: str) -> dict:
    """The paper-scale run config of hawkes_attention's Taxi experiment (Table 8's Taxi values)."""
    return run_config("hawkes_attention", "tpp_taxi")


def batch_size(model: str) -> int:
    return int(config(model)["batch_size"])


def authors_model_config(cfg: dict):
    """The authors' ModelConfig (models/config_factory/model_config.py) with the project's run config's values."""
    from models.config_factory import ModelConfig

    from timerepro.tpp.thinning import THINNING_KEYS

    d_rnn = cfg["d_rnn"]
    return ModelConfig(
        model_id="HawkesTHP", training=True, hidden_size=int(cfg["d_inner"]), d_model=int(cfg["d_model"]),
        d_k=int(cfg["d_k"]), d_v=int(cfg["d_v"]), num_layers=int(cfg["num_layers"]), num_heads=int(cfg["num_heads"]),
        phi_width=int(cfg["phi_width"]), phi_depth=int(cfg["phi_depth"]), rnn=d_rnn is not None,
        **({"d_rnn": int(d_rnn)} if d_rnn else {}), dropout_rate=float(cfg["dropout"]), use_ln=True,
        use_mc_samples=True, loss_integral_num_sample_per_step=int(cfg["loss_integral_num_sample_per_step"]),
        thinning={**{k: cfg[k] for k in THINNING_KEYS}, "patience_counter": 5},
        num_event_types=K, num_event_types_pad=K + 1, event_pad_index=K, gpu=-1)


def measure(impl: str, model: str, paths: dict, n: int, seed: int) -> dict:
    cfg = {**config(model), "seed": seed}
    inputs = Inputs(n, int(cfg["batch_size"]), seed)
    if impl == "project":
        return project_measure(cfg, inputs, seed)
    sys.path.insert(0, paths["hawkes"])
    import datasets
    from models.config_factory import DataConfig
    from models.model.torch_model.torch_Hawkesthp import HawkesTHP
    from models.preprocess import TPPDataLoader
    from models.torch_wrapper import TorchModelWrapper
    from models.utils import RunnerPhase, set_seed

    datasets.config.HF_DATASETS_CACHE = str(inputs.folder / "hf")
    specs = {"num_event_types": K, "pad_token_id": K, "padding_side": "right", "truncation_side": "right"}
    dc = DataConfig.parse_from_yaml_config({"train_dir": inputs.json("train"), "valid_dir": inputs.json("dev"),
                                            "test_dir": inputs.json("dev"), "data_format": "json", "data_specs": specs})
    loader = TPPDataLoader(dc, backend="torch", batch_size=int(cfg["batch_size"]), shuffle=False)
    train_loader, dev_loader = loader.get_loader("train"), loader.get_loader("dev")
    mc = authors_model_config(cfg)
    set_seed(seed)
    with contextlib.redirect_stdout(sys.stderr):  # their constructor and optimizer print their settings
        net = HawkesTHP(mc)
        wrapper = TorchModelWrapper(net, SimpleNamespace(model_id="HawkesTHP", specs={}), mc, SimpleNamespace(
            gpu=-1, optimizer="adam", learning_rate=float(cfg["lr"]), use_tfb=False,
            l2_coef=float(cfg["phi_weight_decay"]), batch_size=int(cfg["batch_size"])))
    out = reference_loop(wrapper, train_loader, dev_loader, RunnerPhase.TRAIN, RunnerPhase.VALIDATE)
    out["n_parameters"] = int(sum(p.numel() for p in net.parameters() if p.requires_grad))
    return out
