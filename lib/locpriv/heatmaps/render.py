"""A map from the released counts that is smooth inside each cell: pycnophylactic rendering.

``uniform`` spreads each reporting node's count uniformly over the pixels that
report to it ([DDP-Heatmaps] §6.1); that step function is most of the error
(docs/results/heatmaps_combination.md: the *true* counts rendered uniformly on the
final partition are only 1.5–11 % better than the noisy ones).  ``smooth`` keeps
every region's count and lets the density vary inside it, as Tobler's (1979)
pycnophylactic interpolation: start from the uniform spread, then repeat

1. smooth: each pixel takes a Gaussian average of the current map, width
   ``width`` times the side of the node it reports to (so the result does not
   depend on the image's resolution, and a pixel-sized leaf is barely smoothed);
2. re-impose the counts: multiply each region's pixels by count / (its current sum).

Step 2 ends every iteration, so each region holds exactly its count (mass
preserving), and both steps keep a non-negative map non-negative (the Gaussian's
weights are positive; the factors are >= 0).  Regions with a count <= floor (or
negative) are 0, as in ``uniform``.  The regions are a tree's reporting
nodes: a leaf's cell, or a partial node's orphaned area.

Measured (``perf/bench_heatmaps.py --combination``; docs/results/heatmaps_combination.md,
ε = 1, 1024 x 1024, 10^5 and 10^6 users per sub-query, 3 repetitions): with the
least-squares counts, 4.1–4.8 % lower MSE than the last round's uniform map on NYT
Manhattan (street-scale structure that no smooth surface inside a 16- or 32-pixel
cell can follow: the true counts rendered this way gain only 6–6.6 %) and 69–87 %
lower on the synthetic Gaussian mixture, in all 36 paired runs.  Width 0.2 and 10
iterations were picked on separate exploratory runs: 0.2–0.35 with 10–25 iterations
were within 1 point of each other on every input.

Privacy: pure post-processing.  The inputs are the tree and the released noisy
counts (the server's view after the sub-queries; the tree itself is a function of
earlier released counts); no user data and no randomness
enter, so the map is a deterministic function of an ε-DP release and is ε-DP
with the same ε (Dwork & Roth 2014, Prop. 2.1): no privacy cost.
"""

from __future__ import annotations

import numpy as np

from .prefix_tree import PrefixTree

RENDERS = ("uniform", "smooth")
WIDTH = 0.2  # Gaussian sd as a fraction of the node's side (module doc: measured)
ITERATIONS = 10


def regions(tree: PrefixTree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(region of each pixel, flattened row-major; pixels per region; side of each region's node)."""
    n_children = tree.n_children()
    reporting = n_children < 4
    side_of = 2.0 ** (tree.depth - tree.levels[reporting])
    area = side_of**2 * (4 - n_children[reporting]) / 4
    side = 1 << tree.depth
    x, y = np.divmod(np.arange(side * side), side)
    return tree.encode(x, y), area, side_of


def clipped_counts(tree: PrefixTree, counts, floor: float) -> np.ndarray:
    """The counts as floats, one per reporting node; those <= floor (or negative) are 0."""
    counts = np.asarray(counts, dtype=float)
    n = int((tree.n_children() < 4).sum())
    if counts.shape != (n,):
        raise ValueError(f"counts must have one entry per reporting node ({n}), got shape {counts.shape}")
    return np.where(counts > max(floor, 0.0), counts, 0.0)


def _normalised(density: np.ndarray, side: int) -> np.ndarray:
    """The map summing to 1; an all-zero map is the uniform one (no information)."""
    total = density.sum()
    return (density / total).reshape(side, side) if total > 0 else np.full((side, side), 1.0 / (side * side))


def uniform(tree: PrefixTree, counts, floor: float = 0.0) -> np.ndarray:
    """Normalised 2^D x 2^D map from counts on ``tree.reporting_nodes()``.

    Each node's count (0 if <= floor or negative) is spread uniformly over the
    pixels that report to it: the whole cell for a leaf, the orphaned area of its
    missing children for a partial node (§6.1).
    """
    counts = clipped_counts(tree, counts, floor)
    region, area, _ = regions(tree)
    return _normalised((counts / area)[region], 1 << tree.depth)


def smooth(
    tree: PrefixTree, counts, floor: float = 0.0, width: float = WIDTH, iterations: int = ITERATIONS
) -> np.ndarray:
    """Normalised 2^D x 2^D pycnophylactic map from counts on ``tree.reporting_nodes()`` (module doc).

    Same inputs and conventions as ``uniform``.
    """
    if not (width > 0 and iterations >= 0):
        raise ValueError(f"width must be > 0 and iterations >= 0, got {width}, {iterations}")
    from scipy import ndimage  # scipy: imported only by the runs that render smoothly

    counts = clipped_counts(tree, counts, floor)
    region, area, side_of = regions(tree)
    side = 1 << tree.depth
    density = (counts / area)[region]
    sigma = (width * side_of)[region]
    scales = np.unique(sigma)
    for _ in range(iterations):
        image = density.reshape(side, side)
        blurred = np.empty_like(density)
        for s in scales:  # one blur per node size present (a handful), not per pixel
            at = sigma == s
            blurred[at] = ndimage.gaussian_filter(image, s, mode="nearest").ravel()[at]
        # held > 0 wherever count > 0: that region's own pixels hold mass and the kernel's centre weight is > 0
        held = np.bincount(region, weights=blurred, minlength=len(counts))
        factor = np.divide(counts, held, out=np.zeros_like(counts), where=held > 0)
        density = blurred * factor[region]
    return _normalised(density, side)
