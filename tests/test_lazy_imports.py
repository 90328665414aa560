"""A job pays for the imports it uses: each per-run stage loads only the packages its work needs."""

import subprocess
import sys

import pytest

HEAVY = ("scipy", "sklearn", "matplotlib")
KDE_MECHANISMS = ("fedkde", "zero", "rff", "geoind", "laplace_ldp")


def imported(code: str) -> set[str]:
    """Modules (full dotted names) loaded after running ``code`` in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def top_level(mods: set[str]) -> set[str]:
    return {m.split(".")[0] for m in mods}


def test_client_and_server_stages_of_kde_mechanisms_skip_heavy_packages():
    mods = imported("from locpriv.stages.run import randomize, aggregate_estimate\n"
                    "from locpriv import mechanisms\n"
                    + "".join(f"mechanisms.get({m!r})\n" for m in KDE_MECHANISMS))
    assert not top_level(mods) & set(HEAVY), sorted(top_level(mods) & set(HEAVY))


def test_attack_stage_loads_no_statistics_plotting_or_learning_package():
    mods = imported("from locpriv.stages.attack import attacks_of_run\n"
                    "from locpriv import mechanisms\n"
                    + "".join(f"mechanisms.get({m!r})\n" for m in KDE_MECHANISMS))
    unwanted = {m for m in mods if m.split(".")[0] in ("sklearn", "matplotlib")
                or m.startswith(("scipy.stats", "scipy.spatial", "scipy.optimize", "locpriv.audit"))}
    assert not unwanted, sorted(unwanted)


@pytest.mark.parametrize("stage", ["locpriv.stages.metrics", "locpriv.stages.attack", "locpriv.stages.run"])
def test_per_run_stages_do_not_load_the_audit_or_plots(stage):
    mods = imported(f"import {stage}")
    unwanted = {m for m in mods if m.startswith(("locpriv.audit", "locpriv.plots", "matplotlib", "sklearn"))}
    assert not unwanted, sorted(unwanted)


def test_unknown_mechanism_still_lists_every_plugin():
    code = ("from locpriv import mechanisms\n"
            "try:\n    mechanisms.get('nope')\nexcept ValueError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "unknown mechanism 'nope'" in out and "'sldp'" in out and "'fedkde'" in out
