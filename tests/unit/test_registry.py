"""Registry expansion and validation: bad configs are refused naming the file and the key."""

import shutil

import pytest
import yaml

from timerepro import catalog, registry
from timerepro.paths import params_dir
from timerepro.schema import ConfigError


@pytest.fixture(scope="module")
def reg():
    return registry.load()


def test_all_76_artifacts_of_five_papers(reg):
    assert sum(len(reg.artifacts(p)) for p in registry.PAPERS) == 76
    counts = {p: len(reg.artifacts(p)) for p in registry.PAPERS}
    assert counts == {"linear_time": 22, "dyg_mamba": 22, "time2vec": 14, "swinit": 7, "hawkes_attention": 11}


def test_synthetic_grid_is_480_runs_at_offline_and_paper_scale(reg):
    for scale in ("offline", "paper"):
        runs = reg.runs(scale, paper="linear_time", artifact="fig2")
        assert len(runs) == 2 * 2 * 3 * 4 * 10
        assert len({r.run_id for r in runs}) == len(runs)
    # Figure 3 reuses Figure 2's runs: 1-layer causal linear at d_T 2 and 8, 10 seeds each
    fig3 = reg.artifact_runs("linear_time", "fig3", "offline")
    assert len(fig3) == 20 and {r.run_id for r in fig3} <= {r.run_id for r in reg.runs("offline")}
    # the synthetic task is at paper scale in the offline default: same configs, same ids
    synth = lambda scale: {r.run_id for r in reg.runs(scale, paper="linear_time") if r.experiment == "synthetic_seqcls"}
    assert synth("offline") == synth("paper")


def test_run_id_is_a_stable_hash_of_the_resolved_config(reg):
    run = reg.runs("smoke", artifact="fig2")[0]
    cfg = {k: v for k, v in run.config.items() if k != "run_id"}
    assert registry.run_id(cfg) == run.run_id
    assert registry.run_id(dict(reversed(list(cfg.items())))) == run.run_id  # key order irrelevant
    assert registry.run_id({**cfg, "seed": cfg["seed"] + 1}) != run.run_id
    assert [r.run_id for r in registry.load().runs("smoke")] == [r.run_id for r in reg.runs("smoke")]


def test_downloaded_data_follow_the_scale_standin(reg):
    by_scale = {s: [r for r in reg.runs(s, paper="linear_time", artifact="table3")] for s in ("smoke", "offline", "paper")}
    # offline: the stand-ins, and UCI's row from the real data (its package copy, stats_table3_real_uci)
    assert [r.config["standin"] for s in by_scale for r in by_scale[s]] == ["smoke", "offline", None, None]
    assert by_scale["smoke"][0].config["datasets"] == ["uci", "wikipedia", "enron", "reddit", "lastfm", "uslegis"]


def test_resolution_order(reg):
    run = reg.runs("smoke", artifact="fig2")[0]
    assert run.config["max_epochs"] == 3  # scale `fixed` beats task defaults (500)
    assert run.config["lr"] == 0.001  # task default
    assert run.config["data"]["n_sequences"] == 200 and run.config["data"]["decay"] == 0.003
    assert run.resources == {"cpus": 1, "mem_mb": 1000, "runtime": 30, "gpu": 0}


def test_jobs_group_seeds_and_cover_every_run(reg):
    for scale in ("smoke", "offline", "paper"):
        jobs = reg.jobs(scale)
        ids = [r.run_id for j in jobs for r in j.runs]
        assert sorted(ids) == sorted(r.run_id for r in reg.runs(scale))
    assert len(reg.jobs("paper")) == len(reg.runs("paper"))  # one SLURM job per run at paper scale
    synthetic_jobs = [j for j in reg.jobs("offline") if j.runs[0].experiment == "synthetic_seqcls"]
    assert len(synthetic_jobs) == 48 and all(len(j.runs) == 10 for j in synthetic_jobs)
    job = reg.jobs("offline")[0]
    assert job.resources["runtime"] == 30 * len(job.runs)


@pytest.fixture
def params_copy(tmp_path):
    dst = tmp_path / "params"
    shutil.copytree(params_dir(), dst)
    return dst


def _edit(path, fn):
    doc = yaml.safe_load(path.read_text())
    fn(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.mark.parametrize(
    "file,edit,key,message",
    [
        ("linear_time.yaml", lambda d: d["experiments"]["synthetic_seqcls"]["grid"].update(d_T=[2, "four"]),
         "experiments.synthetic_seqcls.grid.d_T[1]", "not of type 'integer'"),
        ("linear_time.yaml", lambda d: d["experiments"]["synthetic_seqcls"].update(fixed={"learning_rate": 0.1}),
         "experiments.synthetic_seqcls.fixed.learning_rate", "unknown parameter"),
        ("linear_time.yaml", lambda d: d["experiments"]["synthetic_seqcls"]["grid"].update(encoder=["linear", "fourier"]),
         "experiments.synthetic_seqcls.grid.encoder[1]", "unknown encoder 'fourier'"),
        ("linear_time.yaml", lambda d: d["experiments"]["synthetic_seqcls"].update(model="gpt"),
         "experiments.synthetic_seqcls.model", "unknown model 'gpt'"),
        ("linear_time.yaml", lambda d: d["experiments"]["synthetic_seqcls"].update(dataset="imagenet"),
         "experiments.synthetic_seqcls.dataset", "unknown dataset 'imagenet'"),
        ("linear_time.yaml", lambda d: d["experiments"]["synthetic_seqcls"].update(seed=3),
         "experiments.synthetic_seqcls", "unknown key"),
        ("linear_time.yaml", lambda d: d["experiments"]["lp_cawn"].update(
            when=[{"match": {"dataset": "reddit"}, "fixed": {"neighbour_sampling": "uniform"}}]),
         "experiments.lp_cawn.when[0].fixed.neighbour_sampling", "unknown parameter"),
        ("linear_time.yaml", lambda d: d["experiments"]["lp_cawn"].update(
            when=[{"match": {"encoder": "linear"}, "fixed": {"neighbor_sampling": "random"}}]),
         "experiments.lp_cawn.when[0].fixed.neighbor_sampling", "is not one of"),
        ("linear_time.yaml", lambda d: d["artifacts"][1].update(status="done"),
         "artifacts[1].status", "is not one of"),
        ("scales.yaml", lambda d: d["scales"]["smoke"]["experiments"]["linear_time/synthetic_seqcls"]["data"].update(n_seqs=5),
         "scales.smoke.experiments.linear_time/synthetic_seqcls.data.n_seqs", "unknown setting"),
        ("tasks.yaml", lambda d: d["sequence_classification"]["resources"].update(gpu="one"),
         "sequence_classification.resources.gpu", "not of type 'integer'"),
        ("tasks.yaml", lambda d: d["link_prediction"]["resources"].update(per_dataset={"imagenet": {"mem_mb": 9000}}),
         "link_prediction.resources.per_dataset.imagenet", "unknown dataset 'imagenet'"),
        ("models.yaml", lambda d: d["tgat"].update(resources={"per_dataset": {"uci": {"memory": 9000}}}),
         "tgat.resources.per_dataset.uci", "Additional properties"),
    ],
)
def test_bad_configs_are_refused_naming_file_and_key(params_copy, file, edit, key, message):
    _edit(params_copy / file, edit)
    with pytest.raises(ConfigError) as err:
        registry.load(params_copy)
    assert err.value.path.endswith(file)
    assert err.value.key == key
    assert message in str(err.value)


def test_cli_refuses_invalid_params_before_any_job(params_copy, tmp_path, capsys, monkeypatch):
    from timerepro import cli

    _edit(params_copy / "linear_time.yaml", lambda d: d["experiments"]["synthetic_seqcls"]["grid"].update(layers=[0]))
    monkeypatch.setattr(registry, "params_dir", lambda: params_copy)
    assert cli.main(["--results", str(tmp_path / "r"), "run-all", "--scale", "smoke"]) == 2
    err = capsys.readouterr().err
    assert "linear_time.yaml: experiments.synthetic_seqcls.grid.layers[0]" in err
    assert not (tmp_path / "r" / "runs").exists()


def test_a_parent_process_checks_skip_the_reference_checks_of_the_same_files_only(params_copy, monkeypatch):
    calls = []
    real = registry.Registry._check_references
    monkeypatch.setattr(registry.Registry, "_check_references", lambda self: calls.append(1) or real(self))
    digest = registry.load(params_copy).checks_digest
    assert calls == [1]
    monkeypatch.setenv(registry.CHECKED_ENV, digest)
    trusted = registry.load(params_copy)
    assert calls == [1] and trusted.checked_by_parent and trusted.default_scale() == "offline"  # params/run.yaml
    assert not registry.load(params_copy, trust_checked=False).checked_by_parent and calls == [1, 1]
    # any other content is checked again: a model's module that does not exist is refused as before
    _edit(params_copy / "models.yaml", lambda d: d["tgat"].update(module="timerepro.models.nowhere:build"))
    with pytest.raises(ConfigError, match="no module 'timerepro.models.nowhere'"):
        registry.load(params_copy)
    assert calls == [1, 1, 1]


def test_the_checks_digest_covers_the_source_of_a_named_module_outside_the_package(params_copy, tmp_path, monkeypatch):
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "models_outside.py").write_text("def build(config):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path / "lab"))
    _edit(params_copy / "models.yaml", lambda d: d["tgat"].update(module="models_outside:build"))
    before = registry.load(params_copy)
    digest = before.checks_digest  # hashed when first asked for (the Snakefile asks right after loading)
    (tmp_path / "lab" / "models_outside.py").write_text("def make(config):\n    return None\n")  # `build` is gone
    catalog._source.cache_clear()  # a process reads each source once; this test changes one under it
    after = registry.checks_digest(params_copy, [*before.tasks.values(), *before.models.values()])
    assert after != digest
    monkeypatch.setenv(registry.CHECKED_ENV, digest)
    with pytest.raises(ConfigError, match="defines no 'build'"):
        registry.load(params_copy)


def test_validate_checks_everything_whatever_the_environment_says(params_copy, monkeypatch, capsys):
    from timerepro import cli

    _edit(params_copy / "models.yaml", lambda d: d["tgat"].update(module="timerepro.models.nowhere:build"))
    tasks, models = (yaml.safe_load((params_copy / f).read_text()) for f in ("tasks.yaml", "models.yaml"))
    entries = [v for k, v in tasks.items() if k != "shared_parameters"] + list(models.values())
    forged = registry.checks_digest(params_copy, entries)  # the broken files' digest, as if a parent had checked them
    monkeypatch.setenv(registry.CHECKED_ENV, forged)
    monkeypatch.setattr(registry, "params_dir", lambda: params_copy)
    assert registry.load().checked_by_parent  # a forged digest is trusted by a job ...
    assert cli.main(["validate"]) == 2  # ... never by `timerepro validate`
    assert "models.yaml: tgat.module" in capsys.readouterr().err
