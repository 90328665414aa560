"""Deconvoluting kernel estimators for Laplace-LDP data ([Deconv-LDP]).

``kernels``: Gaussian and Cauchy kernels and their closed-form deconvoluting
versions; ``estimators``: naive / deconvoluting 1-D KDE, Nadaraya–Watson
regression (eq. 7), leave-one-out bandwidth (eq. 8), the normal-reference
density bandwidth; ``data``: the paper's synthetic inputs and the LendingClub
and Adult loaders; ``study``: the ``studies.deconv`` workflow section.
"""
