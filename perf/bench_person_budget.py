"""Person-level budgets on Geolife (issue 28 item 8): ``person_budget: split``, ``split_epsilon`` and
``group`` at equal person-level ε.

group (cap c): each person keeps up to c seeded rows, each released at ε_person / c (person-level ε =
c × record ε, group privacy); split: each person keeps one seeded row released at ε_person;
split_epsilon (cap c): up to c seeded rows, the mechanism configured with ε_person and
``person_reports: c`` (each report at ε_person / c, the record's ε the person's).  All are
ingested by ``datasets.ingest.real_points`` from the dataset of ``--config`` (the Geolife config's),
randomised through the public API and scored against the distribution of *all* rows (every person's
full trace): total-variation distance between the released estimate's mass and the truth's on a
``--cells`` x ``--cells`` grid of the public box (0 = perfect, 1 = disjoint), mean ± sd over ``--reps``
seeded repetitions.  Mechanisms: ``ldp_oue_grid`` (counts of a 16 x 16 OUE grid) and ``laplace_ldp``
(naive KDE, h = 1/20 of the box side).

Without the data the script says so and exits 0 (nothing in the default run needs it).
"""

import argparse
import math
import os
import sys
import time

import numpy as np
import pandas as pd
import yaml

from locpriv import LaplaceLDP, OUEGrid
from locpriv.datasets import ingest, persons
from locpriv.domain import Domain, Grid


def mass(xy_or_density, grid: Grid, is_density: bool) -> np.ndarray:
    if is_density:
        m = np.nan_to_num(np.maximum(xy_or_density, 0.0))
    else:
        d = grid.domain
        m, _, _ = np.histogram2d(
            xy_or_density[:, 0], xy_or_density[:, 1], bins=grid.shape, range=[[d.xmin, d.xmax], [d.ymin, d.ymax]]
        )
    return m / m.sum() if m.sum() > 0 else np.full(m.shape, 1.0 / m.size)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="workflow/configs/geolife.yaml")
    parser.add_argument("--dataset", default="geolife")
    parser.add_argument("--path", help="the dataset's file (default: the config's path, relative to the cwd)")
    parser.add_argument("--eps", type=float, nargs="+", default=[2.0, 10.0, 100.0], help="person-level epsilons")
    parser.add_argument("--caps", type=int, nargs="+", default=[10, 100], help="group caps c")
    parser.add_argument("--split-caps", type=int, nargs="+", default=[3, 10, 30, 100], help="split_epsilon caps c")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--cells", type=int, default=32)
    parser.add_argument("--out", help="CSV of every repetition")
    args = parser.parse_args()
    with open(args.config) as fh:
        spec = yaml.safe_load(fh)["datasets"][args.dataset]
    path = args.path or os.path.normpath(os.path.join(os.getcwd(), spec["path"]))
    if not os.path.exists(path):
        print(f"{path} not found: nothing measured (the data is not part of the repository)")
        return 0
    spec = {**spec, "path": path}
    spec.pop("max_points_per_person", None)
    everyone, meta = ingest.real_points(args.dataset, {**spec, "person_budget": "group"}, np.random.default_rng(0))
    box = Domain(*(ingest.real.projected_box(spec["lonlat_bbox"])[0] if "lonlat_bbox" in spec else spec["bbox"]))
    grid = Grid.regular(box, args.cells, args.cells)
    truth = mass(everyone[["x", "y"]].to_numpy(), grid, False)
    print(f"{args.dataset}: {len(everyone)} rows, {meta['persons']} persons; grid {args.cells}^2", flush=True)
    side = min(box.xmax - box.xmin, box.ymax - box.ymin)
    rows = []
    for rep in range(args.reps):
        # label -> (dataset spec, cap, reports per person the mechanism divides epsilon by)
        budgets = {"split": ({**spec, "person_budget": "split"}, 1, 1)}
        budgets.update({f"group c={c}": ({**spec, "max_points_per_person": c}, c, 1) for c in args.caps})
        budgets.update(
            {
                f"split_epsilon c={c}": ({**spec, "person_budget": "split_epsilon", "max_points_per_person": c}, c, c)
                for c in args.split_caps
            }
        )
        for label, (ds, cap, reports) in budgets.items():
            pts, _ = ingest.real_points(args.dataset, ds, np.random.default_rng([rep, cap]))
            xy = pts[["x", "y"]].to_numpy()
            for eps in args.eps:
                # group divides by hand (its record is per row); split_epsilon configures the person's epsilon
                configured = eps / cap if reports == 1 else eps
                for mech in (
                    OUEGrid(epsilon=configured, level=4, person_reports=reports),
                    LaplaceLDP(epsilon=configured, h=side / 20, estimator="naive", person_reports=reports),
                ):
                    person = persons.person_level_epsilon(mech.guarantee().epsilon, cap, reports)
                    assert math.isclose(person, eps), (label, person, eps)  # equal person-level epsilon
                    t0 = time.process_time()
                    est = mech.fit_estimate(xy, rng=np.random.default_rng([rep, cap, int(eps)]), grid=grid)
                    tv = 0.5 * np.abs(mass(est, grid, True) - truth).sum()
                    rows.append(
                        {
                            "rep": rep,
                            "budget": label,
                            "rows": len(xy),
                            "person_epsilon": eps,
                            "record_epsilon": mech.guarantee().epsilon,
                            "report_epsilon": mech.report_epsilon,
                            "mechanism": mech.name,
                            "tv": tv,
                            "cpu_s": time.process_time() - t0,
                        }
                    )
                    print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    if args.out:
        table.to_csv(args.out, index=False, float_format="%.6g")
    summary = table.groupby(["mechanism", "person_epsilon", "budget"])["tv"].agg(["mean", "std"]).round(4)
    print(summary.to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
