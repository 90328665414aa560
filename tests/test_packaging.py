"""`pip install locpriv` is the library alone: it imports and works without the workflow's or the tests' packages."""

import ast
import subprocess
import sys
import textwrap
import tomllib

from conftest import ROOT

# What the extras bring: the library must run without any of it.
EXTRAS_ONLY = ("snakemake", "snakefmt", "pytest", "sklearn", "ruff")
# The modules that belong to the workflow, and why (each imports an extra's package at import time).
WORKFLOW_ONLY = {
    "locpriv.check_config": "merges --config overrides with snakemake.utils.update_config, as Snakemake does",
}
# import name -> distribution name, where they differ
DISTRIBUTION = {"sklearn": "scikit-learn", "yaml": "pyyaml"}
# modules that are no package: the SLDP authors' code, imported from a checkout the user names
# (python -m locpriv.sldp.compare --authors DIR)
NOT_PACKAGES = {"sldp_opt_utils"}

BLOCKER = textwrap.dedent("""
    import importlib, pkgutil, sys

    class Block:  # an extra that is not installed: importing it fails, as after `pip install locpriv`
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {blocked!r}:
                raise ImportError(f"{{name}} is not installed")

    sys.meta_path.insert(0, Block())
""")


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def names(requirements: list[str]) -> set[str]:
    out = set()
    for req in requirements:
        name = req
        for sep in "<>=!~[; ":
            name = name.split(sep)[0]
        out.add(name.lower())
    return out


def test_every_library_module_and_the_api_work_without_the_extras():
    code = BLOCKER.format(blocked=EXTRAS_ONLY) + textwrap.dedent(f"""
        import numpy as np
        import locpriv
        from locpriv import GeoInd, Domain, Grid

        failed = []
        for mod in pkgutil.walk_packages(locpriv.__path__, "locpriv."):
            if mod.name in {sorted(WORKFLOW_ONLY)!r}:
                continue
            try:
                importlib.import_module(mod.name)
            except ImportError as exc:
                failed.append(f"{{mod.name}}: {{exc}}")
        assert not failed, failed
        grid = Grid.regular(Domain(0, 1, 0, 1), 8, 8)
        mech = GeoInd(epsilon=2.0, h=0.1)
        view = mech.randomize(np.random.default_rng(0).random((50, 2)), rng=1)
        density = mech.estimate(view, grid=grid)
        assert density.shape == (8, 8) and np.isfinite(density).all()
        assert mech.guarantee().epsilon == 2.0
        print("ok", sorted(m for m in sys.modules if m.split(".")[0] in {EXTRAS_ONLY!r}))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "ok []"


def test_workflow_only_modules_are_the_ones_that_need_an_extra():
    """The exceptions above are real: each fails without its extra (else it belongs to the library)."""
    for module in WORKFLOW_ONLY:
        code = BLOCKER.format(blocked=EXTRAS_ONLY) + f"import {module}\n"
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert proc.returncode != 0 and "is not installed" in proc.stderr, module


def test_runtime_dependencies_exclude_the_workflow_and_test_tools():
    project = pyproject()["project"]
    core = names(project["dependencies"])
    extras = project["optional-dependencies"]
    assert not core & {"snakemake", "snakemake-executor-plugin-slurm", "pytest", "snakefmt", "ruff", "scikit-learn"}, (
        core
    )
    assert {"snakemake", "snakemake-executor-plugin-slurm", "scikit-learn"} <= names(extras["workflow"])
    assert {"pytest", "snakefmt", "ruff"} <= names(extras["test"])


def imports(tree: ast.Module):
    """(top-level package, at import time?) of every absolute import; imports inside a function run only
    when it is called."""

    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                yield from ((alias.name.split(".")[0], not in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0:
                yield child.module.split(".")[0], not in_function
            else:
                yield from walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    return walk(tree, False)


def test_every_third_party_import_of_the_library_is_declared():
    """A package the library imports is a runtime dependency, or the workflow extra's where only the
    workflow runs that code (a workflow-only module, or a function the workflow calls): nothing arrives
    only because snakemake happens to pull it in."""
    project = pyproject()["project"]
    core = names(project["dependencies"])
    workflow = core | names(project["optional-dependencies"]["workflow"])
    undeclared = []
    for path in sorted((ROOT / "lib/locpriv").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT / "lib").with_suffix("").parts).removesuffix(".__init__")
        for top, at_import in imports(ast.parse(path.read_text())):
            if top in sys.stdlib_module_names or top == "locpriv" or top in NOT_PACKAGES:
                continue
            allowed = core if at_import and module not in WORKFLOW_ONLY else workflow
            if DISTRIBUTION.get(top, top) not in allowed:
                undeclared.append(f"{module}: {top}")
    assert not undeclared, undeclared


def test_the_jobs_conda_environment_is_the_library_and_the_workflow_extra():
    """envs/locpriv.yaml (--software-deployment-method conda) holds what `pip install -e ".[workflow]"` does."""
    import yaml

    project = pyproject()["project"]
    wanted = names(project["dependencies"]) | names(project["optional-dependencies"]["workflow"])
    conda = {"matplotlib": "matplotlib-base", "snakemake": "snakemake-minimal"}  # conda-forge's names
    env = yaml.safe_load((ROOT / "envs/locpriv.yaml").read_text())["dependencies"]
    assert names(env) - {"python"} == {conda.get(name, name) for name in wanted}
