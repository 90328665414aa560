"""The privacy-utility frontier, per trust model: every mechanism x setting judged by one adversary,
over replicated releases, on each utility task, with the tail of the attacked users in view.

Per dataset and N, each mechanism x parameter setting is released R times independently (the
config's ``reps``); each release gives its utility on every task and the adversary's per-user
results.  A setting is a point (privacy, utility) of means over the releases, each with a 95 %
**t-interval** over the releases (mean +- t(0.975, R - 1) s / sqrt(R)).  Why t and not a percentile
bootstrap: with R = 3 to 5 releases a percentile bootstrap's interval cannot reach beyond the
smallest and largest release and covers far less than 95 %; each release's metric is itself a
mean over hundreds of users or cells, close enough to normal for the t-interval's assumption.
With R = 1 there is no interval, so nothing qualifies (the note says so).

The privacy axis is one statistic (``frontier.privacy``) of one adversary's per-user results
(``frontier.adversary``; Shokri et al. 2011's expected localisation error, higher = more private):

* ``p10`` (default): the 10th percentile of the per-user expected error, the error the adversary
  still makes on the best-located tenth of the attacked users.  The default because an analyst
  must be able to say what the least protected users get: a mean error can be high while most
  users are exposed (``rff`` B = 2: mean 0.70 of the prior's error, 64.5 % exposed);
* ``mean``: the mean per-user expected error;
* ``exposed``: the fraction of attacked users with posterior mass >= 0.5 within r of them (lower
  is more private; levels are then the largest fractions allowed, ``levels.exposed``).

``exposed`` is shown beside the error whatever the axis.  The adversaries: ``informed`` (default),
the DP neighbour model's adversary, which knows every other user's location; ``population``,
whose only background knowledge is the population prior.

Mechanisms differ in whom the user must trust (``trust_model``: ``local`` trusts no one,
``distributed`` trusts secure aggregation not to collude, ``central`` trusts a curator with the raw
data, ``none`` has no privacy mechanism to trust), so they are ranked within their trust model
only.  A setting whose guarantee record proves no epsilon (on person data: no finite person-level
epsilon) is listed under ``none`` whatever its mechanism declares (``declared_trust_model`` keeps
it): a trust model is a promise only where a proof stands behind it.

Levels (``frontier.levels``) are by default fractions of the no-information adversary's
statistic (the prior as every posterior, on the same attacked users): 0.5 means "at least half of
what knowing nothing gives".  ``levels.of: absolute`` uses the former distances instead (fractions
of the domain's side, metres for real data).  A setting **qualifies** for a level when the lower
end of its privacy interval reaches it (for ``exposed``: the upper end stays at or below it).

The decision, per utility task (``frontier.utility``, default all four: spearman, ise,
range_mre, hotspot_recall): the constant map (mechanism ``zero``) is the floor; a setting whose
utility is not significantly better than the floor's is never recommended (``above_floor`` False
in ``frontier.csv``).  Among the qualifying settings above the floor the best mean utility is
recommended (``best_at_level``), and every other one whose utility is not significantly worse is
listed beside it (``not_worse_at_level``, with its p-value).  Both comparisons are one-sided paired
t-tests over the releases, paired by release index (rep), at ``ALPHA`` = 0.05; a difference with
no spread across the releases (both deterministic) is significant exactly when it is not 0.
Pairing by rep index does not share noise between settings (each release draws its own), so it
gains no power over an unpaired test; it is the test that needs no equal-variance assumption
with R - 1 degrees of freedom.  With R = 3 the test has little power: the not-worse list is long
by design, and a shorter one needs more releases.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import io, report_tables
from . import units as lpunits

# frontier.adversary -> the prefix of its metrics in the summary
ADVERSARIES = {"informed": "informed", "population": "bayes"}
ADVERSARY_NAMES = {
    "informed": "informed adversary (knows everyone else)",
    "population": "population adversary (knows the prior)",
}
# the per-release privacy columns (each adversary's metric name after its prefix)
PRIVACY = ("expected_error", "guess_error", "hit_r", "p10_error", "exposed")
# frontier.privacy -> its column, whether larger is more private, and its name for readers
PRIVACY_METRICS = {
    "p10": ("p10_error", True, "10th-percentile expected error"),
    "mean": ("expected_error", True, "expected error"),
    "exposed": ("exposed", False, "fraction of users exposed"),
}
# the no-information adversary's statistic that a relative level is a fraction of
NO_INFORMATION = {"expected_error": "no_info_expected_error", "p10_error": "no_info_p10_error"}
# utility metrics the frontier can use, and whether larger is better
UTILITIES = {"spearman": True, "ise": False, "range_mre": False, "hotspot_recall": True}
# errors that span orders of magnitude between mechanisms (ISE of a noisy local map vs a central one:
# 100x and more): a linear axis squeezes every good setting onto its floor, so these panels are drawn
# on a log axis when all their values are positive
LOG_UTILITIES = {"ise", "range_mre"}
UTILITY_LABELS = {
    "spearman": "Spearman with the true density [rank corr.]",
    "hotspot_recall": "recall of the true top-k cells [fraction]",
    "range_mre": "range-query mean relative error [fraction]",
    "ise": "integrated squared error [1/{u}²]",
}
TRUST_MODELS = ("local", "distributed", "central", "none")
TRUST_MARKERS = {"local": "o", "distributed": "s", "central": "D", "none": "^"}
TRUST_LINES = {"local": "-", "distributed": (0, (5, 2)), "central": (0, (1, 1.5)), "none": (0, (6, 2, 1, 2))}
LEVEL_STYLE = {"color": "0.55", "lw": 1.0, "ls": (0, (4, 3)), "zorder": 1}
CONFIDENCE = 0.95  # of every interval
ALPHA = 0.05  # of the paired tests (floor, not worse than the best)
FLOOR = "zero"  # the constant map: a recommendation must beat publishing nothing
DEFAULTS = {
    "utility": list(UTILITIES),
    "adversary": "informed",
    "privacy": "p10",
    "levels": {
        "of": "no_information",
        "no_information": [0.5, 0.75, 0.9],
        "synthetic": [0.1, 0.25, 0.5],
        "real": [250, 500, 1000],
        "exposed": [0.5, 0.25, 0.1],
    },
}
TABLE_COLUMNS = [
    "dataset",
    "n",
    "trust_model",
    "row",
    "level",
    "level_name",
    "mechanism",
    "setting",
    "utility_metric",
    "utility",
    "utility_ci_low",
    "utility_ci_high",
    "above_floor",
    "p_worse_than_best",
    "adversary",
    "privacy_metric",
    "privacy",
    "privacy_ci_low",
    "privacy_ci_high",
    "expected_error",
    "p10_error",
    "exposed",
    "guess_error",
    "hit_r",
    "distance_unit",
    "reps",
    "epsilon_guaranteed",
    "guarantee",
    "declared_trust_model",
    "note",
]
# parameters that are the privacy budget: always part of a setting's name, first
BUDGET = ("epsilon", "delta", "B")
SYMBOLS = {"epsilon": "ε", "delta": "δ"}
NO_SETTING = "no setting of this trust model keeps the adversary at or beyond the level (lower end of its interval)"
BELOW_FLOOR = "settings reach the level, but none is significantly better than the constant map on this task"
NO_PROOF = "no proof"


def settings(config: dict) -> dict:
    given = config.get("frontier", {})
    utility = given.get("utility", DEFAULTS["utility"])
    return {
        "utility": [utility] if isinstance(utility, str) else list(utility),
        "adversary": given.get("adversary", DEFAULTS["adversary"]),
        "privacy": given.get("privacy", DEFAULTS["privacy"]),
        "levels": {**DEFAULTS["levels"], **given.get("levels", {})},
    }


def dataset_levels(datasets: dict, levels: dict, domains: dict) -> dict[str, dict]:
    """Absolute privacy levels per dataset, in its distance units, keyed by what they mean.

    Synthetic data: ``levels.synthetic`` are fractions of the domain's shorter side
    ({"10 % of side": 0.6, ...}); real data in a length unit: ``levels.real`` are metres,
    converted to the dataset's unit by ``locpriv.sanity.privacy_levels`` ({"250 m": 0.25} for
    data in km); real data without a length unit: the fractions, as for synthetic data.
    ``domains`` maps each dataset to its Domain.  Values are rounded to 12 significant digits
    (0.6, not 0.6000000000000001).
    """
    from .sanity import distance_unit, privacy_levels

    out = {}
    for name, spec in datasets.items():
        values = privacy_levels(spec, domains[name], levels)
        if spec["source"] == "synthetic" or distance_unit(spec) is None:
            labels = [f"{f * 100:g} % of side" for f in levels["synthetic"]]
        else:
            labels = [f"{v:g} m" for v in levels["real"]]
        out[name] = {label: float(f"{v:.12g}") for label, v in zip(labels, values, strict=True)}
    return out


def _value(v) -> str | None:
    """A parameter value as written in a setting: numbers plainly (2, not 2.0), missing as None."""
    if v is None or (isinstance(v, str) and v == "") or (not isinstance(v, str) and pd.isna(v)):
        return None
    try:
        return f"{float(v):g}"
    except (TypeError, ValueError):
        return str(v)


def _n_key(n) -> tuple:
    try:
        return (0, float(n), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(n))


def _n_value(n):
    """N as an integer where it is one (a typed 1000.0 or a string "1000"), else as given ("all")."""
    try:
        f = float(n)
    except (TypeError, ValueError):
        return n
    return int(f) if f.is_integer() else f


def _settings(runs: pd.DataFrame, params: list[str]) -> tuple[pd.Series, pd.Series]:
    """Each run's setting ("epsilon=2, estimator=naive") and its short label for figures ("ε=2, naive").

    A setting names the privacy budget (epsilon, delta, B) and the parameters that differ between
    the mechanism's runs; values every run of the mechanism shares (defaults) are left out.
    """
    setting, label = pd.Series("", index=runs.index), pd.Series("", index=runs.index)
    for _, group in runs.groupby("mechanism", sort=False):
        values = group[params].map(_value) if params else group[[]]
        varied = [p for p in params if values[p].nunique(dropna=False) > 1]
        shown = [p for p in BUDGET if p in params and values[p].notna().any()]
        shown += sorted(p for p in varied if p not in shown)
        for idx, row in values.iterrows():
            items = [(p, row[p]) for p in shown if row[p] is not None]
            setting[idx] = ", ".join(f"{p}={v}" for p, v in items)
            # a word value names itself ("naive"); a number needs its parameter ("B=8", "ε=2")
            label[idx] = ", ".join(
                v if p not in BUDGET and not _is_number(v) else f"{SYMBOLS.get(p, p)}={v}" for p, v in items
            )
    return setting, label


def _is_number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


def releases(summary: pd.DataFrame, adversary: str = "informed") -> pd.DataFrame:
    """One row per dataset x n x mechanism x setting x release (rep): what the frontier decides from.

    Columns: dataset, n, declared_trust_model, mechanism, setting, label, rep, the utility metrics
    the summary has (:data:`UTILITIES`), the adversary's :data:`PRIVACY` metrics, the
    no-information adversary's ``no_info_expected_error`` and ``no_info_p10_error`` (NaN in an
    older summary; on person data, for the informed adversary, its ``prior_informed_*``: the prior
    scored against the row the informed adversary attacks, not the person's nearest point),
    ``epsilon_guaranteed`` (the person-level epsilon on a dataset with persons, inf where unbounded)
    and ``guarantee`` (in words; "" in an older summary).  Releases whose query was refused (no
    utility or no adversary error) are left out.  A summary without the
    adversary's metrics or without ``trust_model`` is refused with the fix.
    """
    prefix = ADVERSARIES[adversary]
    if f"{prefix}_expected_error" not in set(summary["metric"]):
        raise ValueError(
            f"no {prefix}_expected_error metric, which frontier.adversary: {adversary} ranks by; "
            f"re-run the attack stage with this version, or set frontier.adversary: "
            f"{'population' if adversary == 'informed' else 'informed'}"
        )
    if "trust_model" not in summary.columns:
        raise ValueError(
            "no trust_model column: the summary was made by an older version; "
            "delete results/summary/metrics.parquet and run the workflow again"
        )
    unknown = summary.loc[~summary["trust_model"].isin(TRUST_MODELS), "mechanism"].unique()
    if len(unknown):
        raise ValueError(
            f"trust_model is not one of {', '.join(TRUST_MODELS)} for mechanism(s) "
            f"{', '.join(sorted(unknown))}: each mechanism must declare whom its users trust"
        )
    metrics = {
        **{u: u for u in UTILITIES},
        **{f"{prefix}_{p}": p for p in PRIVACY},
        **{f"prior_{p}": f"no_info_{p}" for p in NO_INFORMATION},
        **({f"prior_informed_{p}": f"no_info_rows_{p}" for p in NO_INFORMATION} if adversary == "informed" else {}),
        "guarantee_epsilon": "epsilon_guaranteed",
        "guarantee_epsilon_person": "epsilon_person",
    }
    fixed = {"dataset", "mechanism", "rep", "metric", "value", "n", "trust_model"}
    params = sorted(c for c in summary.columns if c not in fixed and not c.startswith("guarantee_"))
    key = ["dataset", "n", "trust_model", "mechanism", *params]
    words = summary["guarantee_words"].fillna("") if "guarantee_words" in summary else ""
    rows = summary[summary["metric"].isin(list(metrics))].assign(guarantee=words)
    wide = (
        rows.set_index([*key, "rep", "guarantee", "metric"])["value"]
        .unstack("metric")
        .rename(columns=metrics)
        .reset_index()
        .rename_axis(columns=None)
    )
    for column in metrics.values():  # an older summary lacks some: missing, not an error
        if column not in wide:
            wide[column] = np.nan
    persons = set(summary.loc[summary["metric"] == "guarantee_epsilon_person", "dataset"])
    on_persons = wide["dataset"].isin(persons)
    wide["epsilon_guaranteed"] = wide["epsilon_guaranteed"].where(~on_persons, wide.pop("epsilon_person"))
    if adversary == "informed":  # persons: its error is to the attacked row, and so is its reference's
        for p, column in NO_INFORMATION.items():
            wide[column] = wide[column].where(~on_persons, wide.pop(f"no_info_rows_{p}"))
    wide = wide.dropna(subset=["expected_error"])
    wide = wide[wide[list(UTILITIES)].notna().any(axis=1)].reset_index(drop=True)
    wide["setting"], wide["label"] = _settings(wide, params)
    wide["n"] = wide["n"].map(_n_value)
    wide = wide.rename(columns={"trust_model": "declared_trust_model"})
    columns = ["dataset", "n", "declared_trust_model", "mechanism", "setting", "label", "rep"]
    columns += [*UTILITIES, *PRIVACY, *NO_INFORMATION.values(), "epsilon_guaranteed", "guarantee"]
    return wide[columns]


def t_interval(values) -> tuple[float, float, float]:
    """Mean and the 95 % t-interval of the mean over releases (NaN ends with fewer than two)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return math.nan, math.nan, math.nan
    mean = float(v.mean())
    if len(v) < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return mean, mean - half, mean + half


def paired_better(a: pd.Series, b: pd.Series, higher_is_better: bool) -> tuple[bool, float]:
    """(significant, p): a one-sided paired t-test over releases (series indexed by rep, paired by it)
    that ``a`` is better than ``b`` at :data:`ALPHA`.  Differences without spread (both releases
    deterministic) are significant exactly when positive; fewer than two pairs never are."""
    from scipy import stats

    d = (a - b).dropna().to_numpy(dtype=float) * (1.0 if higher_is_better else -1.0)
    if len(d) < 2:
        return False, math.nan
    sd = d.std(ddof=1)
    if sd == 0:
        return bool(d.mean() > 0), 0.0 if d.mean() > 0 else 1.0
    p = float(stats.t.sf(d.mean() / (sd / math.sqrt(len(d))), len(d) - 1))
    return p < ALPHA, p


SETTING_KEY = ["dataset", "n", "declared_trust_model", "mechanism", "setting", "label"]


def points(rel: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset x n x mechanism x setting: every metric's mean over the releases and,
    for the utilities and the privacy statistics, its interval (``<metric>_ci_low``,
    ``<metric>_ci_high``, :func:`t_interval`).  ``reps``: the releases that answered.
    ``trust_model``: the declared one where the setting's guarantee proves an epsilon (finite, in
    every release), else ``none``; ``guarantee`` then reads "no proof" first.
    """
    rows = []
    for ident, group in rel.groupby(SETTING_KEY, sort=False, dropna=False):
        row = dict(zip(SETTING_KEY, ident, strict=True))
        for column in (*UTILITIES, *PRIVACY, *NO_INFORMATION.values()):
            row[column], row[f"{column}_ci_low"], row[f"{column}_ci_high"] = t_interval(group[column])
        eps = group["epsilon_guaranteed"].to_numpy(dtype=float)
        proven = bool(len(eps) and np.isfinite(eps).all())
        row["epsilon_guaranteed"] = float(eps.max()) if len(eps) and not np.isnan(eps).any() else math.nan
        words = group["guarantee"].iloc[0]
        row["guarantee"] = words if proven or words.startswith(NO_PROOF) else f"{NO_PROOF}: {words}".rstrip(": ")
        row["trust_model"] = row["declared_trust_model"] if proven else "none"
        row["reps"] = group["rep"].nunique()
        rows.append(row)
    out = pd.DataFrame(rows)
    order = out.assign(_n=out["n"].map(_n_key), _t=out["trust_model"].map(TRUST_MODELS.index))
    return out.loc[order.sort_values(["dataset", "_n", "_t", "mechanism", "setting"]).index].reset_index(drop=True)


def levels_of(pts: pd.DataFrame, cfg: dict, absolute: dict[str, dict]) -> dict[tuple, dict[str, float]]:
    """The privacy levels per (dataset, n): {name: value of the privacy statistic}.

    ``frontier.privacy: exposed``: the largest fractions of exposed users allowed
    (``levels.exposed``).  Otherwise by default (``levels.of: no_information``) fractions of the
    no-information adversary's same statistic on the same attacked users (its mean over the
    settings' releases, which all attack the same users with the same prior); with ``levels.of:
    absolute`` the distances of ``absolute`` (:func:`dataset_levels`, per dataset).
    """
    column, _, _ = PRIVACY_METRICS[cfg["privacy"]]
    out = {}
    for dataset, n, group in _groups(pts):
        if column == "exposed":
            out[(dataset, n)] = {f"at most {f * 100:g} % exposed": float(f) for f in cfg["levels"]["exposed"]}
        elif cfg["levels"]["of"] == "absolute":
            out[(dataset, n)] = dict(absolute.get(dataset, {}))
        else:
            reference = group[NO_INFORMATION[column]].mean()
            if not np.isfinite(reference):
                raise ValueError(
                    f"no prior_{column} metric for {dataset}, N = {n} (the no-information adversary's, "
                    "which frontier.levels.of: no_information needs): re-run the attack stage with this "
                    "version, or set frontier.levels.of: absolute"
                )
            out[(dataset, n)] = {
                f"{f * 100:g} % of no-information": float(f"{f * reference:.12g}")
                for f in cfg["levels"]["no_information"]
            }
    return out


def pareto_mask(privacy: np.ndarray, utility: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """True where no other point has privacy >= and utility >= (better-or-equal) with one strict."""
    p = np.asarray(privacy, dtype=float)
    u = np.asarray(utility, dtype=float) * (1.0 if higher_is_better else -1.0)
    ge = (p[None, :] >= p[:, None]) & (u[None, :] >= u[:, None])
    gt = (p[None, :] > p[:, None]) | (u[None, :] > u[:, None])
    return ~(ge & gt).any(axis=1)


def _groups(pts: pd.DataFrame):
    """(dataset, n, its points) in dataset and numeric-N order."""
    keys = sorted({(d, n) for d, n in zip(pts["dataset"], pts["n"], strict=True)}, key=lambda k: (k[0], _n_key(k[1])))
    for dataset, n in keys:
        yield dataset, n, pts[(pts["dataset"] == dataset) & (pts["n"] == n)]


def _oriented(privacy: str) -> tuple[str, float]:
    """The privacy statistic's column and the sign that makes larger more private."""
    column, more, _ = PRIVACY_METRICS[privacy]
    return column, 1.0 if more else -1.0


def _front(group: pd.DataFrame, utility: str, privacy: str) -> pd.DataFrame:
    column, sign = _oriented(privacy)
    mask = pareto_mask(sign * group[column], group[utility], UTILITIES[utility])
    return group[mask].assign(_p=sign * group[column]).sort_values(["_p", utility]).drop(columns="_p")


def _per_release(rel: pd.DataFrame, utility: str) -> dict:
    """(dataset, n, mechanism, setting) -> the utility per release (a Series indexed by rep)."""
    return {
        key: g.set_index("rep")[utility] for key, g in rel.groupby(["dataset", "n", "mechanism", "setting"], sort=False)
    }


def _qualifies(part: pd.DataFrame, privacy: str, level: float) -> pd.Series:
    """The interval's far end reaches the level (a missing interval never does)."""
    column, more, _ = PRIVACY_METRICS[privacy]
    return part[f"{column}_ci_low"] >= level if more else part[f"{column}_ci_high"] <= level


def table(
    pts: pd.DataFrame,
    rel: pd.DataFrame,
    utility: str,
    levels: dict[tuple, dict[str, float]],
    privacy: str = "p10",
    adversary: str = "informed",
    units: dict[str, str] | None = None,
) -> pd.DataFrame:
    """``frontier.csv`` for one utility task: per dataset, n and trust model, the Pareto-optimal
    settings (row = pareto, on the means), and per privacy level the recommended setting
    (best_at_level) and the qualifying ones not significantly worse (not_worse_at_level, with
    ``p_worse_than_best``).  ``above_floor``: whether the setting's utility is significantly better
    than the constant map's (empty without a ``zero`` run).  When no setting of a trust model may
    be recommended at a level its best_at_level row keeps the level, leaves mechanism, setting
    and the metrics empty and says why in ``note``."""
    higher = UTILITIES[utility]
    column, _, _ = PRIVACY_METRICS[privacy]
    per_release = _per_release(rel, utility)
    units = units or {}
    rows = []
    for dataset, n, group in _groups(pts):
        unit = lpunits.name(units.get(dataset, ""))
        floors = [v for (d, m, mech, _), v in per_release.items() if (d, m, mech) == (dataset, n, FLOOR)]
        floor = floors[0] if len(floors) == 1 else None
        group = group.assign(
            above_floor=[
                pd.NA if floor is None else paired_better(per_release[(dataset, n, m, s)], floor, higher)[0]
                for m, s in zip(group["mechanism"], group["setting"], strict=True)
            ]
        )
        for trust in [t for t in TRUST_MODELS if t in set(group["trust_model"])]:
            part = group[group["trust_model"] == trust]
            base = {"dataset": dataset, "n": n, "trust_model": trust, "distance_unit": unit, "note": ""}
            front = _front(part, utility, privacy).to_dict("records")
            rows += [{**r, **base, "row": "pareto", "level": np.nan} for r in front]
            for name, level in levels.get((dataset, n), {}).items():
                at = {**base, "level": level, "level_name": name}
                reach = part[_qualifies(part, privacy, level)]
                candidates = reach[reach["above_floor"].fillna(True).astype(bool)]
                if candidates.empty:
                    note = NO_SETTING if reach.empty else BELOW_FLOOR
                    # reps: the trust model's fewest releases, what the empty answer rests on
                    empty = {"mechanism": "", "setting": "", "note": note, "reps": part["reps"].min()}
                    rows.append({**at, "row": "best_at_level", **empty})
                    continue
                # best mean utility; among equals the more private, then by name (a stable choice)
                sign = _oriented(privacy)[1]
                ranked = candidates.assign(_p=sign * candidates[column]).sort_values(
                    [utility, "_p", "mechanism", "setting"], ascending=[not higher, False, True, True]
                )
                best = ranked.iloc[0]
                rows.append({**best.to_dict(), **at, "row": "best_at_level"})
                best_release = per_release[(dataset, n, best["mechanism"], best["setting"])]
                for _, other in ranked.iloc[1:].iterrows():
                    worse, p = paired_better(
                        best_release, per_release[(dataset, n, other["mechanism"], other["setting"])], higher
                    )
                    if not worse:
                        rows.append({**other.to_dict(), **at, "row": "not_worse_at_level", "p_worse_than_best": p})
    out = pd.DataFrame(rows)
    for c in TABLE_COLUMNS:
        if c not in out:
            out[c] = np.nan
    out["utility"] = out[utility]
    out["utility_ci_low"], out["utility_ci_high"] = out[f"{utility}_ci_low"], out[f"{utility}_ci_high"]
    out["privacy"] = out[column]
    out["privacy_ci_low"], out["privacy_ci_high"] = out[f"{column}_ci_low"], out[f"{column}_ci_high"]
    out["utility_metric"], out["privacy_metric"], out["adversary"] = utility, privacy, adversary
    out["reps"] = out["reps"].astype("Int64")
    for c in ("mechanism", "setting", "guarantee", "declared_trust_model", "level_name", "note"):
        out[c] = out[c].fillna("")
    return out[TABLE_COLUMNS]


def _distance(value, unit: str, privacy: str) -> str:
    """A privacy value for readers: a distance with its unit, or a percentage of users."""
    if PRIVACY_METRICS[privacy][0] == "exposed":
        return f"{value * 100:.0f} %"
    return lpunits.distance(value, unit)


def recommendation(frontier_table: pd.DataFrame) -> pd.DataFrame:
    """The decision at a glance for one utility task: one row per dataset x N x privacy level, one
    column per trust model.

    A cell is (mechanism and setting, the details): the utility with its interval, the privacy
    statistic with its interval, ``exposed``, the guarantee in words and the qualifying settings
    not significantly worse ("also: ..."); or ("—", why) where no setting may be recommended.
    """
    best = frontier_table[frontier_table["row"] == "best_at_level"]
    also = frontier_table[frontier_table["row"] == "not_worse_at_level"]
    trusts = [t for t in TRUST_MODELS if t in set(best["trust_model"])]
    rows = []
    for (dataset, n, level), part in best.groupby(["dataset", "n", "level"], sort=False):
        first = part.iloc[0]
        unit, privacy = first["distance_unit"], first["privacy_metric"]
        row = {
            "dataset": dataset,
            "N": n,
            f"{PRIVACY_METRICS[privacy][2]} at least" if PRIVACY_METRICS[privacy][1] else "exposed at most": (
                _distance(level, unit, privacy),
                first["level_name"],
            ),
        }
        for trust in trusts:
            cell = part[part["trust_model"] == trust]
            if cell.empty:
                row[trust] = ""
            elif not cell["mechanism"].iloc[0]:
                row[trust] = ("—", cell["note"].iloc[0])
            else:
                r = cell.iloc[0]
                others = also[(also["dataset"] == dataset) & (also["n"] == n) & (also["level"] == level)]
                others = others[others["trust_model"] == trust]
                # no-break spaces keep each number with its name when the cell wraps
                detail = [
                    f"{r['utility_metric']}\u00a0{_number(r['utility'])} "
                    f"[{_number(r['utility_ci_low'])},\u00a0{_number(r['utility_ci_high'])}]",
                    f"{privacy}\u00a0{_distance(r['privacy'], unit, privacy)} "
                    f"[{_distance(r['privacy_ci_low'], unit, privacy)},\u00a0"
                    f"{_distance(r['privacy_ci_high'], unit, privacy)}]",
                    f"exposed\u00a0{r['exposed'] * 100:.0f}\u00a0%",
                    r["guarantee"],
                ]
                if len(others):
                    detail.append(
                        "also: "
                        + "; ".join(
                            f"{m} {s}".strip() for m, s in zip(others["mechanism"], others["setting"], strict=True)
                        )
                    )
                row[trust] = (f"{r['mechanism']} {r['setting']}".strip(), " · ".join(detail))
        rows.append(row)
    return pd.DataFrame(rows)


def _number(v: float) -> str:
    """A utility for readers: three significant digits (0.912, 0.0561)."""
    return "—" if not np.isfinite(v) else f"{v:.3g}"


DISTANCES = ("expected_error", "p10_error", "guess_error")
FRACTIONS = ("exposed", "hit_r")


def readable(frontier_table: pd.DataFrame) -> pd.DataFrame:
    """``frontier.csv`` for the HTML page: distances with their unit and three significant digits
    ("254 m", "10.5 km"), fractions of users as percentages, utilities to three digits."""
    out = frontier_table.copy()
    units = out["distance_unit"]
    exposed = out["privacy_metric"].map(lambda p: PRIVACY_METRICS[p][0] == "exposed")
    for column in (*DISTANCES, "level", "privacy", "privacy_ci_low", "privacy_ci_high"):
        shared = exposed if column in ("level", "privacy", "privacy_ci_low", "privacy_ci_high") else False
        out[column] = [
            "" if pd.isna(v) else f"{v * 100:.0f} %" if share else lpunits.distance(v, u)
            for v, u, share in zip(out[column], units, np.broadcast_to(shared, len(out)), strict=True)
        ]
    for column in FRACTIONS:
        out[column] = ["" if pd.isna(v) else f"{v * 100:.0f} %" for v in out[column]]
    for column in ("utility", "utility_ci_low", "utility_ci_high", "p_worse_than_best"):
        out[column] = ["" if pd.isna(v) else _number(v) for v in out[column]]
    return out.drop(columns="distance_unit")


def plot(
    pts: pd.DataFrame,
    utilities: list[str],
    levels: dict[tuple, dict[str, float]],
    units: dict[str, str],
    out_png: str,
    dpi: int = 110,
    adversary: str = "informed",
    privacy: str = "p10",
) -> None:
    """One panel per utility task (rows) x dataset and N (columns): every setting a marker (colour:
    mechanism, shape: trust model) with its 95 % intervals on both axes and a number naming it in
    the key, the Pareto front of each trust model a black step line (drawn from the panel's left
    edge, so a one-point front shows), the privacy levels grey verticals."""
    from . import figures  # matplotlib: here, not at the top (the Snakefile imports this module)

    fig = figure(pts, utilities, levels, units, dpi, adversary, privacy)
    figures.save(fig, out_png, dpi)


def figure(
    pts: pd.DataFrame,
    utilities: list[str],
    levels: dict[tuple, dict[str, float]],
    units: dict[str, str],
    dpi: int = 110,
    adversary: str = "informed",
    privacy: str = "p10",
):
    """The frontier figure (see :func:`plot`), not yet saved."""
    from . import figures

    plt = figures.plt
    colours = figures.mechanism_colours(pts["mechanism"])
    column, more, words = PRIVACY_METRICS[privacy]
    panels = list(_groups(pts))
    # one number per setting, the same in every panel (the key names it)
    names = sorted({(m, lab) for m, lab in zip(pts["mechanism"], pts["label"], strict=True)})
    numbers = {name: k + 1 for k, name in enumerate(names)}
    fig, axes = plt.subplots(
        len(utilities),
        max(len(panels), 1),
        figsize=(5.2 * max(len(panels), 1) + 4.2, 4.4 * len(utilities)),
        squeeze=False,
        dpi=dpi,
        layout="constrained",
    )
    level_names, drawn = [], []
    for r, utility in enumerate(utilities):
        for c, (dataset, n, all_points) in enumerate(panels):
            ax = axes[r, c]
            group = all_points.dropna(subset=[utility, column])  # a task a summary lacks: an empty panel
            unit = lpunits.long_name(units.get(dataset, ""))
            panel_levels = levels.get((dataset, n), {})
            top = np.nanmax([np.nan, group[f"{column}_ci_high"].max(), group[column].max(), *panel_levels.values()])
            top = top if np.isfinite(top) and top > 0 else 1.0
            ax.set_xlim(*((-0.02 * top, 1.06 * top) if more else (1.06 * top, -0.02 * top)))
            if utility in LOG_UTILITIES and len(group) and (group[utility] > 0).all():
                ax.set_yscale("log")  # interval ends at or below 0 are clipped at the axis' foot
            _panel(ax, group, utility, privacy, colours)
            drawn.append((ax, group, utility))
            for k, (name, level) in enumerate(panel_levels.items()):
                if name not in level_names:
                    level_names.append(name)
                ax.axvline(level, **LEVEL_STYLE)
                ax.annotate(
                    f"L{level_names.index(name) + 1}",  # named in the legend
                    (level, 1),
                    xycoords=("data", "axes fraction"),
                    # one line lower per level: levels a few per cent of the axis apart (Geolife's 437,
                    # 656 and 787 m on a 7 km axis) would print their tags on top of each other
                    xytext=(2, -2 - 10 * k),
                    textcoords="offset points",
                    ha="left",
                    va="top",
                    fontsize=8,
                    color="0.35",
                )
            ax.set_title(f"{dataset}, N = {n}: {utility}", fontsize=11)
            x_unit = "fraction of users" if column == "exposed" else unit
            ax.set_xlabel(
                f"{ADVERSARY_NAMES[adversary].split(' (')[0]}: {words} [{x_unit}]\n(more private →)", fontsize=9
            )
            ax.set_ylabel(
                UTILITY_LABELS[utility].format(u=unit)
                + f"\n({'log scale; ' if ax.get_yscale() == 'log' else ''}"
                + f"{'higher' if UTILITIES[utility] else 'lower'} is better)",
                fontsize=9,
            )
            ax.grid(alpha=0.3)
    fig.legend(
        handles=_legend(pts, colours, level_names, numbers), loc="outside right upper", fontsize=8, frameon=False
    )
    # numbers go where the final layout leaves room: fix the layout, then place them
    fig.canvas.draw()
    fig.set_layout_engine("none")
    for ax, group, utility in drawn:
        tags = [str(numbers[(m, lab)]) for m, lab in zip(group["mechanism"], group["label"], strict=True)]
        figures.place_labels(ax, group[column], group[utility], tags, obstacles=ax.texts)
    return fig


def _panel(ax, group: pd.DataFrame, utility: str, privacy: str, colours: dict) -> None:
    """One task x dataset x N: the points with their intervals, each trust model's front (the x
    limits already set)."""
    column, _, _ = PRIVACY_METRICS[privacy]
    left = ax.get_xlim()[0]
    for trust in [t for t in TRUST_MODELS if t in set(group["trust_model"])]:
        part = group[group["trust_model"] == trust]
        front = _front(part, utility, privacy)
        on_front = part.index.isin(front.index)
        for mech, g in part.groupby("mechanism"):
            sel = on_front[part.index.get_indexer(g.index)]
            x, y = g[column].to_numpy(), g[utility].to_numpy()
            xerr = np.abs(np.vstack([x - g[f"{column}_ci_low"], g[f"{column}_ci_high"] - x]))
            yerr = np.abs(np.vstack([y - g[f"{utility}_ci_low"], g[f"{utility}_ci_high"] - y]))
            ax.errorbar(
                x,
                y,
                xerr=np.nan_to_num(xerr),
                yerr=np.nan_to_num(yerr),
                fmt="none",
                ecolor=colours[mech],
                elinewidth=0.9,
                alpha=0.6,
                zorder=2.5,
            )
            ax.scatter(
                x,
                y,
                s=46,
                marker=TRUST_MARKERS[trust],
                color=colours[mech],
                edgecolors=np.where(sel, "black", "white"),
                linewidths=np.where(sel, 1.4, 0.5),
                zorder=3,
            )
        # between two front points the best utility at privacy >= x is the right one's ("pre"); left of
        # the first point it is the first point's, so the line starts at the panel's edge
        xs = np.r_[left, front[column].to_numpy()]
        ys = np.r_[front[utility].iloc[0], front[utility].to_numpy()]
        ax.step(xs, ys, where="pre", color="black", lw=1.3, ls=TRUST_LINES[trust], zorder=2)


def _legend(pts: pd.DataFrame, colours: dict, level_names: list[str], numbers: dict) -> list:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    def header(text):
        return Line2D([], [], ls="none", label=text)

    trusts = [t for t in TRUST_MODELS if t in set(pts["trust_model"])]
    handles = [header("mechanism (colour)")]
    handles += [Patch(color=colours[m], label=m) for m in sorted(set(pts["mechanism"]))]
    handles += [header(""), header("trust model (marker)")]
    handles += [Line2D([], [], ls="none", marker=TRUST_MARKERS[t], color="0.3", ms=8, label=t) for t in trusts]
    handles += [header(""), header("Pareto front of (line)")]
    handles += [Line2D([], [], color="black", lw=1.3, ls=TRUST_LINES[t], label=t) for t in trusts]
    handles += [
        Line2D([], [], ls="none", marker="o", color="0.8", mec="black", mew=1.4, ms=8, label="setting on its front"),
        Line2D([], [], color="0.4", lw=0.9, label="95 % interval over releases"),
    ]
    if level_names:
        handles += [header(""), header("privacy level")]
        handles += [Line2D([], [], **LEVEL_STYLE, label=f"L{k + 1}: {name}") for k, name in enumerate(level_names)]
    handles += [header(""), header("setting (number beside its point)")]
    handles += [
        Line2D([], [], ls="none", marker="s", color=colours[m], ms=6, label=f"{k}: {m} {lab}".strip())
        for (m, lab), k in numbers.items()
    ]
    return handles


def frontier(
    *,
    summary_parquet: str,
    cfg: dict,
    levels: dict[str, dict],
    units: dict[str, str],
    dpi: int,
    out_csv: str,
    out_png: str,
    out_html: str,
    out_recommendation: str,
) -> None:
    """The frontier stage: ``frontier.csv`` (one :func:`table` per utility task), the recommendation
    (one table per task), the full table as HTML and the figure.  ``levels``: the absolute levels
    per dataset (:func:`dataset_levels`), used with ``frontier.levels.of: absolute``."""
    utilities, adversary, privacy = cfg["utility"], cfg["adversary"], cfg.get("privacy", DEFAULTS["privacy"])
    cfg = {**cfg, "privacy": privacy, "levels": {**DEFAULTS["levels"], **cfg.get("levels", {})}}
    try:
        rel = releases(pd.read_parquet(summary_parquet), adversary)
        pts = points(rel)
        by_panel = levels_of(pts, cfg, levels)
    except ValueError as exc:
        raise ValueError(f"{summary_parquet}: {exc}") from None
    out = pd.concat([table(pts, rel, u, by_panel, privacy, adversary, units) for u in utilities], ignore_index=True)
    with io.atomic_path(out_csv) as tmp:
        out.to_csv(tmp, index=False, float_format="%.6g")
    adversary_name = ADVERSARY_NAMES[adversary].split(" (")[0]
    words = PRIVACY_METRICS[privacy][2]
    report_tables.write_html_tables(
        [
            (
                recommendation(out[out["utility_metric"] == u]),
                f"Task {u}: the most useful setting per trust model and privacy level (privacy: the "
                f"{adversary_name}'s {words}, lower end of its 95 % interval over "
                f"{int(out['reps'].min()) if out['reps'].notna().any() else 0}+ releases; 'also': not "
                f"significantly worse, paired t-test, α = {ALPHA})",
            )
            for u in utilities
        ],
        out_recommendation,
        fragment=True,
    )
    report_tables.write_html(readable(out), out_html, title="The privacy-utility frontier (frontier.csv)")
    plot(pts, utilities, by_panel, units, out_png, dpi, adversary, privacy)
