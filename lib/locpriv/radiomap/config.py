"""Validation of the ``studies.radiomap`` config section, with defaults filled in.

Keys, bounds and defaults are declared in the config schema (``workflow/schemas/config.source.yaml``,
``$defs.radiomap``; listed in ``docs/configuration.md``): the paper's setting where it states one
([GeoDP-Radio] §V: 300 m area, 3 m cells, heights 10-130 m, 100 users, 200 stations at 50 m, 200
measurements, C = 1, nu in {1, 2, 5, 10, inf}) and this project's choice otherwise (marked "ours").
Here: what a schema cannot say, one key bounded by another.
"""

from __future__ import annotations

from ..config import StudySection, listed

SECTION = StudySection("radiomap")


def validate_config(section: dict | None) -> dict:
    """The section with defaults filled in; ConfigError naming the first bad key."""
    cfg = SECTION.validate(section)
    env = cfg["environment"]
    n = env["size"] / env["cell"]
    if abs(n - round(n)) > 1e-9:
        raise SECTION.error(
            "environment.cell",
            f"{env['cell']} does not divide size {env['size']}",
            "a cell side that divides the area side",
        )
    low, high = env["height_range"]
    if not low <= high:
        raise SECTION.error("environment.height_range", f"got {[low, high]!r}", "[low, high] with 0 < low <= high")
    cfg["attack"]["nu"] = ["inf" if v == "inf" else float(v) for v in cfg["attack"]["nu"]]
    T = cfg["training"]["epochs"]
    late = [e for e in cfg["attack"]["epochs"] if e > T]
    if late:
        raise SECTION.error(
            "attack.epochs",
            f"{late[0]} is after the last training epoch {T}",
            f"a non-empty list of integers in [1, {T}] (training.epochs)",
        )
    if cfg["plots"]["example_user"] >= cfg["n_users"]:
        raise SECTION.error(
            "plots.example_user",
            f"got {cfg['plots']['example_user']!r}",
            f"an integer in [0, {cfg['n_users'] - 1}] (below n_users)",
        )
    # each scheme's grid as sorted distinct floats: run paths print them
    cfg["runs"] = {
        name: {key: sorted(set(listed(values, float))) for key, values in (grid or {}).items()}
        for name, grid in cfg["runs"].items()
    }
    return cfg


def run_list(cfg: dict) -> list[dict]:
    """Every (scheme, mu, rho) combination, as dicts; mu = rho = 0 where unused."""
    runs = []
    for name, grid in cfg["runs"].items():
        for mu in grid.get("mu", [0.0]):
            for rho in grid.get("rho", [0.0]):
                runs.append({"scheme": name, "mu": mu, "rho": rho})
    return runs


def run_dir(run: dict) -> str:
    return f"scheme~{run['scheme']}/mu~{run['mu']:g}/rho~{run['rho']:g}"
