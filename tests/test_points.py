import gzip

import numpy as np
import pandas as pd
import pytest

from locpriv.datasets import points
from locpriv.errors import InputError

BOX = [116.15, 116.60, 39.75, 40.10]


def write_csv(path, text):
    path.write_text(text)
    return path


def test_projection_is_metric_near_the_centre(tmp_path):
    box, proj = points.projected_box(BOX)
    # one degree of latitude is ~111.2 km on the mean-radius sphere
    _, y = proj.forward(np.array(proj.lon0), np.array(proj.lat0 + 1))
    assert y == pytest.approx(111_195, rel=1e-4)
    assert box[1] - box[0] == pytest.approx(0.45 * 111_195 * np.cos(np.radians(39.925)), rel=1e-4)


def test_load_counts_every_dropped_row(tmp_path):
    f = write_csv(
        tmp_path / "p.csv",
        "user,lat,lon\n"
        "1,39.9,116.3\n"  # kept
        "1,39.9,117.0\n"  # outside box
        "2,,116.3\n"  # missing coordinate
        "2,abc,116.3\n"  # not a number
        "3,40.0,116.5\n",
    )  # kept
    pts, report, meta = points.load_points(f, lonlat_bbox=BOX)
    assert len(pts) == 2 and report.rows_read == 5
    assert meta["rows_dropped"] == {"missing_coordinate": 1, "non_numeric_coordinate": 1, "outside_bbox": 1}
    assert list(pts["source_user"]) == ["1", "3"]
    assert meta["rows_kept"] == 2


def test_xy_data_with_native_box(tmp_path):
    f = tmp_path / "p.parquet"
    pd.DataFrame({"x": [0.5, 2.0], "y": [0.5, 0.5]}).to_parquet(f)
    pts, _report, meta = points.load_points(f, bbox=[0, 1, 0, 1])
    assert len(pts) == 1 and meta["rows_dropped"]["outside_bbox"] == 1


def test_missing_column_names_file_field_and_fix(tmp_path):
    f = write_csv(tmp_path / "p.csv", "user,latitude,longitude\n1,39.9,116.3\n")
    with pytest.raises(InputError) as err:
        points.load_points(f, lonlat_bbox=BOX)
    msg = str(err.value)
    assert str(f) in msg and "'lon'" in msg and "Fix:" in msg


def test_all_rows_outside_box_is_an_error(tmp_path):
    f = write_csv(tmp_path / "p.csv", "lat,lon\n10,10\n")
    with pytest.raises(InputError, match="outside the box"):
        points.load_points(f, lonlat_bbox=BOX)


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        points.load_points(tmp_path / "nope.csv", lonlat_bbox=BOX)


def test_gzip_csv_is_read(tmp_path):
    f = tmp_path / "p.csv.gz"
    with gzip.open(f, "wt") as fh:
        fh.write("user,timestamp_utc,lat,lon\n000,2008-10-23T02:53:04Z,39.98,116.31\n")
    pts, _, _ = points.load_points(f, lonlat_bbox=BOX)
    assert list(pts["source_user"]) == ["000"]


@pytest.mark.parametrize("lonlat", [True, False])
def test_covering_box_holds_its_share_and_little_more(lonlat):
    """The suggested box holds at least the share asked (rounded outward) and, cut at the largest
    quantile that does, not much more: at most share + 1/n + what the outward rounding adds."""
    from locpriv.datasets.points import covering_box

    rng = np.random.default_rng(3)
    n = 50_000
    a = rng.normal(116.35, 0.08, n) if lonlat else rng.normal(0, 1000, n)
    b = rng.standard_t(2, n) * (0.05 if lonlat else 500)  # heavy tails: the extent is far wider than the box
    for share in (0.99, 0.999):
        box, held = covering_box(a, b, share, lonlat)
        inside = (a >= box[0]) & (a <= box[1]) & (b >= box[2]) & (b <= box[3])
        assert held == inside.mean() >= share
        assert held <= share + 0.002, (share, held)
        assert box[1] - box[0] < np.ptp(a) and box[3] - box[2] < np.ptp(b) / 10
