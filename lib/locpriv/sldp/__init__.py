"""Semi-local DP ([SLDP]): the interactive private quadtree (``protocol``), mean
estimation of ||x||^2 against LDP and central DP (``mean``), range queries
(``range_queries``) with the PrivTree (``privtree``) and LDP OUE-grid
(``ldp_grid``) baselines, and classification on California housing
(``classify``); ``study`` holds the workflow stages.
"""
