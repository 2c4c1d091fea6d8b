"""The scene figure on any dims: bigkern's, a store's own (given, recorded, or in
order), and the maps' axes placed by latitude/longitude or projected x/y where the data have them.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

pytest.importorskip("matplotlib", reason="matplotlib draws the figures")

from bigkern.cli.main import main
from bigkern.datasets import make_scenes
from bigkern.jobs.fit import fit_scenes
from bigkern.jobs.plot import plot_scene, save_scene_figure
from bigkern.jobs.predict import predict_scenes
from bigkern.scenes import open_scenes, write_scenes
from bigkern.scenes.dims import to_scene_dims
from bigkern.store.zarr_store import open_zarr

TIMES = np.array(["2013-05-01T19:20", "2013-05-17T19:20"], dtype="datetime64[ns]")
STORE_DIMS = {"scene": "time", "y": "lat", "x": "lon"}
TITLES = ("NDAI", "SD (log scale)", "CORR", "expert labels", "predicted mask", "truth")


def _gridded() -> xr.Dataset:
    """Two scenes on (time, lat, lon): 1-D CF latitude (north to south) and longitude."""
    ds = make_scenes(2, (24, 32), seed=3).compute().rename(scene="time", y="lat", x="lon")
    return ds.assign_coords(
        time=("time", TIMES, {"standard_name": "time"}),
        lat=("lat", 71.5 - 0.01 * np.arange(24),
             {"standard_name": "latitude", "units": "degrees_north"}),
        lon=("lon", -152.0 + 0.03 * np.arange(32),
             {"standard_name": "longitude", "units": "degrees_east"}))


def _swath() -> xr.Dataset:
    """Two scenes on (time, row, col) with 2-D CF latitude and longitude, crossing the date line."""
    ds = make_scenes(2, (24, 32), seed=3).compute().rename(scene="time", y="row", x="col")
    rows, cols = np.arange(24)[:, None], np.arange(32)[None, :]
    lat = 70.0 + 0.011 * rows + 0.002 * cols
    lon = 179.8 + 0.003 * rows + 0.017 * cols
    return ds.assign_coords(
        time=("time", TIMES),
        lat=(("row", "col"), lat, {"standard_name": "latitude", "units": "degrees_north"}),
        lon=(("row", "col"), (lon + 180) % 360 - 180,  # -180..180: 180.0 comes as -180.0
             {"standard_name": "longitude", "units": "degrees_east"}))


def _mask_of(ds: xr.Dataset) -> xr.Dataset:
    """A perfect mask of ``ds``, in its dims and with its coordinates (as predict_scenes gives)."""
    return xr.Dataset({"cloud_mask": ds["cloud_truth"]})


def _maps(fig) -> list:
    """The figure's map panels (not its colour bars), in order."""
    return [ax for ax in fig.axes if ax.get_title().split("\n")[0] in TITLES]


def _check_geographic(fig, *, mesh: bool) -> None:
    maps = _maps(fig)
    assert [ax.get_title().split("\n")[0] for ax in maps] == list(TITLES)
    assert "100.0% agree with the labels" in maps[4].get_title()
    assert [ax.get_ylabel() for ax in maps] == ["latitude (degrees_north)", "", "",
                                                "latitude (degrees_north)", "", ""]
    assert all(ax.get_xlabel() == "longitude (degrees_east)" for ax in maps[3:])
    for ax in maps:
        assert 2 <= len(ax.get_xticks()) <= 6 and 2 <= len(ax.get_yticks()) <= 6
        assert bool(ax.collections) == mesh and bool(ax.get_images()) != mesh
    assert fig.get_suptitle() == "time 2013-05-17T19:20:00 (scene 1)"
    assert fig._repr_png_().startswith(b"\x89PNG")


def test_a_grid_in_its_own_dims_is_drawn_on_latitude_and_longitude():
    ds = _gridded()
    # in order: (time, lat, lon) taken as (scene, y, x), nothing else saying
    fig = plot_scene(ds, _mask_of(ds), scene=1)
    _check_geographic(fig, mesh=False)
    ndai = _maps(fig)[0]
    left, right, bottom, top = ndai.get_images()[0].get_extent()
    np.testing.assert_allclose([left, right], [-152.015, -152.0 + 0.03 * 31 + 0.015])
    np.testing.assert_allclose([bottom, top], [71.5 - 0.01 * 23 - 0.005, 71.505])
    assert ndai.get_ylim()[0] < ndai.get_ylim()[1]  # north up
    # named, for both; and one in bigkern's dims beside one in the store's
    _check_geographic(plot_scene(ds, _mask_of(ds), scene=1, dims=STORE_DIMS), mesh=False)
    ours = to_scene_dims(ds, STORE_DIMS)
    assert ours["NDAI"].dims == ("scene", "y", "x")
    _check_geographic(plot_scene(ours, _mask_of(ds), scene=1, dims=STORE_DIMS), mesh=False)
    _check_geographic(plot_scene(ds, _mask_of(ours), scene=1, dims=STORE_DIMS), mesh=False)


def test_scenes_opened_with_a_mapping_and_predictions_in_the_stores_names():
    """What ``bigkern predict --png`` hands over: the mapping is recorded on the scenes."""
    ds = _gridded()
    scenes = to_scene_dims(ds, STORE_DIMS)  # as open_scenes(path, dims=...) returns them
    fig = plot_scene(scenes, _mask_of(ds), scene=1)
    _check_geographic(fig, mesh=False)


def test_a_swath_with_2d_latitude_and_longitude_is_a_mesh():
    ds = _swath()
    fig = plot_scene(ds, _mask_of(ds), scene=1)
    _check_geographic(fig, mesh=True)
    ndai = _maps(fig)[0]
    x0, x1 = ndai.get_xlim()
    assert 179 < x0 < x1 < 181  # across the date line, not around the world
    # any names: (time, row, col) in bigkern's order, and in another order named by dims
    swapped = ds.transpose("row", "col", "time")
    _check_geographic(plot_scene(swapped, _mask_of(swapped), scene=1,
                                 dims={"scene": "time", "y": "row", "x": "col"}), mesh=True)


def test_any_names_are_taken_in_order_and_a_plain_grid_keeps_its_tickless_images():
    ds = make_scenes(2, (24, 32), seed=3).compute().rename(scene="band", y="a", x="b")
    fig = plot_scene(ds, _mask_of(ds), scene=1)
    assert fig.get_suptitle() == "scene 1"
    for ax in _maps(fig):
        assert not ax.get_xlabel() and not ax.get_ylabel()
        assert list(ax.get_xticks()) == [] and list(ax.get_yticks()) == []
    # a coordinate that is not the index names the scene
    orbits = ds.assign_coords(band=[12791, 13257])
    assert plot_scene(orbits, _mask_of(orbits)).get_suptitle() == "band 12791 (scene 0)"


def test_projected_coordinates_are_metres():
    ds = make_scenes(1, (16, 20), seed=0).compute().assign_coords(
        x=("x", 500_000.0 + 1100.0 * np.arange(20), {"units": "metre"}),
        y=("y", 7_900_000.0 - 1100.0 * np.arange(16), {"units": "metre"}),
        spatial_ref=((), 0, {"crs_wkt": "PROJCS[...]"}))
    maps = _maps(plot_scene(ds, _mask_of(ds)))
    assert maps[0].get_ylabel() == "y (m)" and maps[-1].get_xlabel() == "x (m)"
    left, right, bottom, top = maps[0].get_images()[0].get_extent()
    assert (left, right, bottom, top) == (499_450.0, 521_450.0, 7_882_950.0, 7_900_550.0)


def test_predictions_on_another_grid_are_refused():
    ds = _gridded()
    with pytest.raises(ValueError, match=r"predictions' grid \('lat', 'lon'\) of \(12, 32\)"):
        plot_scene(ds, _mask_of(ds.isel(lat=slice(12))))


@pytest.mark.slow
def test_predicted_scenes_of_a_store_in_its_own_dims(client, tmp_path):
    """The datasets ``bigkern predict --dims … --png`` draws: scenes opened with the mapping
    (which they record), predictions in the store's names."""
    store = write_scenes(_gridded(), tmp_path / "s.zarr", dims={"scene": "time"})
    scenes = open_scenes(store, dims=STORE_DIMS)
    model = fit_scenes(scenes, features=["NDAI", "SD", "CORR"], search=False,
                       params={"omega": 0.8, "C": 1.0}).model
    pred = predict_scenes(model, scenes)
    assert pred["cloud_mask"].dims == ("time", "lat", "lon")
    fig = plot_scene(scenes, pred, scene=1)
    assert fig.get_suptitle() == "time 2013-05-17T19:20:00 (scene 1)"
    maps = _maps(fig)
    assert maps[0].get_ylabel() == "latitude (degrees_north)"
    assert maps[-1].get_xlabel() == "longitude (degrees_east)"
    png = save_scene_figure(scenes, pred, tmp_path / "p.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_predict_png_on_a_store_in_its_own_dims(client, tmp_path, capsys):
    store = write_scenes(_gridded(), tmp_path / "s.zarr", dims={"scene": "time"})
    dims = [f"--dims={k}={v}" for k, v in STORE_DIMS.items()]
    assert main(["fit", str(store), "-o", str(tmp_path / "m.zarr"), "--no-search",
                 "--scheduler", client.scheduler.address, *dims]) == 0
    png = tmp_path / "p.png"
    assert main(["predict", str(store), str(tmp_path / "m.zarr"), "-o", str(tmp_path / "p.zarr"),
                 "--png", str(png), "--scheduler", client.scheduler.address, *dims]) == 0
    assert f"figure written to {png}" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the written store, as the command read it back to draw it
    pred = open_zarr(tmp_path / "p.zarr")
    assert pred["cloud_mask"].dims == ("time", "lat", "lon")
    fig = plot_scene(open_scenes(store, dims=STORE_DIMS), pred)
    assert fig.get_suptitle() == "time 2013-05-01T19:20:00 (scene 0)"
