"""Code fingerprints: which ``locpriv`` source a rule runs, hashed.

Snakemake re-runs a job when its params change but cannot see edits inside
imported modules.  A rule passes ``code_fingerprint(module)`` as a param: the
hash covers that module (a plugin's too) and every ``locpriv`` module it imports, transitively
(found from the import statements, without importing), so editing a function
re-runs exactly the rules whose code reaches it.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from functools import cache
from pathlib import Path

PACKAGE = "locpriv"


ROOT = Path(__file__).resolve().parent


def _path(module: str) -> Path | None:
    """Source file of a ``locpriv`` module (or of a plugin module outside it), or None if the name is not a module."""
    if module.split(".")[0] != PACKAGE:  # a plugin's module (locpriv.plugins): wherever Python finds it
        spec = importlib.util.find_spec(module)
        return Path(spec.origin) if spec is not None and str(spec.origin).endswith(".py") else None
    parts = module.split(".")[1:]
    if not parts:
        return ROOT / "__init__.py"
    rel = Path(*parts)
    for cand in (ROOT / rel.with_suffix(".py"), ROOT / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _source(module: str) -> Path:
    path = _path(module)
    if path is None:
        raise ModuleNotFoundError(module)
    return path


def _is_package(module: str) -> bool:
    return _source(module).name == "__init__.py"


# cached: one run sees one tree, and ~50 closures share most of their modules (uncached, the
# Snakefile parsed each module once per closure reaching it: 1,615 parses, ~25 s of every start)
@cache
def _imports(module: str) -> frozenset[str]:
    tree = ast.parse(_source(module).read_text())
    base = module if _is_package(module) else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base.split(".")
                root = ".".join(parts[: len(parts) - node.level + 1])
                stem = f"{root}.{node.module}" if node.module else root
            else:
                stem = node.module or ""
            found.add(stem)
            found.update(f"{stem}.{a.name}" for a in node.names)
    return frozenset(m for m in found if m.split(".")[0] == PACKAGE and _path(m) is not None)


@cache
def closure(module: str) -> frozenset[str]:
    seen, todo = set(), [module]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        todo.extend(_imports(mod) - seen)
    return frozenset(seen)


# cached: Snakemake evaluates a rule's params for each of its jobs (~360 in the default run),
# and hashing the sources again each time cost the main process seconds; one run sees one tree
@cache
def code_fingerprint(*modules: str) -> str:
    digest = hashlib.sha256()
    for mod in sorted(set().union(*(closure(m) for m in modules))):
        digest.update(mod.encode() + b"\0" + _source(mod).read_bytes())
    return digest.hexdigest()[:16]


def code_label(*modules: str) -> str:
    """What the HTML report shows for a job's ``code`` param: the modules the fingerprint covers.

    ``snakemake --report`` runs no job, so the hash decides nothing there, and a reader of a
    result's job parameters learns more from the code's name than from 16 hex digits.
    """
    return "source of " + " and ".join(modules)
