"""locpriv: privacy-preserving location analytics.

Everything that computes lives here; the Snakemake rule scripts only parse,
call this package and write.
"""

__version__ = "0.1.0"
