"""dyg_mamba's figure renderers (report/dyg_mamba/plots.py): a panel per dataset or setting, the caption under
every figure, and "not run at this scale" where a figure has no rows."""

from __future__ import annotations

import pandas as pd
import pytest

from timerepro.report.dyg_mamba import plots
from timerepro.report.figures import caption, plt

META = {"scale": "smoke", "data": "UCI", "data_kind": "standin", "data_words": "stand-in"}
COLUMNS = ["row_group", "row", "column", "metric", "mean", "std"]
PER_PANEL = [plots.dm_fig1_bars, plots.dm_bubbles_render, plots.dm_ablation_bars, plots.dm_fig7_lines,
             plots.dm_noise_lines]


def texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(plt.Text)]


@pytest.mark.parametrize("render", PER_PANEL, ids=lambda f: f.__name__)
def test_a_figure_without_rows_says_so_under_its_title_and_caption(render):
    fig = render(pd.DataFrame(columns=COLUMNS), META)
    assert len(fig.axes) == 1 and "not run at this scale" in texts(fig)
    assert fig._timerepro_stamp == caption(META) and caption(META) in texts(fig) and fig._suptitle.get_text()
    plt.close(fig)


@pytest.mark.parametrize("render, xs", [(plots.dm_fig7_lines, ["32", "64"]), (plots.dm_noise_lines, ["0.0", "0.5"])],
                         ids=["fig7", "noise"])
def test_line_figures_have_a_panel_per_dataset_and_a_line_per_model(render, xs):
    rows = [(ds, model, x, "AP", 90.0 + k, 1.0) for ds in ("UCI", "Enron") for model in ("DyG-Mamba", "TGN")
            for k, x in enumerate(xs)]
    fig = render(pd.DataFrame(rows, columns=COLUMNS), META)
    assert [ax.get_title() for ax in fig.axes] == ["Enron", "UCI"]
    for ax in fig.axes:
        assert [c.get_label() for c in ax.containers] == ["DyG-Mamba", "TGN"]
        assert sorted(ax.containers[0].lines[0].get_xdata().tolist()) == sorted(float(x) for x in xs)
    assert "not run at this scale" not in texts(fig) and caption(META) in texts(fig)
    plt.close(fig)


def test_settings_figures_have_a_panel_per_setting_in_order():
    rows = [(s, "DyG-Mamba", "UCI", "AP_random", 90.0, 1.0) for s in ("inductive", "transductive")]
    fig = plots.dm_fig1_bars(pd.DataFrame(rows, columns=COLUMNS), META)
    assert [ax.get_title().split(";")[0] for ax in fig.axes] == ["transductive", "inductive"]
    plt.close(fig)
