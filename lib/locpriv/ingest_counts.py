"""The ingest counts of every dataset as one table (the HTML report's "what was read and dropped")."""

from __future__ import annotations

import pandas as pd

from . import io


def counts_table(metas: dict[str, dict]) -> pd.DataFrame:
    """Tidy rows (dataset, source, count, rows): read, dropped per reason, over the person cap, kept.

    ``metas`` maps a dataset name to its ingest metadata (``meta.json``).
    """
    rows = []
    for name, meta in metas.items():
        counts = [("read", meta["rows_read"])]
        counts += [(f"dropped: {reason}", n) for reason, n in sorted(meta.get("rows_dropped", {}).items())]
        if meta.get("person_cap"):
            counts.append((f"over the per-person cap {meta['person_cap']}", meta["rows_over_person_cap"]))
        counts.append(("kept (users)", meta["n_users"]))
        rows += [{"dataset": name, "source": meta["source"], "count": what, "rows": int(n)} for what, n in counts]
    return pd.DataFrame(rows, columns=["dataset", "source", "count", "rows"])


def write_counts(*, meta_paths: list[str], datasets: list[str], out_csv: str) -> None:
    table = counts_table({name: io.read_json(path) for name, path in zip(datasets, meta_paths, strict=True)})
    with io.atomic_path(out_csv) as tmp:
        table.to_csv(tmp, index=False)
