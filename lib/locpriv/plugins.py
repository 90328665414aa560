"""Plugins: a user's own mechanisms and studies, in modules outside locpriv (config key ``plugins``).

A plugin is a Python module that defines :class:`~locpriv.mechanisms.base.Mechanism` subclasses
and/or :class:`~locpriv.study.Study` objects; importing it registers them, so no file of locpriv
is edited.  The config lists module names::

    plugins: [my_mechanisms]  # my_mechanisms.py beside config.yaml, or any module on PYTHONPATH

The workflow (and ``python -m locpriv.check_config``) calls :func:`activate` before validating the
config: the working directory becomes importable (appended to the path, so it never shadows an
installed package), the modules are imported, and their names are passed to every job in the
environment variable :data:`ENV`; a job imports them before it looks a name up that locpriv
does not define itself (``locpriv.mechanisms.get``, ``locpriv.study.get``).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

ENV = "LOCPRIV_PLUGINS"


class PluginError(ValueError):
    pass


def load(modules: list[str]) -> None:
    """Import each plugin module (registering what it defines); one line naming the module on failure."""
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # the plugin's own bug is reported with its module's name, not a traceback
            raise PluginError(
                f"config key 'plugins': cannot import {module!r} ({type(exc).__name__}: {exc}); "
                "allowed: names of modules importable from the working directory or "
                "PYTHONPATH, e.g. my_plugin for my_plugin.py beside config.yaml"
            ) from exc


def load_configured() -> None:
    """The plugins the workflow passed to this job (:data:`ENV`, comma-separated); none outside the workflow."""
    load([m for m in os.environ.get(ENV, "").split(",") if m])


def activate(modules: list[str], workdir: Path) -> None:
    """Make ``workdir`` importable here and in every job, import ``modules``, and pass them on to the jobs."""
    if not (isinstance(modules, list) and all(isinstance(m, str) and m.strip() for m in modules)):
        raise PluginError(f"config key 'plugins': {modules!r} is not allowed; allowed: a list of module names")
    if modules:
        folder = str(Path(workdir).resolve())
        if folder not in sys.path:
            sys.path.append(folder)
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if folder not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([*paths, folder])
    os.environ[ENV] = ",".join(modules)
    load(modules)
