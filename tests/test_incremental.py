"""Incremental re-runs: a change re-runs exactly the jobs it affects.

(a) adding a parameter value schedules only the new branch is asserted in
test_workflow.py::test_full_run_is_byte_identical_across_core_counts; here (b) a
changed mechanism parameter, (c) a plot setting and (d) an edited locpriv
function, on a private copy of the project so the code can be edited.
"""

import copy
import shutil

import pytest

from conftest import ROOT, TINY, run_snakemake, write_config
from test_workflow import planned_jobs

pytestmark = pytest.mark.workflow

# the frontier is a figure (and a table drawn from the same summary): it follows plot settings too
PLOT_RULES = {"plot_summary", "plot_surfaces", "plot_rff_illustrations", "frontier", "all"}

CONFIG = copy.deepcopy(TINY)
CONFIG["experiments"]["density"]["mechanisms"] = {"fedkde": {"n": 300, "h": 0.55}, "zero": {"n": 300}}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the project with one finished run in its own working directory."""
    root = tmp_path_factory.mktemp("project")
    for part in ("Snakefile", "workflow", "scripts", "lib", "envs"):
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, root / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(src, root / part)
    wd = root / "wd"
    wd.mkdir()
    write_config(wd, CONFIG)
    run_snakemake(wd, "--cores", "2", snakefile=root / "Snakefile")
    assert jobs(root, wd) == {}
    return root, wd


def jobs(root, wd):
    return planned_jobs(wd, snakefile=root / "Snakefile")


def test_changed_mechanism_parameter_reruns_only_that_mechanism(project):
    root, wd = project
    cfg = copy.deepcopy(CONFIG)
    cfg["experiments"]["density"]["mechanisms"]["fedkde"]["h"] = 0.7
    write_config(wd, cfg)
    try:
        planned = jobs(root, wd)
    finally:
        write_config(wd, CONFIG)
    # the one fedkde run (300 users in 200-user shards: 2 shards, one randomize batch, which its
    # estimate job makes); the zero run untouched
    assert planned["estimate"] == 1 and planned["attack_metrics"] == 1
    assert "randomize" not in planned and planned["pooled_kde"] == 1
    assert not {"ingest", "truth", "encode_grid", "bandwidth"} & set(planned)


def test_plot_setting_reruns_only_plots(project):
    root, wd = project
    cfg = copy.deepcopy(CONFIG)
    cfg["plots"]["dpi"] = 45
    write_config(wd, cfg)
    try:
        planned = jobs(root, wd)
    finally:
        write_config(wd, CONFIG)
    assert planned and set(planned) <= PLOT_RULES


@pytest.mark.parametrize(
    "module, expected",
    [
        (
            "mechanisms/zero.py",
            # table_html: the audit and runs tables' HTML pages, drawn from the changed tables
            {"estimate", "attack_metrics", "audit", "audit_table", "summary", "table_html"},
        ),
        ("plots.py", {"plot_summary", "plot_surfaces"}),
    ],
)
def test_edited_library_function_reruns_the_rules_that_use_it(project, module, expected):
    root, wd = project
    path = root / "lib/locpriv" / module
    original = path.read_text()
    path.write_text(original + "\n\ndef _edited():\n    return 1\n")
    try:
        planned = jobs(root, wd)
    finally:
        path.write_text(original)
    assert expected <= set(planned) <= expected | PLOT_RULES
    if module.startswith("mechanisms"):
        assert planned["attack_metrics"] == 1  # the zero run only, not fedkde's


def test_between_workflow_cache_reuses_deterministic_stages(tmp_path):
    """--cache: a second checkout's ingest, grid, truth and references come from the cache."""
    cache = tmp_path / "cache"
    cache.mkdir()
    env = {"SNAKEMAKE_OUTPUT_CACHE": str(cache)}
    outs = []
    for name in ("first", "second"):
        wd = tmp_path / name
        wd.mkdir()
        write_config(wd, CONFIG)
        outs.append(run_snakemake(wd, "--cores", "2", "--cache", env=env))
    log = outs[1].stdout + outs[1].stderr
    for path in (
        "results/ingest/gauss9/points.parquet",
        "results/encode/gauss9/grid~24x20/grid.nc",
        "results/ingest/gauss9/grid~24x20/truth.nc",
    ):
        assert f"{path} from cache" in log
    summary = "results/summary/metrics.parquet"
    assert (tmp_path / "first" / summary).read_bytes() == (tmp_path / "second" / summary).read_bytes()
