"""Reader of the regression CSV files (header row, last column the target)."""

from __future__ import annotations

import numpy as np
import pytest

from bigkern.datasets import shared_data_dir
from bigkern.datasets.regression_csv import REGRESSION_SETS, load_regression, read_regression_csv
from bigkern.errors import DataQualityError


def _write(tmp_path, text, name="set.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_numeric_columns_and_target(tmp_path):
    p = _write(tmp_path, "a,b,target\n1,2.5,10\n-3,4e-1,11.5\n0,0,-1\n")
    d = read_regression_csv(p)
    np.testing.assert_array_equal(d.X, [[1, 2.5], [-3, 0.4], [0, 0]])
    np.testing.assert_array_equal(d.y, [10, 11.5, -1])
    assert d.feature_names == ("a", "b")
    assert d.target_name == "target" and d.name == "set" and d.n_samples == 3


def test_text_column_is_one_hot_with_sorted_levels(tmp_path):
    p = _write(tmp_path, "Sex,len,rings\nM,0.4,15\nF,0.3,7\nI,0.2,9\nM,0.5,10\n")
    d = read_regression_csv(p)
    assert d.feature_names == ("Sex=F", "Sex=I", "Sex=M", "len")
    np.testing.assert_array_equal(d.X[:, :3], [[0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(d.X[:, 3], [0.4, 0.3, 0.2, 0.5])


def test_numeric_nominal_column_kept_unless_named(tmp_path):
    p = _write(tmp_path, "w,origin,mpg\n3504,1,18\n2372,3,24\n1835,2,27\n")
    assert read_regression_csv(p).feature_names == ("w", "origin")
    d = read_regression_csv(p, one_hot=["origin"])
    assert d.feature_names == ("w", "origin=1", "origin=2", "origin=3")
    np.testing.assert_array_equal(d.X[:, 1:], [[1, 0, 0], [0, 0, 1], [0, 1, 0]])
    with pytest.raises(ValueError, match="one_hot names \\['mpg'\\]"):
        read_regression_csv(p, one_hot=["mpg"])


def test_bad_files_name_line_and_column(tmp_path):
    with pytest.raises(DataQualityError, match=r"line 3, column 'b': missing value '\?'"):
        read_regression_csv(_write(tmp_path, "a,b,t\n1,2,3\n4,?,6\n"))
    with pytest.raises(DataQualityError, match=r"line 2, column 'a': missing"):
        read_regression_csv(_write(tmp_path, "a,b,t\n,2,3\n"))
    with pytest.raises(DataQualityError, match=r"line 2, target column 't': 'x' is not"):
        read_regression_csv(_write(tmp_path, "a,b,t\n1,2,x\n"))
    with pytest.raises(DataQualityError, match="line 3: 2 fields, the header has 3"):
        read_regression_csv(_write(tmp_path, "a,b,t\n1,2,3\n4,5\n"))
    with pytest.raises(DataQualityError, match="no data rows"):
        read_regression_csv(_write(tmp_path, "a,b,t\n"))
    with pytest.raises(DataQualityError, match="at least one input"):
        read_regression_csv(_write(tmp_path, "t\n1\n"))
    with pytest.raises(FileNotFoundError, match="no regression set 'nope'"):
        load_regression("nope", root=tmp_path)


_SHAPES = {  # rows, inputs after one-hot (INVENTORY.md; abalone's Sex becomes 3 columns)
    "kin8nm": (8192, 8), "puma8NH": (8192, 8), "ailerons": (13750, 40),
    "elevators": (16599, 18), "bank8FM": (8192, 8), "cpu_small": (8192, 12),
    "abalone": (4177, 10), "boston_housing": (506, 13), "autoMpg": (392, 7),
}


@pytest.mark.realdata
def test_shared_regression_sets_read_with_inventory_shapes():
    root = shared_data_dir()
    if root is None or not (root / "regression").is_dir():
        pytest.skip("../shared/data/regression is not present: real-data tests need it")
    assert set(_SHAPES) == set(REGRESSION_SETS)
    for name, shape in _SHAPES.items():
        d = load_regression(name)
        assert d.X.shape == shape, name
        assert np.isfinite(d.X).all() and np.isfinite(d.y).all()
        assert np.ptp(d.y) > 0
    auto = load_regression("autoMpg")
    assert auto.feature_names[-1] == "origin" and auto.y[0] == 18.0  # first row: mpg 18
