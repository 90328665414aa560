"""A job pays for the imports it uses: each per-run stage loads only the packages its work needs."""

import subprocess
import sys

import pytest

HEAVY = ("scipy", "sklearn", "matplotlib")
KDE_MECHANISMS = ("fedkde", "zero", "rff", "geoind", "laplace_ldp")


def imported(code: str) -> set[str]:
    """Modules (full dotted names) loaded after running ``code`` in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def top_level(mods: set[str]) -> set[str]:
    return {m.split(".")[0] for m in mods}


def test_client_and_server_stages_of_kde_mechanisms_skip_heavy_packages():
    mods = imported(
        "from locpriv.stages.run import randomize, aggregate_estimate\n"
        "from locpriv import mechanisms\n" + "".join(f"mechanisms.get({m!r})\n" for m in KDE_MECHANISMS)
    )
    assert not top_level(mods) & set(HEAVY), sorted(top_level(mods) & set(HEAVY))


def test_attack_stage_loads_no_statistics_plotting_or_learning_package():
    mods = imported(
        "from locpriv.stages.attack import attacks_of_run\n"
        "from locpriv import mechanisms\n" + "".join(f"mechanisms.get({m!r})\n" for m in KDE_MECHANISMS)
    )
    unwanted = {
        m
        for m in mods
        if m.split(".")[0] in ("sklearn", "matplotlib")
        or m.startswith(("scipy.stats", "scipy.spatial", "scipy.optimize", "locpriv.audit"))
    }
    assert not unwanted, sorted(unwanted)


@pytest.mark.parametrize("stage", ["locpriv.stages.metrics", "locpriv.stages.attack", "locpriv.stages.run"])
def test_per_run_stages_do_not_load_the_audit_or_plots(stage):
    mods = imported(f"import {stage}")
    unwanted = {m for m in mods if m.startswith(("locpriv.audit", "locpriv.plots", "matplotlib", "sklearn"))}
    assert not unwanted, sorted(unwanted)


def test_per_run_stages_read_and_write_surfaces_without_xarray(tmp_path):
    """NetCDF surfaces go through locpriv.nc3: xarray with scipy.io cost each job ~0.3 s."""
    code = (
        "import numpy as np\nfrom locpriv import io\nfrom locpriv.domain import Domain, Grid\n"
        "from locpriv.stages import metrics, prepare, run\n"
        "g = Grid.regular(Domain(0, 1, 0, 1), 4, 5)\n"
        f"io.write_netcdf(g.to_dataset('m'), {str(tmp_path / 'grid.nc')!r})\n"
        "s = g.surface(np.ones(g.shape), 'density', {'n_users': 3}, 'm')\n"
        f"io.write_netcdf(s, {str(tmp_path / 'd.nc')!r})\n"
        f"prepare.load_grid({str(tmp_path / 'grid.nc')!r}); io.read_nc3({str(tmp_path / 'd.nc')!r})\n"
    )
    mods = imported(code)
    assert (tmp_path / "d.nc").exists()
    assert not top_level(mods) & {"xarray", "scipy"}, sorted(top_level(mods) & {"xarray", "scipy"})


@pytest.mark.parametrize(
    "name",
    ["sldp", "privtree", "ldp_oue_grid", "ldp_kdtree", "dp_heatmap", "heatmap_flat", "heatmap_hierarchical", "geoind"],
)
def test_a_mechanism_loads_only_its_own_module(name):
    """A job imports its mechanism's module and the helpers it builds on, never another mechanism's module."""
    from locpriv import mechanisms

    every = set(mechanisms.names())
    mods = imported(f"from locpriv import mechanisms\nmechanisms.get({name!r})")
    loaded = {m.rsplit(".", 1)[1] for m in mods if m.startswith("locpriv.mechanisms.")}
    # its own module, and a parent class's module where it extends another mechanism (geoind: fedkde)
    assert loaded & every <= {name, *(cls.name for cls in mechanisms.get(name).__mro__[1:] if getattr(cls, "name", ""))}
    assert name in loaded
    # nor a study or the config validator (jsonschema, yaml): ~0.1 s per job for dp_heatmap's
    assert not {
        m
        for m in mods
        if m.startswith(("scipy.stats", "xarray", "jsonschema", "locpriv.config")) or m.endswith(".study")
    }


def test_every_mechanism_lives_in_a_module_named_after_it():
    """One file per mechanism: the workflow finds a mechanism's module by its name (no table to keep)."""
    from locpriv import mechanisms

    for name in mechanisms.names():
        assert mechanisms.get(name).__module__ == f"locpriv.mechanisms.{name}", name


def test_unknown_mechanism_still_lists_every_mechanism():
    code = "from locpriv import mechanisms\ntry:\n    mechanisms.get('nope')\nexcept ValueError as e:\n    print(e)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "unknown mechanism 'nope'" in out and "'sldp'" in out and "'fedkde'" in out


def test_audit_stage_skips_scipy_stats():
    """The audit's Clopper-Pearson bounds come from scipy.special (scipy.stats cost each audit job ~0.9 s)."""
    mods = imported("import locpriv.audit.stage")
    assert "scipy.special" in mods  # the bound's own import: the check below can fail
    assert not {m for m in mods if m.startswith("scipy.stats")}
