"""What the command line does with bad input: exit 2 with the file and key (or the name), nothing run;
any other failure keeps its traceback (exit 1)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from timerepro import cli
from timerepro.paths import project_root

ROOT = project_root()


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """A project root with a copy of params/ (to break) and the schemas."""
    dst = tmp_path / "root"
    shutil.copytree(ROOT / "params", dst / "params")
    shutil.copytree(ROOT / "workflow" / "schemas", dst / "workflow" / "schemas")
    monkeypatch.setenv("TIMEREPRO_ROOT", str(dst))
    monkeypatch.setenv("TIMEREPRO_RESULTS", str(tmp_path / "results"))
    return dst


def edit(path: Path, change) -> None:
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def refused(capsys, argv=("validate",)) -> str:
    assert cli.main(list(argv)) == 2
    return capsys.readouterr().err


def test_malformed_yaml(root, capsys):
    path = root / "params" / "linear_time.yaml"
    path.write_text(path.read_text().replace("experiments:", "experiments: [unclosed", 1))
    err = refused(capsys)
    assert str(path) in err and "not valid YAML" in err


def test_unknown_model_name_lists_the_known_ones(root, capsys):
    edit(root / "params" / "linear_time.yaml", lambda d: d["experiments"]["lp_tgat"].update(model="tgatt"))
    err = refused(capsys)
    assert "linear_time.yaml: experiments.lp_tgat.model: unknown model 'tgatt'" in err and "'tgat'" in err


def test_wrong_type(root, capsys):
    edit(root / "params" / "linear_time.yaml",
         lambda d: d["experiments"]["synthetic_seqcls"].setdefault("fixed", {}).update(lr="fast"))
    err = refused(capsys)
    assert "linear_time.yaml: experiments.synthetic_seqcls.fixed.lr" in err


def test_negative_seed_count(root, capsys):
    edit(root / "params" / "linear_time.yaml", lambda d: d["experiments"]["synthetic_seqcls"].update(seeds=-1))
    err = refused(capsys)
    assert "linear_time.yaml: experiments.synthetic_seqcls.seeds" in err and "minimum" in err


def test_artifact_naming_an_experiment_that_does_not_exist(root, capsys):
    def change(d):
        art = next(a for a in d["artifacts"] if a["id"] == "fig2")
        art["experiments"] = ["no_such_experiment"]

    edit(root / "params" / "linear_time.yaml", change)
    err = refused(capsys)
    assert "linear_time.yaml: artifacts[" in err and "unknown experiment 'no_such_experiment'" in err


def test_a_misspelt_snakemake_config_key_is_refused():
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    import jsonschema

    jsonschema.validate({"scale": "smoke", "results": "r"}, schema)
    with pytest.raises(jsonschema.ValidationError, match="resutls"):
        jsonschema.validate({"scale": "smoke", "resutls": "r"}, schema)


def test_unknown_names_on_the_command_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_RESULTS", str(tmp_path))
    assert cli.main(["run", "linear_time", "000000000000", "--scale", "smoke"]) == 2
    assert "no run '000000000000' of paper 'linear_time'" in capsys.readouterr().err
    assert cli.main(["runs", "--scale", "smoke", "--paper", "linear_time", "--artifact", "table99"]) == 2
    assert "has no artifact 'table99'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["aggregate", "linear_tim"])
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_a_bug_keeps_its_traceback(monkeypatch, tmp_path):
    """A KeyError inside a command is a bug, not a configuration error: exit 1 and a traceback."""
    code = ("import sys; from timerepro import cli, registry; "
            "registry.Registry.papers_with_runs = lambda self: {}['boom']; "
            "sys.exit(cli.main(['dvc', '--check', '--output', sys.argv[1]]))")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "dvc.yaml")], capture_output=True, text=True)
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "KeyError: 'boom'" in proc.stderr


def test_no_import_is_swallowed(monkeypatch):
    import timerepro.data

    monkeypatch.setitem(sys.modules, "timerepro.data.commands", None)  # importing it now fails
    monkeypatch.delattr(timerepro.data, "commands", raising=False)
    with pytest.raises(ImportError):
        cli.build_parser()


def _read_only(folder: Path):
    """Make `folder` read-only even for root (a read-only bind mount); None when this machine cannot."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return lambda: folder.chmod(0o755)
    ok = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True).returncode == 0 and \
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], capture_output=True).returncode == 0
    if not ok:
        subprocess.run(["umount", str(folder)], capture_output=True)
        return None
    return lambda: subprocess.run(["umount", str(folder)], check=True)


def test_a_read_only_results_folder_is_refused_before_any_work(tmp_path, capsys):
    results = tmp_path / "results"
    (results / "aggregated").mkdir(parents=True)
    kept = results / "aggregated" / "linear_time.csv"
    kept.write_text("computed before\n")
    undo = _read_only(results)
    if undo is None:
        pytest.skip("cannot make a read-only folder here (root without mount rights)")
    try:
        assert cli.main(["--results", str(results), "aggregate", "linear_time", "--scale", "smoke"]) == 2
        err = capsys.readouterr().err
        assert f"{results} is not writable" in err and "nothing was run" in err
    finally:
        undo()
    assert kept.read_text() == "computed before\n"


def test_status_names_a_damaged_record(tmp_path, capsys):
    from timerepro import registry

    reg = registry.load()
    run = reg.runs("smoke", artifact="fig2")[0]
    d = tmp_path / "runs" / run.paper / run.run_id
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")
    (d / "metrics.json").write_text('{"test_accuracy": 0.9')  # truncated
    assert cli.main(["--results", str(tmp_path), "status", "--scale", "smoke", "--paper", "linear_time",
                     "--artifact", "fig2"]) == 0
    out = capsys.readouterr()
    assert f"corrupt  linear_time/{run.run_id}" in out.out and str(d / "metrics.json") in out.out
    assert "1 unreadable" in out.err
