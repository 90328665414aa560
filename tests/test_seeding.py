import numpy as np

from locpriv.seeding import rng


def test_same_keys_same_stream():
    a = rng(7, "randomize", "gauss9", {"h": 0.55, "B": 3}, 0, 2).random(5)
    b = rng(7, "randomize", "gauss9", {"B": 3, "h": 0.55}, 0, 2).random(5)
    assert np.array_equal(a, b)


def test_any_key_changes_the_stream():
    base = rng(7, "randomize", "gauss9", {"h": 0.55}, 0, 2).random(5)
    for variant in [
        (8, "randomize", "gauss9", {"h": 0.55}, 0, 2),
        (7, "attack", "gauss9", {"h": 0.55}, 0, 2),
        (7, "randomize", "gauss9", {"h": 0.56}, 0, 2),
        (7, "randomize", "gauss9", {"h": 0.55}, 1, 2),
        (7, "randomize", "gauss9", {"h": 0.55}, 0, 3),
    ]:
        assert not np.array_equal(base, rng(*variant).random(5))


def test_numpy_scalars_hash_like_python_ones():
    assert np.array_equal(rng(1, np.int64(3), np.float64(0.5)).random(3), rng(1, 3, 0.5).random(3))
