"""Tables as the report shows them: HTML pages that read plainly."""

import re

import numpy as np
import pandas as pd
import pytest

from locpriv import report_tables


@pytest.mark.parametrize(
    "value, shown",
    [
        (0.1 * 6, "0.6"),
        (20000.0, "20000"),
        (2.0, "2"),
        (0.98765, "0.9877"),
        (123456.7, "123457"),
        (1.5e-5, "1.500e-05"),
        (np.nan, "—"),
        (np.inf, "∞"),
        (True, "True"),
    ],
)
def test_numbers_read_plainly(value, shown):
    assert report_tables.number(value) == shown


def test_a_runs_table_shows_one_setting_column_the_metrics_and_long_texts_last(tmp_path):
    frame = pd.DataFrame(
        {
            "dataset": ["g", "g"],
            "mechanism": ["geoind", "zero"],
            "trust_model": ["local", "none"],
            "n": [1000, 1000],
            "epsilon": [2.0, np.nan],
            "h": [0.55, np.nan],
            "reps": [1, 1],
            "epsilon_relation": ["any two locations, " * 4, "none"],
            "spearman [rank corr.]": [0.98765, 0.0],
        }
    )
    frame.to_csv(tmp_path / "runs.csv", index=False)
    report_tables.csv_to_html(
        csv_path=tmp_path / "runs.csv",
        out_html=tmp_path / "runs.html",
        title="runs <1>",
        settings=True,
        last=["epsilon_relation"],
    )
    html = (tmp_path / "runs.html").read_text()
    head = re.findall(r"<th>(.*?)</th>", html)
    assert head == [
        "dataset",
        "mechanism",
        "trust_model",
        "setting",
        "reps",
        "spearman [rank corr.]",
        "epsilon_relation",
    ]
    assert "<td>n=1000, epsilon=2, h=0.55</td>" in html and "<td>n=1000</td>" in html
    assert '<td class="lp-num">0.9877</td>' in html and "runs &lt;1&gt;" in html  # escaped, not markup
    assert html.startswith("<!DOCTYPE html>") and 'charset="utf-8"' in html


def test_the_recommendation_fragment_carries_the_landing_layout_and_no_page(tmp_path):
    frame = pd.DataFrame({"dataset": ["g"], "local": [("geoind epsilon=1", "spearman\u00a00.9 · error\u00a01.4")]})
    report_tables.write_html(frame, tmp_path / "r.html", "title", fragment=True)
    html = (tmp_path / "r.html").read_text()
    assert "<html" not in html and ":has(table.lp-table)" in html
    assert (
        '<td class="lp-pair">geoind epsilon=1<span class="lp-detail">spearman\u00a00.9 · error\u00a01.4</span>'
    ) in html
