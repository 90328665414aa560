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
from ..config import StudySection
from ..dp import Guarantee
from ..laplace_ldp import discretisation, epsilon_spent, scales
from ..laplace_ldp import randomize as laplace_randomize
from ..seeding import rng as make_rng
from . import data, estimators
from .kernels import KERNELS

SOURCES = ("synthetic", "lendingclub", "adult")
DATASET_DEFAULTS = {
    "synthetic": {"x": "mixture", "curve": "g1", "n": [1000], "test_size": 10000, "figure_epsilon": None,
                  "density": None},
    # public FICO range 610-850 (ours): log(fico - 600) in [log 10, log 250]
    "lendingclub": {"path": None, "bounds": [math.log(10.0), math.log(250.0)], "test_fraction": 0.3,
                    "figure_epsilon": None, "density": None},
    # education-num takes the values 1..16
    "adult": {"path": None, "bounds": [1.0, 16.0], "figure_epsilon": None, "density": None},
}
DEFAULTS = {
    "datasets": {},
    "epsilon": [1.0, 5.0, 10.0],
    "reps": 2,
    "kernel": "cauchy",                                   # the paper's experiments (§Results)
    # LOO-CV grid of eq. (8); cv_at "reports" (a server's view) or "true" (eq. 8 as printed, an oracle)
    "bandwidth": {"min": 0.01, "max": 10.0, "count": 40, "cv_points": 2000, "cv_at": "reports"},
    # density figure (Fig. 3); h "normal_reference" = Delaigle & Gijbels (2004), Gaussian kernel only
    # a dataset may override it with its own `density` section
    "density": {"kernel": "gaussian", "h": "normal_reference"},
    "probability_clip": 1e-3,                             # ours: keeps log-likelihoods finite
    "figure_epsilon": 5.0,        # Fig. 3, 5, 8 use epsilon = 5 (Fig. 1, 2: 10); a dataset may override it
    "plots": {"dpi": 110},
}
GRID_POINTS = 200
SECTION = StudySection("deconv")


def _dataset(name: str, spec: dict) -> dict:
    key = f"datasets.{name}"
    if not isinstance(spec, dict) or spec.get("source") not in SOURCES:
        got = spec.get("source") if isinstance(spec, dict) else spec
        raise SECTION.error(f"{key}.source", f"got {got!r}", str(list(SOURCES)))
    source = spec["source"]
    cfg = SECTION.merge({k: v for k, v in spec.items() if k != "source"}, DATASET_DEFAULTS[source], f"{key}.")
    cfg["source"] = source
    if cfg["figure_epsilon"] is not None:
        cfg["figure_epsilon"] = float(SECTION.number(cfg["figure_epsilon"], f"{key}.figure_epsilon", low=0,
                                                     open_low=True))
    if source == "synthetic":
        if cfg["x"] not in data.SYNTHETIC_X:
            raise SECTION.error(f"{key}.x", f"{cfg['x']!r}", str(list(data.SYNTHETIC_X)))
        if cfg["curve"] not in data.CURVES:
            raise SECTION.error(f"{key}.curve", f"{cfg['curve']!r}", str(list(data.CURVES)))
        cfg["n"] = SECTION.positive_list(cfg["n"], f"{key}.n", integer=True)
        cfg["test_size"] = SECTION.number(cfg["test_size"], f"{key}.test_size", integer=True, low=1)
        cfg["bounds"] = list(data.SYNTHETIC_X[cfg["x"]])
    else:
        if not isinstance(cfg["path"], str):
            raise SECTION.error(f"{key}.path", "missing", "the path of loan_data.csv" if source == "lendingclub"
                         else "the directory holding adult.data and adult.test")
        cfg["n"] = ["all"]
        b = cfg["bounds"]
        if not (isinstance(b, list) and len(b) == 2 and all(isinstance(v, (int, float)) for v in b) and b[0] < b[1]):
            raise SECTION.error(f"{key}.bounds", f"{b!r}", "[lower, upper] with lower < upper")
        if source == "lendingclub":
            SECTION.number(cfg["test_fraction"], f"{key}.test_fraction", low=0, high=1, open_low=True,
                           open_high=True)
    return cfg


def _density_section(given: dict, defaults: dict, key: str) -> dict:
    dens = SECTION.merge(given, defaults, f"{key}.")
    if dens["kernel"] not in KERNELS:
        raise SECTION.error(f"{key}.kernel", f"{dens['kernel']!r}", str(list(KERNELS)))
    if dens["h"] == "normal_reference":
        if dens["kernel"] != "gaussian":
            raise SECTION.error(f"{key}.h", "normal_reference needs the Gaussian kernel (the Cauchy has no 2nd moment)",
                         "a positive number, or normal_reference with kernel gaussian")
    else:
        dens["h"] = float(SECTION.number(dens["h"], f"{key}.h", low=0, open_low=True))
    return dens


def validate_config(section: dict) -> dict:
    cfg = SECTION.merge(section, DEFAULTS, "", nested=("plots",))
    SECTION.number(cfg["plots"]["dpi"], "plots.dpi", integer=True, low=1)
    if not isinstance(cfg["datasets"], dict) or not cfg["datasets"]:
        raise SECTION.error("datasets", "missing or empty", "a mapping name -> {source: synthetic|lendingclub|adult, ...}")
    cfg["datasets"] = {name: _dataset(name, spec) for name, spec in cfg["datasets"].items()}
    cfg["epsilon"] = SECTION.positive_list(cfg["epsilon"], "epsilon")
    cfg["reps"] = SECTION.reps(cfg["reps"])
    if cfg["kernel"] not in KERNELS:
        raise SECTION.error("kernel", f"{cfg['kernel']!r}", str(list(KERNELS)))
    cfg["bandwidth"] = SECTION.merge(cfg["bandwidth"], DEFAULTS["bandwidth"], "bandwidth.")
    bw = cfg["bandwidth"]
    SECTION.number(bw["min"], "bandwidth.min", low=0, open_low=True)
    SECTION.number(bw["max"], "bandwidth.max", low=0, open_low=True)
    SECTION.number(bw["cv_points"], "bandwidth.cv_points", integer=True, low=1)
    if not (bw["min"] < bw["max"]) or not (isinstance(bw["count"], int) and bw["count"] >= 2):
        raise SECTION.error("bandwidth", f"{bw!r}", "0 < min < max and an integer count >= 2")
    if bw["cv_at"] not in ("reports", "true"):
        raise SECTION.error("bandwidth.cv_at", f"{bw['cv_at']!r}", "['reports', 'true']")
    cfg["density"] = _density_section(cfg["density"], DEFAULTS["density"], "density")
    for name, ds in cfg["datasets"].items():
        ds["density"] = _density_section(ds["density"] or {}, cfg["density"], f"datasets.{name}.density")
    SECTION.number(cfg["probability_clip"], "probability_clip", low=0, high=0.5, open_low=True, open_high=True)
    cfg["figure_epsilon"] = float(SECTION.number(cfg["figure_epsilon"], "figure_epsilon", low=0, open_low=True))
    return cfg


def runs(cfg: dict, with_noiseless: bool = True) -> list[dict]:
    eps = cfg["epsilon"] + (["inf"] if with_noiseless else [])
    return [{"dataset": name, "n": n, "epsilon": e, "rep": rep}
            for name, ds in cfg["datasets"].items() for n in ds["n"] for e in eps for rep in range(cfg["reps"])]


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
                raise SECTION.error(f"datasets.{name}.path", f"{path!r} does not exist",
                                    "a path (absolute or relative to the working directory)")


def epsilon_labels(cfg: dict) -> list[str]:
    """The epsilon folder names of one split, in run order (the noiseless reference last)."""
    return [str(e) for e in cfg["epsilon"]] + ["inf"]


def fit_config(cfg: dict, dataset: str) -> dict:
    """What the runs of ``dataset`` read: its epsilons, the estimator settings and that dataset only."""
    return {**{k: v for k, v in cfg.items() if k not in ("datasets", "plots")},
            "datasets": {dataset: cfg["datasets"][dataset]}}


def figure_files(cfg: dict, dataset: str) -> dict:
    """Inputs of a dataset's figure, relative to the results folder: rep-0 curves and test sets."""
    from .plots import figure_epsilon  # matplotlib: only where a figure is planned

    eps = ("inf", figure_epsilon(cfg, dataset))
    base = "studies/deconv"
    run = lambda n, e: {"dataset": dataset, "n": n, "epsilon": e, "rep": 0}  # noqa: E731
    ns = cfg["datasets"][dataset]["n"]
    return {"summary": f"{base}/summary.parquet",
            **{f"curves_{n}_{e}": f"{base}/runs/{run_dir(run(n, e))}/curves.parquet" for n in ns for e in eps},
            **{f"test_{n}": f"{base}/runs/{split_dir(run(n, 0))}/test.parquet" for n in ns}}


def split_run_stage(*, dataset: str, n: str, rep: int, cfg: dict, seed: int, out: dict) -> None:
    """One split and every epsilon's randomize + fit on it (one job: each step takes well under a second).

    ``n`` is the path's text (as the per-stage jobs had it: it seeds the streams and is recorded);
    ``out`` holds train, test and per-epsilon lists reports, metrics, curves in
    :func:`epsilon_labels` order.  Each file is the one the separate stages wrote, byte for byte.
    """
    ds = cfg["datasets"][dataset]
    split_stage(dataset, n, rep, ds, seed, out["train"], out["test"])
    for label, reports, metrics, curves in zip(epsilon_labels(cfg), out["reports"], out["metrics"],
                                               out["curves"]):
        run = {"dataset": dataset, "n": n, "epsilon": label if label == "inf" else float(label), "rep": rep}
        randomize_stage(run, ds, seed, out["train"], reports)
        fit_stage(run, cfg, seed, reports, out["train"], out["test"], metrics, curves)


def split_stage(name: str, n, rep: int, ds: dict, seed: int, out_train: str, out_test: str) -> None:
    rng = make_rng(seed, "deconv-split", name, n, rep)
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
    meta = {"dataset": name, "source": ds["source"], "bounds": ds["bounds"],
            "rows": {"train": len(train), "test": len(test)}}
    io.write_parquet(train, out_train, metadata=meta)
    io.write_parquet(test, out_test, metadata=meta)


def _scale(ds: dict, epsilon) -> float:
    return 0.0 if epsilon == "inf" else float(scales(np.array([ds["bounds"]]), float(epsilon))[0])


def randomize_stage(run: dict, ds: dict, seed: int, train_path: str, out: str) -> None:
    train = pd.read_parquet(train_path)
    if run["epsilon"] == "inf":
        z = train["x"].to_numpy()
        guarantee = Guarantee(model="none (noiseless reference)", epsilon=None, delta=None, relation="none",
                              covers="nothing: the true inputs are used").as_dict()
    else:
        rng = make_rng(seed, "deconv-reports", run["dataset"], run["n"], run["epsilon"], run["rep"])
        bounds = np.array([ds["bounds"]])
        z = laplace_randomize(train["x"].to_numpy(), bounds, float(run["epsilon"]), rng,
                              names=(f"{run['dataset']} input x",))
        guarantee = Guarantee(
            model="epsilon-LDP", epsilon=float(run["epsilon"]), delta=0.0, relation="any two inputs (local)",
            covers="each client's input x only; y is sent in the clear", discretisation=discretisation(bounds),
            note=f"Farokhi 2020 Theorem 1 (q = 1); exact epsilon {epsilon_spent(bounds, float(run['epsilon'])):.9g}"
        ).as_dict()
    io.write_parquet(pd.DataFrame({"z": z, "y": train["y"].to_numpy()}), out,
                     metadata={"run": run, "laplace_b": _scale(ds, run["epsilon"]), "bounds": ds["bounds"],
                               "guarantee": guarantee})


def _fitted_guarantee(reports: dict, cv_at: str) -> dict:
    """The reports' guarantee, void when the bandwidth was cross-validated on the true inputs."""
    if cv_at == "true" and reports["epsilon"] is not None:
        return Guarantee(**reports).leaked("bandwidth.cv_at: true (LOO-CV bandwidth chosen on the clients' "
                                           "true inputs x)").as_dict()
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


def fit_stage(run: dict, cfg: dict, seed: int, reports_path: str, train_path: str, test_path: str,
              out_metrics: str, out_curves: str) -> None:
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
    rows = [{"method": "kernel", "metric": k, "value": v}
            for k, v in _scores(y_test, pred, binary, cfg["probability_clip"]).items()]
    rows += [{"method": base_name, "metric": k, "value": v}
             for k, v in _scores(y_test, base_predict(x_test), binary, cfg["probability_clip"]).items()]
    rows += [{"method": "kernel", "metric": "bandwidth", "value": h},
             {"method": "kernel", "metric": "undefined_predictions", "value": float(undefined)}]

    lo, hi = ds["bounds"]
    grid = np.linspace(lo, hi, GRID_POINTS)
    curves = pd.DataFrame({"x": grid, "kernel": kernel_predict(grid)[0], "baseline": base_predict(grid)})
    if ds["source"] == "synthetic":
        curves["truth"] = data.CURVES[ds["curve"]](grid)
        # excess risk over the test inputs' own law: E (m(x) - g(x))^2 (test MSE minus the noise variance 1)
        truth_test = data.CURVES[ds["curve"]](x_test)
        rows.append({"method": "kernel", "metric": "curve_mse", "value": float(np.mean((pred - truth_test) ** 2))})
        rows.append({"method": base_name, "metric": "curve_mse",
                     "value": float(np.mean((base_predict(x_test) - truth_test) ** 2))})
    # densities on the grid: noiseless (true x, b = 0), naive (reports, b = 0), deconvoluting (reports, b)
    dens = ds["density"]
    dk = dens["kernel"]
    x_train = train["x"].to_numpy()
    dens_h = {"noiseless": _density_h(dens, x_train, 0.0), "naive": _density_h(dens, z, 0.0),
              "deconv": _density_h(dens, z, b)}
    curves["density_noiseless"] = estimators.density(grid, x_train, dens_h["noiseless"], 0.0, dk)
    curves["density_naive"] = estimators.density(grid, z, dens_h["naive"], 0.0, dk)
    curves["density_deconv"] = estimators.density(grid, z, dens_h["deconv"], b, dk)
    step = grid[1] - grid[0]
    for est in ("naive", "deconv"):
        ise = float(((curves[f"density_{est}"] - curves["density_noiseless"]) ** 2).sum() * step)
        rows += [{"method": f"density_{est}", "metric": "ise_vs_noiseless", "value": ise},
                 {"method": f"density_{est}", "metric": "peak", "value": float(curves[f"density_{est}"].max())},
                 {"method": f"density_{est}", "metric": "bandwidth", "value": dens_h[est]}]
    rows.append({"method": "density_noiseless", "metric": "peak", "value": float(curves["density_noiseless"].max())})

    table = pd.DataFrame(rows)
    for key in ("rep", "epsilon", "n", "dataset"):
        table.insert(0, key, str(run[key]))
    meta = {"run": run, "laplace_b": b, "bandwidth": h, "kernel": kernel, "cv_at": bw["cv_at"],
            "cv_grid": grid_h.tolist(), "cv_scores": cv.tolist(), "density_bandwidths": dens_h,
            "undefined_predictions": undefined,
            "guarantee": _fitted_guarantee(io.read_parquet_metadata(reports_path)["guarantee"], bw["cv_at"])}
    io.write_parquet(table, out_metrics, metadata=meta)
    io.write_parquet(curves, out_curves, metadata=meta)


def summary_stage(paths: list[str], out_parquet: str, out_csv: str) -> None:
    io.concat_to_table(paths, ["dataset", "n", "epsilon", "rep", "method", "metric"], out_parquet, out_csv)
