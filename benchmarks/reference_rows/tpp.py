"""What the two TPP rows (EasyTPP's runner, the Hawkes Attention authors' runner) share: the sequences, the run
configs, the project's side, and the reference side's loop over an EasyTPP-style `ModelWrapper.run_batch`.

Inputs: Hawkes-process sequences shaped as Taxi (hawkes_attention Table 1: K = 10 types, 36 to 38 events per
sequence; `timerepro.data.standins`' generator), written once as EasyTPP JSON files (the reference reads them
with its own TPPDataLoader: HF `json` loading, EventTokenizer, collator) and as the project's CSR npz (read with
`timerepro.tpp.iterate_batches`); batches of `batch` sequences in stored order (no shuffle, both sides).
Training: 1 + n batches, the first untimed; evaluation: 1 + n other batches, the first untimed, each scored as
each side's test evaluation scores it (log-likelihood on EasyTPP's 20-point grid and one-step thinning
predictions after every event, thinning settings of the run config).

Floor (`floor=True`, the project's process of seed 0, after its timed phases): one more training step and one more
evaluation batch of the project under torch.profiler, and the self time of their product kernels (`PRODUCTS`:
matrix products, and the fused RNN layers of nn.RNN/GRU/LSTM, gates included, which no implementation of those
classes avoids). The project's step is an exact float32 implementation (one encoder pass per batch and phase, the
intensity only at the proposals thinning reads): the reference step's time over these seconds is what an exact
float32 implementation with these products could gain at most (issue 27, item 2). Elementwise kernels (exp, tanh,
softplus of the intensities at the integral's points and the proposals) are left out of the floor's time, so the
bound is generous where they dominate.
"""

from __future__ import annotations

import json
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

K, MIN_LEN, MAX_LEN = 10, 36, 38  # Taxi: hawkes_attention Table 1 (timerepro.data.standins.PAPER_TPP["taxi"])
# the floor's kernels (torch.profiler names, self time): matrix products and the fused RNN layers (forward, backward)
PRODUCTS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::mv", "aten::addmv",
            "aten::dot", "aten::_addmm_activation", "aten::mkldnn_rnn_layer", "aten::mkldnn_rnn_layer_backward")


def records(n_sequences: int, split_seed: int) -> list[dict]:
    """EasyTPP JSON records of `n_sequences` Taxi-shaped Hawkes sequences (one process, other draws per split)."""
    from timerepro.data.standins import easytpp_records, hawkes_params, hawkes_sequences

    params = hawkes_params(np.random.default_rng(0), K)  # one process for every split and seed
    rng = np.random.default_rng(1000 + split_seed)
    return easytpp_records(hawkes_sequences(rng, K, n_sequences, MIN_LEN, MAX_LEN, params), K)


def run_config(paper: str, experiment: str, dataset: str = "taxi") -> dict:
    """The paper-scale run config of `experiment` on `dataset`, seed 0, as the registry resolves it."""
    from timerepro import registry

    runs = [r for r in registry.load().experiment_runs(paper, experiment, "paper")
            if r.config.get("dataset") == dataset and int(r.config["seed"]) == 0]
    if not runs:
        raise SystemExit(f"{paper}/{experiment} has no paper-scale run on {dataset}")
    return dict(runs[0].config)


class Inputs:
    """The training and evaluation sequences of one process, as files both sides read (a temporary folder)."""

    def __init__(self, n: int, batch: int, seed: int):
        from timerepro.data.tpp import read_sequences, write_sequences

        self.folder = Path(tempfile.mkdtemp(prefix="reference_rows_tpp_"))
        self.batch = batch
        self.records = {"train": records((n + 1) * batch, 2 * seed), "dev": records((n + 1) * batch, 2 * seed + 1)}
        for split, recs in self.records.items():
            (self.folder / f"{split}.json").write_text(json.dumps(recs))
            for part, sl in (("warm", slice(0, batch)), ("timed", slice(batch, None))):
                write_sequences(self.folder / f"{split}_{part}.npz", recs[sl])
        self.seqs = {f"{split}_{part}": read_sequences(self.folder / f"{split}_{part}.npz")
                     for split in self.records for part in ("warm", "timed")}

    def json(self, split: str) -> str:
        return str(self.folder / f"{split}.json")


# ------------------------------------------------------------------ the project's side

def product_seconds(fn) -> tuple[float, float]:
    """(seconds of `fn()`'s PRODUCTS kernels (self CPU time), wall seconds of `fn()`) under torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    wall = time.perf_counter() - t0
    return sum(e.self_cpu_time_total for e in prof.key_averages() if e.key in PRODUCTS) / 1e6, wall


def project_measure(config: dict, inputs: Inputs, seed: int, floor: bool = False) -> dict:
    """tasks/temporal_point_process.py's model, optimizer, `train_epoch` and test-time `evaluate`, timed; `floor`:
    then the product seconds of one more training step and one more evaluation batch (`floor_train_s`,
    `floor_eval_s`)."""
    import torch

    from timerepro.models.registry import build
    from timerepro.tasks.temporal_point_process import builder_config, param_groups
    from timerepro.tpp import ThinningConfig, evaluate, train_epoch
    from timerepro.tpp.thinning import THINNING_KEYS

    torch.manual_seed(seed)
    train = _concat(inputs.seqs["train_warm"], inputs.seqs["train_timed"])  # the task's training split
    model = build("temporal_point_process", config["model"], builder_config(config, train), K)
    opt = torch.optim.Adam(param_groups(model, config), lr=float(config["lr"]))
    gen = torch.Generator().manual_seed(seed)
    n_int = int(config["loss_integral_num_sample_per_step"])
    kw = dict(batch_size=inputs.batch, shuffle=False, generator=gen, num_samples=n_int,
              max_grad_norm=config.get("max_grad_norm"))
    train_epoch(model, opt, inputs.seqs["train_warm"], **kw)
    n = -(-len(inputs.seqs["train_timed"]) // inputs.batch)
    t0 = time.perf_counter()
    loss = train_epoch(model, opt, inputs.seqs["train_timed"], **kw)["train_nll_per_event"]
    out = {"train_bps": n / (time.perf_counter() - t0), "loss": float(loss)}
    thinning = ThinningConfig(**{k: config[k] for k in THINNING_KEYS})
    ev = dict(batch_size=inputs.batch, thinning=thinning, seed=seed, num_samples=n_int)
    evaluate(model, inputs.seqs["dev_warm"], **ev)
    t0 = time.perf_counter()
    metrics = evaluate(model, inputs.seqs["dev_timed"], **ev)
    out.update(eval_bps=n / (time.perf_counter() - t0), metric=float(metrics["loglike_per_event"]),
               n_parameters=int(sum(p.numel() for p in model.parameters() if p.requires_grad)))
    if floor:  # the warm-up batches again (one batch each), after every timed step
        out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # the row's: before the profiler's
        out["floor_train_s"], out["floor_train_wall_s"] = product_seconds(
            lambda: train_epoch(model, opt, inputs.seqs["train_warm"], **kw))
        out["floor_eval_s"], out["floor_eval_wall_s"] = product_seconds(
            lambda: evaluate(model, inputs.seqs["dev_warm"], **ev))
    return out


def floor_note(model: str, runs: dict) -> str | None:
    """The line printed under a row: the reference's step (median over seeds) over the project's product seconds
    (the floor), and the row's ratio (median over seeds) as a fraction of it; None when no floor was measured."""
    from statistics import median

    floors = [p for p in runs["project"] if "floor_train_s" in p]
    if not floors:
        return None
    f, parts = floors[0], []
    for phase, rate, key in (("training", "train_bps", "floor_train_s"), ("evaluation", "eval_bps", "floor_eval_s")):
        ref = [1 / r[rate] for r in runs["reference"] if rate in r]
        ratio = [p[rate] / r[rate] for p, r in zip(runs["project"], runs["reference"]) if rate in p and rate in r]
        if not ref:
            parts.append(f"{phase}: products {f[key]:.3f} s per batch, no reference step")
            continue
        top = median(ref) / f[key]
        parts.append(f"{phase}: products {f[key]:.3f} s per batch against the reference's {median(ref):.3f} s, floor "
                     f"{top:.1f}x" + (f", the project at {median(ratio) / top:.2f} of it" if ratio else ""))
    return f"  floor {model}: " + "; ".join(parts)


def _concat(a, b):
    """Two CSR splits as one (IntensityFree's statistics read every training sequence)."""
    from timerepro.data.tpp import EventSequences

    return EventSequences(np.concatenate([a.seq_ptr, b.seq_ptr[1:] + a.seq_ptr[-1]]),
                          np.concatenate([a.time_since_start, b.time_since_start]),
                          np.concatenate([a.time_since_last_event, b.time_since_last_event]),
                          np.concatenate([a.type_event, b.type_event]), np.concatenate([a.seq_idx, b.seq_idx]))


# ------------------------------------------------------------------ the reference side

def reference_loop(wrapper, train_loader, dev_loader, train_phase, eval_phase) -> dict:
    """The reference runner's `run_one_epoch` body, batch by batch: `wrapper.run_batch(batch, phase)` over the
    loader (its collation inside the timed loop, as in the runner); the first batch of each phase untimed.
    Loss: sum of the batches' NLL over their events (the runner's `loglike` with the sign flipped). A phase that
    raises is reported by its error (`<rate>_error`), the other phase still measured."""
    out = {}
    for phase, loader, rate, key in ((train_phase, train_loader, "train_bps", "loss"),
                                     (eval_phase, dev_loader, "eval_bps", "metric")):
        try:
            it = iter(loader)
            wrapper.run_batch(next(it), phase=phase)
            total, events, n = 0.0, 0, 0
            t0 = time.perf_counter()
            for batch in it:
                res = wrapper.run_batch(batch, phase=phase)
                total, events, n = total + float(res[0]), events + int(res[1]), n + 1
        except Exception as exc:  # noqa: BLE001  (the reference's own failure is a result of the row)
            out[f"{rate}_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
            continue
        out[rate] = n / (time.perf_counter() - t0)
        out[key] = total / events if key == "loss" else -total / events
    return out
