"""Seeded synthetic MISR-like scenes.

:func:`make_scenes` builds a lazy, dask-backed scene dataset that looks like the
expert-labelled MISR arctic scenes of Shi, Yu, Clothiaux & Braverman: a snow and
ice surface with rough terrain patches, cloud blobs of several kinds (thick, low,
thin and high), the three engineered features ``NDAI``, ``SD`` and ``CORR``, the
red-band radiances of five cameras, expert-like labels with unlabelled pixels near
cloud edges, and a few dropout pixels. Each scene is made by one dask task from
``(seed, scene index, shape)`` only, so any number of orbit-sized scenes can be
written to a store with bounded memory, and scene ``i`` is the same whatever the
number of scenes asked for.

The classes overlap the way they do in the real data (thin cloud over snow looks
clear, rough terrain looks cloudy): a three-threshold rule on the features is
right on roughly 80-90% of the labelled pixels, not all of them.
"""

from __future__ import annotations

from typing import Any

import dask
import dask.array as da
import numpy as np
import xarray as xr
from scipy.ndimage import gaussian_filter, uniform_filter

from bigkern.features.variables import VARIABLE_ATTRS
from bigkern.scenes.labels import bigkern_label_flags

__all__ = ["FEATURES", "RADIANCES", "make_scenes"]

FEATURES: tuple[str, ...] = ("NDAI", "SD", "CORR")
"""The engineered MISR features of Shi et al., in their usual order."""

RADIANCES: tuple[str, ...] = ("DF", "CF", "BF", "AF", "AN")
"""Red-band radiances of the five MISR cameras, most oblique forward view first."""

# Mean clear-snow radiance of each camera (W m-2 sr-1 um-1), close to the real scenes.
_CLEAR_RADIANCE = np.array([290.0, 274.0, 258.0, 235.0, 215.0], dtype=np.float32)
# How strongly forward scattering by cloud brightens each camera (oblique views most).
_FORWARD_WEIGHT = np.array([1.0, 0.65, 0.35, 0.12, 0.0], dtype=np.float32)
# Probability that a pixel is a dropout (NaN in every feature, label 0).
_DROPOUT_RATE = 1.0e-3

_DESCRIPTION = (
    "Synthetic MISR-like daytime arctic scenes: snow/ice surface with rough terrain, "
    "thick, low and thin high clouds; features NDAI, SD, CORR and radiances of cameras "
    "DF CF BF AF AN; expert-like labels (1 cloud, -1 clear, 0 unlabelled) and the true "
    "cloud mask cloud_truth."
)


def _smooth_noise(rng: np.random.Generator, shape: tuple[int, int], scale: float) -> np.ndarray:
    """Spatially correlated Gaussian noise with unit variance and length ``scale`` pixels.

    White noise is filtered with a Gaussian of standard deviation ``scale``. For long
    length scales the noise is drawn and filtered on a grid coarser by a factor of
    about ``scale / 3`` and interpolated back (bilinear), which gives the same field
    statistics at a small fraction of the cost.
    """
    factor = max(1, int(scale // 3))
    coarse = (-(-shape[0] // factor) + 2, -(-shape[1] // factor) + 2)
    sigma = scale / factor
    field = gaussian_filter(
        rng.standard_normal(coarse, dtype=np.float32), sigma, mode="wrap", truncate=3.0
    )
    # Filtered unit white noise has variance 1 / (4 pi sigma^2) in two dimensions.
    field *= np.float32(2.0 * np.sqrt(np.pi) * sigma)
    if factor == 1:
        return field[: shape[0], : shape[1]]
    return _upsample(field, factor, shape)


def _linear_weights(n: int, factor: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices into a coarse axis and weights for linear interpolation to ``n`` fine pixels.

    Fine pixel ``i`` has its centre at coarse position ``(i + 0.5) / factor + 0.5``
    (the coarse grid has one pixel of margin before the first fine pixel).
    """
    pos = (np.arange(n, dtype=np.float64) + 0.5) / factor + 0.5
    low = np.floor(pos).astype(np.intp)
    return low, (pos - low).astype(np.float32)


def _upsample(coarse: np.ndarray, factor: int, shape: tuple[int, int]) -> np.ndarray:
    """Bilinear interpolation of ``coarse`` onto a grid ``factor`` times finer, cut to ``shape``."""
    iy, wy = _linear_weights(shape[0], factor)
    ix, wx = _linear_weights(shape[1], factor)
    rows = coarse[iy] * (1.0 - wy[:, None]) + coarse[iy + 1] * wy[:, None]
    return rows[:, ix] * (1.0 - wx) + rows[:, ix + 1] * wx


def _cut(values: np.ndarray, q: float) -> np.float32:
    """The ``q`` quantile of ``values`` (``q`` clipped to [0, 1]), as float32.

    Keeping the cut in float32 keeps the arithmetic that uses it in float32.
    """
    return np.float32(np.quantile(values, min(1.0, max(0.0, q))))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """Logistic function, in the dtype of ``z``."""
    return 1.0 / (1.0 + np.exp(-z))


#: The attributes of a three-class label and truth (``make_scenes(classes=3)``).
_THREE_CLASS_LABEL = {"long_name": "expert label: 1 clear, 2 low cloud, 3 high cloud, "
                                   "0 unlabelled",
                      "flag_values": np.array([0, 1, 2, 3], dtype=np.int8),
                      "flag_meanings": "unlabelled clear low_cloud high_cloud"}
_THREE_CLASS_TRUTH = {"long_name": "true class: 1 clear, 2 low cloud, 3 high cloud",
                      "flag_values": np.array([1, 2, 3], dtype=np.int8),
                      "flag_meanings": "clear low_cloud high_cloud"}


def _scene_arrays(
    seed: int, index: int, shape: tuple[int, int], radiances: bool, classes: int = 2
) -> tuple[np.ndarray, ...]:
    """Generate one scene: the features, radiances, ``label`` and ``cloud_truth`` arrays.

    The result depends only on ``(seed, index, shape)``: each part of the scene
    (surface, cloud, features, labels, dropouts, radiances) draws from its own child
    of ``SeedSequence([seed, index])``, so leaving the radiances out does not change
    the rest.
    """
    children = np.random.SeedSequence([seed, index]).spawn(6)
    rng_surface, rng_cloud, rng_feature, rng_label, rng_drop, rng_rad = (
        np.random.default_rng(s) for s in children
    )
    rough, texture, albedo = _surface(rng_surface, shape)
    opacity, high, cloud = _clouds(rng_cloud, shape)
    out = _features(rng_feature, shape, rough, texture, opacity, high)
    if radiances:
        out.update(_radiances(rng_rad, shape, out, rough, albedo, opacity))
    label, truth = _labels(rng_label, shape, cloud)
    if classes == 3:  # clear 1, low cloud 2, high cloud 3 (CORR tells the heights apart)
        truth = np.where(cloud, np.where(high, 3, 2), 1).astype(np.int8)
        label = np.where(label == 0, 0, truth).astype(np.int8)

    # --- dropouts: NaN in every feature, label 0 --------------------------------
    dropout = rng_drop.random(shape, dtype=np.float32) < _DROPOUT_RATE
    for value in out.values():
        value[dropout] = np.nan
    label[dropout] = 0

    out["label"] = label
    out["cloud_truth"] = truth
    return tuple(out.values())


def _surface(rng: np.random.Generator, shape: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """Smooth snow and sea ice, rough terrain patches, texture: ``rough, texture, albedo``."""
    f32 = np.float32
    rough_share = rng.uniform(0.15, 0.35)
    rough_field = 0.8 * _smooth_noise(rng, shape, 45.0) + 0.2 * _smooth_noise(rng, shape, 8.0)
    rough = _sigmoid((rough_field - _cut(rough_field, 1.0 - rough_share)) / f32(0.15))
    texture = _sigmoid(_smooth_noise(rng, shape, 25.0) * f32(1.5))
    albedo = 0.97 + 0.08 * _smooth_noise(rng, shape, 70.0)
    albedo = np.clip(albedo, 0.55, 1.1).astype(f32)
    return rough, texture, albedo


def _clouds(rng: np.random.Generator, shape: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """Thick/low blobs and thin high cloud: ``opacity, high, cloud``."""
    ny, nx = shape
    f32 = np.float32
    cover = rng.uniform(0.3, 0.6)
    thin_share = rng.uniform(0.1, 0.25)
    cloud_field = (
        0.75 * _smooth_noise(rng, shape, 40.0)
        + 0.25 * _smooth_noise(rng, shape, 12.0)
        + 0.08 * _smooth_noise(rng, shape, 3.0)
    )
    thick_cut = _cut(cloud_field, 1.0 - cover * (1.0 - thin_share))
    thick = cloud_field > thick_cut
    # Optical thickness grows from the edge of a blob inwards.
    depth = np.clip((cloud_field - thick_cut) / f32(0.35), 0.0, None)
    opacity = np.where(thick, 1.0 - 0.85 * np.exp(-2.0 * depth), 0.0).astype(f32)
    high = _smooth_noise(rng, shape, 60.0) > rng.uniform(-0.5, 0.5)

    cirrus_field = _smooth_noise(rng, shape, 20.0)
    free = ~thick
    n_thin = round(cover * thin_share * ny * nx)
    if n_thin > 0 and free.any():
        cirrus_cut = _cut(cirrus_field[free], 1.0 - n_thin / free.sum())
        thin = free & (cirrus_field > cirrus_cut)
    else:
        thin = np.zeros(shape, dtype=bool)
    thin_opacity = np.clip(0.15 + 0.25 * (cirrus_field - cirrus_field.min()), 0.15, 0.45)
    opacity = np.where(thin, thin_opacity, opacity).astype(f32)
    high |= thin
    return opacity, high, thick | thin


def _mix(opacity: np.ndarray, clear: np.ndarray, cloudy: np.ndarray) -> np.ndarray:
    """What the sensor sees through a cloud of ``opacity`` over ``clear``."""
    return (1.0 - opacity) * clear + opacity * cloudy


def _features(
    rng: np.random.Generator, shape: tuple[int, int], rough: np.ndarray, texture: np.ndarray,
    opacity: np.ndarray, high: np.ndarray,
) -> dict[str, np.ndarray]:
    """NDAI, SD and CORR over the surface and through the clouds."""
    f32 = np.float32

    def noise(scale: float) -> np.ndarray:
        return _smooth_noise(rng, shape, scale)

    ndai_clear = -0.75 + 1.9 * rough + 0.35 * noise(6.0) + 0.3 * noise(1.0)
    ndai_cloud = 1.7 + 0.5 * opacity + 0.35 * noise(8.0) + 0.3 * noise(1.0)
    log_sd_clear = 0.35 + 1.3 * rough + 0.35 * noise(6.0) + 0.45 * noise(1.0)
    log_sd_cloud = 1.55 + 0.4 * opacity + 0.45 * noise(10.0) + 0.45 * noise(1.0)
    corr_clear = 0.05 + 0.45 * texture + 0.15 * rough + 0.08 * noise(4.0) + 0.07 * noise(1.0)
    corr_cloud = np.where(high, f32(0.08), f32(0.42)) + 0.1 * noise(10.0) + 0.08 * noise(1.0)

    ndai = _mix(opacity, ndai_clear, ndai_cloud)
    sd = np.exp(_mix(opacity, log_sd_clear, log_sd_cloud))
    corr = np.clip(_mix(opacity, corr_clear, corr_cloud), -1.0, 1.0)
    return {"NDAI": ndai.astype(f32), "SD": sd.astype(f32), "CORR": corr.astype(f32)}


def _radiances(
    rng: np.random.Generator, shape: tuple[int, int], features: dict[str, np.ndarray],
    rough: np.ndarray, albedo: np.ndarray, opacity: np.ndarray,
) -> dict[str, np.ndarray]:
    """The five cameras' red radiances, brighter forward over cloud."""
    f32 = np.float32
    shade = albedo * (1.0 - 0.3 * rough)
    cloud_bright = 0.8 + 0.15 * _smooth_noise(rng, shape, 15.0)
    common = 1.0 + 0.03 * _smooth_noise(rng, shape, 3.0)
    forward = np.clip(features["NDAI"], -1.0, 4.0)
    sd = features["SD"]
    out = {}
    for k, name in enumerate(RADIANCES):
        clear_k = _CLEAR_RADIANCE[k] * shade
        brightening = 1.0 + 0.06 * _FORWARD_WEIGHT[k] * forward
        cloud_k = _CLEAR_RADIANCE[k] * cloud_bright * brightening
        value = _mix(opacity, clear_k, cloud_k) * common
        value += 0.35 * sd * rng.standard_normal(shape, dtype=f32)
        out[name] = np.clip(value, 5.0, None).astype(f32)
    return out


def _labels(rng: np.random.Generator, shape: tuple[int, int],
            cloud: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Expert-like labels: the truth, less a band at cloud edges and random patches."""
    ny, nx = shape
    truth = np.where(cloud, 1, -1).astype(np.int8)
    cloud_f = cloud.astype(np.float32)
    # Band half-width 2-4 pixels, narrowed if the band alone would leave too few labels
    # (small scenes with ragged clouds).
    for band in range(int(rng.integers(2, 5)), 0, -1):
        local = uniform_filter(cloud_f, size=2 * band + 1, mode="nearest")
        unlabelled = (local > 1e-3) & (local < 1.0 - 1e-3)
        if unlabelled.mean() <= 0.3:
            break
    target = rng.uniform(0.22, 0.32)
    patch_field = _smooth_noise(rng, shape, 15.0)
    n_more = round(target * ny * nx) - int(unlabelled.sum())
    if n_more > 0:
        rest = ~unlabelled
        cut = _cut(patch_field[rest], 1.0 - n_more / rest.sum())
        unlabelled |= rest & (patch_field > cut)
    return np.where(unlabelled, 0, truth).astype(np.int8), truth


def _variable_names(radiances: bool) -> tuple[str, ...]:
    """Names of the variables of a scene dataset, in the order of :func:`_scene_arrays`."""
    names = FEATURES + (RADIANCES if radiances else ())
    return (*names, "label", "cloud_truth")


def make_scenes(
    n_scenes: int = 3,
    shape: tuple[int, int] = (384, 512),
    *,
    seed: int = 0,
    chunks: dict[str, Any] | None = None,
    radiances: bool = True,
    classes: int = 2,
) -> xr.Dataset:
    """Make lazy, seeded, synthetic MISR-like scenes.

    Parameters
    ----------
    n_scenes : int, default 3
        Number of scenes (length of the ``scene`` dimension).
    shape : tuple of int, default (384, 512)
        Pixels of each scene along ``(y, x)``. A full MISR orbit block stripe is
        about ``(512, 2048)``.
    seed : int, default 0
        Seed of the generator. Scene ``i`` depends only on ``(seed, i, shape)``, so
        the first scenes are the same whatever ``n_scenes`` is.
    chunks : dict, optional
        Chunks of the result, as for :meth:`xarray.Dataset.chunk`. By default each
        chunk is one whole scene.
    radiances : bool, default True
        Include the five camera radiances ``DF CF BF AF AN``. Leaving them out does
        not change the other variables.
    classes : {2, 3}, default 2
        Two: ``label`` 1 cloud, −1 clear. Three: 1 clear, 2 low cloud, 3 high cloud
        (the same clouds, told apart by their height; CORR is lower over high cloud),
        declared in the label's CF flags; the features are the same either way.

    Returns
    -------
    xarray.Dataset
        Dask-backed dataset with dims ``("scene", "y", "x")``, integer coordinates
        ``scene``, ``y``, ``x``; float32 variables ``NDAI``, ``SD``, ``CORR`` (and the
        radiances), int8 ``label`` (1 cloud, -1 clear, 0 unlabelled, about 20-35% of
        the pixels) and int8 ``cloud_truth`` (1 or -1 everywhere). About 0.1% of the
        pixels are dropouts: NaN in every feature and label 0. Nothing is computed
        until the data are asked for; each scene is one task.

    Raises
    ------
    ValueError
        If ``n_scenes`` is negative or ``shape`` is not two positive integers.

    Examples
    --------
    >>> ds = make_scenes(2, (64, 96), seed=1)
    >>> ds.NDAI.dims, ds.sizes["scene"]
    (('scene', 'y', 'x'), 2)
    """
    n_scenes = int(n_scenes)
    if classes not in (2, 3):
        raise ValueError(f"classes must be 2 (cloud, clear) or 3 (clear, low cloud, high "
                         f"cloud); got {classes!r}")
    if n_scenes < 0:
        raise ValueError(f"n_scenes must be >= 0, got {n_scenes}")
    if len(shape) != 2 or min(int(shape[0]), int(shape[1])) < 1:
        raise ValueError(f"shape must be two positive integers (y, x), got {shape!r}")
    shape = (int(shape[0]), int(shape[1]))
    seed = int(seed)
    names = _variable_names(radiances)
    dtypes = {
        name: np.dtype(np.int8 if name in ("label", "cloud_truth") else np.float32)
        for name in names
    }

    make = dask.delayed(_scene_arrays, pure=True, nout=len(names))
    per_scene: dict[str, list[da.Array]] = {name: [] for name in names}
    for i in range(n_scenes):
        parts = make(seed, i, shape, radiances, classes)
        for name, part in zip(names, parts, strict=True):
            per_scene[name].append(da.from_delayed(part, shape=shape, dtype=dtypes[name]))

    data_vars = {}
    for name in names:
        if n_scenes:
            data = da.stack(per_scene[name], axis=0)
        else:
            data = da.empty((0, *shape), dtype=dtypes[name], chunks=(1, *shape))
        attrs = dict(VARIABLE_ATTRS[name])
        if name == "label":  # what the codes mean, as CF flags
            attrs.update(bigkern_label_flags() if classes == 2 else _THREE_CLASS_LABEL)
        elif name == "cloud_truth" and classes == 3:
            attrs.update(_THREE_CLASS_TRUTH)
        data_vars[name] = (("scene", "y", "x"), data, attrs)

    ds = xr.Dataset(
        data_vars,
        coords={
            "scene": np.arange(n_scenes, dtype=np.int64),
            "y": np.arange(shape[0], dtype=np.int64),
            "x": np.arange(shape[1], dtype=np.int64),
        },
        attrs={
            "seed": seed,
            "generator": "bigkern.datasets.make_scenes",
            "description": _DESCRIPTION,
        },
    )
    if chunks is not None:
        ds = ds.chunk(chunks)
    return ds
