"""The ``studies.deconv`` workflow section ([Deconv-LDP]): validation and file-level stages.

A run is (dataset, n, epsilon, rep); epsilon "inf" is the noiseless reference
(reports = true inputs, b = 0) that the paper draws as horizontal lines.

* split (dataset, n, rep): the clients' true (x, y), train and test;
* randomize (…, epsilon): each training client reports z = x + Laplace(b),
  b = (x̄ − x̲) / ε over the dataset's public bounds (Theorem 1, q = 1), released
  on a public grid with exact discrete Laplace noise (``locpriv.laplace_ldp``), and
  its y in the clear (the paper privatises the input only);
* fit (…, epsilon): the server's estimators on (z, y): bandwidth by LOO-CV
  (eq. 8) over a log grid, deconvoluting Nadaraya–Watson (eq. 7) vs the naive
  baseline the paper compares with (least squares for a numeric y, logistic
  regression for a binary y, both fitted on z); naive / deconvoluting /
  noiseless densities; scored on the test clients' TRUE inputs.  With
  ``bandwidth.cv_at: true`` (eq. 8 as printed) the bandwidth is chosen on the true
  inputs: the fitted model then has no guarantee, and its record says so.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from .. import io
from ..config import StudySection, listed, schema_defaults
from ..dp import Guarantee
from ..laplace_ldp import discretisation, epsilon_spent, scales
from ..laplace_ldp import randomize as laplace_randomize
from ..seeding import rng as make_rng
from ..study import Study
from . import data, estimators

GRID_POINTS = 200
# the noiseless reference's rows: epsilon NaN and the method's name with this suffix
NOISELESS = "_noiseless"

# keys, bounds and defaults: workflow/schemas/config.source.yaml, $defs.deconv (docs/configuration.md)
SECTION = StudySection("deconv")


def _dataset(name: str, spec: dict) -> dict:
    """One dataset with its source's defaults ($defs.deconv_<source>) and what the runs read."""
    key = f"datasets.{name}"
    cfg = {**schema_defaults(f"deconv_{spec['source']}"), **spec}
    if cfg["figure_epsilon"] is not None:
        cfg["figure_epsilon"] = float(cfg["figure_epsilon"])
    if cfg["source"] == "synthetic":
        cfg["n"] = listed(cfg["n"], int)
        cfg["bounds"] = list(data.SYNTHETIC_X[cfg["x"]])
        return cfg
    if cfg["path"] is None:
        raise SECTION.error(
            f"{key}.path",
            "missing",
            "the path of loan_data.csv"
            if cfg["source"] == "lendingclub"
            else "the directory holding adult.data and adult.test",
        )
    cfg["n"] = ["all"]
    if not cfg["bounds"][0] < cfg["bounds"][1]:
        raise SECTION.error(f"{key}.bounds", f"{cfg['bounds']!r}", "[lower, upper] with lower < upper")
    return cfg


def _density_section(given: dict | None, base: dict, key: str) -> dict:
    """``given`` over ``base``; the normal-reference bandwidth needs the Gaussian kernel."""
    dens = {**base, **(given or {})}
    if dens["h"] != "normal_reference":
        dens["h"] = float(dens["h"])
    elif dens["kernel"] != "gaussian":
        raise SECTION.error(
            f"{key}.h",
            "normal_reference needs the Gaussian kernel (the Cauchy has no 2nd moment)",
            "a positive number, or normal_reference with kernel gaussian",
        )
    return dens


def validate_config(section: dict) -> dict:
    """The section checked against its schema, defaults filled in, value-or-list keys as lists."""
    cfg = SECTION.validate(section)
    bw = cfg["bandwidth"]
    if not bw["min"] < bw["max"]:
        raise SECTION.error("bandwidth", f"{bw!r}", "0 < min < max and an integer count >= 2")
    cfg["datasets"] = {name: _dataset(name, spec) for name, spec in cfg["datasets"].items()}
    cfg["epsilon"] = listed(cfg["epsilon"], float)
    cfg["density"] = _density_section(cfg["density"], {}, "density")
    for name, ds in cfg["datasets"].items():
        ds["density"] = _density_section(ds["density"], cfg["density"], f"datasets.{name}.density")
    cfg["figure_epsilon"] = float(cfg["figure_epsilon"])
    return cfg


def runs(cfg: dict, with_noiseless: bool = True) -> list[dict]:
    eps = cfg["epsilon"] + (["inf"] if with_noiseless else [])
    return [
        {"dataset": name, "n": n, "epsilon": e, "rep": rep}
        for name, ds in cfg["datasets"].items()
        for n in ds["n"]
        for e in eps
        for rep in range(cfg["reps"])
    ]


def split_dir(run: dict) -> str:
    return f"dataset~{run['dataset']}/n~{run['n']}/rep~{run['rep']}"


def run_dir(run: dict) -> str:
    return f"{split_dir(run)}/epsilon~{run['epsilon']}"


def data_paths(ds: dict) -> list[str]:
    if ds["source"] == "lendingclub":
        return [ds["path"]]
    if ds["source"] == "adult":
        return [f"{ds['path']}/adult.data", f"{ds['path']}/adult.test"]
    return []


def check_data_paths(cfg: dict) -> None:
    """Every real dataset's files exist (checked before any job)."""
    for name, ds in cfg["datasets"].items():
        for path in data_paths(ds):
            if not Path(path).exists():
                raise SECTION.error(
                    f"datasets.{name}.path",
                    f"{path!r} does not exist",
                    "a path (absolute or relative to the working directory)",
                )


def epsilon_labels(cfg: dict) -> list[str]:
    """The epsilon folder names of one split, in run order (the noiseless reference last)."""
    return [str(e) for e in cfg["epsilon"]] + ["inf"]


def figure_epsilon(cfg: dict, name: str) -> float:
    """The dataset's (else the study's) figure epsilon, or the closest epsilon the study runs."""
    eps = np.array(cfg["epsilon"])
    wanted = cfg["datasets"][name]["figure_epsilon"] or cfg["figure_epsilon"]
    return float(eps[np.argmin(np.abs(eps - wanted))])


def fit_config(cfg: dict, dataset: str) -> dict:
    """What the runs of ``dataset`` read: its epsilons, the estimator settings and that dataset only."""
    return {
        **{k: v for k, v in cfg.items() if k not in ("datasets", "plots")},
        "datasets": {dataset: cfg["datasets"][dataset]},
    }


def figure_files(cfg: dict, dataset: str) -> dict:
    """Inputs of a dataset's figure, relative to the results folder: rep-0 curves and test sets."""

    eps = ("inf", figure_epsilon(cfg, dataset))
    base = "studies/deconv"
    run = lambda n, e: {"dataset": dataset, "n": n, "epsilon": e, "rep": 0}  # noqa: E731
    ns = cfg["datasets"][dataset]["n"]
    return {
        "summary": f"{base}/summary.parquet",
        **{f"curves_{n}_{e}": f"{base}/runs/{run_dir(run(n, e))}/curves.parquet" for n in ns for e in eps},
        **{f"test_{n}": f"{base}/runs/{split_dir(run(n, 0))}/test.parquet" for n in ns},
    }


def split_run_stage(*, dataset: str, n: str, rep: int, cfg: dict, seed: int, out: dict) -> None:
    """One split and every epsilon's randomize + fit on it (one job: each step takes well under a second).

    ``n`` is the path's text (as the per-stage jobs had it: it seeds the streams and is recorded);
    ``out`` holds train, test and per-epsilon lists reports, metrics, curves in
    :func:`epsilon_labels` order.  Each file is the one the separate stages wrote, byte for byte.
    """
    ds = cfg["datasets"][dataset]
    split_stage(dataset=dataset, n=n, rep=rep, ds=ds, seed=seed, out_train=out["train"], out_test=out["test"])
    for label, reports, metrics, curves in zip(
        epsilon_labels(cfg), out["reports"], out["metrics"], out["curves"], strict=True
    ):
        run = {"dataset": dataset, "n": n, "epsilon": label if label == "inf" else float(label), "rep": rep}
        randomize_stage(run=run, ds=ds, seed=seed, train_path=out["train"], out=reports)
        fit_stage(
            run=run,
            cfg=cfg,
            seed=seed,
            reports_path=reports,
            train_path=out["train"],
            test_path=out["test"],
            out_metrics=metrics,
            out_curves=curves,
        )


def split_stage(*, dataset: str, n, rep: int, ds: dict, seed: int, out_train: str, out_test: str) -> None:
    rng = make_rng(seed, "deconv-split", dataset, n, rep)
    if ds["source"] == "synthetic":
        train = data.synthetic(ds["x"], ds["curve"], int(n), rng)
        test = data.synthetic(ds["x"], ds["curve"], ds["test_size"], rng)
    elif ds["source"] == "adult":
        train, test = data.adult(ds["path"])
    else:
        frame = data.lendingclub(ds["path"])
        is_test = np.zeros(len(frame), bool)
        is_test[rng.choice(len(frame), int(round(ds["test_fraction"] * len(frame))), replace=False)] = True
        train, test = frame[~is_test].reset_index(drop=True), frame[is_test].reset_index(drop=True)
    meta = {
        "dataset": dataset,
        "source": ds["source"],
        "bounds": ds["bounds"],
        "rows": {"train": len(train), "test": len(test)},
    }
    io.write_parquet(train, out_train, metadata=meta)
    io.write_parquet(test, out_test, metadata=meta)


def _scale(ds: dict, epsilon) -> float:
    return 0.0 if epsilon == "inf" else float(scales(np.array([ds["bounds"]]), float(epsilon))[0])


def randomize_stage(*, run: dict, ds: dict, seed: int, train_path: str, out: str) -> None:
    train = pd.read_parquet(train_path)
    if run["epsilon"] == "inf":
        z = train["x"].to_numpy()
        guarantee = Guarantee(
            model="none (noiseless reference)",
            epsilon=None,
            delta=None,
            relation="none",
            covers="nothing: the true inputs are used",
        ).as_dict()
    else:
        rng = make_rng(seed, "deconv-reports", run["dataset"], run["n"], run["epsilon"], run["rep"])
        bounds = np.array([ds["bounds"]])
        z = laplace_randomize(
            train["x"].to_numpy(), bounds, float(run["epsilon"]), rng, names=(f"{run['dataset']} input x",)
        )
        guarantee = Guarantee(
            model="epsilon-LDP",
            epsilon=float(run["epsilon"]),
            delta=0.0,
            relation="any two inputs (local)",
            covers="each client's input x only; y is sent in the clear",
            discretisation=discretisation(bounds),
            note=f"Farokhi 2020 Theorem 1 (q = 1); exact epsilon {epsilon_spent(bounds, float(run['epsilon'])):.9g}",
        ).as_dict()
    io.write_parquet(
        pd.DataFrame({"z": z, "y": train["y"].to_numpy()}),
        out,
        metadata={"run": run, "laplace_b": _scale(ds, run["epsilon"]), "bounds": ds["bounds"], "guarantee": guarantee},
    )


def _fitted_guarantee(reports: dict, cv_at: str) -> dict:
    """The reports' guarantee, void when the bandwidth was cross-validated on the true inputs."""
    if cv_at == "true" and reports["epsilon"] is not None:
        return (
            Guarantee(**reports)
            .leaked("bandwidth.cv_at: true (LOO-CV bandwidth chosen on the clients' true inputs x)")
            .as_dict()
        )
    return reports


def _baseline(z: np.ndarray, y: np.ndarray, binary: bool):
    """The paper's parametric comparison, fitted on the reports as they are."""
    if binary:
        from sklearn.linear_model import LogisticRegression

        model = LogisticRegression(C=1e4).fit(z[:, None], y.astype(int))
        return "logistic", lambda x: model.predict_proba(np.asarray(x, float)[:, None])[:, 1]
    slope, intercept = np.polyfit(z, y, 1)
    return "linear", lambda x: intercept + slope * np.asarray(x, float)


def _scores(y: np.ndarray, pred: np.ndarray, binary: bool, clip: float) -> dict:
    out = {"mse": float(np.mean((y - pred) ** 2))}
    if binary:
        p = np.clip(pred, clip, 1 - clip)
        out["loglik"] = float(np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))
    return out


def _density_h(dens: dict, sample: np.ndarray, b: float) -> float:
    h = dens["h"]
    return estimators.normal_reference_bandwidth(sample, b) if h == "normal_reference" else h


def fit_stage(
    *,
    run: dict,
    cfg: dict,
    seed: int,
    reports_path: str,
    train_path: str,
    test_path: str,
    out_metrics: str,
    out_curves: str,
) -> None:
    """The server's estimators on one run's reports; ``out_metrics`` is the run's tidy summary rows.

    ``n`` in those rows is the number of training clients (the whole training split where the
    path says ``all``); the noiseless reference has epsilon NaN and methods named ``<method>_noiseless``.
    """
    ds = cfg["datasets"][run["dataset"]]
    reports = pd.read_parquet(reports_path)
    b = io.read_parquet_metadata(reports_path)["laplace_b"]
    train, test = pd.read_parquet(train_path), pd.read_parquet(test_path)
    z, y = reports["z"].to_numpy(), reports["y"].to_numpy()
    binary = ds["source"] == "adult"
    kernel, bw = cfg["kernel"], cfg["bandwidth"]

    rng = make_rng(seed, "deconv-cv", run["dataset"], run["n"], run["epsilon"], run["rep"])
    subset = rng.choice(len(z), min(bw["cv_points"], len(z)), replace=False)
    grid_h = np.geomspace(bw["min"], bw["max"], bw["count"])
    at = train["x"].to_numpy() if bw["cv_at"] == "true" else None
    cv = estimators.loo_cv_scores(z, y, grid_h, b, kernel, at=at, subset=np.sort(subset))
    h = float(grid_h[int(np.argmin(cv))])

    def kernel_predict(x):
        # discrete inputs (Adult's 16 education levels) are predicted once per distinct value
        values, inverse = np.unique(x, return_inverse=True)
        m = estimators.nadaraya_watson(values, z, y, h, b, kernel)[inverse]
        undefined = np.isnan(m)
        m = np.where(undefined, y.mean(), m)
        return (np.clip(m, 0.0, 1.0) if binary else m), int(undefined.sum())

    base_name, base_predict = _baseline(z, y, binary)
    x_test, y_test = test["x"].to_numpy(), test["y"].to_numpy()
    pred, undefined = kernel_predict(x_test)
    rows = [
        {"method": "kernel", "metric": k, "value": v}
        for k, v in _scores(y_test, pred, binary, cfg["probability_clip"]).items()
    ]
    rows += [
        {"method": base_name, "metric": k, "value": v}
        for k, v in _scores(y_test, base_predict(x_test), binary, cfg["probability_clip"]).items()
    ]
    rows += [
        {"method": "kernel", "metric": "bandwidth", "value": h},
        {"method": "kernel", "metric": "undefined_predictions", "value": float(undefined)},
    ]

    lo, hi = ds["bounds"]
    grid = np.linspace(lo, hi, GRID_POINTS)
    curves = pd.DataFrame({"x": grid, "kernel": kernel_predict(grid)[0], "baseline": base_predict(grid)})
    if ds["source"] == "synthetic":
        curves["truth"] = data.CURVES[ds["curve"]](grid)
        # excess risk over the test inputs' own law: E (m(x) - g(x))^2 (test MSE minus the noise variance 1)
        truth_test = data.CURVES[ds["curve"]](x_test)
        rows.append({"method": "kernel", "metric": "curve_mse", "value": float(np.mean((pred - truth_test) ** 2))})
        rows.append(
            {
                "method": base_name,
                "metric": "curve_mse",
                "value": float(np.mean((base_predict(x_test) - truth_test) ** 2)),
            }
        )
    # densities on the grid: noiseless (true x, b = 0), naive (reports, b = 0), deconvoluting (reports, b)
    dens = ds["density"]
    dk = dens["kernel"]
    x_train = train["x"].to_numpy()
    dens_h = {
        "noiseless": _density_h(dens, x_train, 0.0),
        "naive": _density_h(dens, z, 0.0),
        "deconv": _density_h(dens, z, b),
    }
    curves["density_noiseless"] = estimators.density(grid, x_train, dens_h["noiseless"], 0.0, dk)
    curves["density_naive"] = estimators.density(grid, z, dens_h["naive"], 0.0, dk)
    curves["density_deconv"] = estimators.density(grid, z, dens_h["deconv"], b, dk)
    step = grid[1] - grid[0]
    for est in ("naive", "deconv"):
        ise = float(((curves[f"density_{est}"] - curves["density_noiseless"]) ** 2).sum() * step)
        rows += [
            {"method": f"density_{est}", "metric": "ise_vs_noiseless", "value": ise},
            {"method": f"density_{est}", "metric": "peak", "value": float(curves[f"density_{est}"].max())},
            {"method": f"density_{est}", "metric": "bandwidth", "value": dens_h[est]},
        ]
    rows.append({"method": "density_noiseless", "metric": "peak", "value": float(curves["density_noiseless"].max())})

    noiseless = run["epsilon"] == "inf"
    if noiseless:
        rows = [
            {**r, "method": r["method"] if r["method"].endswith(NOISELESS) else r["method"] + NOISELESS} for r in rows
        ]
    table = STUDY.run_table(
        rows,
        epsilon=math.nan if noiseless else float(run["epsilon"]),
        n=len(train),
        rep=int(run["rep"]),
        dataset=run["dataset"],
    )
    meta = {
        "run": run,
        "laplace_b": b,
        "bandwidth": h,
        "kernel": kernel,
        "cv_at": bw["cv_at"],
        "cv_grid": grid_h.tolist(),
        "cv_scores": cv.tolist(),
        "density_bandwidths": dens_h,
        "undefined_predictions": undefined,
        "guarantee": _fitted_guarantee(io.read_parquet_metadata(reports_path)["guarantee"], bw["cv_at"]),
    }
    io.write_parquet(table, out_metrics, metadata=meta)
    io.write_parquet(curves, out_curves, metadata=meta)


def summary_stage(*, paths: list[str], out_parquet: str, out_csv: str) -> None:
    STUDY.collect(paths, out_parquet=out_parquet, out_csv=out_csv)


STUDY = Study(name="deconv", validate=validate_config, runs=runs, run_dir=run_dir, identity={"dataset": "str"})
