"""Every registered claim rule of every paper, run on the paper's own published values (issue 11 item 7).

The published rows stand in for the aggregated frame (with DEFAULT_RUNS seeds per cell, the papers' usual five,
for rules that read run counts). Each rule must return a valid verdict without raising; a rule that FAILS on the
paper's own numbers is either a wrong rule or a documented erratum of the paper, listed in ERRATA with its source.
"""

import pandas as pd
import pytest

from timerepro import registry
from timerepro.report import claims, published

DEFAULT_RUNS = 5  # seeds per published cell (every paper here reports means over five runs)
# (paper, claim) -> why the paper's own numbers refute the claim (reference/papers/<paper>.yaml claims `check:`)
ERRATA = {
    ("swinit", "c02"): "inductive Reddit ROC-AUC 97.10 < TGN-gru 97.33: 11 of 12 cells, not all",
    ("hawkes_attention", "c07"): "ECL-96 MSE: iTransformer, TimesNet, Stationary are lower: Ours ranks 4th, not 2nd",
    ("hawkes_attention", "c08"): "Weather-96 MAE: TimesNet 0.220 < Ours 0.223",
}
VERDICTS = {claims.HOLDS, claims.FAILS, claims.PENDING}


def published_frame(paper: str) -> pd.DataFrame:
    """The published values as an aggregated frame (report/aggregate.py COLUMNS)."""
    return published.load(paper).assign(n_runs=DEFAULT_RUNS, scale="published", data="published values",
                                         data_kind="real")


def _verdicts() -> dict[tuple[str, str], tuple[str, str]]:
    reg = registry.load()
    out = {}
    for paper in registry.PAPERS:
        df = published_frame(paper)
        for claim in reg.papers[paper]["claims"]:
            if claim.get("rule"):
                out[(paper, claim["id"])] = tuple(claims.RULES[claim["rule"]](df.copy())[:2])  # (verdict, detail); a third: cells read
    return out


@pytest.fixture(scope="module")
def verdicts():
    return _verdicts()


def test_every_rule_gives_a_verdict_on_the_published_values(verdicts):
    assert len(verdicts) >= 60  # every paper's rules ran
    bad = {k: v for k, v in verdicts.items()
           if not (isinstance(v, tuple) and v[0] in VERDICTS and isinstance(v[1], str) and v[1])}
    assert not bad, bad


def test_rules_that_fail_on_the_papers_own_numbers_are_documented_errata(verdicts):
    failing = {k for k, (v, _) in verdicts.items() if v == claims.FAILS}
    assert failing == set(ERRATA), {k: verdicts[k][1] for k in failing ^ set(ERRATA) if k in verdicts}


def test_rules_judge_the_published_tables_they_can_read(verdicts):
    """Claims on printed tables are evaluated, not left pending, when the published frame has their cells."""
    evaluated = {k for k, (v, _) in verdicts.items() if v != claims.PENDING}
    assert {("linear_time", f"c{i:02d}") for i in range(1, 15)} <= evaluated
    assert {("hawkes_attention", c) for c in ("c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08")} <= evaluated
    assert verdicts[("hawkes_attention", "c10")][0] == claims.PENDING  # no published kernels: a figure
