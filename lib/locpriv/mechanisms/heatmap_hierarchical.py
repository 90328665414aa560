"""``heatmap_hierarchical``: the hierarchical distributed-DP heatmap baseline of Bagdasaryan et al. 2022 (§6.2).

Every quadtree level a noisy histogram at ε / L; the published level is the one closest (MSE) to
the true map, as the paper's evaluation does: that choice reads the raw data, so the record has
no epsilon (``Guarantee.leaked``) — a reference for what the best level achieves (the common
base, the guarantee and its proof sketch: ``heatmap``).
"""

from __future__ import annotations

from ..heatmaps import baselines
from .heatmap import Baseline


class HeatmapHierarchical(Baseline):
    """Hierarchical heatmap baseline (Bagdasaryan et al. 2022 §6.2): the best quadtree level, chosen on the truth."""

    name = "heatmap_hierarchical"
    library = staticmethod(baselines.hierarchical)
    leak = "the true map: the published level is the one closest (MSE) to it, as in the paper's evaluation"

    def timing_schedule(self):
        depth = self.settings["depth"]  # levels 1..depth at epsilon / depth each
        return depth, self.settings["epsilon"] / depth

    def communication(self, grid):
        return float(sum(4**level for level in range(1, self.settings["depth"] + 1)))
