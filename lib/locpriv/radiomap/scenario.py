"""Build the synthetic scenario (environment, links, measurements) from a validated config."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .environment import make_buildings, pick_stations, place_stations, place_users, rasterise
from .geometry import CellGrid, Links, traverse
from .model import hard_gain
from .training import Problem


def grid_of(cfg: dict) -> CellGrid:
    env = cfg["environment"]
    return CellGrid(int(round(env["size"] / env["cell"])), float(env["cell"]))


def make_environment(cfg: dict, rng: np.random.Generator) -> dict:
    """Buildings, true heights, users, stations and which station each measurement uses."""
    env, grid = cfg["environment"], grid_of(cfg)
    buildings = make_buildings(env["n_buildings"], grid.size, tuple(env["height_range"]), rng)
    heights = rasterise(buildings, grid)
    users = place_users(cfg["n_users"], heights, grid, rng)
    stations = place_stations(cfg["n_stations"], env["bs_altitude"], grid.size, rng)
    pick = pick_stations(cfg["n_users"], cfg["n_stations"], cfg["n_measurements"], rng)
    meas = pd.DataFrame(
        {
            "user": np.repeat(np.arange(cfg["n_users"]), cfg["n_measurements"]).astype(np.int32),
            "station": pick.ravel().astype(np.int32),
        }
    )
    ev = cfg["evaluation"]
    c = grid.centres()
    idx = np.arange(grid.M).reshape(grid.n, grid.n)[:: ev["stride"], :: ev["stride"]].ravel()
    outdoor = idx[heights[idx] == 0]
    points = pd.DataFrame({"x": c[outdoor, 0], "y": c[outdoor, 1]})
    return {
        "buildings": buildings,
        "heights": heights,
        "users": pd.DataFrame(users, columns=["x", "y"]),
        "stations": pd.DataFrame(stations, columns=["x", "y", "z"]),
        "measurements": meas,
        "eval_points": points,
        "n_eval_indoor_dropped": int(len(idx) - len(outdoor)),
    }


def measurement_endpoints(users: pd.DataFrame, stations: pd.DataFrame, meas: pd.DataFrame, user_height: float):
    u = users[["x", "y"]].to_numpy()[meas["user"].to_numpy()]
    start = np.column_stack([u, np.full(len(u), user_height)])
    return start, stations[["x", "y", "z"]].to_numpy()[meas["station"].to_numpy()]


def evaluation_endpoints(points: pd.DataFrame, stations: pd.DataFrame, n_stations: int, user_height: float):
    """Every evaluation ground point paired with each of the first n_stations stations."""
    p = points[["x", "y"]].to_numpy()
    st = stations[["x", "y", "z"]].to_numpy()[:n_stations]
    start = np.column_stack([np.repeat(p, len(st), axis=0), np.full(len(p) * len(st), user_height)])
    return start, np.tile(st, (len(p), 1))


def link_geometry(cfg: dict, env: dict) -> tuple[Links, Links]:
    """Measurement links and evaluation links (the expensive, deterministic step)."""
    grid, uh = grid_of(cfg), cfg["environment"]["user_height"]
    meas = traverse(grid, *measurement_endpoints(env["users"], env["stations"], env["measurements"], uh))
    ev = traverse(grid, *evaluation_endpoints(env["eval_points"], env["stations"], cfg["evaluation"]["n_stations"], uh))
    return meas, ev


def measure(cfg: dict, links: Links, heights: np.ndarray, rng: np.random.Generator):
    """Eq. (4): y = gamma(p; h*) + xi with the hard LOS rule (1) and Gaussian xi."""
    theta = np.asarray(cfg["channel"]["theta_true"], float)
    gain, los = hard_gain(links, heights, theta)
    return gain + cfg["channel"]["noise_std"] * rng.standard_normal(len(gain)), los


def problem(cfg: dict, env: dict, links: Links, eval_links: Links, y: np.ndarray) -> Problem:
    grid = grid_of(cfg)
    truth, _ = hard_gain(eval_links, env["heights"], np.asarray(cfg["channel"]["theta_true"], float))
    return Problem(
        links=links,
        user=env["measurements"]["user"].to_numpy().astype(np.int64),
        y=y,
        users=env["users"][["x", "y"]].to_numpy(),
        centres=grid.centres(),
        size=grid.size,
        eval_links=eval_links,
        eval_truth=truth,
    )
