"""locpriv: privacy-preserving location analytics.

Everything that computes lives here; the Snakemake rule scripts only parse,
call this package and write.
"""

__version__ = "0.1.0"


# The public API (``locpriv.api``: every built-in mechanism class, Domain, Grid) imported on first
# use (PEP 562): ``import locpriv`` stays cheap for the workflow's jobs, which need none of it.
# Its names are classes, capitalised: any other name (a submodule not imported yet, which
# ``from locpriv import io`` asks for first) is refused at once, without importing the API.
def __getattr__(name):
    import importlib

    if not name[:1].isupper():
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    api = importlib.import_module(f"{__name__}.api")
    if name not in api.__all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(api, name)


def __dir__():
    import importlib

    return sorted({*globals(), *importlib.import_module(f"{__name__}.api").__all__})
