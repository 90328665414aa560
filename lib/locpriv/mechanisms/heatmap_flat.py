"""``heatmap_flat``: the flat distributed-DP heatmap baseline of Bagdasaryan et al. 2022 (§6.2).

One sub-query over every finest-level pixel, summed per secure-aggregation shard with Pólya
noise shares (the common base, the guarantee and its proof sketch: ``heatmap``).
"""

from __future__ import annotations

from ..heatmaps import baselines
from .heatmap import Baseline


class HeatmapFlat(Baseline):
    """Flat distributed-DP heatmap (Bagdasaryan et al. 2022 §6.2): one noisy histogram of the finest pixels."""

    name = "heatmap_flat"
    library = staticmethod(baselines.flat)

    def timing_schedule(self):
        return 1, self.settings["epsilon"]

    def communication(self, grid):
        return float(4 ** self.settings["depth"])
