"""Location heatmaps under distributed DP with secure aggregation (seed 003).

So far: the distributed discrete-Laplace noise of §4 (``polya``).  The prefix
tree, the adaptive algorithm (Alg. 2), multi-location users and the baselines
of issue 6 are not written yet.
"""
