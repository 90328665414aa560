"""Prefix-tree encoding of a 2^D x 2^D pixel grid ([DDP-Heatmaps] §5.1, §5.6).

A node is a level l (0 = root) and a code of 2 l bits: the interleaved bit path
of its pixels' coordinates, two bits per level, most significant first (digit
2 bx + by of the x and y bits at that level), so the node's children are
code * 4 + {0, 1, 2, 3} and a pixel belongs to a node iff the node's code is the
first 2 l bits of the pixel's path.

A tree is any set of nodes closed under taking parents.  A pixel reports to its
deepest matching prefix in the tree.  A node with 4 children in the tree never
receives a report (every pixel continues into a child); a node with 0 children
is a leaf, and one with 1-3 children is *partial* (§5.6): it collects the pixels
of its missing ("orphaned") children.  So a client's vector has one entry per
node with fewer than four children: ``reporting_nodes``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..quadtree import interleave

# (code << 6 | level) must fit an int64: codes have 2 * depth bits
MAX_DEPTH = 28


@dataclass(frozen=True)
class PrefixTree:
    depth: int
    levels: np.ndarray  # (K,) node levels
    codes: np.ndarray  # (K,) node codes

    @classmethod
    def root(cls, depth: int) -> PrefixTree:
        return cls(depth, np.array([0]), np.array([0]))

    @classmethod
    def from_nodes(cls, depth: int, levels, codes) -> PrefixTree:
        levels = np.asarray(levels, dtype=np.int64)
        codes = np.asarray(codes, dtype=np.int64)
        order = np.lexsort((codes, levels))
        tree = cls(depth, levels[order], codes[order])
        tree._check()
        return tree

    def _check(self) -> None:
        if not 0 <= self.depth <= MAX_DEPTH:
            raise ValueError(f"tree depth must be in [0, {MAX_DEPTH}], got {self.depth}")
        if (self.levels < 0).any() or (self.levels > self.depth).any():
            raise ValueError(f"node levels must be in [0, {self.depth}]")
        if (self.codes < 0).any() or (self.codes >= 4**self.levels).any():
            raise ValueError("a node's code must have 2 * level bits")
        keys = self.node_keys(self.levels, self.codes)
        if len(np.unique(keys)) != len(keys):
            raise ValueError("duplicate nodes in the tree")
        child = self.levels > 0
        if not self.contains(self.levels[child] - 1, self.codes[child] >> 2).all():
            raise ValueError("the tree is not closed under parents (a node's parent is missing)")

    @staticmethod
    def node_keys(levels, codes):
        # unique integer per (level, code): codes at level l are < 4^l
        return (np.asarray(codes, dtype=np.int64) << 6) | np.asarray(levels, dtype=np.int64)

    def contains(self, levels, codes) -> np.ndarray:
        keys = np.sort(self.node_keys(self.levels, self.codes))
        query = self.node_keys(levels, codes)
        pos = np.clip(np.searchsorted(keys, query), 0, len(keys) - 1)
        return keys[pos] == query

    def n_children(self) -> np.ndarray:
        present = self.contains(
            np.repeat(self.levels + 1, 4), (np.repeat(self.codes, 4) << 2) | np.tile(np.arange(4), len(self.codes))
        )
        return present.reshape(-1, 4).sum(axis=1) * (self.levels < self.depth)

    def reporting_nodes(self) -> tuple[np.ndarray, np.ndarray]:
        """(levels, codes) of the nodes that receive reports: fewer than 4 children."""
        keep = self.n_children() < 4
        return self.levels[keep], self.codes[keep]

    def encode(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Index into ``reporting_nodes`` of each pixel's deepest matching prefix."""
        path = interleave(x, y, self.depth)
        levels, codes = self.reporting_nodes()
        index = np.full(path.shape, -1, dtype=np.int64)
        keys = self.node_keys(levels, codes)
        order = np.argsort(keys)
        for level in range(self.depth, -1, -1):  # deepest first; a loop over levels only
            todo = index < 0
            if not todo.any():
                break
            query = self.node_keys(np.full(todo.sum(), level), path[todo] >> (2 * (self.depth - level)))
            pos = np.clip(np.searchsorted(keys[order], query), 0, len(keys) - 1)
            hit = keys[order][pos] == query
            found = np.flatnonzero(todo)[hit]
            index[found] = order[pos[hit]]
        if (index < 0).any():
            raise ValueError("pixels outside every reporting node: the tree lacks its root")
        return index

    def histogram(self, x: np.ndarray, y: np.ndarray, weights=None) -> np.ndarray:
        """One entry per reporting node: the (weighted) count of pixels reporting to it."""
        n = len(self.reporting_nodes()[0])
        return np.bincount(self.encode(x, y), weights=weights, minlength=n)
