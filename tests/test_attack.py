import numpy as np
import pytest

from locpriv import kde
from locpriv.adversary import local_maxima as attack
from locpriv.domain import Domain, Grid
from locpriv.seeding import rng

GRID = Grid.regular(Domain(-3, 3, -3, 3), 60, 60)
CELL = GRID.x[1] - GRID.x[0]


def test_exact_kernel_surface_is_localised_to_the_nearest_grid_point():
    true = rng(1, "attack-test").uniform(-2.5, 2.5, size=(50, 2))
    res = attack.local_maxima_batch(kde.kernel_surfaces(true, GRID.x, GRID.y, 0.55), GRID, true)
    # one maximum, at the grid point nearest the user: error <= half a cell diagonal
    assert np.all(res["n_maxima"] == 1)
    assert np.all(res["Z"] <= CELL / np.sqrt(2) + 1e-12)
    np.testing.assert_allclose(res["Z"], res["argmax_error"])


def test_constant_surface_scores_mean_distance_to_all_grid_points():
    true = np.array([[0.1, -2.0], [2.9, 2.9]])
    res = attack.local_maxima_batch(np.ones((2, *GRID.shape)), GRID, true)
    X, Y = np.meshgrid(GRID.x, GRID.y, indexing="ij")
    expect = [np.hypot(X - x, Y - y).mean() for x, y in true]
    np.testing.assert_allclose(res["Z"], expect, rtol=1e-12)
    # the best single guess for a flat surface is the centroid of the grid
    np.testing.assert_allclose(res["guess_x"], 0.0, atol=1e-12)
    np.testing.assert_allclose(res["guess_y"], 0.0, atol=1e-12)


def test_weak_maxima_are_filtered_and_strong_ones_weighted():
    # peaks on grid points, symmetric about the user at (0, y30)
    true = np.array([[0.0, GRID.y[30]]])
    a, b = np.array([[GRID.x[15], GRID.y[30]]]), np.array([[GRID.x[44], GRID.y[30]]])
    ka = kde.kernel_surfaces(a, GRID.x, GRID.y, 0.2)
    kb = kde.kernel_surfaces(b, GRID.x, GRID.y, 0.2)
    strong = attack.local_maxima_batch(ka + 0.95 * kb, GRID, true)  # 0.95 >= 1/1.1: both kept
    weak = attack.local_maxima_batch(ka + 0.5 * kb, GRID, true)  # 0.5 < 1/1.1: one kept
    assert strong["n_maxima"][0] == 2 and weak["n_maxima"][0] == 1
    # both peaks are |x| = 1.45 from the user, so Z = 1.45 up to the peaks' overlap
    assert strong["Z"][0] == pytest.approx(abs(GRID.x[15]), rel=1e-9)
    assert weak["Z"][0] == pytest.approx(abs(GRID.x[15]), rel=1e-9)


def test_ratio_below_one_is_rejected():
    with pytest.raises(ValueError, match="ratio"):
        attack.local_maxima_batch(
            np.ones((1, 4, 4)), Grid.regular(Domain(0, 1, 0, 1), 4, 4), np.zeros((1, 2)), ratio=0.9
        )


# ---- person-level attack: a person is attacked with all their points' reports


def test_person_targets_measure_to_the_nearest_of_the_persons_points():
    persons = attack.PersonTargets([np.array([[0.0, 0.0], [2.0, 0.0]]), np.array([[-1.0, -1.0]])])
    d = persons.distance(np.array([0, 0, 1]), np.array([1.9, -0.5, -1.0]), np.array([0.0, 0.0, 2.0]))
    np.testing.assert_allclose(d, [0.1, 0.5, 3.0], rtol=1e-12)
    field = persons.field(GRID)
    assert field.shape == (2, *GRID.shape)
    X, Y = np.meshgrid(GRID.x, GRID.y, indexing="ij")
    np.testing.assert_allclose(field[0], np.minimum(np.hypot(X, Y), np.hypot(X - 2, Y)), rtol=1e-12)


def test_person_distance_in_blocks_equals_one_block_bit_for_bit(monkeypatch):
    """A block of at most ``chunk`` distances at a time (bounded memory) gives the one-block minimum."""
    r = rng(26, "person-distance")
    persons = attack.PersonTargets([r.normal(0, 1, (m, 2)) for m in (1, 37, 500)])
    who = r.integers(0, 3, 400)
    x, y = r.uniform(-3, 3, (2, 400))
    one_block = np.empty(400)
    for k in range(3):
        pts = persons.points[k]
        one_block[who == k] = np.hypot(x[who == k, None] - pts[:, 0], y[who == k, None] - pts[:, 1]).min(axis=1)
    monkeypatch.setattr(attack.PersonTargets, "chunk", 1000)  # 2 queries per block for the largest person
    blocks = persons.distance(who, x, y)
    assert np.array_equal(blocks, one_block)
    assert (who == 2).sum() > 2  # power: the largest person's queries did span several blocks


def test_person_field_is_the_minimum_over_all_their_points():
    """The k-d tree's nearest point gives the brute-force minimum of the distances over every point, on
    clustered points with exact duplicates and points off the grid (equal to 1 ulp: the same np.hypot)."""
    r = rng(26, "person-field")
    persons = [
        np.concatenate([r.normal(c, s, (m, 2)) for c, s in ((0.0, 0.05), (2.0, 1.0), (-4.0, 0.5))])
        for m in (1, 40, 700)
    ]
    persons[2][::7] = persons[2][0]  # duplicates
    got = attack.PersonTargets(persons).field(GRID)
    for k, pts in enumerate(persons):
        brute = np.hypot(GRID.x[:, None, None] - pts[:, 0], GRID.y[None, :, None] - pts[:, 1]).min(axis=2)
        np.testing.assert_allclose(got[k], brute, rtol=2.3e-16, atol=0)


def test_a_person_whose_surface_peaks_at_one_of_their_points_is_located():
    pts = np.array([[GRID.x[10], GRID.y[10]], [GRID.x[50], GRID.y[40]]])
    # the surface peaks at the person's second point only: still located (Z = 0)
    surface = kde.kernel_surfaces(pts[1:], GRID.x, GRID.y, 0.2)
    res = attack.local_maxima_batch(surface, GRID, attack.PersonTargets([pts]))
    assert res["n_maxima"][0] == 1 and res["Z"][0] == pytest.approx(0.0, abs=1e-12)
    assert res["argmax_error"][0] == pytest.approx(0.0, abs=1e-12)
    # against the first point alone the same guess is far off: the person target is what changed
    single = attack.local_maxima_batch(surface, GRID, pts[:1])
    assert single["Z"][0] == pytest.approx(np.hypot(*(pts[1] - pts[0])), rel=1e-9)


def test_an_aggregate_only_mechanisms_published_map_is_built_once_for_all_rows(monkeypatch):
    """The attack stage asks an aggregate-only mechanism (PrivTree here) for its map once and gives it to
    every row, equal to what ``surfaces`` gives each batch; a per-user mechanism is still asked per batch."""
    import pandas as pd

    import locpriv
    from locpriv.stages.attack import _surfaces_of

    def counted(surfaces, calls):
        def wrapper(self, rows, grid):
            calls.append(len(rows))
            return surfaces(self, rows, grid)

        return wrapper

    pts = rng(5, "privtree-surfaces").normal(0, 1, (300, 2)).clip(-2.9, 2.9)
    users = pd.DataFrame({"user": range(300), "x": pts[:, 0], "y": pts[:, 1]})
    calls = []
    for mech, aggregate in ((locpriv.PrivTree(epsilon=1.0), True), (locpriv.LaplaceLDP(epsilon=2.0, h=0.5), False)):
        assert mech.aggregate_only is aggregate
        view = mech.randomize_points(users, GRID, rng(1, "surfaces-of"))
        expect = [mech.surfaces(view.iloc[sl], GRID) for sl in (slice(0, 100), slice(100, 300))]
        calls[:] = []
        monkeypatch.setattr(type(mech), "surfaces", counted(type(mech).surfaces, calls))
        surfaces_of = _surfaces_of(mech, view, GRID)
        got = [surfaces_of(view.iloc[sl]) for sl in (slice(0, 100), slice(100, 300))]
        assert all(np.array_equal(g, e) for g, e in zip(got, expect, strict=True))
        assert calls == ([1] if aggregate else [100, 200])


@pytest.mark.parametrize("persons", [False, True])
def test_one_surface_broadcast_to_every_target_gives_the_bits_of_its_copies(persons):
    """A batch broadcast from one published surface (stride 0 along the users) is analysed once and gives,
    bit for bit, what the same surface copied for every target gives, for users and for persons."""
    gen = rng(6, "attack-broadcast")
    peaks = gen.uniform(-2.5, 2.5, size=(5, 2))
    surface = kde.kernel_surfaces(peaks, GRID.x, GRID.y, 0.3).sum(axis=0) + 0.2 * np.sin(GRID.x)[:, None]
    true = gen.uniform(-2.9, 2.9, size=(40, 2))
    if persons:
        true = attack.PersonTargets([true[k : k + 2] for k in range(0, 40, 2)])
    n = len(true)
    shared = attack.local_maxima_batch(np.broadcast_to(surface, (n, *surface.shape)), GRID, true)
    copied = attack.local_maxima_batch(np.repeat(surface[None], n, axis=0), GRID, true)
    assert shared.keys() == copied.keys()
    assert all(np.array_equal(shared[k], copied[k]) for k in copied)
    assert np.unique(shared["n_maxima"]).size == 1 and shared["n_maxima"][0] > 1  # several maxima, shared
