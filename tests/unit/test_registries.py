"""Every registry refuses a name registered twice, is filled explicitly, and every name params/ uses is checked
when params/ load (before anything runs), with the valid names in the message."""

import textwrap

import pytest
import yaml

from timerepro import catalog, registry, report_catalog
from timerepro.catalog import Catalog, DuplicateName, UnknownName
from timerepro.report import aggregate, claims, families, figures
from timerepro.schema import ConfigError, load_yaml

from .test_registry import _edit, params_copy  # noqa: F401 (the fixture)


def test_a_catalog_refuses_a_second_entry_under_a_taken_name():
    names = Catalog("widget")
    first = names.add("a", lambda: 1)
    names.add("a", first)  # the same object again (a module imported twice) is no second entry
    with pytest.raises(DuplicateName, match="widget 'a' is registered twice"):
        names.add("a", lambda: 2)
    with pytest.raises(UnknownName, match=r"unknown widget 'b'; known: \['a'\]"):
        names["b"]


def _family(tmp_path, monkeypatch, name: str, source: str) -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_decorators_only_mark_and_the_family_list_fills_the_catalogs(tmp_path, monkeypatch):
    import importlib

    name = _family(tmp_path, monkeypatch, "unlisted_family", """
        from timerepro.report.aggregate import aggregator

        @aggregator("unlisted_aggregator")
        def mine(records):
            return []
        """)
    fresh = Catalog("aggregator")  # this test's own catalog: the project's stays as it is
    monkeypatch.setattr(aggregate, "AGGREGATORS", fresh)
    importlib.import_module(name)  # importing a module registers nothing
    families.fill(aggregate.AGGREGATORS)
    assert "unlisted_aggregator" not in fresh and "seqcls_accuracy" in fresh
    monkeypatch.setattr(report_catalog, "FAMILY_MODULES", report_catalog.FAMILY_MODULES + (name,))
    families.fill(aggregate.AGGREGATORS)  # listing it does
    assert fresh["unlisted_aggregator"].__module__ == name


def test_a_report_name_marked_twice_is_refused_statically_and_when_loaded(tmp_path, monkeypatch):
    twice = _family(tmp_path, monkeypatch, "twice_family", """
        from timerepro.report.aggregate import aggregator

        @aggregator("seqcls_accuracy")
        def mine(records):
            return []
        """)
    monkeypatch.setattr(report_catalog, "FAMILY_MODULES", report_catalog.FAMILY_MODULES + (twice,))
    with pytest.raises(DuplicateName, match="aggregator 'seqcls_accuracy' is registered twice"):
        report_catalog.declared()
    fresh = Catalog("aggregator")
    monkeypatch.setattr(aggregate, "AGGREGATORS", fresh)
    with pytest.raises(DuplicateName, match="aggregator 'seqcls_accuracy' is registered twice"):
        families.fill(aggregate.AGGREGATORS)


def test_static_names_equal_the_registered_ones():
    """validate reads the decorators from source; what load() registers must be exactly that."""
    families.fill(aggregate.AGGREGATORS)
    found = report_catalog.declared()
    assert set(found["aggregator"]) == set(aggregate.AGGREGATORS)
    assert set(found["figure renderer"]) == set(figures.RENDERERS)
    assert set(found["claim rule"]) == set(claims.RULES)


def test_params_yaml_refuses_a_key_written_twice(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("tgat: {task: link_prediction}\ntgat: {task: forecasting}\n")
    with pytest.raises(ConfigError, match="duplicate key 'tgat'") as err:
        load_yaml(path)
    assert err.value.path == str(path)
    path.write_text("base: &b {x: 1, y: 2}\nother: {<<: *b, x: 3}\n")  # a merged key may be overridden
    assert load_yaml(path)["other"] == {"x": 3, "y": 2}


def test_every_module_target_in_params_resolves_to_a_callable():
    reg = registry.load()
    for name, spec in {**reg.tasks, **reg.models}.items():
        assert callable(catalog.resolve(spec["module"])), name


def test_an_encoder_registered_twice_is_refused():
    from timerepro import encoders

    with pytest.raises(DuplicateName, match="time encoder 'linear' is registered twice"):
        encoders.register("linear")(type("Other", (), {}))


def _artifact(doc, aid):
    return next(a for a in doc["artifacts"] if a["id"] == aid)


@pytest.mark.parametrize(
    "file,edit,key,message",
    [
        ("linear_time.yaml", lambda d: _artifact(d, "table2").update(aggregate="lp_ap_historicl"),
         "artifacts[{table2}].aggregate", "unknown aggregator 'lp_ap_historicl'; known: ["),
        ("linear_time.yaml", lambda d: _artifact(d, "fig2").update(render="accuracy_vs_dims"),
         "artifacts[{fig2}].render", "unknown figure renderer 'accuracy_vs_dims'; known: ["),
        ("linear_time.yaml", lambda d: d["claims"][0].update(rule="linear_most_win_random"),
         "claims[0].rule", "unknown claim rule 'linear_most_win_random'; known: ["),
        ("models.yaml", lambda d: d["tgat"].update(module="timerepro.models.graph.tgat:buildd"),
         "tgat.module", "defines no 'buildd'"),
        ("models.yaml", lambda d: d["tgat"].update(module="timerepro.models.graph.tgat_v2:build"),
         "tgat.module", "no module 'timerepro.models.graph.tgat_v2'"),
        ("models.yaml", lambda d: d["tgat"].pop("module"), "tgat", "'module' is a required property"),
        ("tasks.yaml", lambda d: d["forecasting"].update(module="timerepro.tasks.forecasting:runn"),
         "forecasting.module", "defines no 'runn'"),
        ("hawkes_attention.yaml", lambda d: d["experiments"]["tpp_rmtpp"].update(model="rmtp"),
         "experiments.tpp_rmtpp.model", "unknown model 'rmtp'; known: ["),
        ("linear_time.yaml", lambda d: d["experiments"]["lp_tgat"].setdefault("fixed", {}).update(model="tgatt"),
         "experiments.lp_tgat.fixed.model", "unknown model 'tgatt'; known: ["),
        ("linear_time.yaml", lambda d: d["experiments"]["lp_tgat"]["grid"].update(encoder=["linear", "fourier"]),
         "experiments.lp_tgat.grid.encoder[1]", "unknown encoder 'fourier'; known: ["),
        ("linear_time.yaml", lambda d: d["experiments"]["lp_tgat"]["grid"].update(dataset=["uci", "imagenet"]),
         "experiments.lp_tgat.grid.dataset[1]", "unknown dataset 'imagenet'; known: ["),
        ("linear_time.yaml", lambda d: d["experiments"]["lp_tgat"].update(task="link_predicton"),
         "experiments.lp_tgat.task", "unknown task 'link_predicton'; known: ["),
    ],
)
def test_every_name_params_uses_is_checked_when_params_load(params_copy, file, edit, key, message):
    _edit(params_copy / file, edit)
    if "{" in key:  # artifacts[{id}]: the artifact's index in the file
        doc = yaml.safe_load((params_copy / file).read_text())
        aid = key[key.index("{") + 1:key.index("}")]
        key = key.replace(f"{{{aid}}}", str([a["id"] for a in doc["artifacts"]].index(aid)))
    with pytest.raises(ConfigError) as err:
        registry.load(params_copy)
    assert err.value.path.endswith(file)
    assert err.value.key == key
    assert message in str(err.value)


def test_report_code_and_params_agree_and_validate_says_where_they_do_not():
    """Every registered name is used by params/, every artifact id report code spells exists (timerepro validate)."""
    import copy

    reg = registry.load()
    assert reg.report_code_problems() == []
    papers = copy.deepcopy(reg.papers)
    papers["dyg_mamba"]["artifacts"] = [a for a in papers["dyg_mamba"]["artifacts"] if a["id"] != "fig9"]
    papers["swinit"]["artifacts"] = [{**a, "aggregate": None} if a["id"] == "table2" else a
                                     for a in papers["swinit"]["artifacts"]]
    found = report_catalog.problems(papers)
    assert any("aggregator 'swinit_table2' is registered but no params/ file names it" in p for p in found)
    assert any(p.startswith("timerepro.report.dyg_mamba.rules_studies, line") and "artifact 'fig9'" in p for p in found)
    assert len(found) == 2  # fig9 once in rules_studies (NOISE_ARTIFACTS), table2's aggregator


def test_registry_imports_no_report_module():
    """params/ validation reads the report's names from source (report_catalog): registry sits below the report."""
    import ast

    imported = set()
    for node in ast.walk(report_catalog.parsed("timerepro.registry")):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported |= {f"{node.module}.{a.name}" for a in node.names}
    assert "timerepro.report_catalog" in imported
    assert not [m for m in imported if m == "timerepro.report" or m.startswith("timerepro.report.")]
