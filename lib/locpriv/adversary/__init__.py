"""The common adversary: Bayes-optimal localisation from the server's view.

Shokri et al., "Quantifying Location Privacy" (IEEE S&P 2011): an adversary with a
prior pi over grid cells observes exactly what the server saw of one user and forms
the posterior pi(c) P(view | user in c).  Every mechanism declares its likelihood on
the grid (``Mechanism.likelihood``; the closed forms are in :mod:`.likelihoods`), and
:mod:`.bayes` turns prior x likelihood into Shokri's correctness metrics.
"""
