"""The DAG's stage functions: file paths in, file paths out.

Rule scripts call exactly one of these; everything here runs and is tested
without Snakemake, and each writer is atomic (see :mod:`locpriv.io`).  One
module per stage, so a rule's code fingerprint covers only what it runs.
"""
