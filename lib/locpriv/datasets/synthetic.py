"""The RFF paper's synthetic population patterns ([RFF-KDE], §4.1.1).

Both are equal-weight Gaussian mixtures, so sampling and the analytic density
on the evaluation grid share one parametrisation (means, covariances).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class GaussianMixture:
    means: np.ndarray  # (K, 2)
    covs: np.ndarray  # (K, 2, 2)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        k = rng.integers(0, len(self.means), size=n)
        chol = np.linalg.cholesky(self.covs)  # (K, 2, 2)
        z = rng.standard_normal((n, 2))
        return self.means[k] + np.einsum("nij,nj->ni", chol[k], z)

    def density(self, gx: np.ndarray, gy: np.ndarray) -> np.ndarray:
        """Mixture pdf on the grid, shape (P, Q)."""
        X, Y = np.meshgrid(gx, gy, indexing="ij")
        pts = np.stack([X, Y], axis=-1)  # (P, Q, 2)
        out = np.zeros(X.shape)
        inv = np.linalg.inv(self.covs)
        det = np.linalg.det(self.covs)
        for mean, icov, d in zip(self.means, inv, det, strict=True):  # K <= 9 components
            diff = pts - mean
            quad = np.einsum("pqi,ij,pqj->pq", diff, icov, diff)
            out += np.exp(-0.5 * quad) / (2 * np.pi * np.sqrt(d))
        return out / len(self.means)


def gauss9() -> GaussianMixture:
    """Nine Gaussians at (i, j), i, j in {-1, 0, 1}, Sigma = 0.25 I."""
    means = np.array([(i, j) for i in (-1, 0, 1) for j in (-1, 0, 1)], dtype=float)
    return GaussianMixture(means, np.tile(0.25 * np.eye(2), (9, 1, 1)))


def octagon8() -> GaussianMixture:
    """Eight Gaussians on a radius-3 octagon, each elongated along its radius.

    The extracted text prints Sigma_i with "cos^2 (2i/4)" in the top-left entry;
    the other three entries use pi*i/4, and the matrix is exactly
    R(pi i/4) diag(1, 0.16^2) R(pi i/4)^T, so the top-left entry is
    cos^2(pi i/4) + 0.16^2 sin^2(pi i/4).  We build it as that rotation.
    """
    angles = np.pi * np.arange(1, 9) / 4
    means = 3.0 * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    c, s = np.cos(angles), np.sin(angles)
    rot = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], axis=1)  # (8, 2, 2)
    covs = rot @ np.diag([1.0, 0.16**2]) @ np.transpose(rot, (0, 2, 1))
    return GaussianMixture(means, covs)


PATTERNS = {"gauss9": gauss9, "octagon8": octagon8}


def generate(pattern: str, n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, GaussianMixture]:
    if pattern not in PATTERNS:
        raise ValueError(f"unknown synthetic pattern {pattern!r}; allowed: {sorted(PATTERNS)}")
    mix = PATTERNS[pattern]()
    xy = mix.sample(n, rng)
    points = pd.DataFrame({"user": np.arange(n, dtype=np.int64), "x": xy[:, 0], "y": xy[:, 1]})
    return points, mix


def trajectories(
    pattern: str, persons: int, *, days: int, per_day: int, stay: float, start: str, rng: np.random.Generator
) -> pd.DataFrame:
    """Persons moving over ``days`` days, ``per_day`` rows each day: columns source_user, time (UTC), x, y.

    Each person's locations are a Markov chain: the first drawn from the pattern's mixture, each next
    one the previous with probability ``stay`` (a person returns to places) and a fresh draw from the
    mixture otherwise.  The mixture is the chain's stationary law (if X_t ~ f, then X_{t+1} ~ stay f +
    (1 - stay) f = f), so every row is distributed as the pattern and the analytic density stays the
    reference, while a person's rows are dependent, as a real trajectory's are.  Row k of a day is at a
    uniform time inside the k-th of ``per_day`` equal slots.  Rows are in person then time order.
    """
    mix = PATTERNS[pattern]()
    steps = days * per_day
    fresh = mix.sample(persons * steps, rng).reshape(persons, steps, 2)
    moves = rng.random((persons, steps)) >= stay
    moves[:, 0] = True
    # the index of the last fresh draw at or before each step: where the person is
    last = np.maximum.accumulate(np.where(moves, np.arange(steps), 0), axis=1)
    xy = np.take_along_axis(fresh, last[..., None], axis=1).reshape(-1, 2)
    slot = (np.arange(steps) + rng.random((persons, steps))) / per_day  # days since start
    time = pd.Timestamp(start, tz="UTC") + pd.to_timedelta(np.round(slot.ravel() * 86400.0), unit="s")
    return pd.DataFrame(
        {
            "source_user": np.repeat(np.arange(persons), steps).astype(str),
            "time": time.astype("datetime64[ns, UTC]"),
            "x": xy[:, 0],
            "y": xy[:, 1],
        }
    )
