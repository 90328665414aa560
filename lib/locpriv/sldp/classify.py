"""Classification under location privacy ([SLDP] §5.2): California housing.

Features are the coordinates scaled to [0, 1]^2 from a public, configured lon/lat box
(``classify.lonlat_bbox``; the data's own min/max would make the box, and so every
mechanism's domain, a function of the data: a user at the edge would move it), points
outside it clamped and counted; the label is house value above the global median;
mechanisms perturb the 70 % training features only:

* SLDP-Quantization: each point becomes the centre of its privacy region (the
  private quadtree on the whole epsilon);
* SLDP-Split: half of epsilon for the quadtree, then each point is the region
  centre plus Laplace noise of scale 2 w_j / eps_rest per coordinate (w_j the
  region's width: the Laplace mechanism over the region, Theorem 1 style with
  q = 2 coordinates -- the paper says only "proportional to its size");
* LDP: ``laplace_ldp`` on the unit square (scale 2 / eps per coordinate, eps-LDP for
  the 2-D location), clipped to the square.  The paper prints Laplace(1/eps) per
  coordinate, which is 2 eps-LDP (L1 sensitivity 2 over two unit coordinates);
* geo-indistinguishability: planar Laplace with eps per unit of the scaled square.

Every released value is Mironov-safe (``locpriv.dp``): discrete Laplace on public grids.

Classifiers (scikit-learn): random forest (50 trees, depth 8), kNN (k = 15,
distance-weighted), logistic regression; F1 on the untouched 30 % test set.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import laplace_ldp
from ..dp.grid import release_bounded
from ..errors import InputError
from ..planar_laplace import perturb
from ..quadtree import cell_box
from .protocol import run_protocol

UNIT = (0.0, 1.0, 0.0, 1.0)
MECHANISMS = ("none", "sldp_quantization", "sldp_split", "ldp", "geoind")


def load_housing(path: str, lonlat_bbox) -> tuple[np.ndarray, np.ndarray, dict]:
    """(X in [0, 1]^2, y, counts): lon/lat scaled from the public ``lonlat_bbox`` [lon_min, lon_max,
    lat_min, lat_max]; rows with a missing coordinate or value are dropped and counted, coordinates
    outside the box clamped to it and counted."""
    columns = ["longitude", "latitude", "median_house_value"]
    try:
        table = pd.read_csv(path, usecols=columns)
    except ValueError as exc:
        raise InputError(
            path,
            ", ".join(columns),
            f"cannot read the columns: {exc}",
            "give the California housing CSV with these columns",
        ) from None
    complete = table[columns].notna().all(axis=1)
    table = table[complete]
    xy = table[["longitude", "latitude"]].to_numpy(dtype=float)
    lo, hi = np.array(lonlat_bbox[0::2], dtype=float), np.array(lonlat_bbox[1::2], dtype=float)
    outside = ((xy < lo) | (xy > hi)).any(axis=1)
    value = table["median_house_value"].to_numpy(dtype=float)
    return (
        (np.clip(xy, lo, hi) - lo) / (hi - lo),
        (value > np.median(value)).astype(int),
        {
            "rows_read": len(complete),
            "rows_dropped_missing": int((~complete).sum()),
            "rows_clamped_to_box": int(outside.sum()),
        },
    )


def _regions(X, epsilon, cfg, rng):
    part = run_protocol(
        X,
        UNIT,
        epsilon,
        cfg["threshold"],
        cfg["max_depth"],
        cfg["delta"],
        rng,
        split_rule=cfg["split_rule"],
        keep_reports=False,
        calibration=cfg["calibration"],
    )
    return cell_box(part.user_cell["level"].to_numpy(), part.user_cell["code"].to_numpy(), UNIT)


def region_release(boxes: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Region centre + Laplace(2 w_j / epsilon) per coordinate (discrete, on a grid of the region)."""
    lo, hi = boxes[:, [0, 2]], boxes[:, [1, 3]]
    return release_bounded((lo + hi) / 2, lo, hi, epsilon / 2, rng)


def privatise(mechanism: str, X: np.ndarray, epsilon: float, cfg: dict, rng: np.random.Generator) -> np.ndarray:
    if mechanism == "none":
        return X
    if mechanism == "sldp_quantization":
        box = _regions(X, epsilon, cfg, rng)
        return np.stack([(box[:, 0] + box[:, 1]) / 2, (box[:, 2] + box[:, 3]) / 2], axis=1)
    if mechanism == "sldp_split":
        return region_release(_regions(X, epsilon / 2, cfg, rng), epsilon / 2, rng)
    if mechanism == "ldp":
        return np.clip(laplace_ldp.randomize(X, np.array([UNIT[:2], UNIT[2:]]), epsilon, rng), 0.0, 1.0)
    if mechanism == "geoind":
        return perturb(X, epsilon, rng)
    raise ValueError(f"unknown classification mechanism {mechanism!r}; allowed: {list(MECHANISMS)}")


def classifiers(seed: int) -> dict:
    # scikit-learn is the workflow extra's: the rest of this module (the privatised regions) is the library's
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier

    return {
        "random_forest": RandomForestClassifier(n_estimators=50, max_depth=8, random_state=seed, n_jobs=1),
        "knn": KNeighborsClassifier(n_neighbors=15, weights="distance"),
        "logistic": LogisticRegression(),
    }


def _split(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    order = rng.permutation(n)
    cut = int(round(0.7 * n))
    return order[:cut], order[cut:]


def f1_scores(
    X: np.ndarray, y: np.ndarray, mechanism: str, epsilon: float, cfg: dict, rng: np.random.Generator
) -> dict[str, float]:
    """70/30 split, mechanism on the training features, F1 per classifier on the test set."""
    from sklearn.metrics import f1_score

    train, test = _split(len(X), rng)
    X_train = privatise(mechanism, X[train], epsilon, cfg, rng)
    seed = int(rng.integers(2**31))
    return {
        name: float(f1_score(y[test], model.fit(X_train, y[train]).predict(X[test])))
        for name, model in classifiers(seed).items()
    }


def k_sensitivity(
    X: np.ndarray, y: np.ndarray, epsilon: float, k: float, cfg: dict, rng: np.random.Generator
) -> dict[str, float]:
    """App. A.1 (Fig. 6): random-forest precision and recall on SLDP-Quantization data when
    every privacy region must hold at least k users (the split threshold Q = k)."""
    from sklearn.metrics import precision_score, recall_score

    train, test = _split(len(X), rng)
    X_train = privatise("sldp_quantization", X[train], epsilon, {**cfg, "threshold": float(k)}, rng)
    model = classifiers(int(rng.integers(2**31)))["random_forest"].fit(X_train, y[train])
    pred = model.predict(X[test])
    return {"precision": float(precision_score(y[test], pred)), "recall": float(recall_score(y[test], pred))}
