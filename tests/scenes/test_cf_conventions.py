"""xarray and CF conventions: coordinates, attributes and ``history`` kept from a scene store
through prediction, CF attributes on every output, scene dims mapped (``time`` for ``scene``),
and ``write_scenes`` following a dask-backed Dataset's own chunks.

The CF check (:func:`cf_problems`) tests what the CF conventions ask of these attributes:
``Conventions`` names a CF version; every data variable has a ``long_name``; ``units`` parse
as UDUNITS units (with ``cf_units`` when it is installed, else from a short list of the units
bigkern and its test data use); ``flag_values`` have the variable's type, are distinct and are
as many as the blank-separated words of ``flag_meanings``; ``_FillValue`` has the variable's
type; ``standard_name`` is one of the few standard names these stores use. (The CF checker
``cfchecker`` reads netCDF files only, and needs the standard-name table from the network.)
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

from bigkern import config
from bigkern.datasets import make_scenes
from bigkern.errors import LabelError, StoreError
from bigkern.jobs.predict import predict_scenes, prediction_job, write_predictions
from bigkern.scenes import open_scenes, stack_samples, write_scenes
from bigkern.scenes.cf import CF_CONVENTIONS, cf_attrs, cf_conventions
from bigkern.scenes.dims import DIMS_ATTR, scene_dims
from bigkern.scenes.writing import write_chunks
from bigkern.store.zarr_store import open_zarr
from bigkern.version import __version__

FEATURES = ["NDAI", "SD", "CORR"]
TIMES = np.array(["2013-05-01T19:20", "2013-05-17T19:20", "2013-06-02T19:20"],
                 dtype="datetime64[ns]")
SOURCE_HISTORY = "2013-06-05T00:00:00Z MISR L1B2 → features (Shi et al.)"
# CF: a history line is a time stamp and what a program did; bigkern's: ISO 8601 UTC
OWN_LINE = re.compile(rf"^\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ bigkern {re.escape(__version__)} "
                      rf"(?P<action>.+)$")
# the standard names these stores may carry (CF standard-name table, version 84)
STANDARD_NAMES = {"latitude", "longitude", "time"}
# units used by bigkern's outputs and this test's data, when cf_units is not installed
KNOWN_UNITS = {"1", "W m-2 sr-1 um-1", "degrees_north", "degrees_east"}


def _valid_units(units: str) -> bool:
    try:
        import cf_units
    except ImportError:
        return units in KNOWN_UNITS or bool(re.fullmatch(
            r"(seconds|minutes|hours|days) since \d{4}-\d\d-\d\d"
            r"([ T]\d\d:\d\d(:\d\d(\.\d+)?)?)?( ?(Z|UTC|[+-]\d\d:?\d\d))?", units))
    try:
        cf_units.Unit(units)
    except ValueError:
        return False
    return True


def _fits_dtype(value, dtype: np.dtype) -> bool:
    """Whether ``value`` is a value of ``dtype`` (zarr stores attributes as JSON numbers)."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf" and not (arr.dtype.kind == "O" and arr.size == 0):
        return False
    cast = arr.astype(dtype)
    if dtype.kind == "f":
        return bool(np.all((cast == arr) | (np.isnan(cast) & np.isnan(arr.astype(float)))))
    return arr.dtype.kind in "iu" and bool(np.all(cast == arr))


def cf_problems(path: Path) -> list[str]:
    """What is not CF about the attributes of the zarr store at ``path`` (empty: nothing)."""
    problems = []
    ds = open_zarr(path)
    group = zarr.open_group(str(path), mode="r")
    conventions = str(ds.attrs.get("Conventions", ""))
    # CF: a blank-separated list of conventions (or comma-separated, from CF 1.7), CF's once
    named = [c for c in re.split(r"[\s,]+", conventions) if c]
    if len([c for c in named if re.fullmatch(r"CF-1\.\d+", c)]) != 1:
        problems.append(f"Conventions is {conventions!r}")
    for name, var in ds.variables.items():
        attrs, array = var.attrs, group[str(name)]
        if name in ds.data_vars and not isinstance(attrs.get("long_name"), str):
            problems.append(f"{name}: no long_name")
        units = attrs.get("units", var.encoding.get("units"))
        if units is not None and not _valid_units(str(units)):
            problems.append(f"{name}: units {units!r} are not UDUNITS units")
        if "standard_name" in attrs and attrs["standard_name"] not in STANDARD_NAMES:
            problems.append(f"{name}: standard_name {attrs['standard_name']!r}")
        if "flag_values" in attrs or "flag_meanings" in attrs:
            values = np.asarray(attrs.get("flag_values", []))
            words = str(attrs.get("flag_meanings", "")).split()
            if not _fits_dtype(values, np.dtype(array.dtype)):
                problems.append(f"{name}: flag_values {values.tolist()} are not {array.dtype}")
            if len(values) != len(words) or len(set(values.tolist())) != len(values):
                problems.append(f"{name}: {len(values)} flag_values, {len(words)} flag_meanings")
            if not all(re.fullmatch(r"[A-Za-z0-9_.+\-@]+", w) for w in words):
                problems.append(f"{name}: flag_meanings {words} are not CF words")
        fill = var.encoding.get("_FillValue", attrs.get("_FillValue"))
        if fill is not None:
            dtype = np.dtype(var.encoding.get("dtype", var.dtype))
            if not _fits_dtype(fill, dtype):
                problems.append(f"{name}: _FillValue {fill!r} is not {dtype}")
            if np.asarray(array.fill_value).dtype != np.dtype(array.dtype):
                problems.append(f"{name}: zarr fill_value of type "
                                f"{np.asarray(array.fill_value).dtype}")
    history = str(ds.attrs.get("history", ""))
    if not history or not OWN_LINE.match(history.splitlines()[-1]):
        problems.append(f"history does not end with a bigkern line: {history!r}")
    return problems


def _scenes(lat_dims: tuple[str, ...] = ("y", "x"), n: int = 3) -> xr.Dataset:
    """Synthetic scenes with a ``time`` dim, lat/lon, CF attributes and a ``history``."""
    ds = make_scenes(n, (48, 64), seed=7, radiances=False).compute().rename(scene="time")
    ny, nx = ds.sizes["y"], ds.sizes["x"]
    lat = 71.0 + 0.011 * np.arange(ny)[:, None] + 0.002 * np.arange(nx)[None, :]
    lon = -152.0 + 0.003 * np.arange(ny)[:, None] + 0.017 * np.arange(nx)[None, :]
    if lat_dims == ("time", "y", "x"):  # the swath moves a little from one pass to the next
        drift = 0.05 * np.arange(n)[:, None, None]
        lat, lon = lat[None] + drift, lon[None] - drift
    ds = ds.assign_coords(
        time=("time", TIMES[:n], {"standard_name": "time", "long_name": "time of the pass"}),
        lat=(lat_dims, lat.astype(np.float32),
             {"standard_name": "latitude", "long_name": "latitude", "units": "degrees_north"}),
        lon=(lat_dims, lon.astype(np.float32),
             {"standard_name": "longitude", "long_name": "longitude", "units": "degrees_east"}),
    )
    ds.attrs.update(title="arctic MISR scenes", institution="a test",
                    history=SOURCE_HISTORY, Conventions="CF-1.8")
    return ds


def _fit(ds: xr.Dataset):
    from bigkern.jobs.fit import fit_scenes

    return fit_scenes(ds, features=FEATURES, search=False,
                      params={"omega": 0.8, "C": 1.0}).model


def _history_actions(attrs: dict) -> list[str]:
    lines = str(attrs["history"]).splitlines()
    assert lines[0] == SOURCE_HISTORY
    found = [OWN_LINE.match(line) for line in lines[1:]]
    assert all(found), lines
    return [m["action"] for m in found]


def test_time_store_keeps_coordinates_attributes_and_history_through_prediction(
        client, tmp_path):
    source = _scenes()
    store = write_scenes(source, tmp_path / "scenes.zarr", dims={"scene": "time"},
                         chunks={"time": 1})  # the user's dim name
    assert cf_problems(store) == []
    stored = open_zarr(store)
    assert stored["NDAI"].dims == ("time", "y", "x")  # the store keeps the user's dim
    assert stored["label"].attrs["flag_meanings"] == "clear unlabelled cloud"
    assert _history_actions(stored.attrs) == ["write_scenes"]

    scenes = open_scenes(store, dims={"scene": "time"}, features=FEATURES)
    assert scenes["NDAI"].dims == ("scene", "y", "x") and scene_dims(scenes) == {"scene": "time"}
    model = _fit(scenes)
    pred = predict_scenes(model, scenes)
    assert pred["cloud_mask"].dims == ("time", "y", "x")
    report = write_predictions(pred, tmp_path / "masks.zarr", inputs=[store])
    assert report.n_computed == report.n_regions == 3

    back = open_zarr(tmp_path / "masks.zarr")
    assert cf_problems(tmp_path / "masks.zarr") == []
    assert back["cloud_mask"].dims == ("time", "y", "x")
    np.testing.assert_array_equal(back["time"].values, TIMES)
    assert back["time"].attrs["standard_name"] == "time"
    for name in ("lat", "lon"):
        xr.testing.assert_identical(back[name].reset_coords(drop=True).load(),
                                    source[name].reset_coords(drop=True))
        assert back[name].attrs == source[name].attrs
    assert set(back["cloud_mask"].coords) == {"time", "y", "x", "lat", "lon"}
    assert back.attrs["title"] == "arctic MISR scenes" and back.attrs["institution"] == "a test"
    assert back.attrs["Conventions"] == CF_CONVENTIONS
    assert _history_actions(back.attrs) == ["write_scenes", f"predict_scenes: "
                                                            f"{type(model).__name__}"]
    assert DIMS_ATTR not in back.attrs  # bigkern's record of the mapping is not written
    # the CF attributes of each variable
    mask = back["cloud_mask"]
    assert mask.dtype == np.int8 and "_FillValue" not in mask.encoding
    assert mask.attrs["flag_values"] == [-1, 0, 1]
    assert mask.attrs["flag_meanings"] == "clear no_prediction cloud"
    assert "units" not in mask.attrs and "standard_name" not in mask.attrs
    decision = back["decision"]
    assert decision.attrs["units"] == "1" and np.isnan(decision.encoding["_FillValue"])
    # no prediction is never a class: 0 exactly where a feature is missing, NaN decision there
    finite = np.isfinite(np.stack([source[f].values for f in FEATURES])).all(axis=0)
    assert (~finite).any()
    np.testing.assert_array_equal(mask.values != 0, finite)
    np.testing.assert_array_equal(np.isnan(decision.values), ~finite)


def test_a_resumed_prediction_keeps_per_pixel_coordinates_and_its_commit_records(
        client, tmp_path):
    source = _scenes(lat_dims=("time", "y", "x"))
    store = write_scenes(source, tmp_path / "scenes.zarr", dims={"scene": "time"},
                         chunks={"time": 1})  # the user's dim name
    scenes = open_scenes(store, dims={"scene": "time"})
    model = _fit(scenes)
    pred = predict_scenes(model, scenes)
    assert pred["lat"].dims == ("time", "y", "x")
    out = tmp_path / "masks.zarr"
    first = write_predictions(pred, out)
    assert first.n_computed == 3
    history = open_zarr(out).attrs["history"]

    # a run killed midway: one region of the data and one block of a coordinate never written
    shutil.rmtree(out / "cloud_mask" / "c" / "1")
    shutil.rmtree(out / "lat" / "c" / "2")
    zarr.open_group(str(out), mode="r+").attrs["bigkern_status"] = "writing"
    # predicted again later: only the time of its history line differs, the job is the same
    again = predict_scenes(model, open_scenes(store, dims={"scene": "time"}))
    again.attrs["history"] = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (?=bigkern \S+ predict)",
                                    "2030-01-01T00:00:00Z ", again.attrs["history"])
    assert again.attrs["history"] != pred.attrs["history"]
    assert prediction_job(again) == prediction_job(pred)
    report = write_predictions(again, out)
    assert report.resumed and (report.n_reused, report.n_computed) == (2, 1)
    assert report.summary == first.summary

    back = open_zarr(out)
    assert back.attrs["bigkern_status"] == "complete"
    assert back.attrs["history"] == history  # the store's own, from when it was started
    for name in ("lat", "lon"):
        np.testing.assert_array_equal(back[name].values, source[name].values)
    assert cf_problems(out) == []
    # a third run verifies every region against its commit record: nothing to recompute
    third = write_predictions(predict_scenes(model, open_scenes(store, dims={"scene": "time"})),
                              out)
    assert third.resumed and (third.n_reused, third.n_computed, third.n_damaged) == (3, 0, 0)


def test_an_in_memory_dataset_maps_its_dims_where_it_is_used(client):
    source = _scenes(n=2)
    model = _fit(source.rename(time="scene"))
    pred = predict_scenes(model, source, dims={"scene": "time"})
    assert pred["decision"].dims == ("time", "y", "x")
    np.testing.assert_array_equal(pred["time"].values, TIMES[:2])
    assert set(pred.coords) == {"time", "y", "x", "lat", "lon"}
    samples = stack_samples(source, FEATURES, dims={"scene": "time"})
    assert samples.X.shape == (2 * 48 * 64, 3)
    with pytest.raises(StoreError, match=r"has dims \('time', 'y', 'x'\).*"
                                         r"dims=\{'scene': 'time'\}"):
        stack_samples(source, FEATURES)


def test_a_mapping_naming_an_absent_dim_is_refused_naming_store_and_dim(tmp_path):
    store = write_scenes(_scenes(n=1), tmp_path / "s.zarr", dims={"scene": "time"})
    with pytest.raises(StoreError, match=rf"store {re.escape(str(store))} has no dimension "
                                         r"'orbit' \(dims maps 'scene' to it\)"):
        open_scenes(store, dims={"scene": "orbit"})
    assert open_scenes(store).attrs["bigkern_dims"] == '{"scene": "time"}'  # found alike
    with pytest.raises(ValueError, match=r"'band', which is not one of bigkern's dims"):
        open_scenes(store, dims={"band": "time"})
    with pytest.raises(StoreError, match="has no dimension 'orbit'"):
        predict_scenes(object.__new__(_Predicts), _scenes(n=1), features=["NDAI"],
                       dims={"scene": "orbit"})


class _Predicts:
    """Just enough of a model for predict_scenes to reach its dims check."""

    n_features_in_ = 1

    def decision_rows(self, X):  # pragma: no cover - never reached
        raise AssertionError


def _zarr_chunks(path: Path, name: str = "NDAI") -> tuple[int, ...]:
    return tuple(zarr.open_group(str(path), mode="r")[name].chunks)


def test_write_scenes_follows_a_dask_datasets_chunks(tmp_path):
    # notebook 03: scenes chunked one per task are stored one per chunk (not all in one)
    lazy = make_scenes(6, (32, 48), seed=0, radiances=False, chunks={"scene": 1})
    store = write_scenes(lazy, tmp_path / "a.zarr")
    assert _zarr_chunks(store) == (1, 32, 48) == _zarr_chunks(store, "label")
    assert open_scenes(store)["NDAI"].data.npartitions == 6
    # chunks given win, dim by dim; the others still follow the Dataset's
    assert _zarr_chunks(write_scenes(lazy.chunk({"y": 16}), tmp_path / "b.zarr",
                                     chunks={"scene": 2})) == (2, 16, 48)
    # irregular dask chunks: regular zarr chunks of the largest
    assert _zarr_chunks(write_scenes(lazy.chunk({"scene": (2, 1, 2, 1)}),
                                     tmp_path / "c.zarr")) == (2, 32, 48)
    # in memory: bigkern's default chunks, as before
    assert _zarr_chunks(write_scenes(lazy.compute(), tmp_path / "d.zarr")) == (6, 32, 48)


def test_write_chunks_keep_to_the_chunk_guidance():
    lazy = make_scenes(4, (32, 48), seed=0, radiances=False).chunk({"y": 8})
    assert write_chunks(lazy) == {"scene": 1, "y": 8, "x": 48}  # small data: as they are
    # tasks too small for their overhead: whole multiples of the Dataset's chunks
    with config.set(**{"chunk_guidance.min_pixels_per_task": 1000}):
        grown = write_chunks(lazy)
    assert grown == {"scene": 4, "y": 32, "x": 48}
    with config.set(**{"chunk_guidance.min_pixels_per_task": 1000,
                       "chunk_guidance.target_pixels_per_task": 800}):
        assert write_chunks(lazy) == {"scene": 1, "y": 16, "x": 48}
    # a chunk over bigkern.chunk_bytes is cut to bigkern's default chunks
    whole = lazy.chunk({"scene": 4, "y": 32})
    with config.set(chunk_bytes=4 * 32 * 48):
        assert write_chunks(whole) == {"scene": 1, "y": 32, "x": 48}
    with config.set(chunk_bytes=4 * 10 * 48):
        assert write_chunks(whole) == {"scene": 1, "y": 10, "x": 48}


@pytest.mark.parametrize(("given", "kept"), [
    (None, "CF-1.10"),
    ("", "CF-1.10"),
    ("CF-1.6", "CF-1.10"),
    ("CF-1.8", "CF-1.10"),
    ("CF-1.9", "CF-1.10"),  # versions compare as numbers: 1.9 is older than 1.10
    ("CF-1.10", "CF-1.10"),
    ("CF-1.11", "CF-1.11"),  # newer than bigkern's: the input's, kept
    ("CF-1.12", "CF-1.12"),
    ("CF-1.8 ACDD-1.3", "CF-1.10 ACDD-1.3"),
    ("CF-1.8, ACDD-1.3", "CF-1.10, ACDD-1.3"),
    ("ACDD-1.3,CF-1.12", "ACDD-1.3,CF-1.12"),
    ("COARDS, CF-1.6, ACDD-1.3", "COARDS, CF-1.10, ACDD-1.3"),
    ("ACDD-1.3", "CF-1.10 ACDD-1.3"),
    ("ACDD-1.3, IOOS-1.2", "CF-1.10, ACDD-1.3, IOOS-1.2"),
    ("CF-1.8 CF-1.11 ACDD-1.3", "CF-1.11 ACDD-1.3"),  # CF named once
    (["CF-1.11", "ACDD-1.3"], "CF-1.11 ACDD-1.3"),
])
def test_conventions_raise_cfs_version_to_1_10_and_keep_the_others(given, kept):
    assert cf_conventions(given) == kept
    attrs = {} if given is None else {"Conventions": given}
    assert cf_attrs(attrs, "write_scenes")["Conventions"] == kept


def test_a_newer_cf_and_other_conventions_are_kept_through_writing_and_prediction(tmp_path):
    source = _scenes(n=1)
    source.attrs["Conventions"] = "CF-1.11, ACDD-1.3"
    store = write_scenes(source, tmp_path / "s.zarr", dims={"scene": "time"})
    assert open_zarr(store).attrs["Conventions"] == "CF-1.11, ACDD-1.3"
    assert cf_problems(store) == []
    pred = predict_scenes(_fit(source.rename(time="scene")), source, dims={"scene": "time"})
    assert pred.attrs["Conventions"] == "CF-1.11, ACDD-1.3"
    # an older CF is raised to bigkern's, the others stay
    source.attrs["Conventions"] = "CF-1.8 ACDD-1.3"
    store = write_scenes(source, tmp_path / "t.zarr", dims={"scene": "time"})
    assert open_zarr(store).attrs["Conventions"] == f"{CF_CONVENTIONS} ACDD-1.3"


def test_the_cf_check_finds_what_is_wrong(tmp_path):
    ds = make_scenes(1, (8, 8), seed=0, radiances=False).compute()
    ds["NDAI"].attrs = {"units": "pixels_of_snow"}  # no long_name, and not a unit
    ds["label"].attrs.update(flag_values=np.array([-1, 1], dtype=np.int8),
                             flag_meanings="clear no label cloud")
    ds["SD"].attrs["standard_name"] = "cloud_mask"
    problems = cf_problems(write_scenes(ds, tmp_path / "bad.zarr"))
    assert sorted(p.split(":")[0] for p in problems) == ["NDAI", "NDAI", "SD", "label"]
    assert any("2 flag_values, 4 flag_meanings" in p for p in problems)


def test_a_bad_label_is_named_by_the_stores_own_dim_and_time(tmp_path):
    ds = _scenes(n=2)
    ds["label"][1, 3, 4] = 7
    words = r"first in time '2013-05-17T19:20:00\.000000000': \[7\]"
    with pytest.raises(LabelError, match=words):  # refused before writing, in the same words
        write_scenes(ds, tmp_path / "s.zarr", dims={"scene": "time"})
    ds.to_zarr(tmp_path / "theirs.zarr")  # a store written elsewhere
    with pytest.raises(LabelError, match=words):
        open_scenes(tmp_path / "theirs.zarr", dims={"scene": "time"})
