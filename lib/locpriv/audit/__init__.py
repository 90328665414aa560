"""Empirical privacy audit: a lower bound on ε beside every claimed guarantee.

``estimator`` bounds ε from below for two output samplers (Clopper–Pearson,
95 %); each mechanism states its worst-case neighbouring inputs on its class
(``Mechanism.audit_case``), built from ``cases`` (the :class:`~.cases.Pair` type and shared samplers);
``stage`` runs the audit of one mechanism × parameter setting for the DAG and
joins the bounds into the summary.
"""
