"""Empirical privacy audit: a lower bound on ε beside every claimed guarantee.

``estimator`` bounds ε from below for two output samplers (Clopper–Pearson,
95 %); ``cases`` holds each mechanism's worst-case neighbouring inputs;
``stage`` runs the audit of one mechanism × parameter setting for the DAG and
joins the bounds into the summary.
"""
