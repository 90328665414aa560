"""Stages that read the points file hold a row group at a time, never the whole file.

At 10^8 users the points file is 2.6 GB on disk and 2.4 GB as columns, so a stage
that reads it whole (``pd.read_parquet``, or ``iter_batches`` with pyarrow's
pre-buffering, which keeps every batch read) has a peak RSS that grows with N.
Two kinds of check:

* what is read: the rows returned equal those of a whole-file read, and only the
  row groups holding wanted rows are read (the reader is counted);
* how much is held: each stage runs in a fresh process on files of 131,072 and 10^6
  users (2 and 16 row groups, 4 and 32 MB of columns) and its peak allocation
  (pyarrow's pool plus tracemalloc's numpy and pandas) may grow at most
  ``MAX_GROWTH`` = 2x between them: the criterion ``perf/bench_scale.py`` applies to
  10^6 -> 10^8 users, here on 7.6x the rows.  Measured: 1.0-1.3x.  Reading x and y
  whole grows 5.7x, over twice the allowed growth (the power check), so the
  criterion can fail.
"""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from locpriv import io
from locpriv.stages import attack as st_attack
from locpriv.stages.prepare import POINTS_ROW_GROUP

N_SMALL, N_LARGE, PERSONS = 131_072, 1_000_000, 10_000
MAX_GROWTH = 2.0


def _points(path, n: int, persons: int, group: int) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    df = pd.DataFrame(
        {
            "user": np.arange(n),
            "x": rng.normal(size=n),
            "y": rng.normal(size=n),
            "source_user": rng.integers(0, persons, n),
        }
    )
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=group)
    return df


@pytest.fixture
def small(tmp_path):
    """1,000 users in row groups of 100, and a counter of the row groups read."""
    path = tmp_path / "points.parquet"
    return str(path), _points(path, 1000, 60, 100)


@pytest.fixture
def groups_read(monkeypatch):
    read = []
    original = pq.ParquetFile.read_row_group

    def counting(self, i, *args, **kwargs):
        read.append(i)
        return original(self, i, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", counting)
    return read


def test_read_rows_returns_the_rows_at_the_positions_reading_only_their_row_groups(small, groups_read):
    path, df = small
    rows = np.array([0, 99, 100, 555, 999])
    got = io.read_rows(path, rows, ["x", "y"])
    pd.testing.assert_frame_equal(got, df.loc[rows, ["x", "y"]].reset_index(drop=True))
    assert groups_read == [0, 1, 5, 9]


def test_read_rows_of_no_rows_is_empty_with_the_columns(small, groups_read):
    got = io.read_rows(small[0], np.array([], dtype=np.int64), ["x", "y"])
    assert list(got.columns) == ["x", "y"] and len(got) == 0 and groups_read == []


def test_rows_of_users_reads_only_row_groups_holding_a_sampled_user(small, groups_read):
    path, df = small
    users = np.array([205, 250, 731])
    got = st_attack._rows_of_users(path, users)
    pd.testing.assert_frame_equal(got, df.loc[users, ["user", "x", "y"]].reset_index(drop=True))
    assert groups_read == [2, 7]


def test_rows_of_persons_equal_a_whole_file_selection(small, groups_read):
    path, df = small
    n, size = 700, 10
    chosen, rows = st_attack._rows_of_persons(path, n, "pts", size, seed=4)
    below = df[df["user"] < n]
    expected = st_attack.person_sample("pts", np.unique(below["source_user"]), size, 4)
    np.testing.assert_array_equal(chosen, expected)
    pd.testing.assert_frame_equal(rows, below[below["source_user"].isin(chosen)].reset_index(drop=True))
    # two passes over the groups holding users < 700, none beyond
    assert groups_read == list(range(7)) * 2


# Each reader runs in a fresh process: pyarrow's peak allocation only ever grows.
# Held = pyarrow's peak plus the peak of what tracemalloc sees (numpy arrays, pandas frames).
CHILD = """
import json, sys, tracemalloc
import pandas as pd, pyarrow as pa
from locpriv.stages import attack, prepare, utility
path, stage, work, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
pa.set_cpu_count(1)  # columns decoded one after the other: a peak that does not depend on thread timing
tracemalloc.start()
if stage == "range_workload":  # a small workload: its (queries x sample) matrices are not the point here
    grid = work + "/grid.nc"
    prepare.encode_grid(spec={"source": "synthetic", "bbox": [-4, 4, -4, 4]}, grid_spec={"P": 8, "Q": 8},
                        out_grid=grid)
    cfg = {"workload_points": 2000, "range_queries": 50}
    utility.range_workload(dataset="big", points_path=path, grid_path=grid,
                           utility_cfg=utility.settings({"utility": cfg}), seed=1,
                           out_parquet=work + "/workload.parquet")
elif stage == "attack_users":
    attack._rows_of_users(path, attack.attack_sample("big", n, 200, 1))
elif stage == "attack_persons":
    attack._rows_of_persons(path, n, "big", 200, 1)
elif stage == "pooled_kde":
    grid = work + "/grid.nc"
    prepare.encode_grid(spec={"source": "synthetic", "bbox": [-4, 4, -4, 4]}, grid_spec={"P": 4, "Q": 4},
                        out_grid=grid)
    prepare.pooled_kde(points_path=path, n_users=n, h=0.5, grid_path=grid, out_nc=work + "/pooled.nc")
elif stage == "whole_file":
    pd.read_parquet(path, columns=["x", "y"])
print(json.dumps((pa.default_memory_pool().max_memory() + tracemalloc.get_traced_memory()[1]) / 1e6))
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Points files of N_SMALL and N_LARGE users (the same persons), in the workflow's row groups."""
    out = {}
    for n in (N_SMALL, N_LARGE):
        path = tmp_path_factory.mktemp(f"n{n}") / "points.parquet"
        _points(path, n, PERSONS, POINTS_ROW_GROUP)
        out[n] = path
    return out


def _peak_mb(path, stage: str, n: int) -> float:
    """A stage's peak allocation (MB) on the first n users of ``path``, in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), stage, str(path.parent), str(n)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.splitlines()[-1])


def _growth(files, stage: str) -> float:
    return _peak_mb(files[N_LARGE], stage, N_LARGE) / _peak_mb(files[N_SMALL], stage, N_SMALL)


@pytest.mark.parametrize("stage", ["range_workload", "attack_users", "attack_persons", "pooled_kde"])
def test_a_stage_reading_the_points_holds_row_groups_not_the_file(files, stage):
    assert _growth(files, stage) <= MAX_GROWTH


def test_power_reading_the_file_whole_grows_with_it(files):
    assert _growth(files, "whole_file") > 2 * MAX_GROWTH
