"""Files that are generated or mirrored must not drift from their source."""

import re
import tomllib
from pathlib import Path

import yaml

from timerepro.registry import PAPERS
from timerepro.report import notebooks

ROOT = Path(__file__).resolve().parents[2]


def _name(req: str) -> str:
    return re.split(r"[<>=!~ \[]", req, maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_mirrors_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(project["dependencies"])
    for extra in ("workflow", "dev"):
        wanted |= set(project["optional-dependencies"][extra])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    listed = {p for p in pip if p != "-e ."}
    assert {r.split(";")[0].strip() for r in wanted} == listed
    assert "python=3.11" in env["dependencies"]


def test_committed_notebooks_are_the_generated_ones():
    for paper in PAPERS:
        path = ROOT / "workflow" / "notebooks" / f"{paper}.ipynb"
        assert path.read_text() == notebooks.expected_text(paper), f"regenerate: python -m timerepro.report.notebooks"


def test_published_values_copy_matches_its_columns():
    head = (ROOT / "params" / "published" / "published_values.csv").read_text().splitlines()[0]
    assert head == "paper,artifact,row_group,row,column,metric,mean,std,note"
