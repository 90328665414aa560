"""Non-finite locations are refused with one clear error on every randomize path and grid snap (issue 28.6).

A NaN or an infinity has no privacy guarantee: NaN used to leave ``hdg`` and ``ldp_kdtree`` as
garbage cells (an int64 cast of NaN), and clamping turned an infinity into a box corner.  The
public ``randomize`` refuses them (``as_points``); these tests reach below it: each mechanism's
``randomize_points`` (what a subclass or the workflow's shard job runs) and each library
randomizer on raw coordinates.
"""

import numpy as np
import pandas as pd
import pytest

from locpriv import laplace_ldp, mechanisms, planar_laplace, quadtree
from locpriv.domain import Domain, Grid
from locpriv.sldp import hdg, ldp_grid, ldp_kdtree, privtree, protocol

GRID = Grid.regular(Domain(0, 1, 0, 1), 10, 10)
BOX = [0.0, 1.0, 0.0, 1.0]
CLEAR = "NaN or infinite"
REQUIRED = {"h": 0.5, "epsilon": 2.0, "B": 2}


def _locations(bad):
    xy = np.full((12, 2), 0.5)
    xy[3, 1] = bad
    return xy


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("name", mechanisms.names())
def test_every_mechanism_refuses_non_finite_locations_in_randomize_points(name, bad):
    cls = mechanisms.get(name)
    mech = cls(**{k: REQUIRED.get(k, 1) for k, p in cls.params.items() if p.default is None}).sized(12)
    xy = _locations(bad)
    points = pd.DataFrame({"user": np.arange(12), "x": xy[:, 0], "y": xy[:, 1]})
    with pytest.raises(ValueError, match=CLEAR):
        mech.randomize_points(points, GRID, np.random.default_rng(0))


RANDOMIZERS = {
    "quadtree.cell_codes": lambda xy: quadtree.cell_codes(xy, BOX, 6),
    "sldp run_protocol": lambda xy: protocol.run_protocol(xy, BOX, 1.0, 20, 4, 0.05, np.random.default_rng(0)),
    "privtree": lambda xy: privtree.privtree(xy, BOX, 0.5, 0.5, np.random.default_rng(0)),
    "ldp_kdtree": lambda xy: ldp_kdtree.ldp_kdtree(xy, BOX, 1.0, 3, np.random.default_rng(0)),
    "hdg client_reports": lambda xy: hdg.client_reports(
        xy, np.zeros(len(xy), dtype=np.int64), BOX, "tdg", 4, 4, 1.0, np.random.default_rng(0)
    ),
    "oue_grid": lambda xy: ldp_grid.oue_grid(xy, BOX, 1.0, 3, np.random.default_rng(0)),
    "laplace_ldp.randomize": lambda xy: laplace_ldp.randomize(
        xy, np.array([[0, 1], [0, 1]]), 1.0, np.random.default_rng(0)
    ),
    "planar_laplace.perturb": lambda xy: planar_laplace.perturb(xy, 1.0, np.random.default_rng(0)),
}


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("where", sorted(RANDOMIZERS))
def test_every_library_randomizer_refuses_non_finite_locations(where, bad):
    with pytest.raises(ValueError, match=CLEAR):
        RANDOMIZERS[where](_locations(bad))


def test_huge_finite_locations_are_clamped_to_the_public_box():
    # a finite value far outside the box is a legitimate input: clamping (a public map) moves it to
    # the box's edge, counted in the view's metadata, and the report is the edge's
    xy = _locations(1e300)
    view = mechanisms.get("ldp_oue_grid")(epsilon=2.0, level=2).randomize(xy, rng=0, domain=GRID)
    assert view.attrs["clamped_to_box"] == 1 and len(view) == 12


@pytest.mark.parametrize("huge", [2.0**63, -1e300])
def test_geoind_refuses_locations_beyond_exact_grid_indices(huge):
    # |x| >= 2^63 grid steps used to wrap the int64 cast silently (a report no real location gives)
    xy = _locations(huge)
    with pytest.raises(ValueError, match="2\\^52 grid steps"):
        planar_laplace.perturb(xy, 1.0, np.random.default_rng(0))
