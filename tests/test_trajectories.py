"""Time in: time columns of real points (datasets.times), the synthetic trajectory generator, their console."""

import copy

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from conftest import TINY, run_snakemake, write_config
from locpriv import ledger
from locpriv.datasets import synthetic
from locpriv.datasets.points import load_points
from locpriv.errors import InputError
from locpriv.seeding import rng
from locpriv.stages import prepare

BOX = [116.15, 116.60, 39.75, 40.10]


def write(tmp_path, text: str):
    path = tmp_path / "t.csv"
    path.write_text(text)
    return path


ROWS = (
    "user,time,lat,lon\n"
    "b,2008-10-23 10:00:00,39.90,116.30\n"
    "a,2008-10-24T02:53:04,39.91,116.31\n"
    "a,2008-10-23 09:00,39.92,116.32\n"
    "b,,39.93,116.33\n"
    "b,garbage,39.94,116.34\n"
    "c,2008-03-30 02:30,39.95,116.35\n"
)


def test_times_parsed_to_utc_sorted_per_person_and_summarised(tmp_path):
    pts, report, meta = load_points(write(tmp_path, ROWS), lonlat_bbox=BOX, user_column="user", time_column="time")
    assert report.dropped == {"missing_time": 1, "bad_time": 1}
    assert list(pts["source_user"]) == ["a", "a", "b", "c"]  # by person, then time
    assert list(pts["lat"]) == [39.92, 39.91, 39.90, 39.95]
    assert str(pts["time"].dtype) == "datetime64[ns, UTC]"
    assert meta["time_first"] == "2008-03-30T02:30:00+00:00" and meta["time_last"] == "2008-10-24T02:53:04+00:00"
    assert meta["rows_per_person"] == {"min": 1.0, "median": 1.0, "p90": 1.8, "max": 2.0}
    assert meta["days_per_person"]["max"] == 2.0
    # local times in a zone: 02:30 on 2008-03-30 does not exist in Berlin (clocks jump 02:00 -> 03:00)
    pts, report, _ = load_points(
        write(tmp_path, ROWS), lonlat_bbox=BOX, user_column="user", time_column="time", time_zone="Europe/Berlin"
    )
    assert report.dropped == {"missing_time": 1, "bad_time": 2}
    assert pts["time"].iloc[0] == pd.Timestamp("2008-10-23 07:00", tz="UTC")  # 09:00 CEST
    unix = write(tmp_path, "time,x,y\n1224730384,0.5,0.5\n0,0.2,0.2\n")
    pts, _, meta = load_points(unix, bbox=[0, 1, 0, 1], time_column="time", time_format="unix")
    assert list(pts["time"]) == [pd.Timestamp(0, tz="UTC"), pd.Timestamp("2008-10-23 02:53:04", tz="UTC")]
    assert "rows_per_person" not in meta  # no person column: rows are their own persons
    pattern = write(tmp_path, "time,x,y\n23/10/2008 02:53,0.5,0.5\n")
    pts, _, _ = load_points(pattern, bbox=[0, 1, 0, 1], time_column="time", time_format="%d/%m/%Y %H:%M")
    assert pts["time"].iloc[0] == pd.Timestamp("2008-10-23 02:53", tz="UTC")


@pytest.mark.parametrize(
    "keys, words",
    [
        (dict(time_column="when"), ["'when'", "time column missing", "time_column"]),
        (dict(time_column="time", time_format="unix"), ["'time'", "no row's time", "first value", "time_format"]),
        (dict(time_column="time", time_zone="Mars/Olympus"), ["'time'", "IANA", "time_zone"]),
    ],
)
def test_unusable_time_column_is_one_error_naming_it(tmp_path, keys, words):
    with pytest.raises(InputError) as err:
        load_points(write(tmp_path, ROWS), lonlat_bbox=BOX, **keys)
    assert all(w in str(err.value) for w in words), str(err.value)
    assert "\n" not in str(err.value)


def test_trajectories_keep_the_pattern_as_each_rows_law():
    """Every row is distributed as the mixture (stationarity): the x coordinates at the last step of 4,000
    persons against the mixture's x marginal, KS at alpha = 0.01; and a person stays put with probability
    stay: the share of unchanged consecutive rows, a binomial test at alpha = 0.01."""
    days, per_day, stay = 6, 2, 0.7
    pts = synthetic.trajectories("gauss9", 4000, days=days, per_day=per_day, stay=stay, start="2026-01-05", rng=rng(3))
    steps = days * per_day
    xy = pts[["x", "y"]].to_numpy().reshape(4000, steps, 2)
    mix = synthetic.gauss9()
    sd = np.sqrt(mix.covs[0, 0, 0])

    def cdf(x):  # the x marginal: equal weights on the three means' x, sd 0.5 each
        return np.mean([stats.norm.cdf(x, loc=m, scale=sd) for m in mix.means[:, 0]], axis=0)

    assert stats.kstest(xy[:, -1, 0], cdf).pvalue > 0.01
    assert stats.kstest(xy[:, 0, 0], cdf).pvalue > 0.01
    same = (xy[:, 1:] == xy[:, :-1]).all(axis=2)
    assert stats.binomtest(int(same.sum()), same.size, stay).pvalue > 0.01
    # power: a chain that never stays would be refuted
    assert stats.binomtest(0, same.size, stay).pvalue < 1e-9
    assert (pts["time"].diff().dropna()[pts["source_user"].eq(pts["source_user"].shift())] > pd.Timedelta(0)).all()


def test_trajectory_ingest_records_persons_and_the_ledger_their_rows(tmp_path):
    spec = {"source": "synthetic", "pattern": "gauss9", "n_users": 30, "bbox": [-3, 3, -3, 3]}
    spec["trajectory"] = {"days": 7, "per_day": 3}
    prepare.ingest(
        name="walk", spec=spec, seed=1, out_points=str(tmp_path / "p.parquet"), out_meta=str(tmp_path / "m.json")
    )
    pts = pd.read_parquet(tmp_path / "p.parquet")
    assert len(pts) == 630 and list(pts["user"]) == list(range(630)) and pts["source_user"].nunique() == 30
    meta = pd.read_json(tmp_path / "m.json", typ="series")
    assert (meta["persons"], meta["person_cap"], meta["n_users"]) == (30, 21, 630)
    assert meta["time_first"].startswith("2026-01-05") and meta["time_last"].startswith("2026-01-11")
    assert ledger.rows_per_person(spec) == 21
    record = ledger.person_record(spec, "laplace_ldp", {"epsilon": 0.5, "h": 0.5}, 8.5)
    assert record["epsilon"] == 21 * 0.5


@pytest.mark.workflow
def test_bad_times_stop_the_ingest_with_one_line(tmp_path):
    """Through the workflow's console: a file of unreadable times stops the ingest with one line naming the
    column and the fix, and nothing is written."""
    wd = tmp_path / "wd"
    (wd / "data").mkdir(parents=True)
    cfg = copy.deepcopy(TINY)
    rows = "".join(f"{i % 3},23.10.2008 {i % 24:02d}:00,{39.9 + i * 1e-4},{116.3 + i * 1e-4}\n" for i in range(40))
    (wd / "data/p.csv").write_text("user,time,lat,lon\n" + rows)
    cfg["datasets"]["bad"] = {"source": "points", "path": "data/p.csv", "lonlat_bbox": BOX, "time_column": "time"}
    cfg["experiments"]["real"] = {"datasets": ["bad"], "mechanisms": {"zero": {"n": "all"}}}
    write_config(wd, cfg)
    proc = run_snakemake(wd, "--cores", "1", "results/ingest/bad/meta.json", check=False)
    console = proc.stdout + proc.stderr
    lines = [line for line in console.splitlines() if "field 'time'" in line and "time_format" in line]
    assert proc.returncode != 0 and "Traceback" not in console and lines, console[-3000:]
    assert "first value '23.10.2008 00:00'" in lines[0]
    assert not (wd / "results/ingest/bad").exists()
