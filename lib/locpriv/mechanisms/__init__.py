"""Mechanism plugins, registered by name.

A mechanism is one module here defining a :class:`~.base.Mechanism` subclass
decorated with :func:`register`; the workflow finds it by the name used in
the config, so a new mechanism needs no new rules.
"""

from __future__ import annotations

import importlib
import pkgutil

from .base import Mechanism

_REGISTRY: dict[str, Mechanism] = {}


def register(cls):
    inst = cls()
    if inst.name in _REGISTRY:
        raise RuntimeError(f"mechanism {inst.name!r} registered twice")
    _REGISTRY[inst.name] = inst
    return cls


_LOADED_ALL = False


def _load_all():
    global _LOADED_ALL
    for mod in pkgutil.iter_modules(__path__):
        if mod.name != "base":
            importlib.import_module(f"{__name__}.{mod.name}")
    _LOADED_ALL = True


# Mechanisms that share a plugin module (the others live in a module of their own name).
# Only a shortcut: a name missing here is still found by importing every plugin, just
# slower; tests/test_lazy_imports.py checks this table against the registry.
SHARED_MODULES = {"sldp": "partitions", "privtree": "partitions", "ldp_oue_grid": "partitions",
                  "dp_heatmap": "heatmap", "heatmap_flat": "heatmap", "heatmap_hierarchical": "heatmap"}


def get(name: str) -> Mechanism:
    # a job needs one mechanism: import its own module, not every plugin's dependencies
    # (scipy.stats, cryptography, ...: up to a second per job)
    module = SHARED_MODULES.get(name, name)
    if name not in _REGISTRY and module in {m.name for m in pkgutil.iter_modules(__path__)} - {"base"}:
        importlib.import_module(f"{__name__}.{module}")
    if name not in _REGISTRY and not _LOADED_ALL:
        _load_all()
    if name not in _REGISTRY:
        raise ValueError(f"unknown mechanism {name!r}; allowed: {names()}")
    return _REGISTRY[name]


def names() -> list[str]:
    if not _LOADED_ALL:
        _load_all()
    return sorted(_REGISTRY)
