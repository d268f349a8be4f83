"""Stacked-seed training: Adam per member, members independent of each other, exact resume."""

import json
import signal

import pytest
import torch
from torch import nn

from timerepro import ensemble, registry, runs, stopping


def test_stacked_adam_equals_torch_adam_per_member():
    """Two members at different step counts each follow torch.optim.Adam's update."""
    torch.manual_seed(0)
    refs = [torch.randn(3, 4).requires_grad_(True) for _ in range(2)]
    opts = [torch.optim.Adam([r], lr=1e-2, foreach=False) for r in refs]
    for _ in range(3):  # member 1 is three steps ahead
        refs[1].grad = torch.randn(3, 4)
        opts[1].step()
    state1 = opts[1].state[refs[1]]
    stacked = {"w": torch.stack([r.detach().clone() for r in refs]).requires_grad_(True)}
    sa = ensemble.StackedAdam(stacked, lr=1e-2, steps=torch.tensor([0.0, 3.0], dtype=torch.float64),
                              exp_avg={"w": torch.stack([torch.zeros(3, 4), state1["exp_avg"]])},
                              exp_avg_sq={"w": torch.stack([torch.zeros(3, 4), state1["exp_avg_sq"]])})
    for _ in range(5):
        gs = [torch.randn(3, 4) for _ in range(2)]
        for r, o, g in zip(refs, opts, gs):
            r.grad = g.clone()
            o.step()
        stacked["w"].grad = torch.stack(gs)
        sa.step()
    assert sa.steps.tolist() == [5, 8]
    for i in range(2):
        torch.testing.assert_close(stacked["w"][i], refs[i].detach(), rtol=0, atol=1e-7)


@pytest.fixture(scope="module")
def configs():
    reg = registry.load()
    rs = [r for r in reg.runs("smoke", paper="linear_time") if r.config["task"] == "sequence_classification"]
    key = runs.group_key(rs[0].config)
    group = []
    for r in rs:
        if runs.group_key(r.config) == key:
            cfg = {k: v for k, v in r.config.items() if k != "run_id"} | {"max_epochs": 5, "patience": 5}
            group.append(cfg | {"run_id": registry.run_id(cfg)})
    assert len(group) >= 2
    return group


def _metrics(results, config):
    return json.loads((results / "runs" / config["paper"] / config["run_id"] / "metrics.json").read_text())


def test_group_writes_one_complete_record_per_seed(configs, tmp_path):
    runs.execute_many(configs, results=tmp_path, show_progress=False)
    for c in configs:
        d = tmp_path / "runs" / c["paper"] / c["run_id"]
        prov = json.loads((d / "provenance.json").read_text())
        assert prov["seed"] == c["seed"] and "stacked ensemble of" in prov["trained_with"]
        assert not (d / "checkpoint.pt").exists()
        assert len(json.loads((d / "history.json").read_text())) == _metrics(tmp_path, c)["epochs_run"]
    # different seeds: different data and weights, so different trajectories
    losses = {json.loads((tmp_path / "runs" / c["paper"] / c["run_id"] / "history.json").read_text())[0]["train_loss"]
              for c in configs}
    assert len(losses) == len(configs)


def test_member_trained_alone_follows_its_own_seed(configs, tmp_path):
    """Batch order and dropout come from the run's own generators: alone or stacked, the same first epochs."""
    runs.execute_many(configs, results=tmp_path / "group", show_progress=False)
    runs.execute(configs[1], results=tmp_path / "alone", show_progress=False)
    h = [json.loads((tmp_path / part / "runs" / configs[1]["paper"] / configs[1]["run_id"] / "history.json").read_text())
         for part in ("group", "alone")]
    assert h[0][0]["train_loss"] == pytest.approx(h[1][0]["train_loss"], rel=1e-6)
    assert h[0][0]["ensemble_size"] == len(configs) and h[1][0]["ensemble_size"] == 1


def test_killed_group_resumes_to_the_same_metrics(configs, tmp_path, monkeypatch):
    monkeypatch.setattr(ensemble, "CHECKPOINT_EVERY_S", 0.0)  # every round
    """Killed after a whole round of checkpoints, the group resumes and ends exactly as uninterrupted."""
    runs.execute_many(configs, results=tmp_path / "a", show_progress=False)
    original, calls = runs.RunContext.save_checkpoint, {"n": 0}

    def dying(self, state):
        original(self, state)
        calls["n"] += 1
        if calls["n"] == 2 * len(configs):  # end of the second epoch of every member
            raise KeyboardInterrupt

    monkeypatch.setattr(runs.RunContext, "save_checkpoint", dying)
    with pytest.raises(KeyboardInterrupt):
        runs.execute_many(configs, results=tmp_path / "b", show_progress=False)
    monkeypatch.setattr(runs.RunContext, "save_checkpoint", original)
    for c in configs:
        d = tmp_path / "b" / "runs" / c["paper"] / c["run_id"]
        assert (d / "checkpoint.pt").exists() and not (d / "metrics.json").exists()
    runs.execute_many(configs, results=tmp_path / "b", show_progress=False)
    for c in configs:
        a, b = _metrics(tmp_path / "a", c), _metrics(tmp_path / "b", c)
        assert a == b
        prov = json.loads((tmp_path / "b" / "runs" / c["paper"] / c["run_id"] / "provenance.json").read_text())
        assert prov["resumed_from_epoch"] == 1


def test_stop_request_checkpoints_the_group_after_its_round_and_resumes_to_the_same_metrics(configs, tmp_path,
                                                                                            monkeypatch):
    """A stop request (SLURM, `timerepro.stopping`) during a round: the round ends, every member still training writes
    its checkpoint there (not only every CHECKPOINT_EVERY_S) and the job exits 75; the retry ends as uninterrupted."""
    runs.execute_many(configs, results=tmp_path / "a", show_progress=False)
    step, calls = ensemble.StackedAdam.step, {"n": 0}

    def stepping(self):
        step(self)
        calls["n"] += 1
        if calls["n"] == 2:  # during the first round
            stopping.STOP.request(signal.SIGTERM)  # what the handler notes; the round finishes

    monkeypatch.setattr(ensemble.StackedAdam, "step", stepping)
    try:
        with pytest.raises(stopping.JobStopped) as stopped:
            runs.execute_many(configs, results=tmp_path / "b", show_progress=False)
    finally:
        stopping.STOP.clear()
    monkeypatch.setattr(ensemble.StackedAdam, "step", step)
    assert stopped.value.code == stopping.EXIT_STOPPED
    for c in configs:
        d = tmp_path / "b" / "runs" / c["paper"] / c["run_id"]
        assert torch.load(d / "checkpoint.pt", weights_only=False)["epoch"] == 0 and not (d / "metrics.json").exists()
    runs.execute_many(configs, results=tmp_path / "b", show_progress=False)
    for c in configs:
        assert _metrics(tmp_path / "a", c) == _metrics(tmp_path / "b", c)
        prov = json.loads((tmp_path / "b" / "runs" / c["paper"] / c["run_id"] / "provenance.json").read_text())
        assert prov["resumed_from_epoch"] == 0


def _trained_stack(members, fresh_views: bool, steps: int = 3):
    """A stack of `members` (nn.Linear(3, 2) each) after a few Adam steps; views built once, or afresh each step."""
    flat, _, opt = ensemble._stack(members, lr=0.1)
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        views = flat.views(flat.flat) if fresh_views else flat.views()
        x = torch.randn(len(members), 4, 3, generator=gen)
        out = torch.baddbmm(views["bias"].unsqueeze(1), x, views["weight"].transpose(1, 2))  # (S, 4, 2)
        opt.zero_grad()
        out.square().sum().backward()
        opt.step()
    return flat, opt


def _linear_members(n: int) -> list:
    torch.manual_seed(0)
    return [ensemble.new_member(None, nn.Linear(3, 2), {}, None, patience=1, mode="min") for _ in range(n)]


def test_views_built_once_follow_every_update_as_fresh_views_do():
    """The stack's views are built once: each step's gradient reaches the flat tensor and each update reaches the views."""
    once, opt_once = _trained_stack(_linear_members(3), fresh_views=False)
    fresh, opt_fresh = _trained_stack(_linear_members(3), fresh_views=True)
    assert torch.equal(once.flat, fresh.flat) and torch.equal(opt_once.exp_avg_sq["flat"], opt_fresh.exp_avg_sq["flat"])
    assert not torch.equal(once.flat, ensemble._stack(_linear_members(3), lr=0.1)[0].flat)  # the steps moved it
    assert torch.equal(once.views()["weight"], once.flat.detach()[:, :6].view(3, 2, 3))


def test_members_leaving_keep_their_rows_as_if_stacked_again_from_their_own_tensors():
    """A member leaves: the stack cut from the previous rows equals the one stacked from the others' copied-out state."""
    members = _linear_members(3)
    flat, opt = _trained_stack(members, fresh_views=False)
    members[1].done = True
    left = [members[0], members[2]]
    kept, _, kept_opt = ensemble._restack(left, members, flat, opt, lr=0.1)
    for i in (0, 2):
        ensemble._copy_out(members[i], flat, opt, i)
        members[i].steps = float(opt.steps[i])
    again, _, again_opt = ensemble._stack(left, lr=0.1)
    assert torch.equal(kept.flat, again.flat) and torch.equal(kept_opt.steps, again_opt.steps)
    for state in ("exp_avg", "exp_avg_sq"):
        assert torch.equal(getattr(kept_opt, state)["flat"], getattr(again_opt, state)["flat"])
    assert torch.equal(kept.flat[1], flat.flat[2]) and kept.flat.is_leaf and kept.flat.requires_grad
