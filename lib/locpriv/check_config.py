"""Check config files without running Snakemake: ``python -m locpriv.check_config FILE [FILE ...]``.

Snakemake reads ``--configfile`` files itself, before the Snakefile runs, and reports a
YAML syntax error without file, line or column ("Config file is not valid JSON or
YAML"), and the Snakefile cannot step in before that. This command gives the one line
the workflow gives for its own config.yaml (file, line, column), then runs the main
DAG's start-up checks (schema, values, runs) and each configured study's checks on the
files merged in command-line order.  The config's ``plugins`` are looked for in the current folder
(as the workflow looks for them in its working directory).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from snakemake.utils import update_config

from . import config as lpconfig
from . import study as lpstudy
from .smk import check_yaml


def check_files(paths: list[str]) -> None:
    """Raise ConfigError (one line) for the first problem in the merged config of ``paths``."""
    merged: dict = {}
    for path in paths:
        if not Path(path).is_file():
            raise lpconfig.ConfigError(f"{path}: no such file")
        check_yaml(path)
        loaded = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(loaded, dict):
            raise lpconfig.ConfigError(f"{path}: the top level must be a mapping of keys (seed: ..., grid: ...)")
        update_config(merged, loaded)  # as Snakemake merges --configfile files
    lpconfig.check_startup(merged, workdir=None)
    for study, section in (merged.get("studies") or {}).items():
        # each study's validator (what its rules call at parse time), from the registry
        lpstudy.get(study).validate(section)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m locpriv.check_config config.yaml [more.yaml ...]", file=sys.stderr)
        return 2
    try:
        check_files(argv)
    except lpconfig.ConfigError as exc:
        print(f"invalid configuration: {exc}", file=sys.stderr)
        return 1
    print(f"{', '.join(argv)}: valid")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
