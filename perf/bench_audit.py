"""CPU seconds of the audit stage of the default run (issue 28 item 3): one ``audit_setting`` call per
audit job of ``config.yaml`` (the workflow's own ``audit.stage.settings`` of its runs: same parameters,
labels and seeds), on its datasets' public grids (synthetic boxes), at the default draws -- the work of
each ``audit`` job (the grid load aside).

Run with the code under test first on PYTHONPATH (``PYTHONPATH=$PWD/lib python perf/bench_audit.py``)
and once with the reference's ``lib`` (e.g. main's checkout) for a before/after pair in one session.
Prints one line per setting (CPU seconds, the largest bound, the claim) and the total.
"""

import argparse
import time

import yaml

from locpriv.audit.stage import DEFAULT_DRAWS, audit_setting, settings
from locpriv.config import expand_runs
from locpriv.domain import Domain, Grid
from timing import timed


def audited_settings(config: dict):
    """(mechanism, params, datasets) of every audit job of the config, as the workflow builds them."""
    for (name, _), entry in settings(expand_runs(config)).items():
        yield name, entry["params"], entry["datasets"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--draws", type=int, default=DEFAULT_DRAWS)
    parser.add_argument("--only", nargs="*", help="mechanism names to time (default: all audited)")
    args = parser.parse_args()
    with open(args.config) as fh:
        config = yaml.safe_load(fh)
    grids = {
        name: Grid.regular(Domain(*spec["bbox"]), config["grid"]["P"], config["grid"]["Q"])
        for name, spec in config["datasets"].items()
        if "bbox" in spec
    }
    total = 0.0
    for name, params, datasets in audited_settings(config):
        if args.only and name not in args.only:
            continue
        job = {ds: grids[ds] for ds in datasets}
        seconds, table = timed(
            lambda: audit_setting(name, params, job, args.draws, config["seed"]), clock=time.process_time
        )
        total += seconds
        print(
            f"{name:14s} {params}  cpu {seconds:7.1f} s  lb {table['epsilon_lb'].max():.3f}"
            f"  claim {table['claimed_epsilon'].max():g}  pairs {len(table)}",
            flush=True,
        )
    print(f"total audit CPU {total:.1f} s")


if __name__ == "__main__":
    main()
