"""Person-level Bayes attack (``locpriv.stages.attack.bayes_adversary``): a reference revision vs this one, in one run.

Synthetic Geolife-like persons: a few persons with very many rows (lognormal sizes, the largest
~20 % of all rows), each row a Laplace LDP report (``likelihoods.product_laplace_logpdf``, scales of
epsilon = 10 on the box) of a point near one of the person's few places, on a 100 x 100 grid.  The
same inputs go to ``bayes_adversary`` (``_adversary`` before it was public) of the BEFORE revision
(its ``lib`` exported by ``git archive`` into a temporary folder) and of this checkout's ``lib``, each
in its own subprocess, alternately for ``--rounds`` rounds.  Printed per round: the process CPU time
and the wall time of the call for both, their ratio, whether the results are identical, and the load
average.

Run:  python perf/bench_person_attack.py [--before b71eb3a] [--rows 100000] [--persons 60] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent


def inputs(rows: int, n_persons: int, seed: int = 26):
    """``bayes_adversary``'s arguments (targets, batch, log_lik_of, prior, grid, radius) for the synthetic persons."""
    import pandas as pd

    from locpriv.adversary import likelihoods
    from locpriv.adversary import local_maxima as lm
    from locpriv.domain import Domain, Grid
    from locpriv.stages.attack import Targets

    rng = np.random.default_rng(seed)
    grid = Grid.regular(Domain(0.0, 38000.0, 0.0, 39000.0), 100, 100)
    sizes = rng.lognormal(0.0, 1.6, n_persons)
    sizes = np.maximum(1, np.round(sizes / sizes.sum() * rows)).astype(int)
    owner = rng.permutation(np.repeat(np.arange(n_persons), sizes))  # persons' rows interleaved, as user ids are
    places = rng.uniform([0, 0], [38000, 39000], (n_persons, 4, 2))
    true = places[owner, rng.integers(0, 4, len(owner))] + rng.normal(0, 300, (len(owner), 2))
    scales = np.array([2 * 38000 / 10.0, 2 * 39000 / 10.0])
    reports = true + rng.laplace(0, scales, true.shape)
    view = pd.DataFrame({"user": np.arange(len(owner)), "x": reports[:, 0], "y": reports[:, 1]})
    targets = Targets(
        view,
        owner,
        lm.PersonTargets([true[owner == p] for p in range(n_persons)]),
        pd.DataFrame({"user": [int(np.flatnonzero(owner == p)[0]) for p in range(n_persons)]}),
    )
    prior = rng.random(grid.shape)
    prior /= prior.sum()

    def log_lik_of(rows, _positions):
        return likelihoods.product_laplace_logpdf(rows[["x", "y"]].to_numpy(), grid, scales)

    return targets, 256, log_lik_of, prior, grid, 3 * 390.0


def worker(rows: int, n_persons: int, out: str) -> None:
    """One timed call of ``bayes_adversary`` with the ``locpriv`` on PYTHONPATH; its results and times to ``out``."""
    from locpriv.stages import attack

    # a reference revision may predate the public name (it was the module's private ``_adversary``)
    adversary = getattr(attack, "bayes_adversary", None) or getattr(attack, "_adversary", None)

    args = inputs(rows, n_persons)
    cpu, wall = time.process_time(), time.perf_counter()
    result, mixture, person_range = adversary(*args)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    result.assign(range=person_range).to_parquet(out)
    Path(out + ".json").write_text(json.dumps({"cpu": cpu, "wall": wall, "mixture": mixture}))


def run(lib: Path, rows: int, n_persons: int, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(lib)}
    cmd = [sys.executable, str(HERE), "--worker", str(out), "--rows", str(rows), "--persons", str(n_persons)]
    subprocess.run(cmd, check=True, env=env)
    return json.loads(Path(str(out) + ".json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="b71eb3a", help="the reference revision (its lib/)")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--persons", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.rows, args.persons, args.worker)
        return
    import pandas as pd

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        archive = subprocess.run(["git", "archive", args.before, "lib"], cwd=REPO, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
        libs = {"before": tmp / "lib", "after": REPO / "lib"}
        for r in range(args.rounds):
            times = {name: run(lib, args.rows, args.persons, tmp / f"{name}.parquet") for name, lib in libs.items()}
            same = pd.read_parquet(tmp / "before.parquet").equals(pd.read_parquet(tmp / "after.parquet"))
            load = " ".join(f"{v:.1f}" for v in os.getloadavg())
            cpu, wall = (times["after"][k] / times["before"][k] for k in ("cpu", "wall"))
            print(
                f"round {r + 1}: before cpu {times['before']['cpu']:.2f} s wall {times['before']['wall']:.2f} s; "
                f"after cpu {times['after']['cpu']:.2f} s wall {times['after']['wall']:.2f} s; after/before cpu "
                f"{cpu:.3f} wall {wall:.3f} ({args.rows} rows, {args.persons} persons; results identical: {same}; "
                f"load average {load})",
                flush=True,
            )


if __name__ == "__main__":
    main()
