import numpy as np

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
