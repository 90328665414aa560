"""Linkage stages: the adversaries across the T windowed releases of one setting (``releases: {window: ...}``).

One job per setting and repetition, reading the T window runs' files (``runs/<dataset>.w<k>/...``):

* ``cross_release_bayes``: the population Bayes adversary over each sampled person's home cell, combining
  the person's reports of every window (:mod:`locpriv.adversary.linkage`), one row per (k, person);
* ``trajectory_recovery``: Xu et al. 2017's attack (:mod:`locpriv.adversary.trajectory_recovery`) on the
  per-window published maps (the runs' estimates, read as counts per grid cell per slot), and on the
  exact per-window counts (``exact_recovery``, the paper's own setting, one job per dataset);
* ``linkage_summary``: both, per setting and k, as mean and 95 % t-interval over the repetitions, and the same
  rows with each setting's trust model and person-level epsilon after k releases (``frontier_releases``): the
  frontier's cross-release metrics as functions of the number of releases.

A person's place in a slot (the truth the recovery is scored on, and the exact count it adds to) is the
cell of their first row in the window: the paper's one location per person per slot.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import io, ledger, mechanisms
from ..adversary import bayes, linkage
from ..adversary import trajectory_recovery as recovery
from ..adversary.likelihoods import cell_of
from ..datasets.ingest import domain_of
from ..frontier import t_interval
from .attack import person_sample
from .prepare import load_grid
from .run import check_views, configured, n_users_of

RECOVERY_METRICS = ("accuracy", "recovery_error", "uniqueness", "true_uniqueness", "identified")


def _window_rows(points_path: str, n: int) -> pd.DataFrame:
    """user, source_user, time, x, y of the run's users (user < n), in person then time order."""
    rows = pd.read_parquet(points_path, columns=["user", "source_user", "time", "x", "y"], filters=[("user", "<", n)])
    return rows.sort_values(["source_user", "time", "user"], ignore_index=True)


def _persons_view(view_paths: list[str], users: np.ndarray | None) -> pd.DataFrame:
    """The view rows of ``users`` (None: every row), sorted by user, with the first shard's ``attrs`` (the
    release)."""
    keep = None if users is None else [("user", "in", users.tolist())]
    parts = [pd.read_parquet(path, filters=keep) for path in check_views(view_paths)]
    view = pd.concat(parts, ignore_index=True).sort_values("user", ignore_index=True)
    view.attrs = parts[0].attrs
    return view


def cross_release_bayes(
    *,
    runs: list[dict],
    seed: int,
    adversary_cfg: dict,
    view_paths: list[list[str]],
    points_paths: list[str],
    meta_jsons: list[str],
    grid_path: str,
    truth_path: str,
    bandwidth_jsons: list[str | None],
    out: str,
) -> None:
    """The cross-release Bayes adversary on the T window runs of one setting and repetition (in window order).

    The persons are a seeded sample (``adversary.users``) of those in any window, the same for every
    mechanism of the dataset; the prior is the first window's truth surface (``adversary.prior``).
    """
    grid = load_grid(grid_path)
    windows = [
        _window_rows(p, n_users_of(run["params"], m)) for run, p, m in zip(runs, points_paths, meta_jsons, strict=True)
    ]
    dataset = io.read_json(meta_jsons[0])["window"]["of"]
    everyone = np.unique(np.concatenate([w["source_user"].to_numpy() for w in windows]))
    chosen = person_sample(dataset, everyone, int(adversary_cfg["users"]), seed)
    prior = bayes.prior(adversary_cfg["prior"], io.read_nc3(truth_path)["density"].values)
    radius = float(adversary_cfg["r"]) * max(grid.x[1] - grid.x[0], grid.y[1] - grid.y[0])
    batch = int(adversary_cfg.get("batch", bayes.DEFAULTS["batch"]))
    mine = [w[w["source_user"].isin(chosen)] for w in windows]
    every_row = pd.concat(mine, ignore_index=True)
    home = linkage.home_cells(
        every_row[["x", "y"]].to_numpy(), np.searchsorted(chosen, every_row["source_user"]), len(chosen), grid
    )
    population, informed_adv = [], []
    for run, views, rows, bandwidth, everybody in zip(runs, view_paths, mine, bandwidth_jsons, windows, strict=True):
        pop, inf = linkage.window_log_likelihoods(
            configured(run, bandwidth),
            lambda users, views=views: _persons_view(views, users),
            rows,
            everybody,
            chosen,
            grid,
            prior,
            batch,
        )
        population.append(pop)
        informed_adv.append(inf)
    out_frames = []
    for adversary, log_liks in (("population", population), ("informed", informed_adv)):
        per_person = linkage.curve(prior, log_liks, grid, home, radius)
        per_person.insert(0, "adversary", adversary)
        per_person.insert(2, "source_user", chosen[per_person["person"].to_numpy()])
        out_frames.append(per_person.drop(columns="person"))
    meta = {
        "attack": "cross_release_bayes",
        "mechanism": runs[0]["mechanism"],
        "windows": len(runs),
        "prior": adversary_cfg["prior"],
        "r": radius,
        "target": "each person's most frequent cell over all windows",
        "informed_person_model": INFORMED_MODEL,
    }
    io.write_parquet(pd.concat(out_frames, ignore_index=True), out, metadata=meta)


#: the informed cross-release adversary's model of a person (the metadata's ``informed_person_model``)
INFORMED_MODEL = (
    "per window one target row per person (their lowest user id in the window), every other row of the window known; "
    "the windows' likelihoods multiplied, as for a person at one cell in every window"
)


def _slots(points_paths: list[str], meta_jsons: list[str], grid):
    """Per window: each person's place (flat cell of their first row), and the slots' calendar start times."""
    places, starts = [], []
    for path, meta in zip(points_paths, meta_jsons, strict=True):
        rows = _window_rows(path, int(io.read_json(meta)["n_users"]))
        first = rows.drop_duplicates("source_user")
        i, j = cell_of(first[["x", "y"]].to_numpy(), grid)
        places.append(pd.Series(i * grid.shape[1] + j, index=first["source_user"].to_numpy()))
        starts.append(pd.Timestamp(io.read_json(meta)["window"]["start"]))
    truth = pd.concat(places, axis=1).dropna()  # the persons present in every slot
    return truth.to_numpy(dtype=np.int64), pd.DatetimeIndex(starts)


def _centres(grid) -> np.ndarray:
    x, y = np.meshgrid(grid.x, grid.y, indexing="ij")
    return np.stack([x.ravel(), y.ravel()], axis=1)


def _recover(release: np.ndarray, truth: np.ndarray, starts, grid, linkage_cfg: dict, meta: dict, out: str) -> None:
    cfg = {**recovery.DEFAULTS, **linkage_cfg}
    night, day = recovery.slot_calendar(starts, cfg["night"])
    recovered = recovery.recover(recovery.to_persons(release, len(truth)), _centres(grid), night, day)
    result = recovery.evaluate(recovered, truth, _centres(grid), cfg["k"])
    frame = pd.DataFrame([{"persons": len(truth), "slots": truth.shape[1], **result}])
    io.write_parquet(frame, out, metadata={"attack": "trajectory_recovery", **meta})


def exact_recovery(*, linkage_cfg: dict, points_paths: list[str], meta_jsons: list[str], grid_path: str, out: str):
    """Xu et al.'s attack on the exact counts of every slot (the paper's setting)."""
    grid = load_grid(grid_path)
    truth, starts = _slots(points_paths, meta_jsons, grid)
    cells = grid.shape[0] * grid.shape[1]
    counts = np.stack([np.bincount(truth[:, t], minlength=cells) for t in range(truth.shape[1])])
    _recover(counts, truth, starts, grid, linkage_cfg, {"release": "exact counts"}, out)


def trajectory_recovery(
    *,
    runs: list[dict],
    linkage_cfg: dict,
    est_paths: list[str],
    points_paths: list[str],
    meta_jsons: list[str],
    grid_path: str,
    out: str,
):
    """Xu et al.'s attack on a mechanism's per-window published maps (estimate.nc: its density on the grid, read
    as counts per cell up to a factor that ``to_persons`` removes)."""
    grid = load_grid(grid_path)
    truth, starts = _slots(points_paths, meta_jsons, grid)
    release = np.stack([np.nan_to_num(io.read_nc3(p)["density"].values).ravel() for p in est_paths])
    _recover(release, truth, starts, grid, linkage_cfg, {"release": f"{runs[0]['mechanism']} estimates"}, out)


def _interval_rows(frame: pd.DataFrame, keys: list[str], metrics) -> pd.DataFrame:
    """Per group of ``keys`` and metric: the repetitions' mean and its 95 % t-interval (``frontier.t_interval``)."""
    rows = []
    for key, part in frame.groupby(keys, sort=True):
        for metric in metrics:
            mean, low, high = t_interval(part[metric])
            rows.append(
                {
                    **dict(zip(keys, key, strict=True)),
                    "metric": metric,
                    "reps": len(part),
                    "mean": mean,
                    "ci_low": low,
                    "ci_high": high,
                }
            )
    return pd.DataFrame(rows, columns=[*keys, "metric", "reps", "mean", "ci_low", "ci_high"])


def _write_csv(table: pd.DataFrame, path: str) -> None:
    with io.atomic_path(path) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")


SETTING = ["dataset", "mechanism", "setting"]


def linkage_summary(
    *,
    bayes_runs: list[dict],
    bayes_paths: list[str],
    recovery_runs: list[dict],
    recovery_paths: list[str],
    out_bayes: str,
    out_recovery: str,
    out_plot: str,
    out_frontier: str,
    guarantees: list[dict],
    dpi: int,
) -> None:
    """Both attacks per setting (and k), mean and 95 % t-interval over the repetitions (csv), the same with each
    setting's trust model and person-level epsilon after k releases (``out_frontier``, :func:`frontier_releases`),
    and the Bayes adversary's expected error (fraction of the prior's) against the number of releases combined
    (png).

    ``*_runs``: per file, its dataset, mechanism, setting (the parameters' folder name; ``exact`` for the
    exact counts) and rep; ``guarantees``: :func:`setting_guarantees`.
    """
    curves = [
        linkage.summarise(part).assign(adversary=adversary, **{c: run[c] for c in (*SETTING, "rep")})
        for run, path in zip(bayes_runs, bayes_paths, strict=True)
        for adversary, part in pd.read_parquet(path).groupby("adversary", sort=True)
    ]
    frame = pd.concat(curves, ignore_index=True)
    keys = [*SETTING, "adversary", "k"]
    bayes_table = _interval_rows(frame, keys, ["expected_error_fraction", "exposed", "hit_r"])
    _write_csv(bayes_table, out_bayes)
    found = [
        pd.read_parquet(p).assign(**{c: run[c] for c in (*SETTING, "rep")})
        for run, p in zip(recovery_runs, recovery_paths, strict=True)
    ]
    frame = pd.concat(found, ignore_index=True)
    metrics = [c for c in frame.columns if c.rsplit("_", 1)[0] in RECOVERY_METRICS or c in RECOVERY_METRICS]
    recovery_table = _interval_rows(frame, SETTING, metrics)
    _write_csv(recovery_table, out_recovery)
    _write_csv(frontier_releases(bayes_table, recovery_table, guarantees), out_frontier)
    _plot(bayes_table, out_plot, dpi)


def setting_guarantees(config: dict, windowed: dict) -> list[dict]:
    """Per windowed setting (the keys of ``datasets.windows.windowed_settings``, first rep): its mechanism's declared
    trust model and the person-level epsilon of each of its T window releases, in window order, as the ledger
    prices them (``ledger.person_record``: group privacy over a person's rows in the window; None where no
    finite bound holds)."""
    out = {}
    for (dataset, mechanism, setting, _), runs in windowed.items():
        if (dataset, mechanism, setting) in out:
            continue
        box = domain_of(config["datasets"][runs[0].dataset])[0]  # geo-ind's bound, as the ledger's
        diameter = float(np.hypot(box.xmax - box.xmin, box.ymax - box.ymin))
        records = [ledger.person_record(config["datasets"][r.dataset], mechanism, r.params, diameter) for r in runs]
        out[(dataset, mechanism, setting)] = {
            "dataset": dataset,
            "mechanism": mechanism,
            "setting": setting,
            "declared_trust_model": mechanisms.get(mechanism).trust_model,
            "epsilon_person_windows": [r["epsilon"] for r in records],
        }
    return list(out.values())


FRONTIER_RELEASES = [
    *SETTING,
    "declared_trust_model",
    "trust_model",
    "attack",
    "k",
    "guarantee_epsilon_person",
    "metric",
    "reps",
    "mean",
    "ci_low",
    "ci_high",
]


def frontier_releases(bayes_table: pd.DataFrame, recovery_table: pd.DataFrame, guarantees: list[dict]) -> pd.DataFrame:
    """The cross-release metrics as functions of the number of releases k, with what the frontier ranks by: one
    row per setting, attack (``cross_release_bayes_<adversary>`` for k = 0..T, ``trajectory_recovery`` at k = T)
    and metric, with the setting's trust model and ``guarantee_epsilon_person``, the person-level epsilon of its
    first k releases under basic composition (the ledger's sum).  As on the frontier, a setting without a finite
    person-level epsilon is listed under trust model ``none`` (``declared_trust_model`` keeps its own), and so are
    the exact counts (no mechanism)."""
    rows = []
    for g in guarantees:
        key = (bayes_table["dataset"] == g["dataset"]) & (bayes_table["mechanism"] == g["mechanism"])
        curve = bayes_table[key & (bayes_table["setting"] == g["setting"])]
        per_window = g["epsilon_person_windows"]
        spent = np.cumsum([np.nan if e is None else e for e in [0.0, *per_window]])  # k = 0 spends nothing
        proved = all(e is not None for e in per_window)
        common = {
            "declared_trust_model": g["declared_trust_model"],
            "trust_model": g["declared_trust_model"] if proved else "none",
        }
        rows.append(
            curve.assign(
                attack="cross_release_bayes_" + curve["adversary"],
                guarantee_epsilon_person=spent[curve["k"].to_numpy()],
                **common,
            )
        )
        key = (recovery_table["dataset"] == g["dataset"]) & (recovery_table["mechanism"] == g["mechanism"])
        found = recovery_table[key & (recovery_table["setting"] == g["setting"])]
        rows.append(
            found.assign(attack="trajectory_recovery", k=len(per_window), guarantee_epsilon_person=spent[-1], **common)
        )
    exact = recovery_table[recovery_table["mechanism"] == "exact"]
    windows = {g["dataset"]: len(g["epsilon_person_windows"]) for g in guarantees}
    rows.append(
        exact.assign(
            attack="trajectory_recovery",
            k=exact["dataset"].map(windows),
            guarantee_epsilon_person=np.inf,
            declared_trust_model="none",
            trust_model="none",
        )
    )
    return pd.concat(rows, ignore_index=True)[FRONTIER_RELEASES]


def _plot(table: pd.DataFrame, out: str, dpi: int) -> None:
    import matplotlib.pyplot as plt

    from .. import figures

    fig, ax = plt.subplots(figsize=(8, 5))
    part = table[table["metric"] == "expected_error_fraction"]
    several = part.groupby(["dataset", "mechanism"])["setting"].nunique().max() > 1  # name settings only then
    colours = figures.mechanism_colours(part["mechanism"].unique())
    for (dataset, mechanism, setting, adversary), line in part.groupby([*SETTING, "adversary"], sort=True):
        spread = [line["mean"] - line["ci_low"], line["ci_high"] - line["mean"]]
        named = f"{dataset} {mechanism} {setting}" if several else f"{dataset} {mechanism}"
        style = {"color": colours[mechanism], "ls": "-" if adversary == "informed" else (0, (4, 2))}
        ax.errorbar(line["k"], line["mean"], yerr=spread, capsize=2, label=f"{named} ({adversary})", **style)
    ax.legend(fontsize=8)
    ax.set_xlabel("releases combined, k [releases]")
    ax.set_ylabel("expected error / no-information adversary's [1]")
    ax.axhline(1.0, color="0.55", lw=1.0, ls=(0, (4, 3)))
    fig.tight_layout()
    figures.save(fig, out, dpi)
