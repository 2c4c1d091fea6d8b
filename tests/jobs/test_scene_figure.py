"""The scene figure: a matplotlib object of its own, one mask colour map, the agreement on it."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import xarray as xr

pytest.importorskip("matplotlib", reason="matplotlib draws the figures")

from bigkern.datasets import make_scenes
from bigkern.jobs.plot import MASK_COLORS, mask_colormap, plot_scene


@pytest.fixture(scope="module")
def scenes() -> xr.Dataset:
    return make_scenes(2, (24, 32), seed=3)


def _flipped(truth: xr.DataArray, n: int) -> xr.DataArray:
    """The truth with the class of its first ``n`` pixels (in C order) swapped."""
    values = truth.values.copy()
    flat = values.reshape(values.shape[0], -1)
    flat[:, :n] = -flat[:, :n]
    return truth.copy(data=values)


def test_the_figure_is_a_matplotlib_object_and_no_backend_changes(scenes):
    import matplotlib
    from matplotlib.figure import Figure

    backend = matplotlib.get_backend()
    pyplot_loaded = "matplotlib.pyplot" in sys.modules
    fig = plot_scene(scenes, xr.Dataset({"cloud_mask": scenes["cloud_truth"]}), scene=1)
    assert isinstance(fig, Figure)
    assert matplotlib.get_backend() == backend
    assert ("matplotlib.pyplot" in sys.modules) == pyplot_loaded  # pyplot is not needed
    png = fig._repr_png_()  # how IPython shows it inline, with or without %matplotlib
    assert png.startswith(b"\x89PNG")
    assert fig.get_suptitle() == "scene 1"


def test_one_mask_colour_map_with_its_legend(scenes):
    fig = plot_scene(scenes, xr.Dataset({"cloud_mask": scenes["cloud_truth"]}))
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert labels == [MASK_COLORS[c][1] for c in (1, -1, 0)]
    cmap, norm = mask_colormap()
    for ax in fig.axes:
        if ax.get_title() in ("expert labels", "truth") or "predicted mask" in ax.get_title():
            image = ax.get_images()[0]
            assert image.cmap.name == cmap.name
            np.testing.assert_array_equal(image.norm.boundaries, norm.boundaries)
    titles = [ax.get_title() for ax in fig.axes]
    assert "SD (log scale)" in titles  # a skewed feature on a log scale


def test_the_mask_panel_says_how_many_labelled_and_true_pixels_agree(scenes):
    truth = scenes["cloud_truth"]
    mask = _flipped(truth, 40)
    fig = plot_scene(scenes, xr.Dataset({"cloud_mask": mask}), scene=0)
    one, m = scenes.isel(scene=0), mask.isel(scene=0).values
    label = one["label"].values
    n_lab = int((label != 0).sum())
    ok_lab = int(((label != 0) & (m == label)).sum())
    n_px = m.size
    ok_truth = n_px - 40
    title = next(ax.get_title() for ax in fig.axes if "predicted mask" in ax.get_title())
    assert f"{ok_lab / n_lab:.1%} agree with the labels ({n_lab:,} px)" in title
    assert f"{ok_truth / n_px:.1%} agree with the truth ({n_px:,} px)" in title


def test_pixels_without_a_prediction_are_not_counted_as_disagreeing(scenes):
    mask = scenes["cloud_truth"].copy()
    mask[0, :4, :] = 0  # four rows with no prediction
    fig = plot_scene(scenes, xr.Dataset({"cloud_mask": mask}), scene=0)
    title = next(ax.get_title() for ax in fig.axes if "predicted mask" in ax.get_title())
    n_px = mask.isel(scene=0).size - 4 * 32
    assert f"100.0% agree with the truth ({n_px:,} px)" in title
