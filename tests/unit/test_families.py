"""Every aggregator, renderer and claim rule named in params/ is registered by some family module."""

from timerepro import registry
from timerepro.report import aggregate, claims, families, figures


def test_params_name_only_registered_functions():
    reg = registry.load()
    missing = []
    for paper, spec in reg.papers.items():
        for art in spec["artifacts"]:
            if art.get("status") != "implemented":
                continue
            if art.get("aggregate") and art["aggregate"] not in aggregate.AGGREGATORS:
                missing.append(f"{paper}/{art['id']}: aggregate {art['aggregate']}")
            if art.get("render") and art["kind"] == "figure" and art["render"] not in figures.RENDERERS:
                missing.append(f"{paper}/{art['id']}: render {art['render']}")
        for claim in spec["claims"]:
            if claim.get("rule") and claim["rule"] not in claims.RULES:
                missing.append(f"{paper}/{claim['id']}: rule {claim['rule']}")
    assert not missing, missing


def test_no_report_module_is_over_400_lines():
    """A paper's report grows as a package of modules of one concern each (report/linear_time/, report/dyg_mamba/)."""
    from pathlib import Path

    root = Path(families.__file__).parent
    long = {str(p.relative_to(root)): n for p in root.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert not long, long
