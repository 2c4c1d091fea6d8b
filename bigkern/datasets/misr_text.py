"""Reader of the MISR expert-label text format, and its ingest into a zarr store.

The expert-labelled MISR scenes of Shi, Yu, Clothiaux & Braverman come as one text
file per scene, one pixel a line, whitespace-separated columns::

    y x label NDAI SD CORR DF CF BF AF AN

``y`` and ``x`` are integer pixel indices (written ``2`` or ``2.0``), ``label`` is
1 (cloud), -1 (clear) or 0 (unlabelled). Pixels may be absent (the files hold only
part of a scene); :func:`read_misr_text` rebuilds the pixel grid from ``y`` and
``x`` and marks absent pixels NaN in every feature and 0 in ``label``.

Text files and stores are local paths or fsspec URLs (``s3://…``, ``memory://…``)
with ``storage_options``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from bigkern import config
from bigkern.errors import StoreError
from bigkern.features.variables import VARIABLE_ATTRS
from bigkern.scenes.labels import bigkern_label_flags
from bigkern.scenes.validity import (
    FillValues,
    ValidRanges,
    apply_validity,
    validity_report,
    validity_rules,
)
from bigkern.store.urls import Location, PathOrURL, StorageOptions, location

__all__ = [
    "MISR_TEXT_COLUMNS",
    "ingest_misr_text",
    "read_misr_text",
]

MISR_TEXT_COLUMNS: tuple[str, ...] = (
    "y", "x", "label", "NDAI", "SD", "CORR", "DF", "CF", "BF", "AF", "AN",
)
"""Columns of a MISR expert-label text file, in file order."""

_N_COLUMNS = len(MISR_TEXT_COLUMNS)
_FEATURE_COLUMNS = MISR_TEXT_COLUMNS[3:]


def _as_paths(
    paths: PathOrURL | Sequence[PathOrURL], storage_options: StorageOptions = None
) -> list[Location]:
    """Normalize one path/URL or a sequence of them to a non-empty list of locations."""
    one = isinstance(paths, (str, Path, Location))
    out = [location(p, storage_options) for p in ([paths] if one else paths)]  # type: ignore[list-item]
    if not out:
        raise StoreError("read_misr_text: no files given")
    return out


def _locate_problem(path: Location) -> str | None:
    """Scan ``path`` line by line and describe its first problem, or return None.

    This is the slow path, run only when the fast parser fails or its result does
    not validate; it finds the exact line and column at fault.
    """
    seen: dict[tuple[int, int], int] = {}
    n_pixels = 0
    with path.open("r", encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, start=1):
            tokens = line.split()
            if not tokens:
                continue
            where = f"{path}: line {lineno}"
            if len(tokens) != _N_COLUMNS:
                return (
                    f"{where}: expected {_N_COLUMNS} columns ({' '.join(MISR_TEXT_COLUMNS)}), "
                    f"found {len(tokens)}"
                )
            values = []
            for col, (name, token) in enumerate(zip(MISR_TEXT_COLUMNS, tokens, strict=True), 1):
                try:
                    values.append(float(token))
                except ValueError:
                    return f"{where}, column {col} ({name}): {token!r} is not a number"
            for col in (0, 1):
                v = values[col]
                if not (math.isfinite(v) and v == int(v)):
                    return (
                        f"{where}, column {col + 1} ({MISR_TEXT_COLUMNS[col]}): "
                        f"{tokens[col]!r} is not an integer pixel index"
                    )
            if values[2] not in (-1.0, 0.0, 1.0):
                return f"{where}, column 3 (label): {tokens[2]!r} is not one of -1, 0, 1"
            pixel = (int(values[0]), int(values[1]))
            if pixel in seen:
                return (
                    f"{where}: duplicate pixel (y={pixel[0]}, x={pixel[1]}), "
                    f"first given on line {seen[pixel]}"
                )
            seen[pixel] = lineno
            n_pixels += 1
    if n_pixels == 0:
        return f"{path}: file is empty (no pixel lines)"
    return None


def _read_one(path: Location) -> np.ndarray:
    """Parse and validate one MISR text file into a float64 array of shape (pixels, 11)."""
    if not path.exists():
        raise StoreError(f"{path}: file not found")
    if path.isdir():
        raise StoreError(f"{path}: is a directory, not a MISR text file")
    try:
        with path.open("rb") as fh:
            frame = pd.read_csv(fh, sep=r"\s+", header=None, dtype=np.float64, engine="c")
        table = frame.to_numpy(dtype=np.float64)
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        table = None
    ok = table is not None and table.ndim == 2 and table.shape[1] == _N_COLUMNS
    if ok and table.shape[0] == 0:
        ok = False
    if ok:
        # A short line shows up as NaN in the last columns: rescan if there is any NaN.
        yx_label = table[:, :3]
        ok = (
            bool(np.isfinite(yx_label).all())
            and not bool(np.isnan(table[:, 3:]).any())
            and bool((yx_label[:, :2] == np.round(yx_label[:, :2])).all())
            and bool(np.isin(yx_label[:, 2], (-1.0, 0.0, 1.0)).all())
        )
        if ok:
            _check_grid(path, [table])
            yx = yx_label[:, :2].astype(np.int64)
            keys = (yx[:, 0] - yx[:, 0].min()) * (int(yx[:, 1].max() - yx[:, 1].min()) + 1) + (
                yx[:, 1] - yx[:, 1].min()
            )
            ok = np.unique(keys).size == keys.size
    if ok:
        return table
    problem = _locate_problem(path)
    if problem is None:
        # Only NaN features in well-formed lines: the fast parse was right after all.
        if table is not None and table.ndim == 2 and table.shape[1] == _N_COLUMNS:
            return table
        problem = f"{path}: cannot be parsed as MISR text ({' '.join(MISR_TEXT_COLUMNS)})"
    raise StoreError(problem)


def _extent(tables: Sequence[np.ndarray]) -> tuple[int, int, int, int]:
    """Smallest and largest ``y`` and ``x`` of the tables, as Python integers (no overflow)."""
    return (min(int(t[:, 0].min()) for t in tables), max(int(t[:, 0].max()) for t in tables),
            min(int(t[:, 1].min()) for t in tables), max(int(t[:, 1].max()) for t in tables))


#: Grids up to this many pixels are never refused as sparse (~33 MB in memory).
_SPARSE_FLOOR = 1_000_000


def _check_grid(where: Location | str, tables: Sequence[np.ndarray]) -> None:
    """Refuse a pixel grid larger than ``bigkern.max_grid_pixels``, or one past
    ``_SPARSE_FLOOR`` pixels with more than ``bigkern.max_grid_pixels_per_line`` pixels
    per line of the files, before it is allocated.

    The grid spans every ``y`` and ``x`` between the smallest and largest the
    files give, for every file (scene); a few lines with far-apart indices
    declare a huge grid in a few bytes.
    """
    limit = int(config.get("max_grid_pixels"))
    per_line = float(config.get("max_grid_pixels_per_line"))
    y0, y1, x0, x1 = _extent(tables)
    ny, nx = y1 - y0 + 1, x1 - x0 + 1
    pixels = len(tables) * ny * nx
    lines = sum(len(t) for t in tables)
    scenes = f"{len(tables)} scenes of " if len(tables) > 1 else ""
    if pixels > limit:
        raise StoreError(
            f"{where}: its pixel indices span y {y0}..{y1} and x {x0}..{x1}, a grid of "
            f"{scenes}{ny:,} x {nx:,} = {pixels:.3g} pixels (~{pixels * 33 / 2**30:.3g} GiB in "
            f"memory) for {lines:,} pixel line(s), more than bigkern.max_grid_pixels "
            f"({limit:.3g}): refused before allocating it; check the y and x columns, or raise "
            f"the limit for a genuinely larger scene")
    if pixels > _SPARSE_FLOOR and pixels > per_line * lines:
        raise StoreError(
            f"{where}: its pixel indices span y {y0}..{y1} and x {x0}..{x1}, a grid of "
            f"{scenes}{ny:,} x {nx:,} = {pixels:,} pixels for only {lines:,} pixel line(s) "
            f"({pixels / lines:,.0f} per line, more than bigkern.max_grid_pixels_per_line = "
            f"{per_line:g}): refused before allocating it; check the y and x columns, or "
            f"raise that setting for a genuinely sparse file")


def read_misr_text(
    paths: PathOrURL | Sequence[PathOrURL], *, storage_options: StorageOptions = None
) -> xr.Dataset:
    """Read MISR expert-label text files, one scene per file, onto one pixel grid.

    Parameters
    ----------
    paths : str, Path, URL or sequence of them
        One file or several (local paths or fsspec URLs). Each file becomes
        one scene, in the order given.
    storage_options : mapping, optional
        fsspec options for URLs (see :func:`bigkern.store.urls.location`).

    Returns
    -------
    xarray.Dataset
        In-memory dataset with dims ``("scene", "y", "x")``. The ``y`` coordinate is
        every integer from the smallest to the largest ``y`` of all the files, and
        likewise ``x``, so all scenes share one grid. Variables ``NDAI SD CORR DF CF
        BF AF AN`` are float32 and NaN at absent pixels; ``label`` is int8 (1 cloud,
        -1 clear, 0 unlabelled or absent). Coordinates: ``scene`` = 0..k-1 and
        ``source`` (along ``scene``) = the file names. ``attrs["sources"]`` holds the
        full paths.

    Raises
    ------
    bigkern.errors.StoreError
        If a file is missing or empty, or a line has the wrong number of columns, a
        non-numeric value, a non-integer ``y``/``x``, a label outside {-1, 0, 1} or
        repeats an earlier pixel: the message names the file, line and column. Or
        the pixel grid the files span (scenes × y extent × x extent) is larger
        than ``bigkern.max_grid_pixels``: the message names the file and the
        size, and nothing of that size is allocated.

    Examples
    --------
    A scene of three pixel lines; pixel (y=1, x=0) is absent, so its label is 0
    and its features NaN:

    >>> import pathlib, tempfile
    >>> from bigkern import read_misr_text
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(tmp.name) / "image1.txt"
    >>> _ = path.write_text("0 0 1 0.9 20.0 0.8 1 1 1 1 1\\n"  # y x label NDAI SD CORR DF ... AN
    ...                     "0 1 -1 -0.5 2.0 0.2 1 1 1 1 1\\n"
    ...                     "1 1 0 0.1 5.0 0.5 1 1 1 1 1\\n")
    >>> ds = read_misr_text(path)
    >>> dict(ds.sizes), ds["source"].values.tolist()
    ({'scene': 1, 'y': 2, 'x': 2}, ['image1.txt'])
    >>> ds["label"].values[0].tolist(), bool(ds["NDAI"].isnull()[0, 1, 0])
    ([[1, -1], [0, 0]], True)
    >>> tmp.cleanup()
    """
    files = _as_paths(paths, storage_options)
    tables = [_read_one(p) for p in files]  # each file's own grid is checked as it is read
    _check_grid(", ".join(str(p) for p in files) if len(files) > 1 else files[0], tables)

    y_min, y_max, x_min, x_max = _extent(tables)
    ny, nx = y_max - y_min + 1, x_max - x_min + 1
    n = len(tables)

    features = {name: np.full((n, ny, nx), np.nan, dtype=np.float32) for name in _FEATURE_COLUMNS}
    label = np.zeros((n, ny, nx), dtype=np.int8)
    for s, table in enumerate(tables):
        iy = table[:, 0].astype(np.int64) - y_min
        ix = table[:, 1].astype(np.int64) - x_min
        label[s, iy, ix] = table[:, 2].astype(np.int8)
        for k, name in enumerate(_FEATURE_COLUMNS, start=3):
            features[name][s, iy, ix] = table[:, k]

    dims = ("scene", "y", "x")
    data_vars: dict[str, Any] = {
        name: (dims, features[name], dict(VARIABLE_ATTRS[name])) for name in _FEATURE_COLUMNS
    }
    data_vars["label"] = (dims, label, {**VARIABLE_ATTRS["label"], **bigkern_label_flags()})
    return xr.Dataset(
        data_vars,
        coords={
            "scene": np.arange(n, dtype=np.int64),
            "y": np.arange(y_min, y_max + 1, dtype=np.int64),
            "x": np.arange(x_min, x_max + 1, dtype=np.int64),
            # object (variable-length) strings: zarr v3 has no stable fixed-width text type
            "source": ("scene", np.array([p.name for p in files], dtype=object)),
        },
        attrs={
            "title": "MISR expert-labelled scenes",
            "sources": [p.url for p in files],
            "reader": "bigkern.datasets.misr_text.read_misr_text",
        },
    )


def ingest_misr_text(
    paths: PathOrURL | Sequence[PathOrURL],
    store: PathOrURL,
    *,
    chunks: dict[str, Any] | None = None,
    overwrite: bool = False,
    fill_values: FillValues = None,
    valid_ranges: ValidRanges = None,
    storage_options: StorageOptions = None,
) -> Path | str:
    """Read MISR expert-label text files, mask what is not data, and write a zarr store.

    Values equal to a fill value or outside a feature's valid range become NaN
    (:func:`bigkern.scenes.apply_validity`; by default the ``bigkern.valid_ranges``
    of the MISR features, which mask the usual negative sentinels such as
    ``-9999``). The store records, per feature, the applied range as CF
    ``valid_min``/``valid_max`` attributes (so it travels with the data) and what
    ingest masked: ``bigkern_ingest_fill_values``, ``bigkern_ingest_n_fill`` and
    ``bigkern_ingest_n_out_of_range``.

    Parameters
    ----------
    paths : str, Path, URL or sequence of them
        The text files, one scene each (see :func:`read_misr_text`).
    store : str, Path or URL
        The zarr store to create: a local path or an fsspec URL.
    chunks : dict, optional
        Chunks along ``scene``, ``y``, ``x``; by default whole scenes in chunks of
        about ``bigkern.chunk_bytes`` (see :func:`bigkern.scenes.write_scenes`).
    overwrite : bool, default False
        Replace an existing store that bigkern wrote. Without it an existing
        store is an error; a path bigkern did not write, or one that is or
        holds an input file, is never replaced.
    fill_values : number, sequence or mapping, optional
        Extra fill values, for every feature or per feature, e.g.
        ``{"NDAI": -9999}`` (see :func:`bigkern.scenes.apply_validity`).
    valid_ranges : mapping or False, optional
        Per feature ``(min, max)`` (``None`` = open bound), overriding the
        ``bigkern.valid_ranges`` setting; ``False`` turns range checks off.
    storage_options : mapping, optional
        fsspec options for the URLs among ``paths`` and ``store`` (see
        :func:`bigkern.store.urls.location`).

    Returns
    -------
    pathlib.Path or str
        The store written (with consolidated metadata): a Path for a local
        path, the URL as given for a URL.

    Raises
    ------
    bigkern.errors.StoreError
        If ``store`` exists and ``overwrite`` is False, a text file is bad (see
        :func:`read_misr_text`), or ``fill_values``/``valid_ranges`` are nonsense
        (a range with min > max, a feature that is not in the files ...).

    Examples
    --------
    An NDAI of -9999 (a fill value, outside NDAI's valid range) is masked:

    >>> import pathlib, tempfile
    >>> import bigkern
    >>> tmp = tempfile.TemporaryDirectory()
    >>> text = pathlib.Path(tmp.name) / "image1.txt"
    >>> _ = text.write_text("0 0 1 0.9 20.0 0.8 1 1 1 1 1\\n"
    ...                     "0 1 -1 -9999 2.0 0.2 1 1 1 1 1\\n")
    >>> store = bigkern.ingest_misr_text(text, pathlib.Path(tmp.name) / "misr.zarr")
    >>> store.name
    'misr.zarr'
    >>> ndai = bigkern.open_scenes(store)["NDAI"]
    >>> ndai.isnull().values.tolist(), ndai.attrs["bigkern_ingest_n_out_of_range"]
    ([[[False, True]]], 1)
    >>> tmp.cleanup()
    """
    from bigkern.scenes.writing import write_scenes
    from bigkern.store.outputs import prepare_output

    store_path = location(store, storage_options)
    files = _as_paths(paths, storage_options)
    prepare_output(store_path, overwrite=overwrite, inputs=files)  # before the slow read
    # nonsense fill values or ranges fail before the slow read
    validity_rules(_template(), fill_values=fill_values, valid_ranges=valid_ranges)
    ds = read_misr_text(files)
    ds = _with_store_validity(apply_validity(ds, fill_values=fill_values,
                                             valid_ranges=valid_ranges))
    written = write_scenes(ds, store_path, overwrite=overwrite, chunks=chunks, inputs=files)
    return written if store_path.local else str(store)


def _template() -> xr.Dataset:
    """A one-pixel dataset with the variables of a MISR text file (to check arguments on)."""
    dims = ("scene", "y", "x")
    data_vars: dict[str, Any] = {name: (dims, np.zeros((1, 1, 1), np.float32))
                                 for name in _FEATURE_COLUMNS}
    data_vars["label"] = (dims, np.zeros((1, 1, 1), np.int8))
    return xr.Dataset(data_vars)


def _with_store_validity(ds: xr.Dataset) -> xr.Dataset:
    """Turn :func:`~bigkern.scenes.apply_validity`'s records into what the store keeps.

    The applied range becomes CF ``valid_min``/``valid_max`` (opening the store
    applies it again, from these attributes); the counts of masked values, known
    only now, are kept as ``bigkern_ingest_*``.
    """
    updates = {}
    for name, entry in validity_report(ds).items():
        var = ds[name]
        attrs = {k: v for k, v in var.attrs.items() if not k.startswith("bigkern_")}
        for bound in ("valid_min", "valid_max"):
            if entry[bound] is not None:
                attrs[bound] = float(entry[bound])
        if entry["fill_values"]:
            attrs["bigkern_ingest_fill_values"] = [float(v) for v in entry["fill_values"]]
        attrs["bigkern_ingest_n_fill"] = int(entry.get("n_fill", 0))
        attrs["bigkern_ingest_n_out_of_range"] = int(entry.get("n_out_of_range", 0))
        updates[name] = var.copy(deep=False)
        updates[name].attrs = attrs
    return ds.assign(updates)
