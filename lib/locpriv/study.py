"""One contract for the protocol studies (``studies.<name>`` sections): :class:`Study` and the tidy summary.

Every study runs the same stages, each a rule: ingest (its data, where it has any) → run (one job
per setting; the protocol and its transcript) → metrics (per run, often inside the run job) →
summary (one tidy table, :meth:`Study.write_summary`) → tables and plots (rules that read the
summary and per-run data files only).

A study names itself, validates its config section (its module's ``validate_config``), lists its
runs and places each run in a folder.  Defining a :class:`Study` registers it by name
(:func:`get`, :func:`names`): a built-in study is ``STUDY`` in ``locpriv/<name>/study.py``, with
its section ``$defs.<name>`` in the config schema's source and its own rule file
``workflow/rules/studies/<name>.smk``; a plugin study (``locpriv.plugins``) brings its section's
``schema`` and an ``execute`` function, and the workflow's generic rules run it
(``workflow/rules/studies/registered.smk``: one job per run, :func:`run_stage`, then the summary,
:func:`summary_stage`).  Its summary is long: one row per identity × metric, the
columns :data:`SUMMARY_COLUMNS` plus the study's own declared identity columns (dataset, task,
scheme settings, …).  ``epsilon`` is the run's ε as a float: the configured one, or where a study
configures a noise level instead (radiomap) its guarantee's; NaN where there is none (a non-private
or noiseless reference, a run without a guarantee).  ``n`` is the number of users or clients whose
data the run used, ``rep`` the repetition (0 for a study without repetitions).  Parquet and CSV are written
together, sorted by identity, so the same config gives the same bytes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import io, plugins
from .errors import InputError
from .seeding import rng as make_rng

# pandas dtypes of the columns every study's summary has, in column order (identity first)
IDENTITY_COLUMNS = {"study": "str", "method": "str", "epsilon": "float64", "n": "int64", "rep": "int64"}
SUMMARY_COLUMNS = {**IDENTITY_COLUMNS, "metric": "str", "value": "float64"}
# what a study's own identity columns may be: labels, or numbers that must sort as numbers
EXTRA_DTYPES = ("str", "float64", "int64")


# name -> Study; filled by Study.__post_init__ (read it through get and names)
REGISTRY: dict[str, Study] = {}


@dataclass(frozen=True)
class Study:
    """A study: ``name``, ``validate(section) -> cfg``, ``runs(cfg) -> [run]``, ``run_dir(run) -> str``.

    ``identity`` declares the study's own identity columns and their dtypes (one of
    :data:`EXTRA_DTYPES`); they sit between the common identity and ``metric`` in the summary.
    ``schema``: the JSON schema of the study's config section (None: ``$defs.<name>`` of the
    config schema's source, the built-in studies').  ``execute(run, cfg, rng) -> table``: one run
    (``rng`` keyed by the seed, the study and the run's folder), its tidy table (e.g.
    :meth:`run_table`), for the generic rules; None for a study with a rule file of its own.
    ``register=False``: a throwaway study (tests), not offered to configs.
    """

    name: str
    validate: Callable[[dict], dict]
    runs: Callable[[dict], list]
    run_dir: Callable[[dict], str]
    identity: dict = field(default_factory=dict)
    schema: dict | None = None
    execute: Callable | None = None
    register: bool = field(default=True, compare=False, repr=False)

    def __post_init__(self):
        bad = {k: v for k, v in self.identity.items() if k in SUMMARY_COLUMNS or v not in EXTRA_DTYPES}
        if bad:
            raise ValueError(
                f"study {self.name!r}: identity columns {bad} clash with the common columns "
                f"{list(SUMMARY_COLUMNS)} or have a dtype outside {list(EXTRA_DTYPES)}"
            )
        if self.register:
            known = REGISTRY.get(self.name)
            # a module executed again (importlib.reload) replaces its own study; another is a clash
            if known is not None and known.validate.__module__ != self.validate.__module__:
                raise RuntimeError(
                    f"study {self.name!r} registered twice: by {known.validate.__module__} "
                    f"and {self.validate.__module__}"
                )
            REGISTRY[self.name] = self

    @property
    def columns(self) -> dict:
        """Every summary column and its dtype, in order."""
        return {**IDENTITY_COLUMNS, **self.identity, "metric": "str", "value": "float64"}

    def tidy(
        self, frame: pd.DataFrame, where: str, fix: str = "re-run the study's run jobs with this version"
    ) -> pd.DataFrame:
        """``frame`` checked against :attr:`columns` (``where`` names it in the error, ``fix`` says what
        to do), in column order.

        A missing or extra column, a column of the wrong dtype or another study's rows is an
        :class:`~locpriv.errors.InputError`: the table came from another version of the study, a
        run's file was damaged or replaced (``collect``: delete it, ``io.remade``), or the study
        broke its own contract.
        """
        expected = self.columns
        missing, extra = sorted(set(expected) - set(frame.columns)), sorted(set(frame.columns) - set(expected))
        if missing or extra:
            raise InputError(
                where,
                "columns",
                f"missing {missing}, unexpected {extra} for the {self.name} summary schema {list(expected)}",
                fix,
            )
        wrong = {c: str(frame[c].dtype) for c, dtype in expected.items() if not _has_dtype(frame[c], dtype)}
        if wrong:
            raise InputError(
                where,
                ", ".join(wrong),
                f"dtype {wrong}, expected { {c: expected[c] for c in wrong} }",
                fix,
            )
        if not (frame["study"] == self.name).all():
            raise InputError(
                where,
                "study",
                f"rows of {sorted(set(frame['study']) - {self.name})}, where only {self.name!r} rows belong",
                fix,
            )
        return frame[list(expected)].astype(expected)

    def run_table(self, rows: list[dict], **identity) -> pd.DataFrame:
        """One run's tidy table: ``rows`` (dicts with method, metric, value) under the run's ``identity``.

        ``identity`` gives every identity column but ``study`` and ``method`` (a row may override
        any of them, e.g. a per-row epoch); the result has the summary's columns and dtypes.
        """
        table = pd.DataFrame([{"study": self.name, **identity, **row} for row in rows], columns=list(self.columns))
        return self.tidy(table.astype(self.columns), f"{self.name} run {identity}")

    def write_summary(
        self, frame: pd.DataFrame, *, out_parquet: str, out_csv: str, metadata: dict | None = None
    ) -> pd.DataFrame:
        """The checked summary, sorted by identity, metric and value (NaN last), as Parquet and CSV.

        The sort covers every column, so the bytes do not depend on the order the rows came in.
        """
        table = self.tidy(frame, out_parquet)
        table = table.sort_values(list(self.columns), kind="stable", na_position="last", ignore_index=True)
        io.write_parquet(table, out_parquet, metadata=metadata)
        with io.atomic_path(out_csv) as tmp:
            table.to_csv(tmp, index=False, float_format="%.10g")
        return table

    def collect(self, paths, *, out_parquet: str, out_csv: str) -> pd.DataFrame:
        """The summary stage of a study whose per-run tables are tidy already: each checked, then joined."""
        parts = [self.tidy(io.read_parquet_checked(p), p, io.remade(p)) for p in sorted(map(str, paths))]
        return self.write_summary(pd.concat(parts, ignore_index=True), out_parquet=out_parquet, out_csv=out_csv)


def builtin_names() -> list[str]:
    """The built-in studies: the packages of locpriv holding a ``study.py`` (found without importing them)."""
    root = Path(__file__).resolve().parent
    return sorted(path.parent.name for path in root.glob("*/study.py"))


def get(name: str) -> Study:
    """The study registered as ``name``: a built-in one's module is imported, then the configured plugins."""
    if name not in REGISTRY and name in builtin_names():
        importlib.import_module(f"{__package__}.{name}.study")
    if name not in REGISTRY:
        plugins.load_configured()
    if name not in REGISTRY:
        raise ValueError(f"unknown study {name!r}; allowed: {names()}")
    return REGISTRY[name]


def names() -> list[str]:
    """Every study's name: the built-in ones and those registered by plugins."""
    plugins.load_configured()
    return sorted(set(builtin_names()) | set(REGISTRY))


def section_schema(name: str) -> dict:
    """The JSON schema of ``studies.<name>``: a built-in study's ``$defs.<name>`` (not imported to know it)."""
    declared = REGISTRY[name].schema if name in REGISTRY else None
    return {"$ref": f"#/$defs/{name}"} if declared is None else declared


def run_stage(*, name: str, run: dict, cfg: dict, seed: int, out_path: str) -> None:
    """One run of a study without rule files of its own: ``execute`` with the run's stream, its tidy table."""
    study = get(name)
    table = study.execute(run, cfg, make_rng(seed, "study", name, study.run_dir(run)))
    io.write_parquet(study.tidy(table, out_path), out_path)


def summary_stage(*, name: str, paths: list[str], out_parquet: str, out_csv: str) -> None:
    """The summary of a study without rule files of its own: its runs' tables checked and joined."""
    get(name).collect(paths, out_parquet=out_parquet, out_csv=out_csv)


def _has_dtype(column: pd.Series, dtype: str) -> bool:
    """Labels may come as str or object (of strings); numbers must have exactly their dtype."""
    if dtype == "str":
        return pd.api.types.is_string_dtype(column)
    return str(column.dtype) == dtype
