"""Deconvoluting kernel estimators for Laplace-LDP data in 1-D ([Deconv-LDP] eqs. 5–8)."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from locpriv.config import ConfigError
from locpriv.deconv import data, estimators, study
from locpriv.deconv.kernels import adjusted, characteristic
from locpriv.errors import InputError
from locpriv.io import read_parquet_metadata


@pytest.mark.parametrize("kernel", ["gaussian", "cauchy"])
@pytest.mark.parametrize("c", [0.0, 0.3, 4.0])
def test_adjusted_kernels_match_fourier_inversion(kernel, c):
    """K_hat(u) = (1/pi) int_0^inf cos(tu) Phi_K(t) (1 + c t^2) dt, Phi_noise(s) = 1/(1 + b^2 s^2), to 1e-8."""
    u = np.array([0.0, 0.35, 1.0, 2.2, 6.0])
    numeric = [
        integrate.quad(
            lambda t, x=x: math.cos(t * x) * characteristic(kernel, t) * (1 + c * t * t),
            0,
            math.inf,
            epsabs=1e-13,
            limit=400,
        )[0]
        / math.pi
        for x in u
    ]
    np.testing.assert_allclose(adjusted(kernel, u, c), numeric, rtol=0, atol=1e-8)


@pytest.mark.parametrize("kernel", ["gaussian", "cauchy"])
def test_deconvoluting_density_is_unbiased_for_the_noiseless_kde(kernel):
    """Eq. (6): E[phi_hat(p) | x] = noiseless KDE; the mean of R draws lies within 5 SE at every p."""
    rng = np.random.default_rng(4)
    x = data.sample_x("mixture", 300, rng)
    grid, h, b = np.linspace(-3, 3, 9), 0.5, 0.35
    noiseless = estimators.density(grid, x, h, 0.0, kernel)
    draws = np.array([estimators.density(grid, x + rng.laplace(0, b, x.size), h, b, kernel) for _ in range(300)])
    se = draws.std(axis=0, ddof=1) / math.sqrt(len(draws))
    assert (np.abs(draws.mean(axis=0) - noiseless) < 5 * se).all()
    naive = estimators.density(grid, x + rng.laplace(0, b, x.size), h, 0.0, kernel)
    assert naive.max() < noiseless.max()  # the naive estimate is flatter


def test_normal_reference_bandwidth_reduces_to_silverman_and_grows_with_noise():
    z = np.random.default_rng(1).normal(0, 2.0, 5000)
    sigma = z.std(ddof=1)
    assert estimators.normal_reference_bandwidth(z, 0.0) == pytest.approx((4 / 3) ** 0.2 * sigma * 5000**-0.2, rel=1e-6)
    hs = [estimators.normal_reference_bandwidth(z, b) for b in (0.0, 0.3, 0.8)]
    assert hs[0] < hs[1] < hs[2]


def test_loo_cv_equals_brute_force_leave_one_out():
    rng = np.random.default_rng(2)
    z, y = rng.uniform(0, 3, 40), rng.normal(0, 1, 40)
    hs, b = [0.2, 0.7], 0.15
    fast = estimators.loo_cv_scores(z, y, hs, b, "cauchy")
    for h, score in zip(hs, fast, strict=True):
        errs = []
        for j in range(len(z)):
            keep = np.arange(len(z)) != j
            m = estimators.nadaraya_watson(z[j : j + 1], z[keep], y[keep], h, b, "cauchy")[0]
            errs.append((y[j] - (m if np.isfinite(m) else y.mean())) ** 2)
        assert score == pytest.approx(np.mean(errs), rel=1e-12)
    sub = estimators.loo_cv_scores(z, y, hs, b, "cauchy", subset=np.arange(10))
    assert sub.shape == (2,) and not np.allclose(sub, fast)


def test_nadaraya_watson_reproduces_a_constant_and_a_line_without_noise():
    z = np.linspace(0, 1, 50)
    assert np.allclose(estimators.nadaraya_watson([0.2, 0.5], z, np.full(50, 3.0), 0.1, 0.05, "cauchy"), 3.0)
    # symmetric design: a line is recovered exactly at the centre
    assert estimators.nadaraya_watson([0.5], z, 2 * z + 1, 0.1, 0.0, "gaussian")[0] == pytest.approx(2.0)


def test_chi2_sampler_is_the_truncated_law():
    x = data.sample_x("chi2", 4000, np.random.default_rng(3))
    law = stats.chi2(3)
    assert x.min() >= 0 and x.max() <= 3
    assert stats.kstest(x, lambda v: law.cdf(v) / law.cdf(3)).pvalue > 1e-3


def test_mixture_sampler_weights_and_support():
    x = data.sample_x("mixture", 20000, np.random.default_rng(5))
    assert x.min() >= -3 and x.max() <= 3
    # P(x < 0.25) under the truncated mixture, computed from the normal CDFs; binomial 5-sigma bound
    comp = [(1 / 3, stats.norm(-1, 1)), (2 / 3, stats.norm(1.5, math.sqrt(0.5)))]

    def mass(a, b):
        return sum(w * (d.cdf(b) - d.cdf(a)) for w, d in comp)

    p = mass(-3, 0.25) / mass(-3, 3)
    assert abs((x < 0.25).mean() - p) < 5 * math.sqrt(p * (1 - p) / x.size)


def test_lendingclub_loader_rejects_scores_without_a_log(tmp_path):
    path = tmp_path / "loans.csv"
    pd.DataFrame({"fico": [700, 600], "int.rate": [0.1, 0.2]}).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"loans.csv: field 'fico': 1 scores <= 600"):
        data.lendingclub(path)
    pd.DataFrame({"fico": [700], "rate": [0.1]}).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"field 'int\.rate': column missing"):
        data.lendingclub(path)


def test_adult_loader_checks_the_label_column(tmp_path):
    row = (
        "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 0, 0, 40, US, {}"
    )
    (tmp_path / "adult.data").write_text(row.format(">50K") + "\n" + row.format("<=50K") + "\n")
    (tmp_path / "adult.test").write_text("|1x3 Cross validator\n" + row.format("maybe") + "\n")
    with pytest.raises(InputError, match=r"adult.test: field '14 \(income\)': 1 values"):
        data.adult(tmp_path)
    (tmp_path / "adult.test").write_text("|1x3 Cross validator\n" + row.format(">50K.") + "\n")
    train, test = data.adult(tmp_path)
    assert train["y"].tolist() == [1.0, 0.0] and test["y"].tolist() == [1.0] and train["x"].tolist() == [13.0, 13.0]


@pytest.mark.parametrize(
    "section, key",
    [
        ({"datasets": {"a": {"source": "synthetic", "curve": "g3"}}}, "studies.deconv.datasets.a.curve"),
        ({"datasets": {"a": {"source": "census"}}}, "studies.deconv.datasets.a.source"),
        ({"datasets": {"a": {"source": "adult"}}}, "studies.deconv.datasets.a.path"),
        ({"datasets": {"a": {"source": "synthetic"}}, "kernel": "epanechnikov"}, "studies.deconv.kernel"),
        ({"datasets": {"a": {"source": "synthetic"}}, "density": {"kernel": "cauchy"}}, "studies.deconv.density.h"),
        ({"datasets": {}}, "studies.deconv.datasets"),
    ],
)
def test_config_errors_name_the_key(section, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        study.validate_config(section)


def _fit(run: dict, cfg: dict, p: dict) -> None:
    study.fit_stage(
        run=run,
        cfg=cfg,
        seed=7,
        reports_path=p["reports"],
        train_path=p["train"],
        test_path=p["test"],
        out_metrics=p["metrics"],
        out_curves=p["curves"],
    )


def test_fit_stage_on_synthetic_data(tmp_path):
    """End to end without Snakemake: at epsilon = 10 the kernel beats the line on g1's curve."""
    cfg = study.validate_config(
        {
            "datasets": {"m": {"source": "synthetic", "n": [2000], "test_size": 2000}},
            "epsilon": [10.0],
            "bandwidth": {"count": 12, "cv_points": 500},
        }
    )
    ds = cfg["datasets"]["m"]
    p = {k: str(tmp_path / f"{k}.parquet") for k in ("train", "test", "reports", "metrics", "curves")}
    study.split_stage(dataset="m", n=2000, rep=0, ds=ds, seed=7, out_train=p["train"], out_test=p["test"])
    run = {"dataset": "m", "n": 2000, "epsilon": 10.0, "rep": 0}
    study.randomize_stage(run=run, ds=ds, seed=7, train_path=p["train"], out=p["reports"])
    reports = pd.read_parquet(p["reports"])
    assert not np.allclose(reports["z"], pd.read_parquet(p["train"])["x"])  # the server never sees x
    _fit(run, cfg, p)
    m = pd.read_parquet(p["metrics"]).set_index(["method", "metric"])["value"]
    assert m[("kernel", "curve_mse")] < m[("linear", "curve_mse")]
    assert m[("density_deconv", "ise_vs_noiseless")] < m[("density_naive", "ise_vs_noiseless")]
    guarantee = read_parquet_metadata(p["metrics"])["guarantee"]
    assert guarantee["epsilon"] == 10.0 and guarantee["relation"] == "any two inputs (local)"
    assert "grid" in guarantee["discretisation"] and not guarantee["non_private_inputs"]


def test_cv_at_true_voids_the_guarantee_and_names_the_leak(tmp_path):
    """eq. (8) as printed picks the bandwidth on the true inputs: the fitted model has no epsilon."""
    cfg = study.validate_config(
        {
            "datasets": {"m": {"source": "synthetic", "n": [500], "test_size": 200}},
            "epsilon": [5.0],
            "bandwidth": {"count": 4, "cv_points": 100, "cv_at": "true"},
        }
    )
    ds = cfg["datasets"]["m"]
    p = {k: str(tmp_path / f"{k}.parquet") for k in ("train", "test", "reports", "metrics", "curves")}
    study.split_stage(dataset="m", n=500, rep=0, ds=ds, seed=7, out_train=p["train"], out_test=p["test"])
    run = {"dataset": "m", "n": 500, "epsilon": 5.0, "rep": 0}
    study.randomize_stage(run=run, ds=ds, seed=7, train_path=p["train"], out=p["reports"])
    assert read_parquet_metadata(p["reports"])["guarantee"]["epsilon"] == 5.0
    _fit(run, cfg, p)
    guarantee = read_parquet_metadata(p["metrics"])["guarantee"]
    assert guarantee["epsilon"] is None and "cv_at: true" in guarantee["non_private_inputs"]


def test_one_job_per_split_writes_the_bytes_of_the_separate_stages(tmp_path):
    """split_run_stage (the deconv_run rule) = split, then per epsilon randomize + fit, byte for byte."""
    cfg = study.validate_config(
        {
            "datasets": {"m": {"source": "synthetic", "n": [300], "test_size": 200}},
            "epsilon": [5.0],
            "bandwidth": {"count": 4, "cv_points": 100},
        }
    )
    labels = study.epsilon_labels(cfg)
    assert labels == ["5.0", "inf"]
    joint = {
        "train": str(tmp_path / "train.parquet"),
        "test": str(tmp_path / "test.parquet"),
        **{k: [str(tmp_path / f"{k}-{e}.parquet") for e in labels] for k in ("reports", "metrics", "curves")},
    }
    study.split_run_stage(dataset="m", n="300", rep=0, cfg=study.fit_config(cfg, "m"), seed=7, out=joint)
    alone = {k: str(tmp_path / f"alone-{k}.parquet") for k in ("train", "test", "reports", "metrics", "curves")}
    ds = cfg["datasets"]["m"]
    study.split_stage(dataset="m", n="300", rep=0, ds=ds, seed=7, out_train=alone["train"], out_test=alone["test"])
    for k in ("train", "test"):
        assert Path(joint[k]).read_bytes() == Path(alone[k]).read_bytes(), k
    for i, eps in enumerate((5.0, "inf")):
        run = {"dataset": "m", "n": "300", "epsilon": eps, "rep": 0}
        study.randomize_stage(run=run, ds=ds, seed=7, train_path=alone["train"], out=alone["reports"])
        _fit(run, study.fit_config(cfg, "m"), alone)
        for k in ("reports", "metrics", "curves"):
            assert Path(joint[k][i]).read_bytes() == Path(alone[k]).read_bytes(), (k, eps)


def test_metrics_are_tidy_rows_with_a_float_epsilon_and_a_named_noiseless_reference(tmp_path):
    """The summary sorts epsilon as a number (10 after 5) and the noiseless run is NaN + ``_noiseless``."""
    cfg = study.validate_config(
        {
            "datasets": {"m": {"source": "synthetic", "n": [300], "test_size": 200}},
            "epsilon": [10.0, 5.0],
            "reps": 1,
            "bandwidth": {"count": 4, "cv_points": 100},
        }
    )
    labels = study.epsilon_labels(cfg)
    out = {
        "train": str(tmp_path / "train.parquet"),
        "test": str(tmp_path / "test.parquet"),
        **{k: [str(tmp_path / f"{k}-{e}.parquet") for e in labels] for k in ("reports", "metrics", "curves")},
    }
    study.split_run_stage(dataset="m", n="300", rep=0, cfg=study.fit_config(cfg, "m"), seed=7, out=out)
    study.summary_stage(paths=out["metrics"], out_parquet=str(tmp_path / "s.parquet"), out_csv=str(tmp_path / "s.csv"))
    table = pd.read_parquet(tmp_path / "s.parquet")
    assert list(table.columns) == ["study", "method", "epsilon", "n", "rep", "dataset", "metric", "value"]
    assert table["epsilon"].dtype == "float64" and table["n"].dtype == "int64" and set(table["n"]) == {300}
    kernel = table[table["method"].str.startswith("kernel") & (table["metric"] == "mse")]
    assert kernel["epsilon"].tolist()[:2] == [5.0, 10.0] and np.isnan(kernel["epsilon"].iloc[2])
    assert kernel["method"].tolist() == ["kernel", "kernel", "kernel_noiseless"]
    assert set(table[table["epsilon"].isna()]["method"]) >= {"kernel_noiseless", "linear_noiseless"}
    private = table[table["epsilon"].notna()]
    assert set(private[private["method"].str.endswith("_noiseless")]["method"]) == {"density_noiseless"}
