"""The small helpers behind the report's ingest table and the removal of another config's figures."""

from locpriv.ingest_counts import counts_table
from locpriv.smk import remove_stale_plots


def test_counts_table_lists_every_drop_reason_and_the_person_cap():
    meta = {"source": "data/p.csv", "rows_read": 100, "n_users": 80, "person_cap": 5,
            "rows_over_person_cap": 7, "rows_dropped": {"outside_bbox": 10, "missing_coordinate": 3}}
    table = counts_table({"mine": meta})
    assert list(table["count"]) == ["read", "dropped: missing_coordinate", "dropped: outside_bbox",
                                    "over the per-person cap 5", "kept (users)"]
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


def test_a_damaged_shard_removes_its_whole_batch_folder(tmp_path):
    """Snakemake sees a randomize job's view/batch~k folder, not its shards: the folder must go."""
    import pandas as pd

    from locpriv.smk import remove_damaged

    run = tmp_path / "results/runs/d/m/p/rep~0"
    batch = run / "view/batch~0"
    batch.mkdir(parents=True)
    pd.DataFrame({"user": [0, 1]}).to_parquet(batch / "shard~0.parquet")
    (batch / "shard~1.parquet").write_bytes(b"PAR1 truncated")
    pd.DataFrame({"a": [1]}).to_parquet(run / "metrics.parquet")
    lines = remove_damaged(str(tmp_path / "results"))
    assert not batch.exists() and (run / "metrics.parquet").exists()
    assert len(lines) == 1 and "batch~0" in lines[0] and "made again" in lines[0]
