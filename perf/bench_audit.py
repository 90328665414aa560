"""CPU seconds of the audit stage of the default run (issue 28 item 3): one ``audit_setting`` call per
audited (mechanism, setting) of ``config.yaml``'s density experiment, on its two datasets' public
grids, at the default draws -- the work of each ``audit`` job (the grid load aside).

Run with the code under test first on PYTHONPATH (``PYTHONPATH=$PWD/lib python perf/bench_audit.py``)
and once with the reference's ``lib`` (e.g. main's checkout) for a before/after pair in one session.
Prints one line per setting (CPU seconds, the largest bound, the claim) and the total.
"""

import argparse
import itertools
import time

import yaml

from locpriv import mechanisms
from locpriv.audit.stage import DEFAULT_DRAWS, audit_setting, run_claims
from locpriv.domain import Domain, Grid
from timing import timed


def audited_settings(config: dict):
    """(mechanism, params without n) of every run setting of the density experiment that claims an ε."""
    for name, spec in config["experiments"]["density"]["mechanisms"].items():
        lists = {k: v if isinstance(v, list) else [v] for k, v in spec.items() if k != "n"}
        for values in itertools.product(*lists.values()):
            params = dict(mechanisms.get(name)(**dict(zip(lists, values))).settings)
            params.pop("n", None)
            if run_claims(name, params):
                yield name, params


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--draws", type=int, default=DEFAULT_DRAWS)
    parser.add_argument("--only", nargs="*", help="mechanism names to time (default: all audited)")
    args = parser.parse_args()
    with open(args.config) as fh:
        config = yaml.safe_load(fh)
    grids = {name: Grid.regular(Domain(*spec["bbox"]), config["grid"]["P"], config["grid"]["Q"])
             for name, spec in config["datasets"].items() if name in config["experiments"]["density"]["datasets"]}
    total = 0.0
    for name, params in audited_settings(config):
        if args.only and name not in args.only:
            continue
        seconds, table = timed(lambda: audit_setting(name, params, grids, args.draws, config["seed"]),
                               clock=time.process_time)
        total += seconds
        print(f"{name:14s} {params}  cpu {seconds:7.1f} s  lb {table['epsilon_lb'].max():.3f}"
              f"  claim {table['claimed_epsilon'].max():g}  pairs {len(table)}", flush=True)
    print(f"total audit CPU {total:.1f} s")


if __name__ == "__main__":
    main()
