"""The eight EasyTPP baselines: the project's loop (tasks/temporal_point_process.py over `timerepro.tpp`) against
EasyTPP's own runner loop (easy-tpp 0.3.0, the version whose model classes the project trains).

Reference side, as `TPPRunner` builds and runs it (runner/base_runner.py, runner/tpp_runner.py `_init_model`,
`run_one_epoch`): `TPPDataLoader(DataConfig(json files), batch_size, shuffle=False)`, the training split's
`get_dt_stats()` into the ModelConfig (IntensityFree's normalisation), `set_seed(seed)`,
`BaseModel.generate_model_from_config`, `ModelWrapper` (Adam at the config's lr), then `run_batch(batch,
TRAIN)` and `run_batch(batch, VALIDATE)` (log-likelihood and one-step thinning predictions: what the runner's
validation and test phases do). The ModelConfig holds the same values as the project's (built by the project's
`model_config`, Table 6 and the task's thinning settings): one configuration, two loops. Both sides seed torch
with the run's seed before building the same class, so they start from the same weights.
"""

from __future__ import annotations

from types import SimpleNamespace

from reference_rows.tpp import Inputs, K, floor_note, project_measure, reference_loop, run_config  # noqa: F401

SOURCE = "EasyTPP 0.3.0 runner (run_batch)"
METRIC = "evaluation log-likelihood per event (EasyTPP's 20-point grid)"
LOSS = "training NLL per event of the timed steps"
PYTHON = None  # the project's environment (reference_table's interpreter)
MODELS = ("rmtpp", "nhp", "sahp", "thp", "attnhp", "odetpp", "fullynn", "intensity_free")
STEPS = 8  # timed steps per phase and process (reference_rows: --batches overrides)
NEEDS: tuple[str, ...] = ()  # easy-tpp is installed in the project's environment


def config(model: str) -> dict:
    """The paper-scale run config of the model's hawkes_attention experiment on Taxi (batch 256, lr 1e-3)."""
    return run_config("hawkes_attention", f"tpp_{model}")


def batch_size(model: str) -> int:
    return int(config(model)["batch_size"])


def measure(impl: str, model: str, paths: dict, n: int, seed: int) -> dict:
    cfg = {**config(model), "seed": seed}
    inputs = Inputs(n, int(cfg["batch_size"]), seed)
    if impl == "project":
        return project_measure(cfg, inputs, seed, floor=seed == 0)
    import datasets
    import easy_tpp.model  # noqa: F401  (registers every model class as a BaseModel subclass)
    from easy_tpp.config_factory import DataConfig
    from easy_tpp.model.basemodel import BaseModel
    from easy_tpp.model_wrapper import ModelWrapper
    from easy_tpp.preprocess import TPPDataLoader
    from easy_tpp.utils import RunnerPhase, set_seed

    from timerepro.models.tpp.easytpp import EASYTPP_MODELS, model_config

    datasets.config.HF_DATASETS_CACHE = str(inputs.folder / "hf")  # HF's json loader caches: not in ~/.cache
    specs = {"num_event_types": K, "pad_token_id": K, "padding_side": "right", "truncation_side": "right"}
    dc = DataConfig.parse_from_yaml_config({"train_dir": inputs.json("train"), "valid_dir": inputs.json("dev"),
                                            "test_dir": inputs.json("dev"), "data_format": "json", "data_specs": specs})
    loader = TPPDataLoader(dc, backend="torch", batch_size=int(cfg["batch_size"]), shuffle=False)
    train_loader, dev_loader = loader.get_loader("train"), loader.get_loader("dev")
    class_name = EASYTPP_MODELS[model]
    mc = model_config(class_name, cfg, K)
    mean, std, _, _ = train_loader.dataset.get_dt_stats()  # base_runner.py: set for every model
    mc.set("mean_log_inter_time", float(mean))
    mc.set("std_log_inter_time", float(std))
    mc.is_training = True  # RunnerConfig sets it for the train stage
    set_seed(seed)
    net = BaseModel.generate_model_from_config(model_config=mc)
    wrapper = ModelWrapper(net, SimpleNamespace(model_id=class_name, specs={}), mc,
                           SimpleNamespace(gpu=-1, optimizer="adam", learning_rate=float(cfg["lr"]), use_tfb=False))
    out = reference_loop(wrapper, train_loader, dev_loader, RunnerPhase.TRAIN, RunnerPhase.VALIDATE)
    out["n_parameters"] = int(sum(p.numel() for p in net.parameters() if p.requires_grad))
    return out
