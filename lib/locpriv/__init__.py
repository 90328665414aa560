"""locpriv: privacy-preserving location analytics.

Everything that computes lives here; the Snakemake rule scripts only parse,
call this package and write.
"""

__version__ = "0.1.0"

# The public API (``locpriv.api``) and the grid it takes, imported on first use (PEP 562):
# ``import locpriv`` stays cheap for the workflow's jobs, which need neither.
_LAZY = {**{name: "api" for name in ("DPHeatmap", "FedKDE", "GeoInd", "HDG", "HeatmapFlat", "HeatmapHierarchical",
                                     "LDPKDTree", "LaplaceLDP", "OUEGrid", "PrivTree", "RFF", "SLDP", "Zero")},
         "Domain": "domain", "Grid": "domain"}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


def __dir__():
    return sorted({*globals(), *_LAZY})
