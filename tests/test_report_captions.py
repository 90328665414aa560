"""Every report caption is valid reStructuredText.

Snakemake renders a caption as a Jinja template, then with docutils (``snakemake.report``);
any docutils message (an undefined substitution such as ``|g~_m|``, a bad inline markup)
becomes a red error box in the report.  Each caption is rendered here the same way, once per
value its template branches on, and any docutils message at warning level or above fails.
"""

import io
from types import SimpleNamespace

import jinja2
import pytest
from docutils.core import publish_doctree

from conftest import ROOT

CAPTIONS = sorted((ROOT / "workflow/report").glob("*.rst"))
# summary_plots.rst branches on the plot (workflow/rules/common.smk: SUMMARY_PLOTS)
PLOTS = ("metrics_vs_n", "tradeoff", "gain_per_cost")


def docutils_messages(text: str, source: str) -> str:
    stream = io.StringIO()
    publish_doctree(text, source_path=source,
                    settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": stream})
    return stream.getvalue()


@pytest.mark.parametrize("path", CAPTIONS, ids=lambda p: p.name)
def test_caption_renders_without_a_docutils_message(path):
    template = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(path.read_text())
    for plot in PLOTS:
        text = template.render(snakemake=SimpleNamespace(wildcards={"dataset": "gauss9", "plot": plot}),
                               categories={}, files={})
        assert docutils_messages(text, str(path)) == "", plot


def test_a_broken_caption_is_found():
    """Power check: the undefined substitution the radio-map caption once had is reported."""
    assert "Undefined substitution" in docutils_messages("Magnitude |g~_m| of a gradient.", "x.rst")
