"""The day-of-week task: generator statistics, and a short training whose main sine finds 2 pi / 7."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from timerepro.data.day_of_week import generate
from timerepro.report.time2vec.sines import canonical_sines, circular_stat
from timerepro.runs import RunContext
from timerepro.tasks import periodic_classification as task


def test_generator_statistics():
    d = generate()
    assert len(d.tau) == 365 and d.y.sum() == 52  # multiples of 7 in 1..365
    assert d.n_train == 273 and len(d.test[0]) == 92  # first 75% train (extrapolation in time)
    assert d.train[0].max() < d.test[0].min()
    assert d.y[6] == 1 and d.y[5] == 0 and d.tau[0] == 1
    x2 = generate(input_scale=2)
    np.testing.assert_array_equal(x2.tau, 2 * d.tau) and np.testing.assert_array_equal(x2.y, d.y)
    noisy = generate(label_noise=0.05, seed=3)
    assert int((noisy.y != d.y).sum()) == round(0.05 * 365)


def test_canonical_form_keeps_the_function_on_the_input_grid():
    rng = np.random.default_rng(0)
    for scale in (1.0, 2.0):
        w, phi, a = rng.normal(0, 3, 50), rng.normal(0, 3, 50), rng.normal(0, 2, 50)
        cw, cphi, ca = canonical_sines(w, phi, a, scale)
        tau = scale * np.arange(1, 30)[:, None]
        np.testing.assert_allclose(a * np.sin(w * tau + phi), ca * np.sin(cw * tau + cphi), atol=1e-9)
        assert (cw >= 0).all() and (cw <= math.pi / scale + 1e-12).all() and (ca >= 0).all()
    mean, std = circular_stat([0.1, 2 * math.pi - 0.1])
    assert min(mean, 2 * math.pi - mean) < 1e-9 and std < 0.2


def _train(tmp_path, scale: float, seeds: int, epochs: int, lr: float, init: str = "normal") -> list[dict]:
    torch.set_num_threads(1)  # tiny tensors: threads only add contention
    configs = [{"run_id": f"s{scale}-{s}", "seed": s, "input_scale": scale, "t2v_dim": 32, "lr": lr, "t2v_init": init,
                "batch_size": None, "max_epochs": epochs,
                "data": {"n_days": 365, "period": 7, "train_fraction": 0.75}} for s in range(seeds)]
    ctxs = [RunContext(c, tmp_path / c["run_id"], device="cpu", show_progress=False) for c in configs]
    for ctx in ctxs:
        ctx.dir.mkdir(parents=True)
    out = [None] * seeds
    task.run_group(configs, ctxs, lambda i, o: out.__setitem__(i, o))
    return [o["metrics"] for o in out]


def test_trained_main_sine_finds_the_week_and_x2_halves_it(tmp_path):
    """Eight stacked runs, 2000 full-batch Adam steps at lr 0.01 (a shorter schedule than the paper's 0.001:
    seconds): every run that fits the training days has its main sine on the weekly family k 2pi / (7 scale),
    the fundamental is the most common, and with inputs x2 the fundamental is about half of 2 pi / 7. From N(0, 1)
    frequencies (`t2v_init: normal`): from U(-1, 1), the table default, 2 of 8 runs fit at this short schedule."""
    for scale in (1.0, 2.0):
        runs = _train(tmp_path, scale, seeds=8, epochs=2000, lr=0.01)
        fund = 2 * math.pi / (7 * scale)
        fitted = [m for m in runs if m["train_accuracy"] == 1.0]
        assert len(fitted) >= 4
        for m in fitted:  # on the family: a multiple of the fundamental (harmonics also have period 7 days)
            k = round(m["dominant_frequency"] / fund)
            assert k >= 1 and abs(m["dominant_frequency"] - k * fund) < 0.05, m
        near = [m["dominant_frequency"] for m in runs if abs(m["dominant_frequency"] - fund) < 0.05]
        assert len(near) >= 1  # 1 to 4 of 8 at this short schedule, by machine (thread order): the family, not the count
        assert abs(float(np.median(near)) - fund) < 0.05
    assert abs(2 * math.pi / 14 - (2 * math.pi / 7) / 2) < 1e-12


def test_killed_stack_resumes_to_the_same_result(tmp_path, monkeypatch):
    """Members checkpointed after epoch 20 and restarted reach exactly the uninterrupted run's result."""
    torch.set_num_threads(1)
    monkeypatch.setattr(task, "CHECKPOINT_EVERY", 10)

    def group(root, epochs, seeds=(0, 1)):
        configs = [{"run_id": f"r{s}", "seed": s, "input_scale": 1, "t2v_dim": 8, "lr": 0.01, "batch_size": 64,
                    "max_epochs": epochs, "data": {"n_days": 365, "period": 7, "train_fraction": 0.75}} for s in seeds]
        ctxs = [RunContext(c, root / c["run_id"], device="cpu", show_progress=False) for c in configs]
        for ctx in ctxs:
            ctx.dir.mkdir(parents=True, exist_ok=True)
        out = {}
        task.run_group(configs, ctxs, lambda i, o: out.__setitem__(i, o))
        return out

    whole = group(tmp_path / "whole", 40)
    group(tmp_path / "killed", 20)  # stands for a run killed after its epoch-20 checkpoint
    resumed = group(tmp_path / "killed", 40)
    for i in (0, 1):
        assert resumed[i]["resumed_from_epoch"] == 19
        assert resumed[i]["metrics"] == whole[i]["metrics"]


def test_stop_request_checkpoints_the_stack_after_its_epoch_and_resumes_to_the_same_result(tmp_path, stop_at_step):
    """A stop request (SLURM, `timerepro.stopping`) during an epoch: its steps finish, every member writes its
    checkpoint with the history so far and the job exits 75; the retry ends exactly as the uninterrupted run,
    history included."""
    from timerepro import stopping

    torch.set_num_threads(1)

    def group(root, seeds=(0, 1)):
        configs = [{"run_id": f"r{s}", "seed": s, "input_scale": 1, "t2v_dim": 8, "lr": 0.01, "batch_size": 64,
                    "max_epochs": 12, "data": {"n_days": 365, "period": 7, "train_fraction": 0.75}} for s in seeds]
        ctxs = [RunContext(c, root / c["run_id"], device="cpu", show_progress=False) for c in configs]
        for ctx in ctxs:
            ctx.dir.mkdir(parents=True, exist_ok=True)
        out = {}
        task.run_group(configs, ctxs, lambda i, o: out.__setitem__(i, o))
        return out, [ctx.read_history() for ctx in ctxs]

    whole, history = group(tmp_path / "whole")
    with stop_at_step(13), pytest.raises(stopping.JobStopped) as stopped:  # 5 steps per epoch: epoch 2's third
        group(tmp_path / "stopped")
    assert stopped.value.code == stopping.EXIT_STOPPED
    for s in (0, 1):
        ckpt = torch.load(tmp_path / "stopped" / f"r{s}" / "checkpoint.pt", weights_only=False)
        assert ckpt["epoch"] == 2 and [row["epoch"] for row in ckpt["history"]] == [0, 1, 2]
    resumed, resumed_history = group(tmp_path / "stopped")
    assert resumed_history == history and len(history[0]) == 12
    for i in (0, 1):
        assert resumed[i]["resumed_from_epoch"] == 2
        assert resumed[i]["metrics"] == whole[i]["metrics"]
