"""Every caption of the HTML report is valid reStructuredText, rendered as Snakemake renders it.

Snakemake fills a caption's Jinja template (``snakemake.wildcards``, ``files``, ...), appends its
link targets (one per report category and result) and hands the text to docutils; an error there
shows as a red box in the report (e.g. ``|g~_m|`` read as a substitution).  Here docutils stops at
the first warning, so a caption passes only if it renders cleanly, in every branch of its template.
"""

import io
import re
import types
from pathlib import Path

import docutils.utils
import pytest
from docutils.core import publish_parts
from jinja2 import Environment

ROOT = Path(__file__).resolve().parents[1]
CAPTIONS = sorted((ROOT / "workflow/report").glob("*.rst"))
RULES = sorted((ROOT / "workflow/rules").rglob("*.smk"))
# the link targets Snakemake appends to every caption (snakemake.report.auto_report's rst_links)
RST_LINKS = """

.. _Workflow: javascript:show_panel('workflow')
.. _Statistics: javascript:show_panel('statistics')
{% for name in category_names %}
.. _{{ name }}: javascript:app.showCategory('{{ name|urlencode }}')
{% endfor %}
{% for res in files %}
.. _{{ res.target }}: javascript:app.showResultInfo('{{ res.path|urlencode }}')
{% endfor %}
"""


def _categories() -> list[str]:
    found = {m for rule in RULES for m in re.findall(r'category="([^"]+)"', rule.read_text())}
    found |= {m for rule in RULES for m in re.findall(r'"section": "([^"]+)"', rule.read_text())}  # TABLES
    return sorted(found)


def _branches(text: str) -> list[dict]:
    """Wildcard values that take every branch of the template: each value it compares a wildcard
    with, and one it does not name (the else branch)."""
    names = set(re.findall(r"snakemake\.wildcards\.(\w+)", text))
    compared = {}
    for name, value in re.findall(r'snakemake\.wildcards\.(\w+) == "([^"]+)"', text):
        compared.setdefault(name, []).append(value)
    cases = [{name: "example" for name in names}]
    for name, values in compared.items():
        cases += [{**cases[0], name: value} for value in values]
    return cases


class Record(types.SimpleNamespace):
    """What the templates see of a report result (snakemake.report.FileRecord)."""


def render(text: str, wildcards: dict, files: list[Record]) -> str:
    """The caption as Snakemake renders it; docutils raises on any warning or error."""
    env = Environment(trim_blocks=True, lstrip_blocks=True)
    snakemake = types.SimpleNamespace(wildcards=types.SimpleNamespace(**wildcards), config={})
    rst = env.from_string(text + RST_LINKS).render(
        snakemake=snakemake, categories={}, files=files, category_names=_categories()
    )
    return publish_parts(
        rst, writer="html", settings_overrides={"halt_level": 2, "report_level": 2, "warning_stream": io.StringIO()}
    )["body"]


def _files(tmp_path) -> list[Record]:
    fragment = tmp_path / "recommendation.html"
    fragment.write_text("<table class='lp-table'><tr><td>geoind epsilon=1</td></tr></table>")
    return [
        Record(name="recommendation.html", target="recommendation.html", path=fragment),
        Record(name="frontier.png", target="frontier.png", path=Path("results/plots/frontier.png")),
    ]


@pytest.mark.parametrize("caption", CAPTIONS, ids=lambda p: p.name)
def test_caption_renders_without_warnings(caption, tmp_path):
    text = caption.read_text()
    for wildcards in _branches(text):
        for files in (_files(tmp_path), []):  # with and without the results a template looks up
            try:
                html = render(text, wildcards, files)
            except docutils.utils.SystemMessage as exc:
                pytest.fail(f"{caption.name} with {wildcards}: {exc}")
            assert "system-message" not in html


def test_the_landing_page_embeds_the_recommendation_table(tmp_path):
    text = (ROOT / "workflow/report/workflow.rst").read_text()
    assert "geoind epsilon=1" in render(text, {}, _files(tmp_path))
    assert "once the frontier has been computed" in render(text, {}, [])


def test_every_caption_a_rule_names_exists_and_every_caption_is_used():
    named = {m for rule in RULES for m in re.findall(r'caption="[./]*report/([^"]+)"', rule.read_text())}
    assert named == {p.name for p in CAPTIONS} - {"workflow.rst"}


@pytest.mark.parametrize(
    "bad, message",
    [
        ("Magnitude |g~_m| of a gradient.", "Undefined substitution"),
        ("A title\n=====\n", "Title underline too short"),
        ("*emphasis without an end", "Inline emphasis start-string without end-string"),
    ],
)
def test_a_broken_caption_fails(bad, message):
    """Power check: the errors and warnings a caption can hold stop the rendering."""
    with pytest.raises(docutils.utils.SystemMessage, match=message):
        render(bad, {}, [])
