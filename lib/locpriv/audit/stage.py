"""The ``audit`` stage: one job per mechanism × parameter setting with a formal guarantee.

The audit of a setting runs every pair of its mechanism's case (``Mechanism.audit_pairs``) on the public domain
of every dataset the setting runs on, with ``draws`` outputs per input (fewer
where a case caps them), seeded by ``seeding.rng(seed, "audit", ...)``, and
writes one row per (dataset, pair): the claimed ε, δ and neighbouring
relation, the lower bound, its confidence, the draws, the chosen event and the
seed.  The summary's ``audit_epsilon_lb`` of a run is the largest bound over its
dataset's pairs; each pair's bound holds w.p. ≥ 95 %, so the maximum over K pairs
holds w.p. ≥ 1 − 0.05 K (union bound), the ``audit_confidence`` reported beside it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import io, mechanisms, seeding
from ..domain import Grid
from ..dp import Guarantee
from ..params import explicit_params
from ..stages.prepare import load_grid
from .cases import audit_params
from .estimator import audit

DEFAULT_DRAWS = 100_000


def claimed(mechanism: str, params: dict) -> Guarantee | None:
    """The mechanism's guarantee for these parameters, or None when it states no ε."""
    g = mechanisms.get(mechanism)(**params).guarantee()
    return g if g.epsilon is not None else None


def claimed_epsilon(g: Guarantee, relation: str | None) -> float:
    """The guarantee's ε for a neighbouring relation (its main one unless listed among the others)."""
    return float(g.other_relations.get(relation, g.epsilon) if relation else g.epsilon)


def run_claims(mechanism: str, params: dict) -> bool:
    """Whether a run as configured (``params`` without n) states an ε (a non-private input such as
    h: knn voids it, so the run is not built: the workflow has not resolved it yet)."""
    cls = mechanisms.get(mechanism)
    return not cls.leaks(params) and cls(**params).guarantee().epsilon is not None


def params_label(params: dict) -> str:
    """File-name label of the audit's parameters, e.g. ``epsilon~4.0`` (``default`` without any)."""
    return "_".join(f"{k}~{v}" for k, v in sorted(params.items())) or "default"


def settings(runs) -> dict[tuple[str, str], dict]:
    """(mechanism, label) -> {'params', 'datasets'} for every run setting that claims an ε.

    'params' are the first such run's (without n): server-side parameters do not change
    the output law (``cases.SERVER_SIDE``), so any run of the setting represents it.
    """
    out: dict[tuple[str, str], dict] = {}
    for run in runs:
        params = {k: v for k, v in run.params.items() if k != "n"}
        if not run_claims(run.mechanism, params):
            continue
        entry = out.setdefault(
            (run.mechanism, params_label(audit_params(params))), {"params": params, "datasets": set()}
        )
        entry["datasets"].add(run.dataset)
    return {k: {"params": v["params"], "datasets": sorted(v["datasets"])} for k, v in sorted(out.items())}


def audit_setting(mechanism: str, params: dict, grids: dict[str, Grid], draws: int, seed: int) -> pd.DataFrame:
    """Rows (dataset, pair) of the audit of one setting; ``grids`` maps dataset -> its public grid."""
    if not (isinstance(draws, int) and draws >= 8):
        raise ValueError(f"audit draws must be an integer >= 8, got {draws!r}")
    mech = mechanisms.get(mechanism)(**params)
    # the run's form: options at their omit_default default left out, so a setting's label and seeds
    # do not change when a mechanism gains an option
    params = explicit_params(mech.params, params)
    g = mech.guarantee()
    if g.epsilon is None:
        raise ValueError(f"{mechanism} with {params} states no epsilon: nothing to audit")
    delta = float(g.delta or 0.0)
    rows, shared = [], {}
    for dataset, grid in sorted(grids.items()):
        for pair in mech.audit_pairs(grid):
            n = min(draws, pair.max_draws or draws)
            if pair.box_free and pair.name in shared:
                res, spent = shared[pair.name]
            else:
                keys = ("audit", mechanism, audit_params(params), "any box" if pair.box_free else dataset, pair.name)
                sample_x, sample_xp, accounted = _accounting(pair)
                res = audit(
                    sample_x,
                    sample_xp,
                    n,
                    seeding.rng(seed, *keys, "x"),
                    seeding.rng(seed, *keys, "x'"),
                    pair.statistic,
                    delta=delta,
                    distance=pair.distance,
                )
                spent = accounted()
                shared[pair.name] = res, spent
            rows.append(
                {
                    "dataset": dataset,
                    "mechanism": mechanism,
                    "audit_params": params_label(audit_params(params)),
                    "pair": pair.name,
                    "model": g.model,
                    "relation": pair.relation or g.relation,
                    "claimed_epsilon": claimed_epsilon(g, pair.relation),
                    "delta": delta,
                    "epsilon_lb": res.epsilon_lb,
                    "confidence": res.confidence,
                    "draws": n,
                    "spent_epsilon": spent,
                    "scored": pair.scored,
                    "event": res.event,
                    "k_x": res.k_x,
                    "k_xprime": res.k_xp,
                    "seed": seed,
                }
            )
    return pd.DataFrame(rows)


def _accounting(pair):
    """The pair's samplers without their accounted-ε column (``Pair.accounts``), and a function giving
    the largest ε any of their runs accounted (NaN for a pair that accounts nothing)."""
    if not pair.accounts:
        return pair.sample_x, pair.sample_xp, lambda: float("nan")
    seen = [-np.inf]

    def stripped(sampler):
        def sample(n, rng):
            out = sampler(n, rng)
            seen.append(float(out[:, -1].max()))
            return out[:, :-1]

        return sample

    return stripped(pair.sample_x), stripped(pair.sample_xp), lambda: max(seen)


def run_audit(
    *, mechanism: str, params: dict, grid_paths: dict[str, str], draws: int, seed: int, out_path: str
) -> None:
    """The audit job: ``audit_setting`` on each dataset's broadcast grid, written as Parquet."""
    table = audit_setting(mechanism, params, {ds: load_grid(p) for ds, p in grid_paths.items()}, draws, seed)
    io.write_parquet(table, out_path)


def per_dataset(audit_table_path: str | None) -> pd.DataFrame:
    """Largest bound per (dataset, mechanism, audit_params) over the pairs of the combined audit table.

    Its confidence is the union bound over the pairs: 1 − Σ (1 − confidence_i).
    """
    if not audit_table_path:
        return pd.DataFrame(columns=["dataset", "mechanism", "audit_params", "epsilon_lb", "confidence"])
    table = pd.read_parquet(audit_table_path).assign(miss=lambda t: 1.0 - t["confidence"])
    best = table.groupby(["dataset", "mechanism", "audit_params"], as_index=False).agg(
        epsilon_lb=("epsilon_lb", "max"), miss=("miss", "sum")
    )
    return best.assign(confidence=np.maximum(1.0 - best.pop("miss"), 0.0))


def _configured(param, value):
    """A summary cell back as the value the run was configured with (``Param.validate`` casts it)."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, str) and param.kind != "choice" and value not in param.special:
        value = float(value)  # a number in a column that also holds words (h: 0.55 beside h: knn)
    return param.validate(value, param.name)


def _run_params(row: dict) -> dict:
    """A tidy metrics row's configured mechanism parameters (its non-empty columns named by the
    mechanism's params), each cast as its declaration says (an int column may hold 4.0)."""
    declared = mechanisms.get(row["mechanism"]).params
    return {k: _configured(declared[k], v) for k, v in row.items() if k in declared and not pd.isna(v)}


def audit_rows(metrics: pd.DataFrame, audit_table_path: str | None) -> pd.DataFrame:
    """Tidy metric rows ``audit_epsilon_lb`` and ``audit_confidence`` for every run stating an ε.

    A run's audit is found by its mechanism, dataset and the label of its
    privacy-relevant parameters (``audit_params`` of the run's parameter columns, cast back to
    the values the run was configured with, as the audit labels print them).
    """
    best = per_dataset(audit_table_path)
    claims = metrics[(metrics["metric"] == "guarantee_epsilon") & metrics["value"].notna()]
    if best.empty or claims.empty:
        return metrics.iloc[0:0]
    runs = claims.copy()
    runs["audit_params"] = [params_label(audit_params(_run_params(row))) for row in runs.to_dict("records")]
    joined = runs.drop(columns=["metric", "value"]).merge(best, on=["dataset", "mechanism", "audit_params"])
    out = []
    for metric, column in (("audit_epsilon_lb", "epsilon_lb"), ("audit_confidence", "confidence")):
        part = joined.drop(columns=["epsilon_lb", "confidence", "audit_params"])
        part["metric"], part["value"] = metric, joined[column].to_numpy(dtype=float)
        out.append(part)
    return pd.concat(out, ignore_index=True)[list(metrics.columns)]


TABLE_COLUMNS = [
    "mechanism",
    "audit_params",
    "dataset",
    "pair",
    "model",
    "relation",
    "claimed_epsilon",
    "delta",
    "epsilon_lb",
    "spent_epsilon",
    "confidence",
    "holds",
    "draws",
    "scored",
    "event",
    "k_x",
    "k_xprime",
    "seed",
]


def holds(table: pd.DataFrame) -> np.ndarray:
    """Per row: the bound does not exceed the claim, nor does the ε the runs accounted (Σ_t ε_t, where
    the mechanism accounts one: a schedule overspending its budget is refuted at run time)."""
    spent = table["spent_epsilon"].to_numpy(dtype=float)
    claim = table["claimed_epsilon"].to_numpy(dtype=float)
    over_spent = np.nan_to_num(spent, nan=-np.inf) > claim * (1 + 1e-9)
    return np.where(
        over_spent,
        "NO: runs spent more than the claim",
        np.where(table["epsilon_lb"] <= claim, "yes", "NO: claim refuted"),
    )


def audit_table(*, audit_paths: list[str], out_parquet: str, out_csv: str) -> None:
    """Claimed ε vs audited lower bound, one row per mechanism × setting × dataset × pair.

    ``holds`` is "yes" when neither the bound nor the accounted ε (``spent_epsilon``) exceeds the
    claim; a correct mechanism fails it with probability <= 5 % per pair (the bound's confidence).
    """
    frames = [pd.read_parquet(p) for p in sorted(audit_paths)]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=TABLE_COLUMNS)
    table = table.sort_values(["mechanism", "audit_params", "dataset", "pair"], ignore_index=True)
    table["holds"] = holds(table)
    table = table[TABLE_COLUMNS]
    io.write_parquet(table, out_parquet)
    with io.atomic_path(out_csv) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
