"""Metrics stage (one tidy row per run and metric) and the summary gather."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import io, metrics
from .. import units as lpunits
from ..datasets.persons import person_guarantee_words
from .prepare import load_grid
from .run import configured, n_users_of
from .utility import read_workload


def run_metrics(
    *,
    run: dict,
    est_path: str,
    truth_path: str,
    pooled_path: str | None,
    attack_path: str,
    bayes_path: str,
    workload_path: str,
    grid_path: str,
    bandwidth_json: str | None,
    meta_json: str,
    hotspot_k: int,
    out_metrics: str,
) -> None:
    mech = configured(run, bandwidth_json)
    grid = load_grid(grid_path)
    est = io.read_nc3(est_path)
    dens = est["density"].values
    truth_d = io.read_nc3(truth_path)["density"].values
    att = pd.read_parquet(attack_path)
    workload_queries, workload_sha = read_workload(workload_path)
    g = mech.run_guarantee(run["params"])  # void (no epsilon) if a private input leaked
    answered = bool(np.isfinite(dens).all())
    # the pooled reference is the same users' exact KDE ([RFF-KDE]'s score); a mechanism
    # without a bandwidth answers a constant, whose rank correlation with anything is 0
    pooled_d = io.read_nc3(pooled_path)["density"].values if pooled_path else truth_d
    nan = float("nan")
    values = {
        "answered": float(answered),
        "spearman": metrics.spearman(dens, truth_d) if answered else nan,
        "spearman_pooled": metrics.spearman(dens, pooled_d) if answered else nan,
        "ise": metrics.ise(dens, truth_d, grid.cell_area) if answered else nan,
        "privacy_Z": float(att["Z"].mean()),
        "argmax_error": float(att["argmax_error"].mean()),
        **_utility_and_bayes(
            dens if answered else None,
            truth_d,
            grid,
            workload_queries,
            float(est["density"].attrs["n_users"]),
            hotspot_k,
            pd.read_parquet(bayes_path),
        ),
        "comm_per_user": mech.communication(grid),
        "n_users": float(est["density"].attrs["n_users"]),
        "guarantee_epsilon": float("nan") if g.epsilon is None else float(g.epsilon),
        "guarantee_delta": float("nan") if g.epsilon is None else float(g.delta or 0.0),
    }
    # the run's noise check (``audit.noise``, made by the attack job): NaN where none is made
    checked = io.read_parquet_metadata(bayes_path).get("noise_check") or {}
    for metric, key in (
        ("noise_check_p", "p"),
        ("noise_epsilon_ratio", "epsilon_ratio"),
        ("noise_check_power", "power"),
    ):
        values[metric] = float(checked.get(key, nan))
    meta = io.read_json(meta_json)
    words = g.describe()
    if "persons" in meta:  # rows come from fewer people: the person-level epsilon beside the row-level one
        person, words = person_guarantee_words(g, meta.get("person_cap"), mech.person_reports)
        values["guarantee_epsilon_person"] = nan if person is None else person
    if "h" in mech.settings:
        values["bandwidth"] = float(mech.settings["h"])
    rows = pd.DataFrame({"metric": list(values), "value": list(values.values())})
    rows.insert(0, "rep", run["rep"])
    rows.insert(0, "trust_model", g.trust_model)
    rows.insert(0, "mechanism", run["mechanism"])
    rows.insert(0, "dataset", run["dataset"])
    # the configured parameters with their own types (the summary types each column); n is the
    # number of users the run used, as in the studies' summaries
    for k, v in {**run["params"], "n": n_users_of(run["params"], meta_json)}.items():
        rows[k] = v
    for k in ("model", "relation", "non_private_inputs"):  # what guarantee_epsilon means
        rows[f"guarantee_{k}"] = getattr(g, k)
    rows["guarantee_words"] = words  # the promise in words (the person's on person data)
    io.write_parquet(rows, out_metrics, metadata={"range_workload_sha256": workload_sha})


def _utility_and_bayes(
    dens: np.ndarray | None,
    truth_d: np.ndarray,
    grid,
    queries: np.ndarray,
    n_users: float,
    hotspot_k: int,
    bayes: pd.DataFrame,
) -> dict[str, float]:
    """The shared utility metrics (NaN for a refused query), the Bayes adversaries' means (population:
    ``bayes_*``, informed: ``informed_*``, the no-information adversary who knows only the prior:
    ``prior_*``, and on person data ``prior_informed_*``, scored against the informed adversary's
    target row) with their tails (:func:`tail`) and the informed adversary's invariant statistic, the
    largest over the attacked users (``informed_max_log_ratio``, beside ``guarantee_epsilon``; with
    persons also ``informed_max_log_ratio_person``, beside ``guarantee_epsilon_person``)."""
    nan = float("nan")
    adversaries = [("bayes", ""), ("informed", "informed_")]
    adversaries += [("prior", "prior_")] if "prior_expected_error" in bayes else []
    # persons: the no-information reference scored against the informed adversary's target row
    adversaries += [("prior_informed", "prior_informed_")] if "prior_informed_expected_error" in bayes else []
    values = {
        "range_mre": nan if dens is None else metrics.range_mre(dens, truth_d, grid, queries, int(n_users)),
        "hotspot_recall": nan if dens is None else metrics.hotspot_recall(dens, truth_d, int(hotspot_k)),
        **{
            f"{prefix}_{m}": float(bayes[f"{column}{m}"].mean())
            for prefix, column in adversaries
            for m in ("expected_error", "guess_error", "hit_r")
            if f"{column}{m}" in bayes
        },
        **{
            f"{prefix}_{m}": v
            for prefix, column in adversaries
            for m, v in tail(bayes[f"{column}expected_error"], bayes[f"{column}hit_r"]).items()
        },
        "informed_max_log_ratio": float(bayes["informed_max_log_ratio"].max()),
    }
    if "informed_max_log_ratio_person" in bayes:
        values["informed_max_log_ratio_person"] = float(bayes["informed_max_log_ratio_person"].max())
    return values


# the tail of an adversary's per-user results: a user is exposed when at least half of the posterior
# lies within r of them (hit_r >= EXPOSED_MASS); P10 is the per-user expected error's 10th percentile
EXPOSED_MASS = 0.5
P10 = 0.1


def tail(expected_error: pd.Series, hit_r: pd.Series) -> dict[str, float]:
    """``exposed`` (the fraction of attacked users whose posterior puts mass >= 0.5 within r of them)
    and ``p10_error`` (the error the adversary reaches on the best-located tenth of them): the users
    a mean error hides.  NaN for a refused query (no attacked user)."""
    if not len(expected_error):
        return {"exposed": float("nan"), "p10_error": float("nan")}
    return {
        "exposed": float((hit_r.to_numpy() >= EXPOSED_MASS).mean()),
        "p10_error": float(np.quantile(expected_error.to_numpy(), P10)),
    }


# the main summary's identity columns around the parameter columns (which sit between them, sorted)
LEAD = ["dataset", "mechanism", "trust_model", "rep"]
TAIL = ["metric", "value"]


def _column_dtype(dtypes: list) -> str:
    """One summary column's dtype from the per-run tables' dtypes of it: numbers stay numbers."""
    if all(pd.api.types.is_integer_dtype(d) for d in dtypes):
        return "Int64"
    if all(pd.api.types.is_numeric_dtype(d) and not pd.api.types.is_bool_dtype(d) for d in dtypes):
        return "float64"
    return "object"


def summary(*, metric_paths: list[str], out_parquet: str, out_csv: str, audit_table: str | None = None) -> None:
    """Gather every run's tidy metrics, typed: one row per run and metric.

    Columns: dataset, mechanism, trust_model, rep, the parameter columns (sorted; a run lacking
    one has it missing), metric, value.  A parameter column holds numbers when every run gives
    it numbers (int64, or nullable Int64 where some runs lack it; float64 where some value is a
    float), so epsilon, delta and n sort as numbers; a column holding a word anywhere (a choice,
    or a special value such as h: knn) holds text, numbers written as the config gives them.
    ``n`` is the number of users a run used.  With the combined audit table
    (``locpriv.audit``), every run stating an ε also gets ``audit_epsilon_lb`` (its empirical
    lower bound) and ``audit_confidence`` rows.
    """
    frames = [io.read_parquet_checked(p, LEAD + TAIL) for p in sorted(metric_paths)]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=LEAD + TAIL)
    if audit_table:
        from ..audit.stage import audit_rows  # here, not at the top: a per-run metrics job needs no audit code

        table = pd.concat([table, audit_rows(table, audit_table)], ignore_index=True)
    params = sorted(c for c in table.columns if c not in LEAD + TAIL)
    table = table[LEAD + params + TAIL]
    for column in params:
        dtype = _column_dtype([f[column].dtype for f in frames if column in f])
        values = table[column]
        if dtype == "object":  # text: numbers as the config wrote them, missing as None
            values = values.map(lambda v: None if pd.isna(v) else str(v.item() if isinstance(v, np.generic) else v))
        elif dtype == "Int64" and values.notna().all():
            dtype = "int64"
        table[column] = values.astype(dtype)
    table = table.astype({"rep": "int64", "value": "float64"})
    table = table.sort_values(LEAD + params + ["metric"], kind="stable", na_position="last", ignore_index=True)
    io.write_parquet(table, out_parquet)
    with io.atomic_path(out_csv) as tmp:
        table.to_csv(tmp, index=False, float_format="%.10g")


# the per-target columns of an attack-bayes file kept in attacked_users.parquet (person files add
# person and points): each adversary's expected error and posterior mass within r
ATTACKED_COLUMNS = [
    "expected_error",
    "hit_r",
    "informed_expected_error",
    "informed_hit_r",
    "prior_expected_error",
    "prior_hit_r",
]


def _person_prior(attack: pd.DataFrame) -> list[str]:
    """A person file's no-information reference for the informed adversary (``prior_informed_*``)."""
    return [c for c in ("prior_informed_expected_error", "prior_informed_hit_r") if c in attack]


def attacked_users(*, metric_paths: list[str], attack_paths: list[str], out_parquet: str) -> None:
    """Every run's per-target Bayes results in one table: one row per run and attacked user (or person).

    Columns: the run's identity as in the summary (dataset, mechanism, trust_model, rep, its
    parameters), ``user`` (and ``person``, ``points``, ``prior_informed_*`` on person data) and :data:`ATTACKED_COLUMNS`
    (``bayes_*`` as ``expected_error``, ``hit_r``).  ``metric_paths[k]`` is the metrics table of
    the run whose attack file is ``attack_paths[k]``; the run's identity is read from it.  This is
    what the frontier's tail statistics (``exposed``, ``p10_error``) summarise, kept so a reader can
    see which users a setting exposes.
    """
    frames = []
    for metrics_path, attack_path in sorted(zip(metric_paths, attack_paths, strict=True)):
        ident = io.read_parquet_checked(metrics_path, LEAD + TAIL).iloc[:1]
        ident = ident.drop(columns=[c for c in ident if c in TAIL or c.startswith("guarantee_")])
        att = io.read_parquet_checked(attack_path, ["user", *ATTACKED_COLUMNS])
        att = att[[c for c in ("user", "person", "points") if c in att] + ATTACKED_COLUMNS + _person_prior(att)]
        frames.append(ident.merge(att, how="cross"))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*LEAD, "user"])
    for column in table.columns:  # a parameter some runs lack: text, as in the summary
        if table[column].dtype == object:
            table[column] = table[column].map(lambda v: None if pd.isna(v) else str(v))
    io.write_parquet(table, out_parquet)


# Units of the tidy metrics, "{u}" standing for the dataset's distance unit; metrics not listed keep
# their bare name.
METRIC_UNITS = {
    "spearman": "rank corr.",
    "spearman_pooled": "rank corr.",
    "ise": "1/{u}^2",
    "privacy_Z": "{u}",
    "argmax_error": "{u}",
    "bayes_expected_error": "{u}",
    "bayes_guess_error": "{u}",
    "bayes_hit_r": "probability",
    "informed_expected_error": "{u}",
    "informed_guess_error": "{u}",
    "informed_hit_r": "probability",
    "informed_p10_error": "{u}",
    "informed_exposed": "fraction of users",
    "bayes_p10_error": "{u}",
    "bayes_exposed": "fraction of users",
    "prior_expected_error": "{u}",
    "prior_p10_error": "{u}",
    "prior_exposed": "fraction of users",
    "prior_informed_expected_error": "{u}",
    "prior_informed_p10_error": "{u}",
    "prior_informed_exposed": "fraction of users",
    "guarantee_delta": "probability",
    "informed_max_log_ratio": "nats, per {u} if metric",
    "informed_max_log_ratio_person": "nats, per {u} if metric",
    "noise_check_p": "p-value",
    "noise_epsilon_ratio": "realised / recorded",
    "noise_check_power": "probability, 2 eps fault",
    "range_mre": "fraction",
    "hotspot_recall": "fraction",
    "comm_per_user": "numbers sent",
    "n_users": "users",
    "answered": "fraction of reps",
    "bandwidth": "{u}",
}
# the decision columns first: utility, then the adversary's error, then cost
METRIC_ORDER = [
    "spearman",
    "range_mre",
    "hotspot_recall",
    "ise",
    "informed_expected_error",
    "informed_guess_error",
    "informed_hit_r",
    "informed_p10_error",
    "informed_exposed",
    "prior_expected_error",
    "prior_p10_error",
    "prior_informed_expected_error",
    "prior_informed_p10_error",
    "informed_max_log_ratio",
    "informed_max_log_ratio_person",
    "bayes_expected_error",
    "bayes_guess_error",
    "bayes_hit_r",
    "privacy_Z",
    "argmax_error",
    "comm_per_user",
    "n_users",
    "answered",
]


def per_run(tidy: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The tidy summary as one row per run (metrics as columns) and its other (parameter) columns.

    Only the runs that exist: no cross product of parameter values (``pivot_table(dropna=False)``
    builds one, which exhausts memory once mechanisms declare a dozen parameters).
    """
    params = sorted((c for c in tidy.columns if c not in LEAD + TAIL), key=lambda c: (c != "n", c))
    key = ["dataset", "mechanism", "trust_model", *params, "rep"]
    return tidy.set_index([*key, "metric"])["value"].unstack("metric").reset_index().rename_axis(columns=None), params


def runs_table(*, summary_parquet: str, units: dict[str, str], out_csv: str) -> pd.DataFrame:
    """One row per dataset x mechanism x setting, metrics averaged over repetitions (``runs.csv``).

    ``units`` maps each dataset to its distance unit; a metric column carries its unit in its name
    (``privacy_Z [m]``), "[distance_unit]" when the datasets' units differ (the ``distance_unit``
    column then says which).  ``epsilon_guaranteed`` is the recorded guarantee's epsilon (empty: no
    formal DP) and ``delta_guaranteed`` its delta, for the neighbouring relation ``epsilon_relation``
    under ``epsilon_model`` when the summary carries them (``guarantee_relation``, ``guarantee_model``);
    ``guarantee`` says it in words, with the bound under every relation the record states and, on
    person data, the person-level one (``Guarantee.describe``); a parameter column such as
    ``epsilon`` is the mechanism's setting, in the units its documentation states.
    """
    tidy = pd.read_parquet(summary_parquet)
    wide, columns = per_run(tidy)
    info = [c for c in columns if c.startswith("guarantee_")]  # per-run text, not a setting
    params = [c for c in columns if c not in info]
    key = ["dataset", "mechanism", "trust_model", *params]
    guaranteed = {"guarantee_epsilon": "epsilon_guaranteed", "guarantee_delta": "delta_guaranteed"}
    wide = wide.rename(columns=guaranteed)
    metrics = [m for m in METRIC_ORDER if m in wide] + sorted(
        m for m in wide.columns if m not in METRIC_ORDER and m not in (*key, *info, "rep", *guaranteed.values())
    )
    grouped = wide.groupby(key, sort=True, dropna=False)  # a parameter a mechanism lacks is missing
    table = grouped[[c for c in (*guaranteed.values(), *metrics) if c in wide]].mean()
    table.insert(0, "reps", grouped["rep"].nunique())
    if info:  # guarantee_words (the promise in words) as "guarantee", the others as epsilon_*
        named = {c: "guarantee" if c == "guarantee_words" else c.replace("guarantee_", "epsilon_") for c in info}
        table = table.join(grouped[info].first().rename(columns=named))
    table = table.reset_index()
    named = {ds: lpunits.name(u) for ds, u in units.items()}
    table.insert(2, "distance_unit", table["dataset"].map(named).fillna(lpunits.name("")))
    shared = table["distance_unit"].iloc[0] if table["distance_unit"].nunique() == 1 else "distance_unit"
    eps = [
        c
        for c in ("epsilon_guaranteed", "delta_guaranteed", "guarantee", "epsilon_relation", "epsilon_model")
        if c in table
    ]
    table = table[["dataset", "mechanism", "trust_model", *params, "reps", "distance_unit", *eps, *metrics]]
    table = table.rename(columns={m: f"{m} [{METRIC_UNITS[m].format(u=shared)}]" for m in metrics if m in METRIC_UNITS})
    with io.atomic_path(out_csv) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
    return table
