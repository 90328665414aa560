import numpy as np
import pytest

from locpriv.heatmaps.prefix_tree import PrefixTree
from locpriv.quadtree import cell_box, deinterleave, interleave

DEPTH = 4


def full_tree(depth):
    levels, codes = [], []
    for level in range(depth + 1):
        levels += [level] * 4**level
        codes += list(range(4**level))
    return PrefixTree.from_nodes(depth, levels, codes)


def all_pixels(depth):
    side = 1 << depth
    x, y = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
    return x.ravel(), y.ravel()


def test_full_tree_round_trips_every_pixel():
    tree = full_tree(DEPTH)
    x, y = all_pixels(DEPTH)
    levels, codes = tree.reporting_nodes()
    assert (levels == DEPTH).all() and len(codes) == 4**DEPTH  # only leaves report
    node = tree.encode(x, y)
    bx, by = deinterleave(codes[node], DEPTH)
    np.testing.assert_array_equal(bx, x)
    np.testing.assert_array_equal(by, y)


def test_interleaving_is_msb_first_x_then_y():
    # pixel (x=2, y=1) at depth 2: level-1 digit (1, 0) -> 2, level-2 digit (0, 1) -> 1
    assert interleave(np.array([2]), np.array([1]), 2)[0] == 0b1001


def test_partial_node_collects_its_orphaned_children():
    # root split into 4; child 3 split into only 2 of its 4 children (a partial node)
    tree = PrefixTree.from_nodes(2, [0, 1, 1, 1, 1, 2, 2], [0, 0, 1, 2, 3, 12, 13])
    levels, codes = tree.reporting_nodes()
    assert list(zip(levels, codes, strict=True)) == [(1, 0), (1, 1), (1, 2), (1, 3), (2, 12), (2, 13)]
    x, y = all_pixels(2)
    node = tree.encode(x, y)
    path = interleave(x, y, 2)
    for i in range(len(x)):
        lvl, code = levels[node[i]], codes[node[i]]
        assert path[i] >> (2 * (2 - lvl)) == code  # a prefix of the pixel's path
    counts = tree.histogram(x, y)
    assert counts.tolist() == [4, 4, 4, 2, 1, 1]  # node 3 keeps its two orphaned pixels
    assert counts.sum() == 16  # every pixel counted once


def test_random_trees_assign_each_pixel_its_deepest_prefix():
    rng = np.random.default_rng(0)
    levels, codes = [0], [0]
    frontier = [(0, 0)]
    while frontier:
        lvl, code = frontier.pop()
        if lvl == DEPTH:
            continue
        for child in range(4):
            if rng.random() < 0.55:
                levels.append(lvl + 1)
                codes.append(code * 4 + child)
                frontier.append((lvl + 1, code * 4 + child))
    tree = PrefixTree.from_nodes(DEPTH, levels, codes)
    x, y = all_pixels(DEPTH)
    node = tree.encode(x, y)
    rl, rc = tree.reporting_nodes()
    path = interleave(x, y, DEPTH)
    assert (path >> (2 * (DEPTH - rl[node])) == rc[node]).all()
    deeper = rl[node] < DEPTH
    child = path[deeper] >> (2 * (DEPTH - rl[node][deeper] - 1))
    assert not tree.contains(rl[node][deeper] + 1, child).any()  # no deeper node matches


def test_tree_must_be_closed_under_parents():
    with pytest.raises(ValueError, match="parent"):
        PrefixTree.from_nodes(2, [0, 2], [0, 5])
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        interleave(np.array([4]), np.array([0]), 2)


def test_cell_box_matches_deinterleave_and_nests():
    box = (0.0, 8.0, -4.0, 4.0)
    boxes = cell_box(np.array([0, 1, 2, 2]), np.array([0, 3, 13, 2]), box)
    np.testing.assert_allclose(boxes[0], box)
    np.testing.assert_allclose(boxes[1], [4, 8, 0, 4])  # digit 3: upper x, upper y half
    np.testing.assert_allclose(boxes[2], [4, 6, 2, 4])  # child 1 of cell 3: its lower-x, upper-y quarter
    bx, by = deinterleave(np.array([2]), 2)
    np.testing.assert_allclose(boxes[3], [bx[0] * 2, bx[0] * 2 + 2, -4 + by[0] * 2, -4 + by[0] * 2 + 2])
