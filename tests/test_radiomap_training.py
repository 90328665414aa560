"""[GeoDP-Radio] reproduction checks: why the paper's printed initialisation and rho range fail as printed.

docs/results/radiomap.md records the measured consequences at paper scale; these tests pin the two
mechanisms on small, fast inputs.
"""

import numpy as np

from locpriv.radiomap.geo import objective_terms, plane_variance
from locpriv.radiomap.geometry import CellGrid
from locpriv.radiomap.model import local_gradients
from locpriv.radiomap.noise import uniform_variance
from test_radiomap import small_problem

H_MAX = 130.0  # paper §V: heights up to 130 m, training initialised at h_m = H_max
THETA = np.array([-20.0, -30.0, -20.0, -40.0])


def obstacle_gradients(pb, h0: float, psi_scale: float) -> np.ndarray:
    h = np.full(pb.centres.shape[0], h0)
    return local_gradients(pb.links, pb.user, pb.y, h, THETA, psi_scale, pb.n_users)[1]


def test_obstacle_gradients_vanish_at_h_max_with_the_papers_unit_logistic():
    """From h = H_max every link sees psi(z - H_max) ~ e^-(H_max - z) on each of its cells, so S and with it
    every obstacle gradient (proportional to S, eq. 14) is below 1e-30 of its size at h = 0: h cannot move."""
    _, _, pb = small_problem()
    at_max = np.abs(obstacle_gradients(pb, H_MAX, 1.0)).max(axis=1)
    at_ground = np.abs(obstacle_gradients(pb, 0.0, 1.0)).max(axis=1)
    assert np.all(at_ground > 1e-3)  # power: the same users do get gradients from h = 0
    assert np.all(at_max < 1e-30 * at_ground)


def test_rho_up_to_100_is_negligible_against_p_in_the_papers_units():
    """With P in m^2 (cell centres in metres), V in raw squared-gradient^2 units, C = 1 and M = 10,000
    (paper §V), rho = 100 times the change of V between uniform noise and a steep plane is below 1e-4 of
    the change of P, so J = P - rho V is maximised by the same allocation for every rho in Fig. 6."""
    grid = CellGrid(100, 3.0)
    c = grid.centres()
    user = np.array([[100.0, 150.0]])
    g = np.exp(-np.linalg.norm(c - user, axis=1) / 30.0)[None, :]
    g /= np.linalg.norm(g)  # a clipped gradient at the bound, ||g|| = C = 1
    g2, mu = g**2, 50.0
    coords = c / grid.size - 0.5
    u = np.array([[1.0, 0.0]])  # plane rising away from the user (x = 100 of 300 m)
    budget = mu * g2.sum(axis=1)  # = mu C^2: the two calibrations agree here
    slope = 8.0 * (g2.sum() + budget) / grid.M * u  # r = 8 times the mean noisy level (geo.py)
    P_u, V_u = objective_terms(g2, uniform_variance(budget, grid.M), c, user)
    P_p, V_p = objective_terms(g2, plane_variance(g2, coords, slope, budget), c, user)
    dP, dV = abs(P_p - P_u)[0], abs(V_p - V_u)[0]
    assert dP > 1000.0  # power: the plane does move the expected centroid
    assert 100.0 * dV < 1e-4 * dP
