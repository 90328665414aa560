"""Naive and deconvoluting kernel estimators in 1-D ([Deconv-LDP] eqs. 2, 5, 7, 8).

Every estimator takes the public Laplace scale b of the reports; b = 0 gives
the ordinary (noiseless or naive) estimator with the same code path.  Sums over
reports are done in blocks of evaluation points against all reports, so memory
is O(block · n) and no Python loop runs over reports.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar

from .kernels import adjusted, adjusted_from_square, check

BLOCK = 512


def _ratio(b: float, h: float) -> float:
    if not (math.isfinite(h) and h > 0):
        raise ValueError(f"bandwidth h must be a finite number > 0, got {h}")
    if not (math.isfinite(b) and b >= 0):
        raise ValueError(f"Laplace scale b must be a finite number >= 0, got {b}")
    return (b / h) ** 2


def _sums(points, reports, weights, h, b, kernel):
    """(Σ_i K̂((p − z_i)/h) w_i, Σ_i K̂((p − z_i)/h)) for every evaluation point p."""
    c = _ratio(b, h)
    check(kernel)
    points = np.asarray(points, dtype=float)
    reports = np.asarray(reports, dtype=float)
    num = np.empty(len(points))
    den = np.empty(len(points))
    for start in range(0, len(points), BLOCK):
        u2 = np.subtract.outer(points[start : start + BLOCK], reports)
        u2 *= 1.0 / h
        np.square(u2, out=u2)
        k = adjusted_from_square(kernel, u2, c)
        den[start : start + BLOCK] = k.sum(axis=1)
        num[start : start + BLOCK] = k @ weights
    return num, den


def density(points, reports, h: float, b: float = 0.0, kernel: str = "gaussian") -> np.ndarray:
    """φ̂(p) = (1 / (n h)) Σ_i K̂((p − z_i) / h): eq. (5) for b > 0, eq. (2)/naive for b = 0."""
    reports = np.asarray(reports, dtype=float)
    _, den = _sums(points, reports, np.zeros(len(reports)), h, b, kernel)
    return den / (len(reports) * h)


def nadaraya_watson(points, reports, y, h: float, b: float = 0.0, kernel: str = "gaussian") -> np.ndarray:
    """m̂(p) of eq. (7); NaN where Σ K̂ <= 0 (the deconvoluting kernel takes negative values,
    so far from the data the denominator can vanish and the ratio is undefined)."""
    num, den = _sums(points, reports, np.asarray(y, dtype=float), h, b, kernel)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / den, np.nan)


def loo_cv_scores(
    reports,
    y,
    bandwidths,
    b: float = 0.0,
    kernel: str = "gaussian",
    at=None,
    subset=None,
    fallback: float | None = None,
) -> np.ndarray:
    """Eq. (8) with squared loss: mean over held-out j of (y_j − m̂_{−j}(at_j))², per bandwidth.

    ``at[j]`` is where held-out j is predicted: its noisy report z_j (default;
    all a server has) or its true x_j for eq. (8) as printed (an oracle no
    server can run).  m̂_{−j} removes j's own term K̂((at_j − z_j)/h) from both
    sums.  ``subset``: the held-out indices (default all; a random subset makes
    CV O(|subset| n) for large n).  Where m̂_{−j} is undefined (see
    ``nadaraya_watson``) the prediction is ``fallback`` (default the mean of y),
    the rule the study applies to its own predictions.
    """
    reports = np.asarray(reports, dtype=float)
    y = np.asarray(y, dtype=float)
    at = reports if at is None else np.asarray(at, dtype=float)
    if not (len(at) == len(reports) == len(y)):
        raise ValueError("reports, y and at must have the same length")
    idx = np.arange(len(y)) if subset is None else np.asarray(subset)
    fallback = float(y.mean()) if fallback is None else fallback
    scores = []
    for h in bandwidths:
        num, den = _sums(at[idx], reports, y, h, b, kernel)
        own = adjusted(kernel, (at[idx] - reports[idx]) / h, _ratio(b, h))
        num, den = num - own * y[idx], den - own
        with np.errstate(divide="ignore", invalid="ignore"):
            pred = np.where(den > 0, num / den, fallback)
        scores.append(float(np.mean((y[idx] - pred) ** 2)))
    return np.array(scores)


def normal_reference_bandwidth(reports, b: float = 0.0) -> float:
    """AMISE-optimal h of the deconvoluting Gaussian KDE under a normal reference for the data.

    Delaigle & Gijbels (2004, Comput. Stat. Data Anal. 45:249, the paper's ref. [46]),
    normal-reference rule: AMISE(h) = (1/(2π n h)) ∫ Φ_K(t)² / |Φ_n(t/h)|² dt
    + (h⁴/4) μ₂(K)² R(f''), with R(f'') = 3 / (8 √π σ⁵) for f normal with variance
    σ² = var(z) − 2 b² (Laplace noise has variance 2 b²).  For the Gaussian
    kernel ∫ e^{−t²} (1 + c t²)² dt = √π (1 + c + 3c²/4), c = (b/h)².  With
    b = 0 this is Silverman's (4/3)^{1/5} σ n^{−1/5}.  If the sample variance
    does not exceed the noise variance (tiny n or ε) σ² is floored at 1 % of
    var(z), a documented, conservative choice (it over-smooths).
    """
    z = np.asarray(reports, dtype=float)
    n = len(z)
    if n < 2:
        raise ValueError(f"need at least 2 reports for a bandwidth, got {n}")
    var_z = float(z.var(ddof=1))
    sigma = math.sqrt(max(var_z - 2 * b * b, 0.01 * var_z))
    roughness = 3.0 / (8.0 * math.sqrt(math.pi) * sigma**5)

    def amise(log_h: float) -> float:
        h = math.exp(log_h)
        c = (b / h) ** 2
        return math.sqrt(math.pi) * (1 + c + 0.75 * c * c) / (2 * math.pi * n * h) + h**4 / 4 * roughness

    silverman = (4 / 3) ** 0.2 * sigma * n**-0.2
    res = minimize_scalar(
        amise, bounds=(math.log(silverman) - 3, math.log(silverman) + 8), method="bounded", options={"xatol": 1e-10}
    )
    return float(math.exp(res.x))
