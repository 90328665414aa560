"""The documentation: README links resolve, its config examples validate, and the site builds strictly.

The site's own links and anchors, its navigation and its API reference targets are checked by
`mkdocs build --strict` (mkdocs.yml `validation`); the README is outside the site, so its links into
docs/ are checked here.  The Python example of docs/python-api.md runs in tests/test_api.py.
"""

import importlib.util
import re
import subprocess
import sys

import pytest
import yaml
from snakemake.utils import update_config

from conftest import ROOT
from locpriv import config as lpconfig

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def github_slug(heading: str) -> str:
    """A heading's anchor as GitHub and MkDocs' toc both make it (lower case, punctuation dropped)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {github_slug(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def test_readme_links_reach_existing_pages_and_headings():
    links = LINK.findall((ROOT / "README.md").read_text())
    assert len(links) >= 10  # the Documentation table at least: a broken regex must not pass vacuously
    for link in links:
        if link.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else ROOT / "README.md"
        assert target.exists(), f"README.md links to missing {link}"
        if anchor:
            assert anchor in anchors(target), f"README.md links to {link}: no such heading in {path}"


def test_every_docs_page_is_reachable_from_the_readme_or_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    readme = (ROOT / "README.md").read_text()
    for page in (ROOT / "docs").rglob("*.md"):
        rel = page.relative_to(ROOT / "docs").as_posix()
        assert rel in nav or f"docs/{rel}" in readme, f"docs/{rel} is in neither mkdocs.yml's nav nor the README"


def config_examples():
    """Every ```yaml block of the README and the docs pages that is a fragment of config.yaml."""
    keys = set(lpconfig.published_schema()["properties"])
    for page in PAGES:
        for block in re.findall(r"```yaml\n(.*?)```", page.read_text(), flags=re.S):
            fragment = yaml.safe_load(block)
            if isinstance(fragment, dict) and set(fragment) <= keys:
                yield pytest.param(fragment, id=f"{page.relative_to(ROOT)}:{next(iter(fragment))}")


@pytest.mark.parametrize("fragment", list(config_examples()))
def test_config_examples_validate_against_the_schema(fragment):
    """Each example, merged into the default config.yaml as Snakemake merges a --configfile, is valid."""
    merged = yaml.safe_load((ROOT / "config.yaml").read_text())
    update_config(merged, fragment)
    lpconfig.check_schema(merged)


def test_config_examples_are_found():
    # README (adversary/utility/frontier), heatmaps, data, studies: a changed fence must not empty the test
    assert len(list(config_examples())) >= 4


NEEDS_MKDOCS = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None, reason='needs the docs extra: pip install -e ".[docs]"'
)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built once, strictly (.ci/run installs the docs extra, so this runs in CI)."""
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@NEEDS_MKDOCS
def test_docs_site_builds_with_warnings_as_errors(site):
    assert (site / "api/mechanisms/index.html").read_text().count('class="doc doc-heading"') >= 20


def fenced_blocks(markdown: str) -> int:
    """The fenced code blocks a Markdown page opens (``` or ~~~, 3 or more, closed by the same run alone on a line)."""
    count, opened = 0, None
    for line in markdown.splitlines():
        fence = re.match(r"\s*(`{3,}|~{3,})", line)
        if fence and opened is None:
            opened, count = fence.group(1), count + 1
        elif fence and line.strip() == fence.group(1) and fence.group(1).startswith(opened):
            opened = None
    return count


def code_blocks(html: str) -> int:
    return html.count("<pre")


def loose_fences(html: str) -> bool:
    """A literal ``` outside the code blocks and inline code: a fence the Markdown did not recognise."""
    return "```" in re.sub(r"<pre.*?</pre>|<code.*?</code>", "", html, flags=re.S)


@NEEDS_MKDOCS
@pytest.mark.parametrize("page", sorted(p.relative_to(ROOT / "docs") for p in (ROOT / "docs").rglob("*.md")), ids=str)
def test_every_fenced_block_renders_as_code(site, page):
    """Issue 40: docs/python-api.md's ```python api-example fence rendered as one run-on paragraph (GitHub
    showed it as code, mkdocs --strict said nothing): every fence of every page must be a code block on
    the built site."""
    stem = page.with_suffix("")  # mkdocs' directory URLs: a/b.md -> a/b/index.html, a/index.md -> a/index.html
    html = (site / (stem.parent if stem.name == "index" else stem) / "index.html").read_text()
    assert code_blocks(html) >= fenced_blocks((ROOT / "docs" / page).read_text()), page
    assert not loose_fences(html), page


def test_fence_checks_catch_the_broken_fence():
    """Power check: the site's Markdown (mkdocs.yml's superfences) turns the old fence into no code block,
    which the two checks above see."""
    import markdown

    extensions = [
        e if isinstance(e, str) else next(iter(e))
        for e in yaml.safe_load((ROOT / "mkdocs.yml").read_text())["markdown_extensions"]
    ]
    page = "Text.\n\n```python api-example\nx = 1\n```\n\n```python\ny = 2\n```\n"
    html = markdown.markdown(
        page, extensions=[e for e in extensions if e.startswith(("pymdownx.superfences", "admonition"))]
    )
    assert fenced_blocks(page) == 2 and code_blocks(html) == 1
    fixed = markdown.markdown(page.replace(" api-example", ""), extensions=["pymdownx.superfences"])
    assert code_blocks(fixed) == 2 and not loose_fences(fixed)
