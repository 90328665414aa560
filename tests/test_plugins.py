"""A user's own mechanism and study, in a module beside config.yaml, reach the summaries with no locpriv file edited.

The plugin module below is written by the test into a fresh working directory and named in the
config's ``plugins``: its mechanism (k-ary randomized response over the broadcast grid's cells) runs
through every stage of the main DAG, audit included, and its study through the generic study rules.
"""

import copy
import subprocess

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, TINY, run_snakemake

pytestmark = pytest.mark.workflow

PLUGIN = '''\
"""Throwaway plugin: k-ary randomized response over the grid's cells, and a coin-flipping study."""

import math

import numpy as np

from locpriv.dp import Guarantee
from locpriv.mechanisms.base import Mechanism, clamp_to_domain
from locpriv.params import Param
from locpriv.study import Study


class RRGrid(Mechanism):
    """k-ary randomized response over the broadcast grid's P x Q cells (Warner 1965, k-ary form)."""

    name = "rr_grid"
    trust_model = "local"
    params = {"epsilon": Param("epsilon", "float", "LDP budget", low=0.0)}

    def _keep(self, k):
        e = math.exp(self.settings["epsilon"])
        return e / (e + k - 1), 1 / (e + k - 1)   # P(report own cell), P(report one given other cell)

    def claim(self):
        return Guarantee(model="epsilon-LDP", epsilon=self.settings["epsilon"], delta=0.0,
                         relation="any two inputs (local)", covers="each user's grid cell")

    def communication(self, grid):
        return 1.0

    def randomize_points(self, points, grid, rng):
        xy, _ = clamp_to_domain(points, grid)
        (P, Q), d = grid.shape, grid.domain
        i = np.minimum(((xy[:, 0] - d.xmin) / (d.xmax - d.xmin) * P).astype(int), P - 1)
        j = np.minimum(((xy[:, 1] - d.ymin) / (d.ymax - d.ymin) * Q).astype(int), Q - 1)
        own, k = i * Q + j, P * Q
        other = rng.integers(0, k - 1, len(own))
        other += other >= own
        cell = np.where(rng.random(len(own)) < self._keep(k)[0], own, other)
        view = points[["user"]].reset_index(drop=True)
        view["cell"] = cell
        return view

    def partial(self, view, grid):
        return np.bincount(view["cell"], minlength=grid.shape[0] * grid.shape[1]).reshape(grid.shape).astype(float)

    def density(self, total, n_users, grid):
        p, q = self._keep(total.size)
        dens = np.maximum((total - n_users * q) / (p - q), 0.0)
        return dens / (dens.sum() * grid.cell_area)

    def likelihood(self, view, grid):
        p, q = self._keep(grid.shape[0] * grid.shape[1])
        lik = np.full((len(view), grid.shape[0] * grid.shape[1]), q)
        lik[np.arange(len(view)), view["cell"].to_numpy()] = p
        return lik.reshape(len(view), *grid.shape)

    def surfaces(self, view, grid):
        lik = self.likelihood(view, grid)
        return lik / (lik.sum(axis=(1, 2), keepdims=True) * grid.cell_area)

    # no audit_case: it brings its likelihood, so the generic whole-report audit covers it


def validate(section):
    return {"epsilon": [float(e) for e in section["epsilon"]], "reps": int(section.get("reps", 1)),
            "n": int(section.get("n", 1000))}


def runs(cfg):
    return [{"epsilon": e, "rep": r, "n": cfg["n"]} for e in cfg["epsilon"] for r in range(cfg["reps"])]


def run_dir(run):
    return f"epsilon~{run['epsilon']}/rep~{run['rep']}"


def execute(run, cfg, rng):
    """Randomized response on one private bit per client; the error of the debiased mean."""
    truth = rng.random(run["n"]) < 0.3
    p = math.exp(run["epsilon"]) / (1 + math.exp(run["epsilon"]))
    reports = np.where(rng.random(run["n"]) < p, truth, ~truth)
    estimate = (reports.mean() - (1 - p)) / (2 * p - 1)
    return STUDY.run_table([{"method": "rr", "metric": "abs_error", "value": abs(estimate - truth.mean())}],
                           epsilon=run["epsilon"], n=run["n"], rep=run["rep"])


STUDY = Study(name="coin", validate=validate, runs=runs, run_dir=run_dir, execute=execute, schema={
    "type": "object", "additionalProperties": False, "required": ["epsilon"],
    "description": "randomized response on a private bit (a plugin's study)",
    "properties": {
        "epsilon": {"type": "array", "items": {"type": "number", "exclusiveMinimum": 0}, "minItems": 1,
                    "description": "budgets"},
        "reps": {"type": "integer", "minimum": 1, "default": 1, "description": "repetitions"},
        "n": {"type": "integer", "minimum": 1, "default": 1000, "description": "clients"}}})
'''


def _config():
    cfg = copy.deepcopy(TINY)
    cfg["plugins"] = ["rr_plugin"]
    cfg["audit"] = {"draws": 2000}
    cfg["experiments"]["density"]["mechanisms"] = {"rr_grid": {"n": 300, "epsilon": [1.0, 3.0]}, "zero": {"n": 300}}
    cfg["studies"] = {"coin": {"epsilon": [1.0, 4.0], "reps": 2, "n": 500}}
    return cfg


def _tree_state() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def test_a_plugin_mechanism_and_study_reach_their_summaries(make_workdir):
    before = _tree_state()
    wd = make_workdir(_config())
    (wd / "rr_plugin.py").write_text(PLUGIN)
    run_snakemake(wd, "--cores", "2", "results/summary/metrics.parquet", "results/studies/coin/summary.parquet")
    assert _tree_state() == before  # no file of locpriv written or edited
    table = pd.read_parquet(wd / "results/summary/metrics.parquet")
    rr = table[table["mechanism"] == "rr_grid"]
    assert set(rr["trust_model"]) == {"local"} and sorted(rr["epsilon"].unique()) == [1.0, 3.0]
    value = rr.set_index(["epsilon", "metric"])["value"]
    for eps in (1.0, 3.0):
        assert value[(eps, "answered")] == 1 and value[(eps, "guarantee_epsilon")] == eps
        # audited with no case of its own (``Mechanism.audit_case``'s default: the whole-report likelihood
        # ratio at its relation's worst-case pairs), below its claim
        assert 0 <= value[(eps, "audit_epsilon_lb")] <= eps
        assert np.isfinite(value[(eps, "bayes_expected_error")]) and np.isfinite(value[(eps, "privacy_Z")])
    assert value[(3.0, "spearman")] > value[(1.0, "spearman")]  # more budget, a better map
    study = pd.read_parquet(wd / "results/studies/coin/summary.parquet")
    assert len(study) == 4 and set(study["study"]) == {"coin"} and sorted(set(study["epsilon"])) == [1.0, 4.0]
    assert (wd / "results/studies/coin/summary.csv").exists()
    err = study.groupby("epsilon")["value"].mean()
    assert err[4.0] < err[1.0]


def test_a_plugin_claiming_epsilon_without_an_audit_case_stops_before_any_job(make_workdir):
    # neither a case nor a likelihood of its reports: nothing to audit it with
    wd = make_workdir(_config())
    (wd / "rr_plugin.py").write_text(
        PLUGIN.replace("def likelihood(", "def _lik(").replace("self.likelihood(", "self._lik(")
    )
    proc = run_snakemake(wd, "--dry-run", check=False)
    assert proc.returncode != 0
    assert (
        "config key 'experiments.density.mechanisms.rr_grid': mechanism 'rr_grid' states an epsilon but has "
        "no audit case"
    ) in proc.stderr + proc.stdout
    assert not (wd / "results").exists()


def test_a_plugin_that_does_not_import_is_named_in_one_line(make_workdir):
    wd = make_workdir(_config())
    (wd / "rr_plugin.py").write_text("raise RuntimeError('broken on purpose')\n")
    proc = run_snakemake(wd, "--dry-run", check=False)
    assert proc.returncode != 0
    assert (
        "config key 'plugins': cannot import 'rr_plugin' (RuntimeError: broken on purpose)" in proc.stderr + proc.stdout
    )
