"""The Python code's style, as the rule files' is kept (tests/test_lint.py): ruff clean, keyword-only stage
calls from the rule scripts, no private name used outside its module."""

import ast
import importlib
import inspect
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPTS = sorted((ROOT / "scripts").glob("*.py"))


def test_python_code_passes_ruff():
    """`ruff check` with the rules of pyproject.toml [tool.ruff] (the `test` extra installs ruff)."""
    if importlib.util.find_spec("ruff") is None and shutil.which("ruff") is None:
        pytest.skip('ruff is not installed: python -m pip install -e ".[workflow,test]"')
    cmd = [sys.executable, "-m", "ruff"] if importlib.util.find_spec("ruff") else ["ruff"]
    proc = subprocess.run(
        [*cmd, "check", "--no-cache", "--output-format", "concise", str(ROOT)], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, f"ruff check (fix: `ruff check --fix`, then by hand):\n{proc.stdout[-4000:]}"


def _namespace(tree: ast.Module) -> dict:
    """What a script's imports bind: name -> module or function."""
    names = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            module = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(module, alias.name, None)
                if value is None:  # a submodule: `from locpriv import plots`
                    value = importlib.import_module(f"{node.module}.{alias.name}")
                names[alias.asname or alias.name] = value
    return names


def stage_calls(path):
    """(call, function or None) of every statement-level call in the script's ``with logged(...)`` body:
    the stages it runs (None where the function is chosen at run time, as plot_summary's is)."""
    tree = ast.parse(path.read_text())
    names = _namespace(tree)
    for node in tree.body:
        if not isinstance(node, ast.With):
            continue
        for stmt in node.body:
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
                continue
            func = stmt.value.func
            if isinstance(func, ast.Name):
                target = names.get(func.id)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                target = getattr(names.get(func.value.id), func.attr, None)
            else:
                target = None
            yield stmt.value, target


def test_every_rule_script_calls_its_stages_by_keyword():
    positional = [
        f"{path.name}:{call.lineno}: {len(call.args)} positional"
        for path in SCRIPTS
        for call, _ in stage_calls(path)
        if call.args
    ]
    assert not positional, positional
    assert sum(1 for path in SCRIPTS for _ in stage_calls(path)) >= len(SCRIPTS)  # the scan found the calls


def test_every_stage_a_rule_script_calls_is_keyword_only():
    """So a positional call fails at once, instead of binding an output path to an input parameter."""
    loose = []
    for path in SCRIPTS:
        for call, func in stage_calls(path):
            if func is None:
                continue
            params = inspect.signature(func).parameters.values()
            if any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params):
                loose.append(f"{path.name}:{call.lineno}: {func.__module__}.{func.__qualname__}")
    assert not loose, loose


def test_plot_summary_calls_only_keyword_only_plots():
    """scripts/plot_summary.py picks its function by the {plot} wildcard: every value of it is keyword-only."""
    from locpriv import plots

    common = (ROOT / "workflow/rules/common.smk").read_text()
    names = ast.literal_eval(common.split("SUMMARY_PLOTS = ", 1)[1].split("\n", 1)[0])
    for name in names:
        params = inspect.signature(getattr(plots, name)).parameters.values()
        assert all(p.kind is p.KEYWORD_ONLY for p in params), name


def private_uses(path) -> list[str]:
    """``from locpriv... import _name`` and ``module._name`` for a locpriv module imported by the file."""
    tree = ast.parse(path.read_text())
    modules, uses = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("locpriv")):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    uses.append(f"{node.lineno}: import {alias.name}")
                modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith("locpriv")}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            uses.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return uses


def test_no_private_name_is_used_outside_its_module():
    """The library, the rule scripts and the benchmarks use each other's public names only.  (Unit tests
    may reach a module's private helpers: that is what they test.)"""
    files = [*(ROOT / "lib").rglob("*.py"), *SCRIPTS, *(ROOT / "perf").glob("*.py")]
    found = [f"{path.relative_to(ROOT)}:{use}" for path in sorted(files) for use in private_uses(path)]
    assert not found, found


def test_private_use_scan_finds_what_it_looks_for(tmp_path):
    """Power check: the scan above flags both spellings."""
    path = tmp_path / "x.py"
    path.write_text("from locpriv.plots import _hidden\nfrom locpriv import io\nio._umask()\nio.atomic_path\n")
    assert private_uses(path) == ["1: import _hidden", "3: io._umask"]


def import_graph(lib) -> dict[str, set[str]]:
    """module -> the locpriv modules it imports, at the top or inside a function (a deferred import is
    still a dependency: two modules that need each other are one module split in two)."""
    files = {
        ".".join(p.relative_to(lib).with_suffix("").parts).removesuffix(".__init__"): p
        for p in (lib / "locpriv").rglob("*.py")
    }
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join([*parts[: len(parts) - node.level + 1], *([node.module] if node.module else [])])
                deps |= {f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
        graph[name] = {d for d in deps if d in files and d != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while not component or component[-1] != node:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    found += [sorted(component)] if len(component) > 1 else []
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_cycle_in_locpriv():
    """No two locpriv modules import each other, directly or through others (issue 40: config <-> sanity)."""
    assert not import_cycles(import_graph(ROOT / "lib")), import_cycles(import_graph(ROOT / "lib"))


def test_import_cycle_scan_finds_a_deferred_cycle(tmp_path):
    """Power check: a cycle closed by an import inside a function, across a subpackage, is found."""
    (tmp_path / "locpriv/sub").mkdir(parents=True)
    (tmp_path / "locpriv/__init__.py").write_text("")
    (tmp_path / "locpriv/sub/__init__.py").write_text("")
    (tmp_path / "locpriv/a.py").write_text("from .sub import b\n")
    (tmp_path / "locpriv/sub/b.py").write_text("def f():\n    from ..c import g\n")
    (tmp_path / "locpriv/c.py").write_text("import locpriv.a\n")
    (tmp_path / "locpriv/d.py").write_text("from . import a\n")
    assert import_cycles(import_graph(tmp_path)) == [["locpriv.a", "locpriv.c", "locpriv.sub.b"]]
