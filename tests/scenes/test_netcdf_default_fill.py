"""netCDF's default fill, undeclared, is never a value.

A scene whose SD holds 9.96921e36 (netCDF's default ``_FillValue`` for floats,
written where nothing was, and left undeclared) must not be labelled on those
pixels by ``bigkern predict`` nor fitted on by ``bigkern fit``. The netCDF
convention says a variable without ``_FillValue`` has its type's default fill:
the validity rules mask it at every door.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from bigkern import BinnedSVC, predict_scenes, stack_samples, with_features
from bigkern.cli.main import main
from bigkern.datasets import make_scenes
from bigkern.jobs.fit import fit_scenes
from bigkern.scenes import open_scenes, write_scenes
from bigkern.scenes.validity import apply_validity, validity_report
from bigkern.scenes.validity_sources import NETCDF_DEFAULT_FILL

FEATURES = ["NDAI", "logSD", "CORR"]
FILL32 = np.float32(NETCDF_DEFAULT_FILL)


@pytest.fixture(scope="module")
def filled() -> xr.Dataset:
    """Three scenes; in the middle one, 8 of 32 lines of SD hold netCDF's default fill,
    undeclared (a twelfth of the pixels: a fit would refuse past a quarter)."""
    ds = make_scenes(3, (32, 48), seed=6, radiances=False).compute()
    sd = ds["SD"].values.copy()
    sd[1, :8] = FILL32
    ds["SD"] = (ds["SD"].dims, sd, ds["SD"].attrs)
    assert "_FillValue" not in ds["SD"].attrs and "_FillValue" not in ds["SD"].encoding
    return ds


def test_the_default_fill_is_masked_and_counted(filled: xr.Dataset) -> None:
    out = apply_validity(filled, ["SD"])
    assert np.isnan(out["SD"].values[1, :8]).all()
    was_nan = np.isnan(filled["SD"].values)
    np.testing.assert_array_equal(np.isnan(out["SD"].values[:, 8:]), was_nan[:, 8:])
    report = validity_report(out)["SD"]
    assert report["fill_source"] == "netcdf-default" and report["n_fill"] == 8 * 48


def test_a_declared_fill_replaces_the_default(filled: xr.Dataset) -> None:
    ds = filled.copy()
    ds["SD"].attrs["_FillValue"] = -1.0
    assert validity_report(apply_validity(ds, ["SD"]))["SD"]["fill_values"] == [-1.0]


def test_integers_keep_their_values() -> None:
    ds = xr.Dataset({"n": (("scene", "y", "x"), np.full((1, 2, 2), -32767, np.int16))})
    assert "fill_values" not in validity_report(apply_validity(ds)).get("n", {})


def test_predict_gives_no_class_where_the_stored_variable_is_the_default_fill(
        filled: xr.Dataset) -> None:
    clean = filled.isel(scene=[0, 2])
    s = stack_samples(with_features(clean, FEATURES), FEATURES)
    model = BinnedSVC(omega=0.8, C=1.0).fit(s.as_dataarray(), s.y, mask=s.mask)
    pred = predict_scenes(model, filled[["NDAI", "SD", "CORR"]]).compute()
    assert (pred["cloud_mask"].values[1, :8] == 0).all()  # no prediction, not "clear"
    assert (pred["cloud_mask"].values[1, 8:] != 0).any()


def test_the_fit_leaves_the_filled_rows_out(filled: xr.Dataset) -> None:
    outcome = fit_scenes(filled, search=False, params={"omega": 0.8, "C": 1.0})
    missing = filled.copy()
    sd = missing["SD"].values.copy()
    sd[1, :8] = np.nan  # the same rows, simply missing
    missing["SD"] = (missing["SD"].dims, sd, missing["SD"].attrs)
    clean = fit_scenes(missing, search=False, params={"omega": 0.8, "C": 1.0})
    probe = np.random.default_rng(0).normal(size=(50, 3))
    np.testing.assert_allclose(outcome.model.decision_function(probe),
                               clean.model.decision_function(probe), rtol=1e-6, atol=1e-9)


def test_bigkern_predict_on_a_store_with_the_fill(filled: xr.Dataset, tmp_path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    store = write_scenes(filled, tmp_path / "s.zarr")
    model = tmp_path / "m.zarr"
    assert main(["fit", str(store), "-o", str(model), "--no-search", "--param", "omega=0.8",
                 "--param", "C=1.0", "--workers", "1"]) == 0
    assert main(["predict", str(store), str(model), "-o", str(tmp_path / "p.zarr"),
                 "--workers", "1"]) == 0
    masks = open_scenes(tmp_path / "p.zarr", validate=False)["cloud_mask"].values
    assert (masks[1, :8] == 0).all() and (masks[1, 8:] != 0).any()
    assert "without a prediction" in capsys.readouterr().out


# --- a fill no rule knows: SD = 9999 (positive, so SD's range keeps it) ---------------------

@pytest.fixture(scope="module")
def sentinel() -> xr.Dataset:
    """Three scenes; in the middle one, 8 of 32 lines of SD hold 9999, undeclared."""
    ds = make_scenes(3, (32, 48), seed=6, radiances=False).compute()
    sd = ds["SD"].values.copy()
    sd[1, :8] = 9999.0
    ds["SD"] = (ds["SD"].dims, sd, ds["SD"].attrs)
    return ds


@pytest.fixture(scope="module")
def clean_model(sentinel: xr.Dataset) -> BinnedSVC:
    clean = sentinel.isel(scene=[0, 2])
    s = stack_samples(with_features(clean, FEATURES), FEATURES)
    return BinnedSVC(omega=0.8, C=1.0).fit(s.as_dataarray(), s.y, mask=s.mask)


def _predicted_with_9999(ds: xr.Dataset) -> int:
    stored = np.stack([ds[v].values for v in ("NDAI", "SD", "CORR")])
    return int((np.isfinite(stored).all(axis=0) & (stored[1] == 9999.0)).sum())


@pytest.mark.parametrize("suffix", [".zarr", ".nc"])
def test_predict_warns_naming_the_stored_variable_the_value_and_the_count(
        sentinel: xr.Dataset, clean_model: BinnedSVC, tmp_path, suffix: str) -> None:
    from bigkern import write_predictions
    from bigkern.reduce.extremes import SuspectedFillWarning

    if suffix == ".nc":
        pytest.importorskip("h5netcdf", reason="netCDF output needs the formats extra")
    count = _predicted_with_9999(sentinel)
    pred = predict_scenes(clean_model, sentinel[["NDAI", "SD", "CORR"]])
    with pytest.warns(SuspectedFillWarning,
                      match=rf"feature '(logSD|SD)': {count:,} of .* far above .* "
                            rf"--fill-value SD=9999,"):  # zarr: seen as logSD; .nc: as SD
        report = write_predictions(pred, tmp_path / f"p{suffix}")
    (suspect,) = report.suspects
    name, value = suspect.stored()
    assert (name, round(value), suspect.count) == ("SD", 9999, count)
    assert set(report.summary) == {"pixels", "no_prediction", "cloud", "clear"}
    masks = pred["cloud_mask"].values
    assert (masks[1, :8] != 0).mean() > 0.9  # the check masks nothing by itself


def test_a_clean_prediction_warns_nothing(sentinel: xr.Dataset, clean_model: BinnedSVC,
                                          tmp_path) -> None:
    from bigkern import write_predictions

    report = write_predictions(predict_scenes(clean_model, sentinel.isel(scene=[0, 2])),
                               tmp_path / "p.zarr")  # a warning would fail the test
    assert report.suspects == []


def test_the_commands_on_a_store_with_the_sentinel(sentinel: xr.Dataset, tmp_path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from bigkern.reduce.extremes import SuspectedFillWarning

    clean = write_scenes(sentinel.isel(scene=[0, 2]), tmp_path / "clean.zarr")
    store = write_scenes(sentinel, tmp_path / "s.zarr")
    model = tmp_path / "m.zarr"
    flags = ["--no-search", "--param", "omega=0.8", "--param", "C=1.0", "--workers", "1"]
    # fit refuses, after its first pass, in one line naming what to declare
    assert main(["fit", str(store), "-o", str(tmp_path / "refused.zarr"), *flags]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after "connected to …"
    assert err.startswith("bigkern: error: refusing to fit on a suspected fill value")
    assert "--fill-value SD=9999" in err and not (tmp_path / "refused.zarr").exists()
    # predict warns and says it in its summary
    assert main(["fit", str(clean), "-o", str(model), *flags]) == 0
    with pytest.warns(SuspectedFillWarning, match="where SD is about 9999"):
        assert main(["predict", str(store), str(model), "-o", str(tmp_path / "p.zarr"),
                     "--workers", "1"]) == 0
    out = capsys.readouterr().out
    count = _predicted_with_9999(sentinel)
    assert (f"suspected undeclared fill: {count:,} predicted pixels have SD = 9999, far "
            f"above its other values (--fill-value SD=9999") in out
