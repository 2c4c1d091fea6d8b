"""Reading granules: netCDF4/HDF5 and GeoTIFF against zarr, the same data in the same chunks.

Issue 39, acceptance 4: reading netCDF and GeoTIFF costs at most 1.3× reading
the same data from zarr with the same chunks, at ≥ 10^8 pixels.

Data: 48 scenes of 1024 × 2048 pixels (1.007×10^8 pixels), the three float32
features NDAI, SD, CORR of ``bigkern.datasets.make_scenes(radiances=False)``
(8 distinct scenes, seeds 0–7, repeated in turn: generating 48 would take three
minutes and changes nothing a chunk's codec sees). The label is left out: a
GeoTIFF's bands share one dtype. One chunk is one scene of one feature,
1024 × 2048 float32 (8 MB), in every layout:

* ``zarr``: one zarr v3 store, chunks (1, 1024, 2048);
* ``netcdf``: one netCDF4/HDF5 file (h5netcdf), dims (scene, y, x), HDF5 chunks (1, 1024, 2048);
* ``netcdf-files``: 48 netCDF4 files of one 2-D scene each, read as a glob;
* ``geotiff``: 48 GeoTIFFs of one scene each, a band per feature, band-interleaved,
  one 2048 × 1024 tile per band, a UTM CRS.

Each layout is written with each codec set (``--codecs``):

* ``none``: uncompressed everywhere (the readers' own cost);
* ``deflate``: DEFLATE level 1 everywhere, no filter (zarr ``GzipCodec``, HDF5
  ``zlib``, TIFF ``DEFLATE``): the same codec in every format;
* ``usual``: as each is usually written: the zarr store by ``bigkern.write_scenes``
  (zstd 3 + CRC32C, checksummed), netCDF with shuffle + zlib 4, GeoTIFF with
  DEFLATE 6 and the floating-point predictor.

Timed, on a 2-process LocalCluster, page cache warm (one untimed read first), best
of ``--repeat``: reading every chunk of the three features and summing it
(``dask.compute`` of the three sums), through

* bigkern: ``bigkern.open_scenes(path or glob)`` (format told from the bytes,
  dims found, chunks read through bigkern's checked reader);
* xarray: ``xr.open_zarr`` / ``xr.open_dataset(engine="h5netcdf", chunks={})`` /
  ``xr.open_mfdataset`` / ``rioxarray.open_rasterio`` per file + ``xr.concat``,
  each in the file's own chunks: what a Pangeo user would write.

Each line gives the best time, the pixel rate and the best time of the open alone
(metadata, in the client: 48 files are opened one by one). The table ends with the
ratios format / zarr (per reader and codec set) and bigkern / xarray (per layout). The
sums are compared across layouts (equal).

    python benchmarks/granule_reads.py [--small] [--workdir DIR] [--repeat N] [--out PATH]
                                       [--codecs none deflate usual] [--layouts ...]

Output is also written to ``benchmarks/results/granule_reads.txt``.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

FEATURES = ["NDAI", "SD", "CORR"]
FULL = {"n_scenes": 48, "shape": (1024, 2048), "distinct": 8}
SMALL = {"n_scenes": 4, "shape": (256, 512), "distinct": 2}
LAYOUTS = ("zarr", "netcdf", "netcdf-files", "geotiff")
CODECS = ("none", "deflate", "usual")
EPSG = "EPSG:32611"


def scene_data(n_scenes: int, shape: tuple[int, int], distinct: int) -> Any:
    """The features of ``n_scenes`` scenes in memory, dims (scene, y, x), a UTM grid."""
    import xarray as xr

    from bigkern.datasets import make_scenes

    base = [make_scenes(1, shape, seed=s, radiances=False)[FEATURES].compute()
            for s in range(distinct)]
    ds = xr.concat([base[i % distinct] for i in range(n_scenes)], "scene")
    ny, nx = shape
    return ds.assign_coords(
        scene=np.arange(n_scenes),
        y=4_000_000.0 - 275.0 * np.arange(ny) - 137.5,
        x=500_000.0 + 275.0 * np.arange(nx) + 137.5)


def _zarr_codecs(codec: str) -> dict[str, Any]:
    from zarr.codecs import GzipCodec

    return {"none": {"compressors": None}, "deflate": {"compressors": (GzipCodec(level=1),)}
            }[codec]


def _netcdf_codecs(codec: str) -> dict[str, Any]:
    return {"none": {}, "deflate": {"zlib": True, "complevel": 1, "shuffle": False},
            "usual": {"zlib": True, "complevel": 4, "shuffle": True}}[codec]


def _tiff_codecs(codec: str) -> dict[str, Any]:
    return {"none": {}, "deflate": {"compress": "DEFLATE", "zlevel": 1},
            "usual": {"compress": "DEFLATE", "zlevel": 6, "predictor": 3}}[codec]


def write_layout(ds: Any, layout: str, codec: str, path: Path) -> None:
    """Write ``ds`` in ``layout`` with ``codec`` to ``path`` (a store, a file or a folder)."""
    import bigkern

    ny, nx = ds.sizes["y"], ds.sizes["x"]
    chunks = (1, ny, nx)
    if layout == "zarr" and codec == "usual":
        bigkern.write_scenes(ds, path, chunks={"scene": 1, "y": ny, "x": nx})
    elif layout == "zarr":
        enc = {v: {"chunks": chunks, **_zarr_codecs(codec)} for v in FEATURES}
        ds.to_zarr(path, encoding=enc, zarr_format=3, consolidated=False)
    elif layout == "netcdf":
        enc = {v: {"chunksizes": chunks, **_netcdf_codecs(codec)} for v in FEATURES}
        ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
    elif layout == "netcdf-files":
        path.mkdir(parents=True)
        for i in range(ds.sizes["scene"]):
            enc = {v: {"chunksizes": (ny, nx), **_netcdf_codecs(codec)} for v in FEATURES}
            ds.isel(scene=i).drop_vars("scene").to_netcdf(
                path / f"scene_{i:03d}.nc", engine="h5netcdf", encoding=enc)
    elif layout == "geotiff":
        import rioxarray  # noqa: F401  (the .rio accessor)

        path.mkdir(parents=True)
        for i in range(ds.sizes["scene"]):
            bands = ds.isel(scene=i).drop_vars("scene").to_array("band").rio.write_crs(EPSG)
            bands.attrs = {"long_name": tuple(FEATURES)}
            bands.rio.to_raster(path / f"scene_{i:03d}.tif", tiled=True, blockxsize=nx,
                                blockysize=ny, interleave="band", **_tiff_codecs(codec))
    else:
        raise ValueError(layout)


def ensure_layout(ds: Any, layout: str, codec: str, workdir: Path) -> tuple[Path, float | None]:
    """The layout's path under ``workdir``, written unless complete; and the write seconds."""
    suffix = {"zarr": ".zarr", "netcdf": ".nc", "netcdf-files": "", "geotiff": ""}[layout]
    path = workdir / f"{layout}-{codec}-{ds.sizes['scene']}x{ds.sizes['y']}x{ds.sizes['x']}"
    path = path.with_name(path.name + suffix)
    done = path.with_name(path.name + ".complete")
    if done.exists():
        return path, None
    for stale in (path, done):
        if stale.is_dir():
            shutil.rmtree(stale)
        elif stale.exists():
            stale.unlink()
    t0 = time.perf_counter()
    write_layout(ds, layout, codec, path)
    seconds = time.perf_counter() - t0
    done.touch()
    return path, seconds


def _glob(layout: str, path: Path) -> str:
    return str(path / "scene_*.nc") if layout == "netcdf-files" else str(path / "scene_*.tif")


def open_bigkern(layout: str, path: Path) -> Any:
    """The layout through ``bigkern.open_scenes``."""
    import bigkern

    source = str(path) if layout in ("zarr", "netcdf") else _glob(layout, path)
    return bigkern.open_scenes(source, features=FEATURES)


def open_xarray(layout: str, path: Path) -> Any:
    """The layout through xarray's own engines, in the files' chunks."""
    import xarray as xr

    if layout == "zarr":
        return xr.open_zarr(path, consolidated=False)
    if layout == "netcdf":
        return xr.open_dataset(path, engine="h5netcdf", chunks={})
    paths = sorted(Path(path).glob("scene_*"))
    if layout == "netcdf-files":
        return xr.open_mfdataset(paths, engine="h5netcdf", combine="nested",
                                 concat_dim="scene", chunks={})
    import rioxarray

    parts = [rioxarray.open_rasterio(p, chunks={}, band_as_variable=True) for p in paths]
    parts = [p.rename({f"band_{i + 1}": f for i, f in enumerate(FEATURES)}) for p in parts]
    return xr.concat(parts, "scene")


def read_and_sum(ds: Any) -> tuple[float, ...]:
    """Every chunk of the three features read and summed (float64, NaN skipped), on the cluster."""
    import dask
    import dask.array as da

    sums = [da.nansum(ds[f].data, dtype="float64") for f in FEATURES]  # dropouts are NaN
    return tuple(float(s) for s in dask.compute(*sums))


def timed_read(bench: C.Bench, name: str, opener: Callable[[], Any], repeat: int,
               pixels: float) -> tuple[float, float, tuple[float, ...]]:
    """Open + read + sum ``repeat`` times after one untimed read: the best seconds, the best
    seconds of the open alone (metadata, in the client), and the sums."""
    sums = read_and_sum(opener())  # warm the page cache and the workers' imports
    opens = []
    for _ in range(repeat):
        with bench.stage(name, items=pixels, quiet=True):
            t0 = time.perf_counter()
            ds = opener()
            opens.append(time.perf_counter() - t0)
            got = read_and_sum(ds)
        if not np.allclose(got, sums, rtol=1e-12):
            raise AssertionError(f"{name}: sums changed between reads: {got} vs {sums}")
    return bench.best(name).seconds, min(opens), sums


def main() -> None:
    p = C.parser(__doc__.split("\n")[0], "granule_reads")
    p.add_argument("--repeat", type=int, default=3, help="timed reads per case (best kept)")
    p.add_argument("--codecs", nargs="+", choices=CODECS, default=list(CODECS))
    p.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    p.add_argument("--out", type=Path, default=None,
                   help="where the output is also written (default "
                        "benchmarks/results/granule_reads.txt; a temporary file with --small)")
    args = p.parse_args()
    if "zarr" not in args.layouts:
        p.error("--layouts must include zarr, the reference of the ratios")
    C.run_teed("granule_reads", args.small, args.out, lambda: run(args))


def run(args: Any) -> None:
    """Write the layouts (unless present), time the reads, print the ratios."""
    import warnings

    from bigkern.cluster.chunking import ChunkWarning

    warnings.simplefilter("error", ChunkWarning)  # a rechunked read would not be the same chunks
    size = SMALL if args.small else FULL
    C.header("granule reads: netCDF and GeoTIFF vs zarr, same data, same chunks")
    workdir = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    n, (ny, nx) = size["n_scenes"], size["shape"]
    pixels = float(n * ny * nx)
    print(f"# {n} scenes × {ny} × {nx} = {pixels:.3g} pixels × {len(FEATURES)} float32 "
          f"features ({pixels * 4 * len(FEATURES) / C.GB:.2f} GB); chunk = one scene of one "
          f"feature ({ny * nx * 4 / 2**20:.0f} MiB); best of {args.repeat} warm reads")

    t0 = time.perf_counter()
    ds = scene_data(n, (ny, nx), size["distinct"])
    print(f"# data made in memory in {time.perf_counter() - t0:.1f} s")
    paths: dict[tuple[str, str], Path] = {}
    for codec in args.codecs:
        for layout in args.layouts:
            path, seconds = ensure_layout(ds, layout, codec, workdir)
            paths[layout, codec] = path
            written = "reused" if seconds is None else f"written in {seconds:.1f} s"
            size = path.stat().st_size if path.is_file() else C.dir_size(path)
            print(f"# {layout:<12} {codec:<8} {size / C.GB:6.2f} GB on disk, "
                  f"{written}: {path}")
    del ds
    sys.stdout.flush()

    best: dict[tuple[str, str, str], float] = {}
    reference_sums: tuple[float, ...] | None = None
    with C.benched_cluster() as (_client, bench):
        for codec in args.codecs:
            for layout in args.layouts:
                path = paths[layout, codec]
                for reader, opener in (("bigkern", open_bigkern), ("xarray", open_xarray)):
                    name = f"{reader} {layout} {codec}"
                    seconds, opening, sums = timed_read(
                        bench, name, lambda o=opener, la=layout, pa=path: o(la, pa),
                        args.repeat, pixels)
                    best[reader, layout, codec] = seconds
                    if reference_sums is None:
                        reference_sums = sums
                    elif not np.allclose(sums, reference_sums, rtol=1e-9):
                        raise AssertionError(f"{name}: the sums differ from the first "
                                             f"layout's: {sums} vs {reference_sums}")
                    print(f"  {name:<32} {C.fmt_seconds(seconds):>6} s  "
                          f"{pixels / seconds / 1e6:7.1f} M pixels/s  (open {opening:.2f} s)")
                    sys.stdout.flush()

    print("\n## format / zarr (same reader, same codec set; goal ≤ 1.3)")
    rows = []
    for codec in args.codecs:
        for layout in args.layouts:
            if layout == "zarr":
                continue
            rows.append([codec, layout,
                         *(f"{best[r, layout, codec] / best[r, 'zarr', codec]:.2f}"
                           for r in ("bigkern", "xarray"))])
    C.print_table(["codecs", "layout", "bigkern", "xarray"], rows)
    print("\n## bigkern / xarray (same layout, same codec set)")
    C.print_table(["codecs", *args.layouts],
                  [[codec, *(f"{best['bigkern', la, codec] / best['xarray', la, codec]:.2f}"
                             for la in args.layouts)] for codec in args.codecs])
    print("\n# sums equal across every layout, codec set and reader: "
          + ", ".join(f"{f}={s:.6g}" for f, s in zip(FEATURES, reference_sums or (), strict=False)))


if __name__ == "__main__":
    main()
