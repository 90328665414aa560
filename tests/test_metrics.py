import numpy as np
import pytest

from locpriv import metrics


def test_spearman_of_constant_surface_is_zero():
    truth = np.arange(12.0).reshape(3, 4)
    assert metrics.spearman(np.ones((3, 4)), truth) == 0.0


def test_spearman_is_rank_based():
    truth = np.arange(12.0).reshape(3, 4)
    assert metrics.spearman(np.exp(truth), truth) == 1.0
    assert metrics.spearman(-truth, truth) == -1.0


def test_ise_riemann_sum():
    assert metrics.ise(np.ones((2, 2)), np.zeros((2, 2)), 0.25) == 1.0


def test_spearman_equals_scipys_with_ties_and_nan():
    """Our numpy Spearman (no scipy.stats import in the metrics job) is scipy's, ties included."""
    from scipy.stats import spearmanr

    r = np.random.default_rng(7)
    for _ in range(50):
        a = r.integers(0, 6, size=400).astype(float)  # many ties
        b = a + r.normal(size=400) * r.integers(0, 3)
        assert metrics.spearman(a, b) == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)
    a[3] = np.nan
    assert np.isnan(metrics.spearman(a, b))
