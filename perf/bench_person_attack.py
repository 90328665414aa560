"""Person-level attacks: a reference revision vs this one, in one run.

``--attack bayes`` (default): the Bayes adversary, ``locpriv.stages.attack.bayes_adversary``.
``--attack local_maxima``: the local-maxima attack on flat person surfaces (the ``zero``
mechanism's, the worst case for memory: every grid cell is a maximum, each measured to the
nearest of the person's points).

Synthetic Geolife-like persons: a few persons with very many rows (lognormal sizes, the largest
~20 % of all rows), each row a Laplace LDP report (``likelihoods.product_laplace_logpdf``, scales of
epsilon = 10 on the box) of a point near one of the person's few places, on a 100 x 100 grid.  The
same inputs go to the attack of the BEFORE revision (its ``lib`` exported by ``git archive`` into a
temporary folder) and of this checkout's ``lib``, each in its own subprocess, alternately for
``--rounds`` rounds.  Printed per round: the process CPU time, the wall time of the call and the
process's peak resident memory for both, their ratios, whether the results are identical, and the
load average.

Run:  python perf/bench_person_attack.py [--attack bayes|local_maxima] [--before b71eb3a] [--rows 100000]
          [--persons 60] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def bayes(args):
    """The Bayes adversary's result table (with each person's log-likelihood range) and its mixture count."""
    from locpriv.stages import attack

    # a reference revision may predate the public name (it was the module's private ``_adversary``)
    adversary = getattr(attack, "bayes_adversary", None) or getattr(attack, "_adversary", None)
    result, mixture, person_range = adversary(*args)
    return result.assign(range=person_range), {"mixture": mixture}


def local_maxima(args):
    """The local-maxima attack on one flat surface per person (every cell a maximum)."""
    from locpriv.adversary import local_maxima as lm

    targets, batch, _, _, grid, _ = args
    n = len(targets.ids)
    flat = ((sl, np.ones((sl.stop - sl.start, *grid.shape))) for sl in lm.batches(n, batch))
    return lm.local_maxima_attack(flat, grid, targets.ids["user"].to_numpy(), targets.truth), {}


def worker(attack: str, rows: int, n_persons: int, out: str) -> None:
    """One timed call of the attack with ``locpriv`` from PYTHONPATH; results, times, peak memory to ``out``."""
    args = inputs(rows, n_persons)
    cpu, wall = time.process_time(), time.perf_counter()
    result, extra = {"bayes": bayes, "local_maxima": local_maxima}[attack](args)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    result.to_parquet(out)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    Path(out + ".json").write_text(json.dumps({"cpu": cpu, "wall": wall, "peak_mb": peak, **extra}))


def run(lib: Path, attack: str, rows: int, n_persons: int, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(lib)}
    cmd = [sys.executable, str(HERE), "--worker", str(out), "--attack", attack]
    cmd += ["--rows", str(rows), "--persons", str(n_persons)]
    subprocess.run(cmd, check=True, env=env)
    return json.loads(Path(str(out) + ".json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attack", choices=["bayes", "local_maxima"], default="bayes")
    parser.add_argument("--before", default="b71eb3a", help="the reference revision (its lib/)")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--persons", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.attack, args.rows, args.persons, args.worker)
        return
    import pandas as pd

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        archive = subprocess.run(["git", "archive", args.before, "lib"], cwd=REPO, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
        libs = {"before": tmp / "lib", "after": REPO / "lib"}
        for r in range(args.rounds):
            times = {
                name: run(lib, args.attack, args.rows, args.persons, tmp / f"{name}.parquet")
                for name, lib in libs.items()
            }
            same = pd.read_parquet(tmp / "before.parquet").equals(pd.read_parquet(tmp / "after.parquet"))
            load = " ".join(f"{v:.1f}" for v in os.getloadavg())
            cpu, wall, peak = (times["after"][k] / times["before"][k] for k in ("cpu", "wall", "peak_mb"))
            b, a = times["before"], times["after"]
            print(
                f"round {r + 1} ({args.attack}): before cpu {b['cpu']:.2f} s wall {b['wall']:.2f} s peak "
                f"{b['peak_mb']:.0f} MB; after cpu {a['cpu']:.2f} s wall {a['wall']:.2f} s peak {a['peak_mb']:.0f} MB; "
                f"after/before cpu {cpu:.3f} wall {wall:.3f} peak {peak:.3f} ({args.rows} rows, {args.persons} "
                f"persons; results identical: {same}; load average {load})",
                flush=True,
            )


if __name__ == "__main__":
    main()
