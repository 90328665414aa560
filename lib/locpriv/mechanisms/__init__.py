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


def _load_all():
    for mod in pkgutil.iter_modules(__path__):
        if mod.name != "base":
            importlib.import_module(f"{__name__}.{mod.name}")


def get(name: str) -> Mechanism:
    if not _REGISTRY:
        _load_all()
    if name not in _REGISTRY:
        raise ValueError(f"unknown mechanism {name!r}; allowed: {names()}")
    return _REGISTRY[name]


def names() -> list[str]:
    if not _REGISTRY:
        _load_all()
    return sorted(_REGISTRY)
