"""Semi-local DP (seed 001): the interactive private quadtree (``protocol``) and
mean estimation of ||x||^2 against LDP and central DP (``mean``).

Range queries, classification, PrivTree, the LDP grid baseline and the workflow
study of issue 5 are not written yet.
"""
