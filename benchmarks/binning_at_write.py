"""Exact percentile bins in one read from key histograms recorded at write time (issue 44).

Two scene stores written by ``write_scenes`` as the orbit benchmark writes its
own (``make_scenes(..., radiances=False)``, whole scenes per chunk as
``default_chunks`` gives them): an orbit-like store of ``--scenes`` scenes of
512x2048 pixels, and a larger N x 3 store of ``--big-scenes`` scenes of
2048x2048 (24 scenes: 1.0e8 pixels, the issue's figure) of random NDAI, SD, CORR
and labels (70 % labelled), quicker to make than ``make_scenes``. On each, the fit's
default features (``NDAI logSD CORR``, logSD derived after opening) of the
labelled pixels, as ``stack_samples`` gives them, and, interleaved in each
repeat so that the ratios are taken under the same load:

a. read+sum      ``dask.compute(X.sum(axis=0), mask.sum())``: the floor of one read;
b. recorded      ``percentile_bins(X, y, mask=mask, recorded=s.recorded)``: the
                 default plan with the store's record (``"recorded"``: one read);
c. fused         ``plan="fused"``: the histogram read, then the binning read;
d. no record     ``percentile_bins(X, y, mask=mask)``: the default plan of a store
                 bigkern did not write (today's figures);
e. half, record  the training half of a searched fit, as ``bigkern fit`` bins it by
                 default: ``recorded_split(s, seed=0)``, then ``percentile_bins(X, y,
                 mask=train, recorded=source)`` (the store's record of that half);
f. half, none    the same half without the record (``percentile_bins(X, y,
                 mask=train)``: what the default fit ran before the half was recorded);
g. half read+sum ``dask.compute(X.sum(axis=0), train.sum())``: the floor of one read of
                 the training half (the split's mask is computed in every read of it).

Also the write-time cost of the record: ``write_scenes`` of the orbit-like
store with the ``recorder`` (every labelled pixel and the training half), with a
recorder of every labelled pixel only (the record before the half was added) and
without, alternated, and the record's size.

    python benchmarks/binning_at_write.py [--small] [--scenes N] [--big-scenes N]
                                          [--repeat N] [--write-repeat N] [--out FILE]
                                          [--workdir DIR]

``--big-scenes 0`` leaves the big store out.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

FEATURES = ["NDAI", "logSD", "CORR"]
STEPS = ("a. read+sum", "b. percentile_bins, recorded (default plan)",
         "c. percentile_bins, plan='fused'", "d. percentile_bins, no record (default plan)",
         "e. training half, recorded (default fit)", "f. training half, no record",
         "g. read+sum of the training half")


#: The writes compared: the record of every labelled pixel and of the training half, of
#: every labelled pixel only, none.
RECORDS = ("all+half", "all", "none")


def write_store(path: Path, n_scenes: int, shape: tuple[int, int], record: str = "all+half"
                ) -> float:
    """Write the store (replacing one there); the seconds ``write_scenes`` took."""
    import bigkern
    from bigkern.datasets import make_scenes
    from bigkern.reduce.recorded_histograms import KEY_HISTOGRAM_RECORDER
    from bigkern.scenes import default_chunks
    from bigkern.store.key_histograms import KeyHistogramRecorder

    recorder = {"all+half": KEY_HISTOGRAM_RECORDER, "none": None,
                "all": KeyHistogramRecorder(  # no pixel ids: every labelled pixel only
                    lambda X, y, mask, pixel: KEY_HISTOGRAM_RECORDER.graph(X, y, mask),
                    KEY_HISTOGRAM_RECORDER.record)}[record]
    if path.exists():
        shutil.rmtree(path)
    t0 = time.perf_counter()
    bigkern.write_scenes(make_scenes(n_scenes, shape, seed=0, radiances=False), path,
                         chunks=default_chunks((n_scenes, *shape)), recorder=recorder)
    return time.perf_counter() - t0


def write_big_store(path: Path, n_scenes: int, shape: tuple[int, int]) -> float:
    """Write an N x 3 store of random features (faster to make than ``make_scenes``)."""
    import dask.array as da
    import xarray as xr

    import bigkern
    from bigkern.reduce.recorded_histograms import KEY_HISTOGRAM_RECORDER
    from bigkern.scenes import default_chunks

    if path.exists():
        shutil.rmtree(path)
    size, chunks = (n_scenes, *shape), (1, *shape)
    rng = da.random.default_rng(0)
    ndai = rng.normal(0.3, 0.4, size=size, chunks=chunks).astype(np.float32)
    sd = rng.lognormal(1.0, 0.8, size=size, chunks=chunks).astype(np.float32)
    corr = da.clip(rng.normal(0.2, 0.15, size=size, chunks=chunks), -1, 1).astype(np.float32)
    noise = rng.normal(0.0, 0.7, size=size, chunks=chunks)
    labelled = rng.random(size=size, chunks=chunks) < 0.7
    label = da.where(labelled, da.where(ndai + 0.5 * da.log(sd) - 2 * corr + noise > 1, 1, -1),
                     0).astype(np.int8)
    dims = ("scene", "y", "x")
    ds = xr.Dataset({"NDAI": (dims, ndai), "SD": (dims, sd), "CORR": (dims, corr),
                     "label": (dims, label)})
    t0 = time.perf_counter()
    bigkern.write_scenes(ds, path, chunks=default_chunks(size), recorder=KEY_HISTOGRAM_RECORDER)
    return time.perf_counter() - t0


def record_bytes(path: Path) -> tuple[int, int]:
    """Bytes of the record on disk, and of the whole store."""
    from bigkern.store.key_histograms import KEY_HISTOGRAMS_GROUP

    return C.dir_size(path / KEY_HISTOGRAMS_GROUP), C.dir_size(path)


def bench_store(bench: C.Bench, store: Path, label: str, repeat: int) -> dict[str, Any]:
    import dask

    import bigkern
    from bigkern.reduce import percentile_bins
    from bigkern.reduce.recorded_split import recorded_split

    s = bigkern.stack_samples(bigkern.with_features(bigkern.open_scenes(store, validate=False),
                                                    FEATURES), FEATURES)
    n = int(s.X.shape[0])
    print(f"# {label}: {store.name}, {n:,} pixels, {s.X.numblocks[0]} chunks, record "
          f"{'found' if s.recorded is not None else 'absent'}")
    bins = {}
    for _ in range(repeat):
        with bench.stage(f"{label} {STEPS[0]}", items=n):
            dask.compute(s.X.sum(axis=0), s.mask.sum())
        with bench.stage(f"{label} {STEPS[1]}", items=n):
            bins["b"] = percentile_bins(s.X, s.y, mask=s.mask, features=FEATURES,
                                        recorded=s.recorded)
        with bench.stage(f"{label} {STEPS[2]}", items=n):
            bins["c"] = percentile_bins(s.X, s.y, mask=s.mask, features=FEATURES, plan="fused")
        with bench.stage(f"{label} {STEPS[3]}", items=n):
            bins["d"] = percentile_bins(s.X, s.y, mask=s.mask, features=FEATURES)
        with bench.stage(f"{label} {STEPS[4]}", items=n):
            train, _, source = recorded_split(s, fraction=0.5, seed=0)
            bins["e"] = percentile_bins(s.X, s.y, mask=train, features=FEATURES,
                                        recorded=source)
        with bench.stage(f"{label} {STEPS[5]}", items=n):
            bins["f"] = percentile_bins(s.X, s.y, mask=train, features=FEATURES)
        with bench.stage(f"{label} {STEPS[6]}", items=n):
            dask.compute(s.X.sum(axis=0), train.sum())
    return {"n": n, "bins": bins}


def _same(a: Any, b: Any) -> bool:
    import xarray as xr

    a, b = a.copy(), b.copy()
    for key in ("plan", "passes", "n_kept", "recorded", "one_read", "sample_rows",
                "sample_chunks_held"):
        a.attrs.pop(key, None)
        b.attrs.pop(key, None)
    try:
        xr.testing.assert_identical(a, b)
        return True
    except AssertionError:
        return False


def report(bench: C.Bench, label: str, found: dict[str, Any]) -> None:
    base = bench.best(f"{label} {STEPS[0]}")
    rows = []
    for step in STEPS:
        st = bench.best(f"{label} {step}")
        rows.append([step, C.fmt_seconds(st.seconds), f"{st.seconds / base.seconds:.2f}x",
                     C.fmt_rate(st.rate), f"{st.peak / C.GB:.2f}",
                     " ".join(C.fmt_seconds(r) for r in st.extra["runs"])])
    print(f"\n## {label}: {found['n']:,} pixels; best of {len(base.extra['runs'])} runs")
    C.print_table(["step", "wall s", "/ read+sum", "pixels/s", "peak GB", "runs s"], rows,
                  align="lrrrrl")
    b, c, d, e, f = (found["bins"][k] for k in "bcdef")
    one_read = f", one_read={d.attrs['one_read']!r}" if "one_read" in d.attrs else ""
    print(f"plans: recorded run {b.attrs['plan']!r} ({b.attrs['passes']} read(s), "
          f"recorded={b.attrs.get('recorded', '-')!r}); no record {d.attrs['plan']!r} "
          f"({d.attrs['passes']} read(s){one_read})")
    runs = list(zip(*(bench.best(f"{label} {k}").extra["runs"] for k in STEPS), strict=True))
    print("per repeat (same load), recorded / read+sum, fused / read+sum, no record / "
          "read+sum: " + "; ".join(f"{r[1] / r[0]:.2f}x {r[2] / r[0]:.2f}x {r[3] / r[0]:.2f}x"
                                   for r in runs))
    half = bench.best(f"{label} {STEPS[4]}").seconds / bench.best(f"{label} {STEPS[5]}").seconds
    print(f"training half (the default searched fit's binning): recorded run {e.attrs['plan']!r} "
          f"({e.attrs['passes']} read(s), recorded={e.attrs.get('recorded', '-')!r}); without "
          f"the record {f.attrs['plan']!r} ({f.attrs['passes']} read(s)); with / without the "
          f"record: best {half:.2f}x, per repeat "
          + " ".join(f"{r[4] / r[5]:.2f}x" for r in runs)
          + "; with the record / read+sum: per repeat "
          + " ".join(f"{r[4] / r[0]:.2f}x" for r in runs)
          + "; with the record / read+sum of the half: per repeat "
          + " ".join(f"{r[4] / r[6]:.2f}x" for r in runs)
          + f"; bins identical: {_same(e, f)}")
    ratio = bench.best(f"{label} {STEPS[1]}").seconds / base.seconds
    peak = bench.best(f"{label} {STEPS[1]}").peak
    print(f"goal default percentile_bins / read+sum <= 1.15x: {ratio:.2f}x -> "
          f"{'MET' if ratio <= 1.15 else 'NOT MET'} (median of the repeats "
          f"{np.median([r[1] / r[0] for r in runs]):.2f}x); bins == the fused plan's: "
          f"{_same(b, c)}; peak {peak / C.GB:.2f} GB (< 2 GB: "
          f"{'MET' if peak < 2 * C.GB else 'NOT MET'})")


def write_cost(bench: C.Bench, args: Any, orbit: Path, plain: Path,
               shape: tuple[int, int]) -> None:
    """Time the writes of the orbit-like store with each record of :data:`RECORDS`,
    alternated ``args.write_repeat`` times, and print the ratios and the record's size."""
    writes: dict[str, list[float]] = {r: [] for r in RECORDS}
    paths = {"all+half": orbit, "all": plain, "none": plain}
    rec_all = 0
    for _ in range(args.write_repeat):
        for record in RECORDS:
            with bench.stage(f"write_scenes, record {record}",
                             items=args.scenes * shape[0] * shape[1]):
                writes[record].append(write_store(paths[record], args.scenes, shape, record))
            if record == "all":
                rec_all, _ = record_bytes(plain)
    rec, total = record_bytes(orbit)
    best = {r: bench.best(f"write_scenes, record {r}") for r in RECORDS}
    runs = {r: [round(t, 1) for t in v] for r, v in writes.items()}
    print(f"\n## write cost: write_scenes with the record of every labelled pixel and the "
          f"training half / without a record: "
          f"{best['all+half'].seconds / best['none'].seconds:.3f}x; with the record of every "
          f"labelled pixel only / without: {best['all'].seconds / best['none'].seconds:.3f}x; "
          f"with / without the half: {best['all+half'].seconds / best['all'].seconds:.3f}x "
          f"(best " + ", ".join(f"{r} {best[r].seconds:.1f} s" for r in RECORDS)
          + f"; runs {runs}); peak "
          + ", ".join(f"{r} {best[r].peak / C.GB:.2f} GB" for r in RECORDS)
          + f"; record {rec / 1e6:.2f} MB on disk ({rec_all / 1e6:.2f} MB without the half) "
          f"of the store's {total / 1e9:.2f} GB")


def main() -> None:
    p = C.parser(__doc__.split("\n")[0], "binning_at_write")
    p.add_argument("--scenes", type=int, default=60, help="orbit-like scenes of 512x2048")
    p.add_argument("--big-scenes", type=int, default=24, help="scenes of 2048x2048")
    p.add_argument("--repeat", type=int, default=3, help="interleaved repeats (default 3)")
    p.add_argument("--write-repeat", type=int, default=1,
                   help="alternated writes with and without the record (default 1; 0 writes "
                        "the store once, untimed)")
    p.add_argument("--out", type=Path, default=None,
                   help="the output file (default benchmarks/results/binning_at_write.txt)")
    args = p.parse_args()
    if args.small:
        args.scenes, args.big_scenes, args.repeat = 4, 2, 2
    orbit_shape, big_shape = (512, 2048), (2048, 2048)
    C.header(f"binning at write: {args.scenes} scenes of 512x2048 and {args.big_scenes} of "
             f"2048x2048, features {' '.join(FEATURES)}")
    args.workdir.mkdir(parents=True, exist_ok=True)
    orbit = args.workdir / f"orbit-{args.scenes}.zarr"
    plain = args.workdir / f"orbit-{args.scenes}-no-record.zarr"
    big = args.workdir / f"big-{args.big_scenes}.zarr"
    import bigkern
    from bigkern.reduce import percentile_bins

    with C.benched_cluster() as (_, bench):
        # warm-up (untimed): numba caches, imports on the workers, a chunk large enough for
        # the compiled histogram loops
        write_store(plain, 1, (512, 2048))
        ws = bigkern.stack_samples(bigkern.open_scenes(plain), ["NDAI", "SD", "CORR"])
        percentile_bins(ws.X, ws.y, mask=ws.mask, recorded=ws.recorded)
        if args.write_repeat < 1:
            write_store(orbit, args.scenes, orbit_shape)
            rec, total = record_bytes(orbit)
            print(f"# record {rec / 1e6:.2f} MB on disk of the store's {total / 1e9:.2f} GB")
        else:
            write_cost(bench, args, orbit, plain, orbit_shape)
        shutil.rmtree(plain)
        found = bench_store(bench, orbit, "orbit", args.repeat)
        report(bench, "orbit", found)
        if args.big_scenes < 1:
            return
        with bench.stage("big store generation", items=args.big_scenes * 2048 * 2048):
            write_big_store(big, args.big_scenes, big_shape)
        rec, total = record_bytes(big)
        print(f"# big store: record {rec / 1e6:.2f} MB on disk of {total / 1e9:.2f} GB")
        found = bench_store(bench, big, "big", args.repeat)
        report(bench, "big", found)


if __name__ == "__main__":
    args_small = "--small" in sys.argv
    out = Path(sys.argv[sys.argv.index("--out") + 1]) if "--out" in sys.argv else None
    C.run_teed("binning_at_write", args_small, out, main)
