"""The README's quick start is exactly two commands, and CI runs the same ones."""

import re

from conftest import ROOT


def quick_start_commands(page: str = "README.md") -> list[str]:
    text = (ROOT / page).read_text()
    section = text.split("## Quick start", 1)[1]
    block = re.search(r"```(?:bash)?\n(.*?)```", section, flags=re.S).group(1)
    return [line for line in block.strip().splitlines() if line.strip()]


def test_quick_start_has_main_job_then_tests():
    main, tests = quick_start_commands()
    # the library with the workflow's and the tests' extras (pyproject.toml): `pip install locpriv` alone
    # has neither snakemake nor pytest
    assert "snakemake --cores all" in main and 'pip install -e ".[workflow,test]"' in main
    assert "pytest" in tests


def test_ci_runs_the_readme_install_and_test_commands():
    main, tests = quick_start_commands()
    ci = (ROOT / ".ci/run").read_text().splitlines()
    install = main.split("&&")[0].strip()
    assert install in [line.strip().replace(" --quiet", "") for line in ci]
    assert tests in [line.strip() for line in ci]


def test_the_docs_home_gives_the_same_quick_start():
    """Issue 40: the site's home page showed no quick start; it shows the README's two commands."""
    assert quick_start_commands("docs/index.md") == quick_start_commands()
