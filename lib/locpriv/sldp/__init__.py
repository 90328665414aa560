"""Semi-local DP (seed 001): the interactive private quadtree (``protocol``).

Mean estimation, range queries, classification, PrivTree and the LDP baselines
of issue 5 are not written yet.
"""
