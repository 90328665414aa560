"""Validation of the ``studies.radiomap`` config section, with defaults filled in.

Defaults are the paper's setting where it states one ([GeoDP-Radio] §V: 300 m
area, 3 m cells, heights 10-130 m, 100 users, 200 stations at 50 m, 200
measurements, C = 1, nu in {1, 2, 5, 10, inf}) and this project's choice
otherwise (marked "ours" in DEFAULTS' comments).
"""

from __future__ import annotations

import copy
import math

from ..config import ConfigError
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

_POS_INT = {("n_users",), ("n_stations",), ("n_measurements",), ("environment", "n_buildings"),
            ("training", "epochs"), ("geo", "outer_iters"), ("geo", "inner_iters"),
            ("evaluation", "stride"), ("evaluation", "n_stations"), ("plots", "dpi")}
_POS_FLOAT = {("environment", "size"), ("environment", "cell"), ("environment", "user_height"),
              ("environment", "bs_altitude"), ("model", "psi_scale"), ("training", "eta_h"),
              ("training", "eta_theta"), ("training", "clip"), ("geo", "r_max"), ("geo", "step_r"),
              ("geo", "step_u"), ("geo", "fd_eps"), ("geo", "tol_r"), ("geo", "tol_u")}
_NONNEG_FLOAT = {("channel", "noise_std"), ("model", "h_init")}


def _err(path, problem, allowed):
    return ConfigError(f"config key 'studies.radiomap.{'.'.join(path)}': {problem}; allowed: {allowed}")


def _merge(defaults: dict, given: dict, path=()) -> dict:
    if not isinstance(given, dict):
        raise _err(path, f"got {given!r}", "a mapping")
    out = copy.deepcopy(defaults)
    for key, value in given.items():
        if key not in defaults:
            raise _err(path + (str(key),), "unknown key", ", ".join(sorted(defaults)))
        if isinstance(defaults[key], dict) and key != "runs":
            out[key] = _merge(defaults[key], value, path + (key,))
        else:
            out[key] = copy.deepcopy(value)
    return out


def _get(cfg, path):
    for p in path:
        cfg = cfg[p]
    return cfg


def _number(value, path, integer: bool, low: float, strict: bool):
    ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type or (not integer and not math.isfinite(value)):
        raise _err(path, f"got {value!r}", "an integer" if integer else "a finite number")
    if value < low or (strict and value == low):
        raise _err(path, f"got {value!r}", f"a number {'>' if strict else '>='} {low}")
    return value


def validate_config(section: dict | None) -> dict:
    """The section with defaults filled in; ConfigError naming the first bad key."""
    cfg = _merge(DEFAULTS, section or {})
    for path in _POS_INT:
        _number(_get(cfg, path), path, True, 1, False)
    for path in _POS_FLOAT:
        _number(_get(cfg, path), path, False, 0, True)
    for path in _NONNEG_FLOAT:
        _number(_get(cfg, path), path, False, 0, False)
    env = cfg["environment"]
    n = env["size"] / env["cell"]
    if abs(n - round(n)) > 1e-9:
        raise _err(("environment", "cell"), f"{env['cell']} does not divide size {env['size']}",
                   "a cell side that divides the area side")
    hr = env["height_range"]
    if not (isinstance(hr, list) and len(hr) == 2 and all(isinstance(v, (int, float)) for v in hr)
            and 0 < hr[0] <= hr[1]):
        raise _err(("environment", "height_range"), f"got {hr!r}", "[low, high] with 0 < low <= high")
    for path in (("channel", "theta_true"), ("model", "theta_init")):
        th = _get(cfg, path)
        if not (isinstance(th, list) and len(th) == 4 and all(isinstance(v, (int, float)) for v in th)):
            raise _err(path, f"got {th!r}", "[alpha0, beta0, alpha1, beta1], four numbers")
    nus = cfg["attack"]["nu"]
    if not isinstance(nus, list) or not nus:
        raise _err(("attack", "nu"), f"got {nus!r}", "a non-empty list of positive numbers or 'inf'")
    for v in nus:
        if not ((isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0)
                or str(v).lower() == "inf"):
            raise _err(("attack", "nu"), f"got {v!r}", "positive numbers or 'inf'")
    cfg["attack"]["nu"] = ["inf" if str(v).lower() == "inf" else float(v) for v in nus]
    ep = cfg["attack"]["epochs"]
    T = cfg["training"]["epochs"]
    if not (isinstance(ep, list) and ep and all(isinstance(e, int) and 1 <= e <= T for e in ep)):
        raise _err(("attack", "epochs"), f"got {ep!r}", f"a non-empty list of integers in [1, {T}]")
    if cfg["training"]["theta"] not in THETA_MODES:
        raise _err(("training", "theta"), f"got {cfg['training']['theta']!r}", str(list(THETA_MODES)))
    d = cfg["delta"]
    if not (isinstance(d, (int, float)) and 0 < d < 1):
        raise _err(("delta",), f"got {d!r}", "a number in (0, 1)")
    _number(cfg["plots"]["example_user"], ("plots", "example_user"), True, 0, False)
    if cfg["plots"]["example_user"] >= cfg["n_users"]:
        raise _err(("plots", "example_user"), f"got {cfg['plots']['example_user']}",
                   f"a user index below n_users = {cfg['n_users']}")
    cfg["runs"] = _validate_runs(cfg["runs"])
    return cfg


def _validate_runs(runs) -> dict:
    if not isinstance(runs, dict) or not runs:
        raise _err(("runs",), f"got {runs!r}", f"a non-empty mapping with keys among {sorted(SCHEMES)}")
    out = {}
    for name, grid in runs.items():
        if name not in SCHEMES:
            raise _err(("runs", str(name)), "unknown noise scheme", ", ".join(sorted(SCHEMES)))
        grid = {} if grid is None else grid
        scheme = SCHEMES[name]
        wanted = {"mu"} if scheme.uses_mu else set()
        wanted |= {"rho"} if scheme.uses_rho else set()
        if not isinstance(grid, dict) or set(grid) != wanted:
            raise _err(("runs", name), f"got {grid!r}",
                       f"a mapping with exactly the keys {sorted(wanted)}" if wanted else "{} (no parameters)")
        clean = {}
        for key, values in grid.items():
            values = values if isinstance(values, list) else [values]
            for v in values:
                _number(v, ("runs", name, key), False, 0, False)
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
