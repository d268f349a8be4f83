"""Code fingerprints: an edit changes the fingerprint of exactly the runs whose code it touches."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
import yaml

from timerepro import fingerprint, registry
from timerepro.fingerprint import Fingerprinter, Source, changes, code_fingerprint

PACKAGE = Path(fingerprint.__file__).resolve().parent


@pytest.fixture(scope="module")
def reg():
    return registry.load()


@pytest.fixture(scope="module")
def runs(reg):
    """One run of every kind the registry has at any scale: a fingerprint depends only on the task,
    model, encoder and the data a run reads."""
    seen = {}
    for scale in reg.scale_names():
        for run in reg.runs(scale):
            c = run.config
            kind = (c["task"], c.get("model"), c.get("encoder"), tuple(fingerprint.run_datasets(c)), c.get("standin"))
            seen.setdefault(kind, run)
    return list(seen.values())


@pytest.fixture
def package(tmp_path) -> Path:
    """A copy of the package to edit (with the parse cache of __pycache__, keyed by content)."""
    dst = tmp_path / "timerepro"
    shutil.copytree(PACKAGE, dst, ignore=shutil.ignore_patterns("*.pyc"))
    return dst


def digests(reg, runs, package: Path, lock=None) -> dict[str, str]:
    fp = Fingerprinter(package_dir=package, models=reg.models, lock=lock)
    return {r.run_id: fp.run(r.config).digest for r in runs}


def edit_method(path: Path, cls: str, method: str) -> None:
    """Add a statement at the top of `cls.method`, and rewrite the whole file in another layout
    (ast.unparse drops comments and rewraps lines): only the statement may count."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    item.body.insert(1, ast.parse("_edited = 1").body[0])  # after the docstring
                    path.write_text(ast.unparse(tree))
                    return
    raise AssertionError(f"{cls}.{method} not found in {path}")


def edit_every_method(path: Path, cls: str) -> list[str]:
    """`edit_method` on every method of `cls` at once (one file rewrite); returns their names."""
    tree = ast.parse(path.read_text())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    item.body.insert(1, ast.parse("_edited = 1").body[0])
                    names.append(item.name)
    assert names, f"{cls} not found in {path}"
    path.write_text(ast.unparse(tree))
    return names


def changed(before: dict, after: dict) -> set[str]:
    return {rid for rid in before if before[rid] != after[rid]}


def test_editing_a_models_forward_changes_only_that_models_runs(reg, runs, package):
    before = digests(reg, runs, package)
    edit_method(package / "models" / "graph" / "tgat.py", "TGAT", "pair_embeddings")  # TGAT's own forward step
    after = digests(reg, runs, package)
    tgat_runs = {r.run_id for r in runs if r.config.get("model") == "tgat"}
    assert tgat_runs and changed(before, after) == tgat_runs


def test_a_shared_layer_changes_the_runs_of_every_model_using_it(reg, runs, package):
    """TGAT, TGN and DyRep share neighbor_attention's TemporalAttention: editing it reruns them, not JODIE,
    DyGFormer or CAWN."""
    before = digests(reg, runs, package)
    edit_method(package / "models" / "graph" / "neighbor_attention.py", "TemporalAttention", "forward")
    after = digests(reg, runs, package)
    assert changed(before, after) == {r.run_id for r in runs if r.config.get("model") in ("tgat", "tgn", "dyrep")}


def test_editing_one_tpp_module_leaves_the_other_models(reg, runs, package):
    before = digests(reg, runs, package)
    edit_method(package / "models" / "tpp" / "easytpp.py", "THPModel", "sampled_total_intensity")
    after = digests(reg, runs, package)
    easytpp = {m for m, e in reg.models.items() if e.get("module", "").startswith("timerepro.models.tpp.easytpp:")}
    assert changed(before, after) == {r.run_id for r in runs if r.config.get("model") in easytpp}
    assert not any(r.config.get("model") == "hawkes_attention" for r in runs if r.run_id in changed(before, after))


def test_models_sharing_a_module_count_only_their_own_entry_and_what_it_uses(reg, runs, package):
    """LSTM+T (`lstm`), TimeLSTM (`time_lstm`) and the day-of-week classifier share models/seq/time_lstm.py: editing
    LSTMTime reruns the LSTM+T runs only (it marked every time2vec run stale while the tasks looked models up in a
    dict of every builder), and editing TimeLSTM's cell the TimeLSTM runs only."""
    by_model = lambda *names: {r.run_id for r in runs if r.config.get("model") in names}  # noqa: E731
    assert by_model("lstm") and by_model("time_lstm") and by_model("time2vec_classifier")
    before = digests(reg, runs, package)
    edit_method(package / "models" / "seq" / "time_lstm.py", "LSTMTime", "states")
    lstm = digests(reg, runs, package)
    assert changed(before, lstm) == by_model("lstm")
    edit_method(package / "models" / "seq" / "time_lstm.py", "TimeLSTMCell", "gates")
    assert changed(lstm, digests(reg, runs, package)) == by_model("time_lstm")


def test_editing_report_code_changes_no_run(reg, runs, package):
    before = digests(reg, runs, package)
    path = package / "report" / "aggregate.py"
    path.write_text(path.read_text() + "\n\ndef _new_helper():\n    return 42\n")
    assert digests(reg, runs, package) == before


def test_editing_a_module_outside_the_fingerprints_changes_no_run(reg, runs, package):
    """schema.py (reading and checking params/) is imported by every task's registry, yet changes no run."""
    before = digests(reg, runs, package)
    path = package / "schema.py"
    path.write_text(path.read_text().replace("def load_yaml(path: Path) -> object:\n",
                                             "def load_yaml(path: Path) -> object:\n    _edited = 1\n"))
    assert "_edited" in path.read_text() and digests(reg, runs, package) == before


def test_a_module_outside_the_fingerprints_imports_no_project_module_and_says_why():
    """Leaving such a module out must not hide other code: it imports nothing of the project (nested imports too)."""
    source = Source(PACKAGE)
    assert fingerprint.OUTSIDE
    for module, reason in fingerprint.OUTSIDE.items():
        assert source.is_module(module) and len(reason) > 40
        assert not [i.module for i in source.get(module).imports if i.module.split(".")[0] == fingerprint.PACKAGE]


def test_comments_docstrings_and_layout_do_not_count(reg, runs, package):
    before = digests(reg, runs, package)
    path = package / "encoders.py"
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):  # every docstring rewritten
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(node):
            node.body[0].value = ast.Constant("another docstring")
    path.write_text("# a new comment\n" + ast.unparse(tree).replace("\n\n", "\n\n\n"))
    assert digests(reg, runs, package) == before


def test_a_shared_module_changes_every_run_that_imports_it(reg, runs, package):
    before = digests(reg, runs, package)
    edit_method(package / "encoders.py", "LinearEncoder", "forward")
    after = digests(reg, runs, package)
    with_encoder = {r.run_id for r in runs if "encoder" in r.config}
    assert with_encoder and changed(before, after) >= with_encoder
    stats = {r.run_id for r in runs if r.config["task"] == "dataset_statistics"}
    assert stats and not stats & changed(before, after)  # statistics do not encode time


def test_pinning_a_dataset_changes_the_real_data_runs_that_read_it(reg, runs, tmp_path):
    from timerepro.data.lock import load_lock, parse_lock

    lock = load_lock()
    real = [r for r in runs if r.config.get("standin") is None and "standin" in r.config]
    before = digests(reg, real, PACKAGE, lock=lock)
    raw = yaml.safe_load(lock.path.read_text())
    raw["datasets"]["uci"]["files"][0]["sha256"] = "a" * 64
    after = digests(reg, real, PACKAGE, lock=parse_lock(raw, lock.path))
    reads_uci = {r.run_id for r in real if "uci" in fingerprint.run_datasets(r.config)}
    assert reads_uci and changed(before, after) == reads_uci
    standin = [r for r in runs if r.config.get("standin")]
    assert digests(reg, standin, PACKAGE, lock=lock) == digests(reg, standin, PACKAGE, lock=parse_lock(raw, lock.path))


def test_a_model_module_comes_from_params_models_yaml(reg):
    for name, entry in reg.models.items():
        assert fingerprint.model_module(name, reg.models) == entry["module"].split(":")[0]
    assert fingerprint.model_module("no_such_model", reg.models) is None


def test_changes_name_the_modules_that_differ(reg, package):
    run = next(r for r in reg.runs("smoke") if r.config.get("model") == "tgat")
    old = Fingerprinter(package_dir=package, models=reg.models).run(run.config)
    edit_method(package / "models" / "graph" / "tgat.py", "TGAT", "pair_embeddings")
    new = Fingerprinter(package_dir=package, models=reg.models).run(run.config)
    assert changes(old.as_record(), new) == ["timerepro.models.graph.tgat"]
    assert changes(new.as_record(), new) == []
    assert changes(None, new) == ["unknown code (record made before code fingerprints)"]


def test_relative_imports_and_packages_are_followed(tmp_path):
    pkg = tmp_path / "timerepro"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("X = 1\n")
    (pkg / "sub" / "a.py").write_text("from .b import f\n\ndef g():\n    return f()\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    return 1\n")
    (pkg / "other.py").write_text("def h():\n    return 2\n")
    fp = code_fingerprint(["timerepro.sub.a"], source=Source(pkg))
    assert set(fp.modules) == {"timerepro", "timerepro.sub", "timerepro.sub.a", "timerepro.sub.b"}


# the graph models of linear_time, dyg_mamba and swinit besides DyG-Mamba (issue 22: the case study and the
# attention maps once tied them to DyG-Mamba's and DyGFormer's code)
OTHER_GRAPH_MODELS = ("tgat", "tgn", "jodie", "jodie_gru", "dyrep", "edgebank", "cawn", "dygformer", "dygformer_separate",
                      "dygdecoder", "swinit_mlp", "swinit_gru", "tcl", "graphmixer")


def test_a_change_inside_dyg_mambas_methods_changes_only_dyg_mambas_runs(reg, runs, package):
    """The evaluation probes (tasks/probes/) import no model class, so every other model's runs keep their code."""
    before = digests(reg, runs, package)
    methods = edit_every_method(package / "models" / "graph" / "dyg_mamba.py", "DyGMamba")
    assert {"pair_embeddings", "encode_pair", "readout"} <= set(methods)
    stale = changed(before, digests(reg, runs, package))
    by_model = {m: {r.run_id for r in runs if r.config.get("model") == m} for m in ("dyg_mamba", *OTHER_GRAPH_MODELS)}
    assert all(by_model.values())  # every model has runs here: the assertion below is not vacuous
    assert stale == by_model["dyg_mamba"]
    assert {r.config["task"] for r in runs if r.run_id in stale} == {"link_prediction", "node_classification",
                                                                        "sequence_cost"}


def test_a_change_inside_dygformer_changes_no_tgat_run(reg, runs, package):
    before = digests(reg, runs, package)
    edit_every_method(package / "models" / "graph" / "dygformer.py", "DyGFormer")
    stale = changed(before, digests(reg, runs, package))
    family = {r.run_id for r in runs if r.config.get("model") in ("dygformer", "dygformer_separate", "dygdecoder")}
    tgat = {r.run_id for r in runs if r.config.get("model") == "tgat"}
    assert tgat and family and stale == family and not stale & tgat


def test_a_run_of_another_model_holds_no_code_of_the_probes_models_or_the_run_machinery(reg):
    """What `timerepro status` compares: TGAT's modules hold neither DyGFormer, DyG-Mamba nor the run/record code
    (the case study reads both models through their methods)."""
    fp = Fingerprinter(models=reg.models)
    for task in ("link_prediction", "node_classification"):
        code = fp.code(task, "tgat", "cosine")
        assert not {"timerepro.runs", "timerepro.records", "timerepro.fingerprint", "timerepro.models.graph.dygformer",
                    "timerepro.models.graph.case_study", "timerepro.models.graph.attention_record"} & set(code.modules)
        assert "timerepro.models.graph.dyg_mamba" not in set(code.modules) | set(code.partial)
        assert "timerepro.tasks.probes.case_study" in code.modules  # the probes are task code: every run holds them
