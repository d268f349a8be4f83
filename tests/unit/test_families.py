"""Every aggregator, renderer and claim rule named in params/ is registered by some family module."""

from timerepro import registry
from timerepro.report import aggregate, claims, families, figures


def test_params_name_only_registered_functions():
    families.load()
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
