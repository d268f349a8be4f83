"""Dataset-statistics artifacts (linear_time Tables 3 and 5, dyg_mamba Table 6, hawkes_attention
Table 1): prepare each dataset (real, or the scale's labelled stand-in), compute the rows."""

from __future__ import annotations

from timerepro.data import ctdg, stats, tpp
from timerepro.datakind import DataKind
from timerepro.data.prepare import prepare

# statistic -> (function, loader, whether it takes one dataset or a mapping of them)
STATISTICS = {
    "linear_time_table3": (stats.linear_time_table3, ctdg.load_processed, "many"),
    "linear_time_table5": (stats.linear_time_table5, ctdg.load_processed, "one"),
    "dyg_mamba_table6": (stats.dyg_mamba_table6, ctdg.load_processed, "many"),
    "hawkes_attention_table1": (stats.hawkes_attention_table1, tpp.load_processed, "many"),
}


def _kind(standin: str | None, manifests: dict[str, dict]) -> DataKind:
    """One kind for the run: stand-in, else a package copy if any dataset is one (the weaker claim), else real."""
    if standin:
        return DataKind.STANDIN
    copies = any(m.get("kind") == DataKind.PACKAGE_COPY.value for m in manifests.values())
    return DataKind.PACKAGE_COPY if copies else DataKind.REAL


def run(config: dict, ctx) -> dict:
    fn, loader, arity = STATISTICS[config["statistic"]]
    standin = config.get("standin")
    folders = {name: prepare(name, standin=standin, require_pinned=standin is None, progress=False)
               for name in config["datasets"]}
    data = {name: loader(folder) for name, folder in folders.items()}
    frame = fn(next(iter(data.values()))) if arity == "one" else fn(data)
    rows = frame.to_dict("records")
    ctx.write_artifact("rows.json", rows)
    manifests = {name: d.manifest for name, d in data.items()}
    labels = sorted({m.get("label", name) for name, m in manifests.items()})
    return {
        "metrics": {"n_rows": len(rows)},
        "data": {
            "kind": _kind(standin, manifests).value,
            "source": "standin" if standin else "real",
            "standin": bool(standin),
            "label": f"synthetic stand-ins ({standin} size), not the real data" if standin else "; ".join(labels),
            "datasets": {name: {"label": m.get("label"), "sources": m.get("sources")} for name, m in manifests.items()},
            "labels": labels,
        },
    }
