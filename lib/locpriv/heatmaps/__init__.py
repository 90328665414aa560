"""Location heatmaps under distributed DP with secure aggregation (seed 003).

So far: the distributed discrete-Laplace noise of §4 (``polya``) and the
prefix-tree encoding of §5.1/§5.6 (``prefix_tree``).  The adaptive algorithm
(Alg. 2), multi-location users, the baselines and the workflow study of issue 6
are not written yet.
"""
