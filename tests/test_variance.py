"""Each mechanism's analytic ``variance`` against simulation through its own ``randomize``.

Fixed seeds; every bound is derived from the sampling distribution of the estimate with its α
stated, and each test checks its power: the bound excludes the nearest wrong formula.
"""

import math

import numpy as np
import pytest
from scipy import stats

from locpriv import api
from locpriv.domain import Domain
from locpriv.quadtree import cell_codes

BOX = Domain(0.0, 1.0, 0.0, 1.0)


def _moment_bound(dev: np.ndarray, alpha: float) -> tuple[float, float]:
    """Sample variance of zero-mean deviations (per column pooled) and its CLT half-width at level α.

    The deviations are around the known centre, so mean(dev²) estimates the variance without
    bias; its standard error is sd(dev²) / sqrt(n).
    """
    sq = dev**2
    return float(sq.mean()), float(stats.norm.ppf(1 - alpha / 2) * sq.std(ddof=1) / math.sqrt(len(sq)))


@pytest.mark.parametrize("coordinate", [0, 1])
def test_geoind_variance_is_three_over_epsilon_squared(coordinate):
    """200 000 reports around one grid point: |mean(d²) − 3/ε²| within the CLT half-width at α = 1e-6."""
    mech = api.GeoInd(epsilon=4.0, h=0.1)
    centre = np.array([0.5, 0.5])  # a point of the public grid (a power of two step), so snapping moves nothing
    view = mech.randomize(np.tile(centre, (200_000, 1)), rng=11)
    var, half = _moment_bound(view[["x", "y"]].to_numpy()[:, coordinate] - centre[coordinate], 1e-6)
    assert abs(var - mech.variance()) <= half
    assert half < 0.1 * mech.variance()  # power: 2/ε² (radius variance alone) is 33 % off
    assert abs(var - 2.0 / 16.0) > half


@pytest.mark.parametrize("coordinate", [0, 1])
def test_laplace_ldp_variance_is_two_b_squared(coordinate):
    """Reports of the box centre: mean(d²) against the discrete Laplace variance ≈ 2 b², α = 1e-6."""
    box = Domain(0.0, 2.0, 0.0, 1.0)  # unequal sides: b_x = 2 b_y
    mech = api.LaplaceLDP(epsilon=4.0, h=0.1)
    centre = np.array([1.0, 0.5])
    view = mech.randomize(np.tile(centre, (200_000, 1)), rng=12, domain=box)
    expected = mech.variance(box)
    b = 2 * np.array([2.0, 1.0]) / 4.0  # Farokhi 2020 Thm 1, q = 2: b_j = 2 side_j / ε
    np.testing.assert_allclose(expected, 2 * b**2, rtol=1e-5)  # the sampler rounds its scale up by < 2^-16
    var, half = _moment_bound(view[["x", "y"]].to_numpy()[:, coordinate] - centre[coordinate], 1e-6)
    assert abs(var - expected[coordinate]) <= half
    assert half < 0.05 * expected[coordinate]  # power: b² (a Laplace scale read as a std) is 50 % off


def test_oue_grid_cell_variance_is_wang_et_al_and_the_occupied_cells_term():
    """R = 3000 runs of n = 400 users all in one cell of 16: per cell, the sample variance of the unbiased
    frequency estimate over runs; (R − 1) s² / σ² is χ²(R − 1) up to the normal approximation of a sum
    of 400 Bernoullis, tested two-sided at α = 1e-6 per cell (16 cells: 1.6e-5 in all)."""
    mech, n, runs = api.OUEGrid(epsilon=1.0, level=2), 400, 3000
    p, q = 0.5, 1 / (math.e + 1)
    xy = np.full((n * runs, 2), 0.1)  # every user in the lower-left cell
    view = mech.randomize(xy, rng=13, domain=BOX)
    own = int(cell_codes(np.array([[0.1, 0.1]]), BOX.as_list(), 2)[0])
    run_of = np.repeat(np.arange(n * runs) // n, [len(o) for o in view["ones"]])
    counts = np.zeros((runs, 16))
    np.add.at(counts, (run_of, np.concatenate(view["ones"].to_numpy()).astype(int)), 1)
    estimate = (counts / n - q) / (p - q)
    s2 = estimate.var(axis=0, ddof=1)
    lo, hi = stats.chi2.ppf([0.5e-6, 1 - 0.5e-6], runs - 1) / (runs - 1)
    for cell in range(16):
        sigma2 = mech.variance(n, frequency=1.0 if cell == own else 0.0)
        assert lo <= s2[cell] / sigma2 <= hi, (cell, s2[cell], sigma2)
    # at f = 0 the formula is Wang et al. 2017's 4 e^ε / (n (e^ε − 1)²)
    assert mech.variance(n) == pytest.approx(4 * math.e / (n * (math.e - 1) ** 2))
    # power: the occupied cell's variance is not the f = 0 one (p(1 − p) = 0.25 against q(1 − q) = 0.197)
    assert not lo <= s2[own] / mech.variance(n) <= hi
    with pytest.raises(ValueError, match="frequency"):
        mech.variance(n, frequency=1.5)
