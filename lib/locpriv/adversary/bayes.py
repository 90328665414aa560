"""Bayes-optimal localisation metrics (Shokri et al. 2011) on the evaluation grid.

For one attacked user with true location d and posterior post(c) over grid cells:

* ``expected_error`` = sum_c post(c) ||c - d||: Shokri's correctness metric;
* ``guess_error`` = ||g* - d|| for the cell g* minimising the posterior expected
  distance sum_c post(c) ||g - c||: the adversary's best single guess (a discrete
  spatial median).  Over all P Q candidates this is a 2-D convolution of the
  posterior with the distance kernel, computed by FFT once per batch — O(PQ log PQ)
  per user instead of (PQ)^2; the kernel's transform is computed once per grid;
* ``hit_r`` = posterior mass of the cells within r of d.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import fft

from ..domain import Grid
from .local_maxima import PersonTargets, batches, person_sums, target_distance

RESULT_COLUMNS = {
    "user": "int64",
    "expected_error": "float64",
    "guess_x": "float64",
    "guess_y": "float64",
    "guess_error": "float64",
    "hit_r": "float64",
}
PRIORS = ("population", "uniform")
DEFAULTS = {"prior": "population", "r": 3, "batch": 256}


def settings(config: dict) -> dict:
    """The ``adversary`` config section with its defaults; users default to the local-maxima attack's sample."""
    return {**DEFAULTS, "users": config["attack"]["users"], **config.get("adversary", {})}


def prior(kind: str, truth: np.ndarray) -> np.ndarray:
    """The adversary's prior over grid cells: the dataset's truth surface normalised, or uniform."""
    if kind == "uniform":
        return np.full(truth.shape, 1.0 / truth.size)
    if kind != "population":
        raise ValueError(f"adversary.prior must be one of {PRIORS}, got {kind!r}")
    mass = np.clip(np.nan_to_num(truth), 0.0, None)
    if mass.sum() <= 0:
        raise ValueError("the truth surface has no mass: it cannot serve as the adversary's population prior")
    return mass / mass.sum()


def posterior(prior_cells: np.ndarray, log_lik: np.ndarray) -> np.ndarray:
    """pi(c) L_i(c) normalised per user over the cells the prior allows: (n, P, Q).

    Formed in log space from ``log_lik`` (log L_i(c), -inf where a report rules a cell
    out): log pi(c) + log L_i(c) is shifted by its maximum over the cells with
    pi(c) > 0 before exponentiating, so a likelihood peaked where the prior is 0 (or
    spanning more than the float range) does not underflow to 0 on the cells that
    matter.  Cells with pi(c) = 0 get posterior 0.
    """
    allowed = prior_cells > 0
    with np.errstate(divide="ignore"):
        log_joint = np.where(allowed, np.log(prior_cells), -np.inf)[None] + log_lik
    top = log_joint.reshape(len(log_joint), -1).max(axis=1)
    if not np.isfinite(top).all():
        raise ValueError(
            f"{int((~np.isfinite(top)).sum())} users' likelihood is 0 wherever the prior is positive: "
            "the mechanism's likelihood does not cover its own reports"
        )
    joint = np.exp(log_joint - top[:, None, None])
    return joint / joint.reshape(len(joint), -1).sum(axis=1)[:, None, None]


class MedianGuess:
    """The grid cell minimising sum_c post(c) ||g - c||, for batches of posteriors on one grid."""

    CHUNK = 32

    def __init__(self, grid: Grid):
        P, Q = grid.shape
        dx, dy = grid.x[1] - grid.x[0], grid.y[1] - grid.y[0]
        offsets = np.hypot((np.arange(2 * P - 1) - (P - 1))[:, None] * dx, (np.arange(2 * Q - 1) - (Q - 1)) * dy)
        self.shape = (fft.next_fast_len(3 * P - 2, real=True), fft.next_fast_len(3 * Q - 2, real=True))
        self.kernel = fft.rfft2(offsets, self.shape)
        self.P, self.Q = P, Q
        # irfft2's normalisation 1 / (L1 L2), as pocketfft forms it (in long double)
        self.scale = float(np.longdouble(1) / np.longdouble(self.shape[0] * self.shape[1]))

    def expected_distance(self, post: np.ndarray) -> np.ndarray:
        """(n, P, Q): posterior expected distance from every candidate cell.

        irfft2(rfft2(post) * kernel) cropped to the candidates, one axis at a time so that
        the last-axis transforms run only on the P rows that are not zero padding (going
        in) or that are kept (coming out): the same 1-D transforms and the same single
        scaling as rfft2/irfft2 (same bits), in about half the time.
        """
        (L1, L2), P, Q = self.shape, self.P, self.Q
        spectrum = fft.fft(fft.rfft(post, L2, axis=2), L1, axis=1)
        spectrum *= self.kernel
        rows = fft.ifft(spectrum, axis=1, norm="forward")[:, P - 1 : 2 * P - 1]
        return fft.irfft(rows, L2, axis=2, norm="forward")[:, :, Q - 1 : 2 * Q - 1] * self.scale

    def __call__(self, post: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # CHUNK users at a time: the padded transforms are ~9x a posterior's size each
        chunks = (post[s : s + self.CHUNK] for s in range(0, len(post), self.CHUNK))
        best = np.concatenate([self.expected_distance(c).reshape(len(c), -1).argmin(axis=1) for c in chunks])
        return np.unravel_index(best, (self.P, self.Q))


def bayes_batch(post: np.ndarray, grid: Grid, true_xy, r: float, median) -> dict[str, np.ndarray]:
    """Shokri's metrics for a batch of posteriors (n, P, Q) and the targets' true locations.

    ``true_xy``: the users' true locations (n, 2), or the persons' points
    (:class:`locpriv.adversary.local_maxima.PersonTargets`), whose distances are to the nearest point;
    ``median(post)``: the best guesses' cell indices (a :class:`MedianGuess`).
    """
    if isinstance(true_xy, PersonTargets):
        dist = true_xy.field(grid)
    else:
        dist = np.hypot(
            grid.x[None, :, None] - true_xy[:, 0, None, None], grid.y[None, None, :] - true_xy[:, 1, None, None]
        )
    gi, gj = median(post)
    gx, gy = grid.x[gi], grid.y[gj]
    return {
        "expected_error": (post * dist).sum(axis=(1, 2)),
        "guess_x": gx,
        "guess_y": gy,
        "guess_error": target_distance(true_xy, np.arange(len(gx)), gx, gy),
        "hit_r": (post * (dist <= r)).sum(axis=(1, 2)),
    }


def person_log_likelihoods(
    log_lik_of, owner: np.ndarray, n_persons: int, allowed: np.ndarray, batch: int
) -> tuple[np.ndarray, int]:
    """(n_persons, P, Q): each person's log-likelihood of all their reports, up to a constant.

    The adversary models a person as staying in one cell c while sending all their
    reports, each randomised independently, so log P(reports | c) = sum_i log L_i(c).
    A person who moved can have reports that no single cell explains (e.g. exact
    reports in two cells): for them the sum is -inf on every cell the prior allows
    (``allowed``), and the adversary falls back to a mixture, the sum of their
    reports' normalised likelihoods (the target is one of their places, equally
    likely; the sum is k times the mean, a constant the posterior normalises away).
    Returns the log-likelihoods and how many persons needed the fallback.
    ``owner[t]`` is the person (0..n_persons-1) of report t; ``log_lik_of(rows)`` the log-likelihoods
    (len(rows), P, Q) of the reports at those positions, ``batch`` reports at a time.

    Cost: the sums run person by person (``local_maxima.person_sums``: the same additions in the
    same order as in report order, same bits), and the mixture only over the reports of the
    persons who need it, a second call of ``log_lik_of`` on those alone (a person-level attack at
    N = 968,969 Geolife rows has ~1e6 reports; for a mechanism whose reports never rule a cell
    out no person needs it).
    """
    joint = person_sums(log_lik_of, owner, n_persons, batch)
    moved = ~np.where(allowed[None], np.isfinite(joint), False).reshape(n_persons, -1).any(axis=1)
    if moved.any():

        def shares(rows):
            part = log_lik_of(rows)
            top = part.reshape(len(part), -1).max(axis=1)
            share = np.exp(part - top[:, None, None])
            return share / share.reshape(len(share), -1).sum(axis=1)[:, None, None]

        mixture = person_sums(shares, owner, n_persons, batch, persons=np.flatnonzero(moved))
        with np.errstate(divide="ignore"):  # a zero mixture weight is a cell none of their reports allows
            joint[moved] = np.log(mixture)
    return joint, int(moved.sum())


def bayes_attack(
    log_lik_batches, prior_cells: np.ndarray, grid: Grid, users: np.ndarray, true_xy, r: float
) -> pd.DataFrame:
    """One row per user from an iterable of (slice, log-likelihood (n, P, Q)) batches."""
    median = MedianGuess(grid)
    parts = [
        pd.DataFrame({"user": users[sl], **bayes_batch(posterior(prior_cells, log_lik), grid, true_xy[sl], r, median)})
        for sl, log_lik in log_lik_batches
    ]
    return pd.concat(parts, ignore_index=True)


def prior_attack(prior_cells: np.ndarray, grid: Grid, users: np.ndarray, true_xy, r: float, batch: int) -> pd.DataFrame:
    """``bayes_attack`` of a likelihood constant in the location (a release that tells the adversary nothing
    about the target): every posterior is the prior, so it and its best guess are formed once.

    The same numbers as ``bayes_attack`` on all-zero log-likelihoods: ``posterior`` is elementwise per
    user and ``MedianGuess`` per posterior, so every user's row of those is this one row; the per-user
    metrics (distances to the user's own location) are computed as there, ``batch`` users at a time.
    """
    post = posterior(prior_cells, np.zeros((1, *prior_cells.shape)))
    gi, gj = MedianGuess(grid)(post)

    def median(part):
        return np.repeat(gi, len(part)), np.repeat(gj, len(part))

    parts = [
        pd.DataFrame(
            {
                "user": users[sl],
                **bayes_batch(
                    np.broadcast_to(post, (sl.stop - sl.start, *post.shape[1:])), grid, true_xy[sl], r, median
                ),
            }
        )
        for sl in batches(len(users), batch)
    ]
    return pd.concat(parts, ignore_index=True)
