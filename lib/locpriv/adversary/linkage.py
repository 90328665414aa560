"""The Bayes adversary across releases: a person's home cell from every release they contributed to.

Threat model.  The same setting is released once per time window (``releases: {window: ...}``), T
releases of the same persons.  The adversary knows which reports of each release are the target
person's (the linkage the releases' person ids, or a trajectory recovery, give it), the mechanism and
its parameters, and a prior π over grid cells (the population density, ``bayes.prior``).  It wants the
person's home: the cell holding most of their rows over the T windows (ties to the lower flat index).

Likelihood.  It models the person as at one cell c throughout (the person model of ``bayes.
person_log_likelihoods``); each release is randomised with its own independent noise, so the
likelihood of the first k releases is the product of the per-release likelihoods:

    log L_k(c) = Σ_{w < k} log P(reports of window w | c),

each term the per-release person log-likelihood (``bayes.person_log_likelihoods``, with its mixture
fallback for a person whom no single cell explains within one window), and the posterior after k
releases is π(c) L_k(c) normalised (``bayes.posterior``).  A window where the person sent nothing adds
0.  A mechanism whose release teaches the population adversary nothing (``population_learns_nothing``)
adds 0 in every window: its curve stays at the prior.

Metrics per k = 0..T (k = 0 is the prior alone): Shokri et al.'s expected error and hit rate against the
home cell's centre (``bayes.bayes_batch``), their means over the sampled persons, the expected error as a
fraction of the prior's (the frontier's ``no_information`` level), and ``exposed``, the share of persons
with posterior mass >= 1/2 within r of their home (the frontier's ``exposed``).  With the true law in
the likelihood the expected error cannot grow with k in expectation over persons drawn from the prior
(more evidence refines the posterior; the mean distance between two draws of a law is concave in it);
here the person model is an approximation for persons who move, so that is measured, not assumed
(``tests/test_linkage.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..domain import Grid
from . import bayes, informed
from .likelihoods import cell_of

CURVE_COLUMNS = [
    "k",
    "persons",
    "expected_error",
    "prior_expected_error",
    "expected_error_fraction",
    "hit_r",
    "exposed",
]
EXPOSED_MASS = 0.5  # the frontier's: posterior mass >= 1/2 within r


def home_cells(xy: np.ndarray, owner: np.ndarray, n_persons: int, grid: Grid) -> np.ndarray:
    """(n_persons, 2): the centre of each person's most frequent grid cell (ties to the lower flat index).

    ``xy`` (m, 2): the persons' rows over all windows; ``owner[t]`` the person (0..n_persons-1) of row t.
    """
    i, j = cell_of(xy, grid)
    flat = i * grid.shape[1] + j
    counts = pd.crosstab(owner, flat).reindex(range(n_persons), fill_value=0)
    if (counts.sum(axis=1) == 0).any():
        raise ValueError("cross-release adversary: a sampled person has no row in any window")
    best = counts.columns.to_numpy()[counts.to_numpy().argmax(axis=1)]
    gi, gj = np.divmod(best, grid.shape[1])
    return np.stack([grid.x[gi], grid.y[gj]], axis=1)


def curve(prior_cells: np.ndarray, window_log_liks, grid: Grid, home_xy: np.ndarray, r: float) -> pd.DataFrame:
    """One row per (k, person), k = 0..T: Shokri's metrics of the posterior after the first k releases.

    ``window_log_liks``: an iterable over the T windows, in time order, of each sampled person's log-likelihood
    of that window's reports, (n_persons, P, Q) (zeros for a person absent from the window).
    """
    median = bayes.MedianGuess(grid)
    total = np.zeros((len(home_xy), *grid.shape))
    rows = []

    def score(k):
        metrics = bayes.bayes_batch(bayes.posterior(prior_cells, total), grid, home_xy, r, median)
        rows.append(pd.DataFrame({"k": k, "person": np.arange(len(home_xy)), **metrics}))

    score(0)
    for k, log_lik in enumerate(window_log_liks, start=1):
        total += log_lik
        score(k)
    return pd.concat(rows, ignore_index=True)


def summarise(per_person: pd.DataFrame) -> pd.DataFrame:
    """Per k: the means over persons, the expected error as a fraction of the prior's, the exposed share."""
    prior_error = per_person.loc[per_person["k"] == 0, "expected_error"].mean()
    grouped = per_person.groupby("k", sort=True)
    out = pd.DataFrame(
        {
            "persons": grouped.size(),
            "expected_error": grouped["expected_error"].mean(),
            "hit_r": grouped["hit_r"].mean(),
            "exposed": grouped["hit_r"].apply(lambda h: float((h >= EXPOSED_MASS).mean())),
        }
    ).reset_index()
    out["prior_expected_error"] = prior_error
    out["expected_error_fraction"] = out["expected_error"] / prior_error
    return out[CURVE_COLUMNS]


def window_log_likelihoods(mech, view_of, rows, everybody, chosen, grid: Grid, prior, batch: int):
    """One window's (n_persons, P, Q) log-likelihoods of the population and the informed adversary (zeros for
    a person absent from the window, a refused query, or a release that teaches the adversary nothing).

    ``view_of(users)``: the release's view rows of those users (None: every row), sorted by user, with the
    release's ``attrs``; ``rows``: the sampled persons' rows of the window (``user``, ``source_user``; ``chosen``
    the sorted persons); ``everybody``: every row of the window (what the informed adversary knows).
    """
    view = view_of(np.sort(rows["user"].to_numpy()))
    zeros = np.zeros((len(chosen), *grid.shape))
    if view.empty:
        return zeros, zeros
    person_of = pd.Series(np.searchsorted(chosen, rows["source_user"]), index=rows["user"].to_numpy())
    owner = person_of.loc[view["user"].to_numpy()].to_numpy(dtype=np.int64)
    population = zeros
    if not mech.population_learns_nothing:
        population = bayes.person_log_likelihoods(
            lambda at: mech.log_likelihood(view.iloc[at], grid), owner, len(chosen), prior > 0, batch
        )[0]
    persons, first = np.unique(owner, return_index=True)  # the view is sorted by user
    target = view.iloc[first]
    if mech.informed_is_population:
        target_log_lik = mech.log_likelihood(target, grid)
    else:
        others = informed.Others(
            lambda: everybody[["user", "x", "y"]].sort_values("user", ignore_index=True), lambda: view_of(None)
        )
        target_log_lik = mech.informed_log_likelihood(target, grid, others)[0]
    informed_log_lik = zeros.copy()
    informed_log_lik[persons] = target_log_lik
    return population, informed_log_lik
