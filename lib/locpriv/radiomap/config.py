"""Validation of the ``studies.radiomap`` config section, with defaults filled in.

Defaults are the paper's setting where it states one ([GeoDP-Radio] §V: 300 m
area, 3 m cells, heights 10-130 m, 100 users, 200 stations at 50 m, 200
measurements, C = 1, nu in {1, 2, 5, 10, inf}) and this project's choice
otherwise (marked "ours" in DEFAULTS' comments).
"""

from __future__ import annotations

import copy
import math

from ..config import StudySection
from .noise import SCHEMES, THETA_MODES

DEFAULTS = {
    "environment": {
        "size": 300.0,              # paper
        "cell": 3.0,                # paper: M = 10,000 cells
        "n_buildings": 40,          # ours
        "height_range": [10.0, 130.0],  # paper
        "user_height": 1.5,         # ours
        "bs_altitude": 50.0,        # paper
    },
    "n_users": 100,                 # paper
    "n_stations": 200,              # paper
    "n_measurements": 200,          # paper
    "channel": {
        "theta_true": [-22.0, -30.0, -30.0, -50.0],  # ours: (alpha0, beta0, alpha1, beta1), dB
        "noise_std": 3.0,           # ours: std of xi in eq. (4), dB
    },
    "model": {
        "psi_scale": 3.0,           # ours: logistic width s in psi((z - h)/s), metres
        "h_init": 0.0,              # ours (paper: H_max); from H_max every link's S vanishes, see model.py
        "theta_init": [-20.0, -30.0, -20.0, -40.0],  # ours
    },
    "training": {
        "epochs": 200,              # paper
        "eta_h": 700.0,             # ours (tuned on the paper-scale scenario, FedAvg)
        "eta_theta": 0.08,          # ours
        "clip": 1.0,                # paper: C = 1
        # paper: theta's gradient is uploaded in the clear every epoch ("learned"), which voids any
        # (epsilon, delta); "frozen" keeps theta public at model.theta_init and uploads only h's
        "theta": "learned",
    },
    "geo": {                        # Alg. 1 settings, all ours (the paper gives none)
        "r_max": 8.0, "outer_iters": 3, "inner_iters": 3, "step_r": 2.0, "step_u": 2.0,
        "fd_eps": 1e-3, "tol_r": 1e-4, "tol_u": 1e-4,
    },
    "evaluation": {"stride": 4, "n_stations": 8},   # ours: MAE on every 4th cell x 8 stations
    "attack": {"nu": [1, 2, 5, 10, "inf"], "epochs": [1, 100, 200]},  # paper Table I
    "delta": 1e-5,                  # ours: delta reported with the uniform scheme's epsilon
    "runs": {                       # scheme -> grid of its parameters
        "radio_fedavg": {},
        "radio_uniform": {"mu": [1.0, 10.0, 50.0]},
        "radio_geo": {"mu": [1.0, 10.0, 50.0], "rho": [50.0]},
    },
    "plots": {"dpi": 110, "example_user": 0},
}

SECTION = StudySection("radiomap")
_NESTED = tuple(k for k, v in DEFAULTS.items() if isinstance(v, dict) and k != "runs")
_POS_INT = {("n_users",), ("n_stations",), ("n_measurements",), ("environment", "n_buildings"),
            ("training", "epochs"), ("geo", "outer_iters"), ("geo", "inner_iters"),
            ("evaluation", "stride"), ("evaluation", "n_stations"), ("plots", "dpi")}
_POS_FLOAT = {("environment", "size"), ("environment", "cell"), ("environment", "user_height"),
              ("environment", "bs_altitude"), ("model", "psi_scale"), ("training", "eta_h"),
              ("training", "eta_theta"), ("training", "clip"), ("geo", "r_max"), ("geo", "step_r"),
              ("geo", "step_u"), ("geo", "fd_eps"), ("geo", "tol_r"), ("geo", "tol_u")}
_NONNEG_FLOAT = {("channel", "noise_std"), ("model", "h_init")}


def _get(cfg, path):
    for p in path:
        cfg = cfg[p]
    return cfg


def _numbers(value, key: str, count: int, what: str) -> list:
    """A list of ``count`` finite numbers; any other value names ``what`` is allowed."""
    ok = isinstance(value, list) and len(value) == count and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    if not ok:
        raise SECTION.error(key, f"got {value!r}", what)
    return value


def validate_config(section: dict | None) -> dict:
    """The section with defaults filled in; ConfigError naming the first bad key."""
    cfg = copy.deepcopy(SECTION.merge(section, DEFAULTS, nested=_NESTED))
    for path in _POS_INT:
        SECTION.number(_get(cfg, path), ".".join(path), integer=True, low=1)
    for path in _POS_FLOAT:
        SECTION.number(_get(cfg, path), ".".join(path), low=0, open_low=True)
    for path in _NONNEG_FLOAT:
        SECTION.number(_get(cfg, path), ".".join(path), low=0)
    env = cfg["environment"]
    n = env["size"] / env["cell"]
    if abs(n - round(n)) > 1e-9:
        raise SECTION.error("environment.cell", f"{env['cell']} does not divide size {env['size']}",
                            "a cell side that divides the area side")
    hr = _numbers(env["height_range"], "environment.height_range", 2, "[low, high] with 0 < low <= high")
    if not 0 < hr[0] <= hr[1]:
        raise SECTION.error("environment.height_range", f"got {hr!r}", "[low, high] with 0 < low <= high")
    for key in ("channel.theta_true", "model.theta_init"):
        _numbers(_get(cfg, key.split(".")), key, 4, "[alpha0, beta0, alpha1, beta1], four numbers")
    nus = cfg["attack"]["nu"]
    if not isinstance(nus, list) or not nus:
        raise SECTION.error("attack.nu", f"got {nus!r}", "a non-empty list of positive numbers or 'inf'")
    for v in nus:
        if str(v).lower() != "inf":
            SECTION.number(v, "attack.nu", low=0, open_low=True)
    cfg["attack"]["nu"] = ["inf" if str(v).lower() == "inf" else float(v) for v in nus]
    ep = cfg["attack"]["epochs"]
    T = cfg["training"]["epochs"]
    if not (isinstance(ep, list) and ep):
        raise SECTION.error("attack.epochs", f"got {ep!r}", f"a non-empty list of integers in [1, {T}]")
    for e in ep:
        SECTION.number(e, "attack.epochs", integer=True, low=1, high=T)
    SECTION.choice(cfg["training"]["theta"], "training.theta", THETA_MODES)
    SECTION.number(cfg["delta"], "delta", low=0, high=1, open_low=True, open_high=True)
    SECTION.number(cfg["plots"]["example_user"], "plots.example_user", integer=True, low=0,
                   high=cfg["n_users"] - 1)
    cfg["runs"] = _validate_runs(cfg["runs"])
    return cfg


def _validate_runs(runs) -> dict:
    if not isinstance(runs, dict) or not runs:
        raise SECTION.error("runs", f"got {runs!r}", f"a non-empty mapping with keys among {sorted(SCHEMES)}")
    out = {}
    for name, grid in runs.items():
        if name not in SCHEMES:
            raise SECTION.error(f"runs.{name}", "unknown noise scheme", ", ".join(sorted(SCHEMES)))
        grid = {} if grid is None else grid
        scheme = SCHEMES[name]
        wanted = {"mu"} if scheme.uses_mu else set()
        wanted |= {"rho"} if scheme.uses_rho else set()
        if not isinstance(grid, dict) or set(grid) != wanted:
            raise SECTION.error(f"runs.{name}", f"got {grid!r}",
                                f"a mapping with exactly the keys {sorted(wanted)}" if wanted else "{} (no parameters)")
        clean = {}
        for key, values in grid.items():
            values = values if isinstance(values, list) else [values]
            for v in values:
                SECTION.number(v, f"runs.{name}.{key}", low=0)
            clean[key] = sorted({float(v) for v in values})
        out[name] = clean
    return out


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
