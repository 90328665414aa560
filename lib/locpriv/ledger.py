"""The per-dataset ledger: every release made from a dataset, and their person-level total.

A run of the workflow releases an estimate (and what its attack stages publish) computed from a
dataset's persons; two runs on the same data -- another epsilon, another mechanism, another
repetition -- are two releases, and the persons' privacy loss is their composition.  The ledger
of a dataset (``<results_dir>/ledger/<dataset>.json``) lists each release once, with its
person-level record, and the total under the dataset's budget rule, composed by the rule of the
API's :class:`~locpriv.accountant.BudgetAccountant` (``dp.composition``):

* a release is identified by what fixes its bytes: the dataset's config, the mechanism, its
  parameters, the repetition, the seed and the fingerprint of the code that draws the noise
  (``release_key``).  Re-running an identical release spends nothing: the same inputs and stream
  give the same bytes, and publishing a value again reveals nothing new.  Any change (a parameter,
  the seed, the code) is a new release, charged again;
* the person-level record of a release: the run's guarantee (``Mechanism.run_guarantee``), under
  :data:`~locpriv.dp.composition.PERSON_REPLACE` by group privacy over the rows one person may
  hold (``dp.composition.person_level``): one for synthetic users and for real rows without a
  person column (each row its own person), days x per_day for a synthetic trajectory, the cap
  with ``user_column`` (``max_points_per_person``; 1 with ``person_budget: split``), unbounded
  without a cap;
* a dataset's ``budget`` (``epsilon``, ``delta``, ``rule``, ``slack``) caps the total: the
  workflow charges a config's releases when it starts, before any job draws noise (write-ahead:
  an interrupted run stays charged, so the ledger never under-counts), and a config whose new
  releases would exceed the budget stops with one line and charges nothing.  A release without a
  formal guarantee (e.g. ``h: knn``, or a mechanism that claims none) makes the total unbounded,
  so a budgeted dataset refuses it;
* a dataset marked ``simulation: true`` (the default for ``source: synthetic``) keeps no ledger:
  its persons are generated, nobody's privacy is spent.

The file is JSON with sorted keys and releases in key order: the same releases give the same bytes,
whatever the order the configs ran in.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass

import pandas as pd

from . import io, mechanisms
from .accountant import BudgetAccountant, BudgetError
from .datasets import windows
from .dp import composition as comp

FOLDER = "ledger"
# a dataset's keys that say how its releases are accounted, not what they release
ACCOUNTING_KEYS = ("budget", "simulation")


class LedgerError(ValueError):
    """A release the dataset's budget cannot cover (one line; nothing was charged)."""


def is_simulation(spec: dict) -> bool:
    """Whether the dataset's persons are simulated (no ledger): its ``simulation`` key, by default
    true for generated data and false for a file of real data."""
    return bool(spec.get("simulation", spec["source"] == "synthetic"))


def rows_per_person(spec: dict) -> int | None:
    """The rows one person may hold in a release (None: unbounded; see the module docstring)."""
    if "trajectory" in spec:  # every generated person has exactly days x per_day rows (in a window: its days')
        days = int(spec["trajectory"]["days"])
        if "window" in spec:
            days = min(days, math.ceil(windows.length(spec["window"]["length"], "") / pd.Timedelta(days=1)))
        return days * int(spec["trajectory"]["per_day"])
    if spec["source"] == "synthetic" or not spec.get("user_column"):
        return 1
    if spec.get("person_budget") == "split":
        return 1
    cap = spec.get("max_points_per_person")
    return None if cap is None else int(cap)


def release_key(spec: dict, mechanism: str, params: dict, rep: int, seed: int, code: str) -> str:
    """The identity of a release: a SHA-256 over everything that fixes its bytes (the dataset's accounting
    keys do not: a new budget re-prices the same releases)."""
    data = {k: v for k, v in spec.items() if k not in ACCOUNTING_KEYS}
    ident = {"dataset": data, "mechanism": mechanism, "params": params, "rep": rep, "seed": seed, "code": code}
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()


def person_record(spec: dict, mechanism: str, params: dict, diameter: float) -> dict:
    """The person-level (epsilon, delta) of one run as configured, under PERSON_REPLACE, as a ledger entry's
    fields (epsilon None: no formal guarantee, or no bound on a person's rows)."""
    cls = mechanisms.get(mechanism)
    given = {k: v for k, v in params.items() if k != "n"}
    leaks = cls.leaks(given)
    record = None if leaks else cls(**given).guarantee()
    rows = rows_per_person(spec)
    why = ""
    if record is None or record.epsilon is None:
        why = "; ".join(leaks) or (record.note if record else "") or "no formal guarantee"
    elif rows is None:
        why = "a person's rows are not capped (set max_points_per_person)"
    else:
        try:
            person = comp.person_level(
                record, rows, rows_covered=int(given.get("person_reports", 1)), diameter=diameter
            )
        except ValueError as exc:  # e.g. SLDP's relation, inside a privacy region only
            why = str(exc)
    if why:
        return {"epsilon": None, "delta": None, "model": record.model if record else cls.name, "why_unbounded": why}
    return {"epsilon": person.epsilon, "delta": float(person.delta or 0.0), "model": person.model}


@dataclass(frozen=True)
class Budget:
    """A dataset's total person-level budget and composition rule (config key ``datasets.<name>.budget``)."""

    epsilon: float = math.inf
    delta: float = 0.0
    rule: str = comp.BASIC
    slack: float = 0.0

    @classmethod
    def of(cls, dataset: str, spec: dict) -> Budget:
        """The dataset's budget, checked as the accountant checks it (LedgerError naming the key)."""
        budget = cls(**spec.get("budget", {}))
        try:
            budget.accountant()
        except ValueError as exc:
            raise LedgerError(f"config key 'datasets.{dataset}.budget': {exc}") from None
        return budget

    def accountant(self) -> BudgetAccountant:
        return BudgetAccountant(
            epsilon=self.epsilon, delta=self.delta, rule=self.rule, slack=self.slack, relation=comp.PERSON_REPLACE
        )


def _as_record(entry: dict) -> comp.Guarantee:
    return comp.Guarantee(
        model=entry["model"],
        epsilon=entry["epsilon"],
        delta=entry["delta"],
        relation=comp.PERSON_REPLACE,
        covers=entry["run"],
    )


def path_of(results_dir: str, dataset: str) -> str:
    return os.path.join(results_dir, FOLDER, f"{dataset}.json")


def load(path: str) -> dict[str, dict]:
    """The releases already charged (key -> entry); none when the dataset has no ledger yet."""
    if not os.path.exists(path):
        return {}
    try:
        return {e["key"]: e for e in io.read_json(path)["releases"]}
    except (ValueError, KeyError, TypeError):  # damaged: rebuilding it from this config would forget releases
        raise LedgerError(
            f"{path}: the ledger cannot be read (damaged JSON or not a ledger); restore it from a copy, or delete "
            "it to start a new one (the releases it held stay spent: the persons' loss is not reset)"
        ) from None


def total(entries, budget: Budget) -> tuple[float, float] | None:
    """The person-level (epsilon, delta) of ``entries`` under the budget's rule; None if one is unbounded."""
    entries = list(entries)
    if any(e["epsilon"] is None for e in entries):
        return None
    if not entries:
        return 0.0, 0.0
    return comp.total(map(_as_record, entries), rule=budget.rule, slack=budget.slack)


def charge(
    dataset: str, path: str, new: list[dict], budget: Budget, *, write: bool = True
) -> tuple[list[dict], tuple | None]:
    """Add the ``new`` entries not yet in the ledger at ``path`` and write it; (entries charged now, total).

    ``write`` False: the same checks and totals, nothing written (a dry run).

    LedgerError, with the ledger unchanged, when the total would exceed the budget or a new entry is
    unbounded under a finite budget.
    """
    known = load(path)
    fresh = sorted({e["key"]: e for e in new if e["key"] not in known}.values(), key=lambda e: e["key"])
    where = f"config key 'datasets.{dataset}.budget'"
    unbounded = [e for e in [*fresh, *known.values()] if e["epsilon"] is None]
    if unbounded and math.isfinite(budget.epsilon) and fresh:
        e = unbounded[0]
        raise LedgerError(
            f"{where}: release {e['run']} has no person-level bound ({e['why_unbounded']}), so the budget "
            f"epsilon {budget.epsilon:g} cannot cover it; nothing was charged. Fix: "
            + (
                "remove the run or give it a formal guarantee"
                if e in fresh
                else f"the ledger {path} already "
                "holds it: the persons' loss is unbounded, no budget can be kept (start a new dataset)"
            )
        )
    if math.isfinite(budget.epsilon) and fresh:
        acc = budget.accountant()
        try:
            for e in [*known.values(), *fresh]:
                acc.spend(_as_record(e))
        except BudgetError:
            spent = total(known.values(), budget)
            together = total([*known.values(), *fresh], budget)
            raise LedgerError(
                f"{where}: {len(fresh)} new release(s) would take dataset {dataset!r} to person-level epsilon "
                f"{together[0]:g}, delta {together[1]:g} ({budget.rule} composition; {path} holds {len(known)} "
                f"release(s), epsilon {spent[0]:g}), above the budget epsilon {budget.epsilon:g}, delta "
                f"{budget.delta:g}; nothing was charged and no noise drawn. Fix: lower the runs' epsilon or "
                "reps, or drop runs"
            ) from None
    entries = sorted([*known.values(), *fresh], key=lambda e: e["key"])
    spent = total(entries, budget)
    if write and (fresh or not os.path.exists(path)):
        io.write_json(
            {
                "dataset": dataset,
                "relation": comp.PERSON_REPLACE,
                "rule": budget.rule,
                "slack": budget.slack,
                "budget": {"epsilon": _finite(budget.epsilon), "delta": budget.delta},
                "total": None if spent is None else {"epsilon": spent[0], "delta": spent[1]},
                "releases": entries,
            },
            path,
        )
    return fresh, spent


def _window(spec: dict) -> str | None:
    if "window" not in spec:
        return None
    w = spec["window"]
    return f"{w['index'] + 1} of {w['count']}: [{w['start']}, {w['end']})"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None  # JSON has no inf: null means no limit


def console_line(dataset: str, spec: dict, path: str | None, fresh: list, spent, *, write: bool = True) -> str:
    """What the console says of a dataset's ledger at start-up."""
    if path is None:
        return f"dataset {dataset!r}: simulation (simulation: true), no privacy ledger kept"
    budget = Budget.of(dataset, spec)
    limit = f" of budget {budget.epsilon:g}" if math.isfinite(budget.epsilon) else " (no budget set)"
    total_txt = "unbounded" if spent is None else f"epsilon {spent[0]:g}, delta {spent[1]:g}"
    charged = "charged" if write else "to charge (dry run)"
    return (
        f"dataset {dataset!r}: not a simulation, ledger {path}: {len(fresh)} new release(s) {charged}; "
        f"person-level {total_txt}{limit} ({budget.rule} composition)"
    )


def charge_runs(config: dict, runs, results_dir: str, *, write: bool = True) -> list[str]:
    """Charge every run of ``config`` to its dataset's ledger (module docstring); the console's lines.

    LedgerError for the first dataset whose budget the new releases would exceed; the ledgers of the
    datasets before it are charged (each ledger is consistent on its own).  ``write`` False: a dry run,
    which checks and reports but charges nothing.  A bad ``budget`` key is a LedgerError too.
    """
    from .datasets.ingest import domain_of
    from .fingerprint import code_fingerprint
    from .stages import continual

    lines = []
    runs, trees = continual.split(config, runs)  # a continual setting is one release over its T windows
    by_dataset: dict[str, list] = {}
    for run in runs:  # a window's releases go to the ledger of the dataset it was cut from
        by_dataset.setdefault(windows.base_name(run.dataset, config["datasets"][run.dataset]), []).append(run)
    for tree in trees:
        by_dataset.setdefault(tree.dataset, []).append(tree)
    for dataset in sorted(by_dataset):
        spec = config["datasets"][_first_dataset(by_dataset[dataset][0])]
        if is_simulation(spec):
            lines.append(console_line(dataset, spec, None, [], None))
            continue
        box = domain_of(spec)[0]  # real rows lie inside it (ingest drops the others): geo-ind's bound
        diameter = math.hypot(box.xmax - box.xmin, box.ymax - box.ymin)
        new = []
        for run in by_dataset[dataset]:
            if isinstance(run, continual.Setting):
                new.append(_continual_entry(config, run, code_fingerprint))
                continue
            spec = config["datasets"][run.dataset]
            code = code_fingerprint(
                "locpriv.stages.prepare", "locpriv.stages.run", mechanisms.get(run.mechanism).__module__
            )
            new.append(
                {
                    "key": release_key(spec, run.mechanism, run.params, run.rep, config["seed"], code),
                    "run": run.path,
                    "mechanism": run.mechanism,
                    "params": run.pstr,
                    "rep": run.rep,
                    "window": _window(spec),
                    **person_record(spec, run.mechanism, run.params, diameter),
                }
            )
        path = path_of(results_dir, dataset)
        fresh, spent = charge(dataset, path, new, Budget.of(dataset, spec), write=write)
        lines.append(console_line(dataset, spec, path, fresh, spent, write=write))
    return lines


def continual_rows(config: dict, tree) -> int | None:
    """The rows one person may hold over a continual setting's tree (``stages.continual.Setting``): T x the
    most any of its windows admits (None: no cap)."""
    rows = [rows_per_person(config["datasets"][w]) for w in tree.windows]
    return None if None in rows else max(rows) * len(rows)


def _first_dataset(run) -> str:
    """A dataset of the run, or of a continual setting its first window (the configs differ only in time)."""
    return run.windows[0] if hasattr(run, "windows") else run.dataset


def _continual_entry(config: dict, tree, code_fingerprint) -> dict:
    """The ledger entry of a continual setting (``stages.continual``): one release over its T windows, whose
    person-level epsilon is the tree's (T x a window's rows, by group privacy), charged once."""
    from .stages import continual

    first = config["datasets"][tree.windows[0]]
    spec = {
        **{k: v for k, v in first.items() if k != "window"},
        "continual": [config["datasets"][w]["window"] for w in tree.windows],
    }
    code = code_fingerprint(
        "locpriv.stages.prepare", "locpriv.stages.continual", mechanisms.get(tree.mechanism).__module__
    )
    rows = continual_rows(config, tree)
    record, person = continual.record(tree, rows)
    entry = {
        "key": release_key(spec, tree.mechanism, tree.params, tree.rep, config["seed"], code),
        "run": tree.path,
        "mechanism": tree.mechanism,
        "params": tree.pstr,
        "rep": tree.rep,
        "window": f"continual: all {len(tree.windows)} windows, one binary tree",
    }
    if person is None:
        why = record.note or "no formal guarantee" if record.epsilon is None else "a person's rows are not capped"
        return {**entry, "epsilon": None, "delta": None, "model": record.model, "why_unbounded": why}
    return {**entry, "epsilon": person, "delta": float(record.delta or 0.0), "model": record.model}
