"""Mechanisms, registered by name: each is one class in a module of its own name.

A mechanism is a :class:`~.base.Mechanism` subclass with a ``name``; defining it registers it.
The built-in ones live here, one module per mechanism named after it (shared helpers in
``partitions`` and ``heatmap``); a user's own are found in the plugin modules of the config key
``plugins`` (``locpriv.plugins``).  The workflow finds a mechanism by the name used in the config,
so a new mechanism needs no new rules.
"""

from __future__ import annotations

import importlib
import pkgutil

from .. import plugins
from .base import REGISTRY, Mechanism

__all__ = ["Mechanism", "builtin_names", "get", "names"]


def _builtin_modules() -> set[str]:
    return {m.name for m in pkgutil.iter_modules(__path__)} - {"base"}


def _load_all() -> None:
    for module in sorted(_builtin_modules()):
        importlib.import_module(f"{__name__}.{module}")
    plugins.load_configured()


def get(name: str) -> type[Mechanism]:
    """The mechanism class registered as ``name``.

    A job needs one mechanism: its own module is imported (not every mechanism's dependencies:
    scipy.stats, cryptography, ...: up to a second per job), then the configured plugins.
    """
    if name not in REGISTRY and name in _builtin_modules():
        importlib.import_module(f"{__name__}.{name}")
    if name not in REGISTRY:
        plugins.load_configured()
    if name not in REGISTRY:
        _load_all()
    if name not in REGISTRY:
        raise ValueError(f"unknown mechanism {name!r}; allowed: {sorted(REGISTRY)}")
    return REGISTRY[name]


def names() -> list[str]:
    """Every registered mechanism's name (built-in and from the configured plugins)."""
    _load_all()
    return sorted(REGISTRY)


def builtin_names() -> list[str]:
    """The built-in mechanisms' names (sorted), without the plugins': the figures' fixed colours."""
    for module in sorted(_builtin_modules()):
        importlib.import_module(f"{__name__}.{module}")
    return sorted(name for name, cls in REGISTRY.items() if cls.__module__.startswith(f"{__name__}."))
