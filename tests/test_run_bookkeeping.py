"""The small helpers behind the report's ingest table and the removal of another config's figures."""

from locpriv.ingest_counts import counts_table
from locpriv.smk import remove_stale_plots


def test_counts_table_lists_every_drop_reason_and_the_person_cap():
    meta = {
        "source": "data/p.csv",
        "rows_read": 100,
        "n_users": 80,
        "person_cap": 5,
        "rows_over_person_cap": 7,
        "rows_dropped": {"outside_bbox": 10, "missing_coordinate": 3},
    }
    table = counts_table({"mine": meta})
    assert list(table["count"]) == [
        "read",
        "dropped: missing_coordinate",
        "dropped: outside_bbox",
        "over the per-person cap 5",
        "kept (users)",
    ]
    assert list(table["rows"]) == [100, 3, 10, 7, 80]
    # read = dropped + over the cap + kept: no row unaccounted for
    assert table["rows"].iloc[0] == table["rows"].iloc[1:].sum()


def test_only_figures_outside_the_targets_are_removed(tmp_path):
    plots = tmp_path / "results/plots"
    plots.mkdir(parents=True)
    for name in ("tradeoff.png", "surfaces-old.png", "notes.txt"):
        (plots / name).write_bytes(b"x")
    lines = remove_stale_plots(str(plots), [str(plots / "tradeoff.png")])
    assert sorted(p.name for p in plots.iterdir()) == ["notes.txt", "tradeoff.png"]
    assert len(lines) == 1 and "surfaces-old.png" in lines[0] and "results_dir" in lines[0]
    assert remove_stale_plots(str(plots), [str(plots / "tradeoff.png")]) == []
    assert remove_stale_plots(str(tmp_path / "none"), []) == []


def test_a_damaged_shard_removes_its_whole_batch_folder_and_a_stray_file_nothing(tmp_path, monkeypatch):
    """Snakemake sees a randomize job's view/batch~k folder, not its shards: a damaged or missing
    shard takes the folder; a file its job does not write is ignored."""
    import pandas as pd

    from locpriv import io
    from locpriv.smk import remove_damaged

    monkeypatch.chdir(tmp_path)
    run = "results/runs/d/m/p/rep~0"
    batches = [f"{run}/view/batch~{k}" for k in range(3)]
    shards = {b: [f"{b}/shard~{2 * k + i}.parquet" for i in range(2)] for k, b in enumerate(batches)}
    for files in shards.values():
        for f in files:
            io.write_parquet(pd.DataFrame({"user": [0, 1]}), f)
    io.write_parquet(pd.DataFrame({"a": [1]}), f"{run}/metrics.parquet")
    with open(shards[batches[0]][1], "r+b") as fh:  # cut in half
        fh.truncate(fh.seek(0, 2) // 2)
    open(f"{batches[2]}/notes.parquet", "w").close()  # a stray empty file beside good shards
    import os

    os.remove(shards[batches[1]][0])
    lines = remove_damaged([f"{run}/metrics.parquet"], lambda: shards)
    assert not os.path.exists(batches[0]) and not os.path.exists(batches[1])
    assert sorted(os.listdir(batches[2])) == ["notes.parquet", "shard~4.parquet", "shard~5.parquet"]
    assert os.path.exists(f"{run}/metrics.parquet")
    assert len(lines) == 2 and all("again in this run" in line for line in lines)
