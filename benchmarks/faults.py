"""Issue 11, "lose nothing": bigkern on non-finite, filled, wild, damaged and interrupted data.

Every figure is measured on seeded synthetic scenes
(``make_scenes(n, shape, seed, radiances=False)``: NDAI, SD, CORR, label, cloud_truth)
written with ``write_scenes`` to real zarr stores in a fresh temporary directory under
``--workdir`` (removed at the end), on the benchmarks' LocalCluster (``bigkern.connect``,
2 worker processes x 1 thread). Fits are ``fit_scenes`` with the features
(NDAI, logSD, CORR) and a fixed ``BinnedSVC(omega=0.8, C=3.0)`` unless said otherwise.

1. NaN/±inf sweep: 0, 1e-6, 1%, 50% and 100% of the labelled (= training) pixels of CORR
   (then of CORR and NDAI, drawn independently) set to NaN, +inf or -inf (a third each,
   seeded); the rows made non-finite, against the rows the fit reports as left out per
   feature (``fit_report_["n_nonfinite_by_feature"]``; for the fits refused with
   ``DataQualityError`` over ``bigkern.max_nonfinite_fraction``, the counts its message
   gives).
2. -9999 fills in 20% of the CORR pixels: read (a) with the defaults (the MISR valid range
   CORR in [-1, 1] masks them), (b) declared with ``fill_values={"CORR": -9999}`` and
   range checks off, (c) as data (``valid_ranges=False``), (d) the same pixels NaN, and the
   clean store. Fitted on a random half of the labelled pixels (a one-point grid
   search): held-out accuracy on the other half, accuracy of the predicted mask against
   ``cloud_truth``, and fill pixels that get a class.
3. One wild value: the labelled pixel with the largest CORR (so no quantile edge moves)
   set to 1e12, read with CORR's range check off: accuracy against ``cloud_truth`` and
   the labels with and without it, the bins whose CORR center changed, the OutlierWarning.
4. Corruption of one CORR chunk (two bits flipped, truncated to half, deleted): seconds
   from ``open_scenes`` until ``StoreError`` for a fit and for a prediction, and the message.
5. Resume: ``python -m bigkern predict`` in a subprocess (own session, 1 worker) killed
   with SIGKILL once a third of the regions' chunk files exist; the regions finished and
   verified at the kill, what the in-process rerun computes, and whether its output equals
   an uninterrupted run bit for bit. Then one chunk of the finished store is truncated and
   one deleted, and a rerun repairs them.

6. Trust (issues 23 and 40): the cases of the modules in ``TRUST_CASES``
   (``faults_writers.py``: races, remote relative paths, a full disk, another kind of
   output; ``faults_predict_trust.py``: features at predict, fills at predict and fit,
   commands claiming first, tiny files, memory; see each module's docstring), each a row
   of case, outcome, whether the outcome is the safe one and whether anything was lost,
   in a fresh subdirectory of the workdir.

Writes everything printed to ``--out`` (default benchmarks/results/faults.txt; with
``--quick``/``--small``, into the workdir).

    python benchmarks/faults.py [--quick] [--out PATH] [--workdir DIR] [--keep]

About 2 minutes on 2 cores (4 scenes of 512x512; 48 regions to resume); ``--quick``
(2 scenes of 256x256; 32 regions) under a minute.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

REPO = Path(__file__).resolve().parents[1]
FEATURES = ("NDAI", "logSD", "CORR")
SVC = {"omega": 0.8, "C": 3.0}
RIDGE = {"omega": 0.5, "lam": 0.01}
FULL = {"n_scenes": 4, "shape": (512, 512), "chunks": {"scene": 1, "y": 256, "x": 512},
        "resume": (12, (256, 512), 64)}
QUICK = {"n_scenes": 2, "shape": (256, 256), "chunks": {"scene": 1, "y": 128, "x": 256},
         "resume": (8, (128, 256), 32)}
FRACTIONS = (0.0, 1e-6, 0.01, 0.5, 1.0)
FILL = -9999.0
WILD = 1e12
SEED = 0
# modules of issue 23's cases, each with run_cases(tmp, quick) -> [{case, outcome, ok, lost}]
TRUST_CASES = ("faults_writers", "faults_stores", "faults_models", "faults_cli", "faults_hangs",
               "faults_predict_trust")


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def write(ds: Any, path: Path, chunks: dict[str, int]) -> Path:
    """``write_scenes`` of an in-memory dataset (its arrays travel in the graph: fine here)."""
    from bigkern.scenes import write_scenes

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sending large graph")
        return write_scenes(ds, path, chunks=chunks)


def fit(ds: Any, **kw: Any) -> Any:
    """``fit_scenes`` with the fixed SVC unless a grid is given; its stderr log kept out."""
    from bigkern.jobs.fit import fit_scenes

    kw = {"grid": {}, "params": SVC, **kw}
    with contextlib.redirect_stderr(io.StringIO()):
        return fit_scenes(ds, model=kw.pop("model", "svc"), seed=SEED, **kw)


def predicted_mask(model: Any, ds: Any) -> np.ndarray:
    from bigkern.features import with_features
    from bigkern.jobs.predict import predict_scenes

    return predict_scenes(model, with_features(ds, FEATURES))["cloud_mask"].values


def first_line(err: BaseException) -> str:
    return f"{type(err).__name__}: {str(err).splitlines()[0]}"


def pct(x: float) -> str:
    return f"{100 * x:.2f}%"


# ---------------------------------------------------------------------------
# 1. NaN / inf sweep
# ---------------------------------------------------------------------------
def error_counts(msg: str) -> tuple[dict[str, int] | None, int]:
    """Per-feature and total non-finite rows stated by a DataQualityError's message.

    Over the limit: "B of P present rows ... (CORR: 12, NDAI: 3), over the limit ...";
    with no usable row at all: "... or have a non-finite feature (B)" (no per-feature
    counts: None).
    """
    per = {m[0]: int(m[1]) for m in re.findall(rf"\b({'|'.join(FEATURES)}): (\d+)", msg)}
    m = re.search(r"(\d+) of \d+ present rows", msg) or \
        re.search(r"non-finite feature \((\d+)\)", msg)
    return (per or None), (int(m[1]) if m else -1)


def sweep(base: Any, tmp: Path, chunks: dict[str, int]) -> None:
    from bigkern.errors import DataQualityError
    from bigkern.scenes import open_scenes

    label = base["label"].values.ravel()
    n_pix = label.size
    labelled = np.flatnonzero(label != 0)  # the fit's rows (all with finite features)
    runs = [("CORR",), ("CORR", "NDAI")]
    rows, errors = [], []
    for r, feats in enumerate(runs):
        for i, frac in enumerate(FRACTIONS):
            ds = base.copy(deep=True)
            hit_labelled: dict[str, int] = {}
            any_hit = np.zeros(n_pix, dtype=bool)
            for j, name in enumerate(feats):
                rng = np.random.default_rng([SEED, r, i, j])
                k = 0 if frac == 0 else max(1, round(frac * len(labelled)))
                idx = labelled[rng.choice(len(labelled), k, replace=False)]
                kinds = np.array([np.nan, np.inf, -np.inf], dtype=np.float32)
                flat = ds[name].values.reshape(-1)  # a view: writes into ds
                flat[idx] = kinds[rng.integers(0, 3, k)]
                hit_labelled[name] = k
                any_hit[idx] = True
            path = write(ds, tmp / f"sweep-{r}-{i}.zarr", chunks)
            t = time.perf_counter()
            try:
                report = fit(open_scenes(path)).model.fit_report_
                dropped = dict(report["n_nonfinite_by_feature"])
                total = int(report["n_nonfinite"])
                outcome = "fitted"
            except DataQualityError as err:
                dropped, total = error_counts(str(err))
                outcome = "DataQualityError"
                errors.append((f"{'+'.join(feats)} {frac:g}", first_line(err)))
            seconds = time.perf_counter() - t
            label_run = f"{len(feats)} feature{'s' if len(feats) > 1 else ''}"
            total_only = dropped is None and len(feats) == 1
            if total_only:  # the error states the total only: all of it is this feature's
                dropped = {feats[0]: total}
            for name in feats:
                got = None if dropped is None else dropped.get(name, 0)
                rows.append([label_run, f"{frac:g}", name,
                             f"{hit_labelled[name]:,}", "not given" if got is None else
                             f"{got:,}{' (total)' if total_only else ''}", "n/a" if got is None else
                             "yes" if got == hit_labelled[name] else "NO", outcome,
                             f"{seconds:.1f}"])
            if len(feats) > 1:
                want = int(np.count_nonzero(any_hit))
                rows.append([label_run, f"{frac:g}", "any (n_nonfinite)",
                             f"{want:,}", f"{total:,}", "yes" if total == want else "NO",
                             outcome, ""])
            clean = [f for f in (dropped or {}) if f not in feats and dropped[f]]
            if clean:
                rows.append([label_run, f"{frac:g}", f"others: {clean}", "0",
                             f"{sum(dropped[f] for f in clean):,}", "NO", outcome, ""])
    print(f"\n## 1. NaN/±inf sweep: {n_pix:,} pixels, {len(labelled):,} labelled (the fit's "
          "rows); the fraction is of the labelled pixels, a third each NaN, +inf, -inf")
    print("Training rows made non-finite (at least 1 for a fraction > 0) vs rows the fit "
          "reports left out per feature (refused fits: the counts their error states); over "
          "25% is refused by design.")
    C.print_table(["run", "fraction", "feature", "rows made non-finite",
                   "rows left out (report)", "equal", "outcome", "fit s"], rows,
                  align="lrlrrlll")
    for what, line in errors:
        print(f"  {what}: {line}")


# ---------------------------------------------------------------------------
# 2. -9999 fills
# ---------------------------------------------------------------------------
def fills(base: Any, clean: Path, tmp: Path, chunks: dict[str, int]) -> None:
    from bigkern.scenes import open_scenes

    n_pix = base["label"].size
    rng = np.random.default_rng([SEED, 2])
    idx = rng.choice(n_pix, round(0.2 * n_pix), replace=False)
    is_fill = np.zeros(n_pix, dtype=bool)
    is_fill[idx] = True
    filled = base.copy(deep=True)
    filled["CORR"].values.reshape(-1)[idx] = FILL
    nans = base.copy(deep=True)
    nans["CORR"].values.reshape(-1)[idx] = np.nan
    fill_path = write(filled, tmp / "fill.zarr", chunks)
    nan_path = write(nans, tmp / "nan.zarr", chunks)
    truth = base["cloud_truth"].values.ravel()
    label = base["label"].values.ravel()
    cases = [
        ("clean store (baseline)", lambda: open_scenes(clean)),
        ("(a) -9999 undeclared, default valid range", lambda: open_scenes(fill_path)),
        ("(b) -9999 declared: fill_values, ranges off",
         lambda: open_scenes(fill_path, fill_values={"CORR": FILL}, valid_ranges=False)),
        ("(c) -9999 as data: valid_ranges=False",
         lambda: open_scenes(fill_path, valid_ranges=False)),
        ("(d) the same pixels NaN", lambda: open_scenes(nan_path)),
    ]
    rows = []
    import bigkern

    for name, opener in cases:
        t = time.perf_counter()
        ds = opener()
        # (c) takes the fill as data on purpose: the suspected-fill check, which would
        # refuse the fit (issue 40), is turned off for it
        check = 0.0 if name.startswith("(c)") else bigkern.config.get("suspect_fill_fraction")
        with bigkern.config.set(suspect_fill_fraction=check):
            out = fit(ds, grid={k: [v] for k, v in SVC.items()})
        mask = predicted_mask(out.model, ds).ravel()
        seconds = time.perf_counter() - t
        left_out = out.model.fit_report_["n_nonfinite_by_feature"].get("CORR", 0)
        pred = mask != 0
        ok = mask == truth
        rows.append([
            name, f"{left_out:,}", pct(out.search.best_score), f"{out.search.n_scored:,}",
            pct(ok[pred].mean()), pct(ok[pred & ~is_fill].mean()), pct(pred.mean()),
            "n/a (no fills)" if name.startswith("clean") else
            f"{int(np.count_nonzero(pred & is_fill)):,}", f"{seconds:.1f}"])
    n_lab_fill = int(np.count_nonzero(is_fill & (label != 0)))
    print(f"\n## 2. -9999 in CORR at {len(idx):,} of {n_pix:,} pixels (20%; "
          f"{n_lab_fill:,} of them labelled); fitted on half the labelled pixels")
    print("Accuracy (held-out half of the labelled pixels; mask vs cloud_truth on predicted "
          "and on the 80% unfilled pixels) and fill pixels given a class (goal 0 for a, b, d).")
    C.print_table(["case", "CORR rows left out (fit half)", "held-out acc", "scored",
                   "vs truth (predicted)", "vs truth (unfilled px)", "predicted px",
                   "fill px with a class", "s"], rows, align="lrrrrrrrr")


# ---------------------------------------------------------------------------
# 3. one wild value
# ---------------------------------------------------------------------------
def wild_value(base: Any, tmp: Path, chunks: dict[str, int]) -> Any:
    from bigkern.reduce import bin_index
    from bigkern.reduce.binning.bins import OutlierWarning
    from bigkern.scenes import open_scenes

    label = base["label"].values.ravel()
    corr = base["CORR"].values.ravel()
    feats = np.stack([base["NDAI"].values.ravel(), np.log(base["SD"].values.ravel()), corr],
                     axis=1)
    usable = (label != 0) & np.isfinite(feats).all(axis=1)
    pixel = int(np.flatnonzero(usable)[np.argmax(corr[usable])])
    original = float(corr[pixel])
    ds = base.copy(deep=True)
    ds["CORR"].values.reshape(-1)[pixel] = WILD
    clean_path = tmp / "wild-clean.zarr"
    write(base, clean_path, chunks)
    wild_path = write(ds, tmp / "wild.zarr", chunks)
    truth = base["cloud_truth"].values.ravel()
    off = {"CORR": None}  # CORR's range check off (the default [-1, 1] would mask 1e12)
    res = {}
    for name, path in ((f"without (CORR = {original:.6g})", clean_path),
                       ("with CORR = 1e12", wild_path)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", OutlierWarning)
            sc = open_scenes(path, valid_ranges=off)
            out = fit(sc)
        mask = predicted_mask(out.model, sc).ravel()
        pred = mask != 0
        lab = label != 0
        msgs = [str(w.message) for w in caught if issubclass(w.category, OutlierWarning)]
        res[name] = (out, ((mask == truth) & pred).sum() / pred.sum(),
                     (mask == label)[lab & pred].mean(), msgs)
    (n0, (o0, t0, l0, _)), (n1, (o1, t1, l1, msgs)) = res.items()
    b0, b1 = o0.bins, o1.bins
    edges = [e[np.isfinite(e)] for e in b1["edge"].values]
    row = feats[pixel:pixel + 1].copy()
    row[0, 2] = np.float32(WILD)
    own = int(bin_index(row, edges)[0])
    same_bins = np.array_equal(b0["bin"].values, b1["bin"].values)
    f = list(b1["feature"].values).index("CORR")
    if same_bins:
        c0, c1 = b0["center"].values, b1["center"].values
        changed = b1["bin"].values[c0[:, f] != c1[:, f]]
        others = [v for v in ("count", "positive") if v in b1
                  and not np.array_equal(b0[v].values, b1[v].values)]
        other_feats = int(np.count_nonzero(
            (np.delete(c0, f, axis=1) != np.delete(c1, f, axis=1)).any(axis=1)))
        own_center = float(b1["center"].values[list(b1["bin"].values).index(own), f])
    else:
        changed, others, other_feats, own_center = np.array([-1]), ["bin ids"], -1, np.nan
    # with the default valid range the same value is masked, not binned
    masked = fit(open_scenes(wild_path)).model.fit_report_["n_nonfinite_by_feature"]["CORR"]

    print(f"\n## 3. one wild value: labelled pixel {pixel:,} (the largest CORR, {original:g}) "
          f"set to {WILD:g}; CORR's range check off; fixed SVC on all "
          f"{o1.model.fit_report_['n_valid']:,} labelled pixels")
    print("Accuracy with and without it (goal: change < 0.5 points) and bins whose CORR "
          "center changed (goal: only the outlier's own bin).")
    C.print_table(
        ["fit", "acc vs truth (predicted px)", "acc vs labels (in-sample)", "bins",
         "n_outliers"],
        [[n0, pct(t0), pct(l0), f"{int(b0.sizes['bin']):,}",
          o0.model.fit_report_.get("n_outliers", 0)],
         [n1, pct(t1), pct(l1), f"{int(b1.sizes['bin']):,}",
          o1.model.fit_report_.get("n_outliers", 0)],
         ["change (points)", f"{100 * (t1 - t0):+.3f}", f"{100 * (l1 - l0):+.3f}", "", ""]],
        align="lrrrr")
    only_own = same_bins and set(changed.tolist()) <= {own}
    print(f"bins with a changed CORR center: {len(changed)} of {int(b1.sizes['bin']):,} "
          f"({changed.tolist()[:5]}; the outlier's own bin is {own}, its CORR center now "
          f"{own_center:.6g}) -> {'MET' if only_own else 'NOT MET'}; bin ids identical: "
          f"{same_bins}; counts/labels changed in: {others or 'none'}; bins with another "
          f"feature's center changed: {other_feats}")
    print(f"accuracy change vs truth {100 * abs(t1 - t0):.3f} points -> "
          f"{'MET' if abs(t1 - t0) < 0.005 else 'NOT MET'} (goal < 0.5)")
    print(f"OutlierWarning ({len(msgs)}): " + (msgs[0] if msgs else "none"))
    print(f"with the default valid range (CORR in [-1, 1]) the value is masked instead: "
          f"{masked} CORR row left out, no outlier")
    return o0.model


# ---------------------------------------------------------------------------
# 4. corruption
# ---------------------------------------------------------------------------
def damage(store: Path, variable: str, chunk: str, how: str) -> None:
    path = store / variable / "c" / chunk
    data = bytearray(path.read_bytes())
    if how == "flip":
        data[len(data) // 2] ^= 0x10
        data[len(data) // 2 + 1] ^= 0x01
        path.write_bytes(bytes(data))
    elif how == "truncate":
        path.write_bytes(bytes(data[: len(data) // 2]))
    else:
        path.unlink()


def corruption(clean: Path, model: Any, tmp: Path) -> None:
    from bigkern.errors import StoreError
    from bigkern.features import with_features
    from bigkern.jobs.predict import predict_scenes, write_predictions
    from bigkern.scenes import open_scenes

    chunk = "1/1/0"
    hows = {"flip": "two bits flipped", "truncate": "truncated to half", "delete": "deleted"}
    rows, messages = [], []
    for how, what in hows.items():
        store = tmp / f"damaged-{how}.zarr"
        shutil.copytree(clean, store)
        damage(store, "CORR", chunk, how)

        def do_fit(store: Path = store) -> None:
            fit(open_scenes(store))

        def do_predict(store: Path = store, how: str = how) -> None:
            sc = with_features(open_scenes(store), FEATURES)
            write_predictions(predict_scenes(model, sc), tmp / f"pred-{how}.zarr",
                              inputs=[store])

        for call, fn in (("fit", do_fit), ("predict", do_predict)):
            t = time.perf_counter()
            try:
                fn()
                err: BaseException | None = None
            except Exception as e:  # any other type is a finding too
                err = e
            seconds = time.perf_counter() - t
            msg = str(err) if err is not None else "no error"
            named = (err is not None and str(store) in msg and "'CORR'" in msg
                     and "chunk (1, 1, 0)" in msg)
            rows.append([what, call, f"{seconds:.2f}",
                         "MET" if isinstance(err, StoreError) and seconds < 10 else "NOT MET",
                         type(err).__name__ if err is not None else "none",
                         "yes" if named else "NO"])
            messages.append((f"{what}, {call}", first_line(err) if err else msg))
    print(f"\n## 4. corruption of CORR chunk ({chunk.replace('/', ', ')}) of a "
          f"{C.dir_size(clean) / 1e6:.1f} MB store")
    print("Seconds from open_scenes until the error reaches the caller (goal: StoreError "
          "< 10 s, naming store, variable and chunk).")
    C.print_table(["damage", "call", "seconds", "goal", "error", "names store/var/chunk"],
                  rows, align="llrlll")
    for what, msg in messages:
        print(f"  {what}: {msg}")


# ---------------------------------------------------------------------------
# 5. resume
# ---------------------------------------------------------------------------
def regions_done(path: Path, n_scene: int, n_y: int) -> set[tuple[int, int]]:
    """Regions whose two chunks exist and pass their checksums."""
    import zarr

    group = zarr.open_group(str(path), mode="r")
    done = set()
    for s in range(n_scene):
        for y in range(n_y):
            try:
                for name in ("decision", "cloud_mask"):
                    if not (path / name / "c" / f"{s}/{y}/0").exists():
                        raise KeyError(name)
                    group[name].blocks[s, y, 0]
            except Exception:  # unfinished or damaged region
                continue
            done.add((s, y))
    return done


def chunk_files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes()
            for name in ("decision", "cloud_mask") for p in sorted((path / name / "c").rglob("*"))
            if p.is_file()}


def same_output(a: Path, b: Path) -> tuple[bool, bool]:
    """(values equal bit for bit, chunk files byte-identical)."""
    from bigkern.store.integrity import open_checked

    x, y = open_checked(a), open_checked(b)
    values = all(x[n].values.tobytes() == y[n].values.tobytes()
                 for n in ("decision", "cloud_mask"))
    return values, chunk_files(a) == chunk_files(b)


def resume(size: tuple[int, tuple[int, int], int], tmp: Path) -> None:
    from bigkern.datasets import make_scenes
    from bigkern.errors import StoreError
    from bigkern.features import with_features
    from bigkern.jobs.predict import predict_scenes, write_predictions
    from bigkern.models import load_model, save_model
    from bigkern.scenes import open_scenes, write_scenes
    from bigkern.store.integrity import open_checked

    n_scene, shape, rows_per = size
    n_y = shape[0] // rows_per
    n_regions = n_scene * n_y
    store = write_scenes(make_scenes(n_scene, shape, seed=SEED + 2, radiances=False),
                         tmp / "resume.zarr",
                         chunks={"scene": 1, "y": rows_per, "x": shape[1]})
    model_path = save_model(fit(open_scenes(store), model="ridge", params=RIDGE).model,
                            tmp / "resume-model.zarr")

    def predict(out: Path) -> Any:
        m = load_model(model_path)
        sc = with_features(open_scenes(store), [str(f) for f in m.feature_names_in_])
        return write_predictions(predict_scenes(m, sc), out, inputs=[store, model_path])

    reference = tmp / "reference.zarr"
    t = time.perf_counter()
    predict(reference)
    t_ref = time.perf_counter() - t

    out = tmp / "killed.zarr"
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bigkern", "predict", str(store), str(model_path), "-o",
         str(out), "--workers", "1"], cwd=REPO, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    finished_first = False
    deadline = time.monotonic() + 240
    cm = out / "cloud_mask" / "c"
    while time.monotonic() < deadline:
        if cm.exists() and sum(1 for p in cm.rglob("*") if p.is_file()) >= n_regions // 3:
            break
        if proc.poll() is not None:
            finished_first = True
            break
        time.sleep(0.005)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    t_kill = time.perf_counter() - t
    files = {n: sum(1 for p in (out / n / "c").rglob("*") if p.is_file())
             if (out / n / "c").exists() else 0 for n in ("decision", "cloud_mask")}
    done = regions_done(out, n_scene, n_y) if out.exists() else set()
    try:
        open_checked(out)
        refused = "NO (reads as complete)"
    except StoreError as err:
        refused = "yes: " + str(err).splitlines()[0]

    t = time.perf_counter()
    rep = predict(out)
    t_rerun = time.perf_counter() - t
    values, files_equal = same_output(out, reference)
    rows = [["killed CLI run, rerun in-process", n_regions, len(done), rep.n_reused,
             rep.n_computed, rep.n_damaged, "yes" if rep.resumed else "no",
             f"{t_rerun:.2f}", "yes" if values else "NO", "yes" if files_equal else "NO"]]

    # a finished store damaged afterwards: one chunk truncated, one deleted
    damage(out, "decision", "1/1/0", "truncate")
    damage(out, "cloud_mask", f"{n_scene - 1}/{n_y - 1}/0", "delete")
    t = time.perf_counter()
    rep2 = predict(out)
    t_repair = time.perf_counter() - t
    values2, files2 = same_output(out, reference)
    rows.append(["finished, 1 chunk truncated + 1 deleted, rerun", n_regions, n_regions - 2,
                 rep2.n_reused, rep2.n_computed, rep2.n_damaged,
                 "yes" if rep2.resumed else "no", f"{t_repair:.2f}",
                 "yes" if values2 else "NO", "yes" if files2 else "NO"])

    print(f"\n## 5. resume: {n_scene} scenes of {shape[0]}x{shape[1]}, one region per "
          f"(scene, {rows_per} rows): {n_regions} regions; BinnedKernelRidgeClassifier {RIDGE}, "
          f"{load_model(model_path).expansion_.n_basis} basis functions")
    print("`bigkern predict` (subprocess, 1 worker) SIGKILLed once a third of the regions' "
          "chunk files existed, then rerun; output vs an uninterrupted run.")
    C.print_table(["run", "regions", "finished before", "reused", "computed", "damaged",
                   "resumed", "rerun s", "values bit-equal", "chunk files equal"], rows,
                  align="lrrrrrlrll")
    print(f"killed after {t_kill:.1f} s (interpreter + cluster start included)"
          f"{' -- the run FINISHED before the kill' if finished_first else ''}; chunk files "
          f"then: {files}; uninterrupted in-process run {t_ref:.2f} s; the killed store "
          f"refused by readers: {refused}")


def trust(tmp: Path, quick: bool) -> None:
    """Section 6: issue 23's cases, one table row each."""
    import importlib

    print("\n## 6. trust: one writer, remote paths, full disk, models, stores, CLI, hangs")
    rows = []
    for name in TRUST_CASES:
        where = tmp / name
        where.mkdir()
        t = time.perf_counter()
        cases = importlib.import_module(name).run_cases(where, quick)
        print(f"# {name}.py: {len(cases)} cases in {time.perf_counter() - t:.1f} s")
        rows += cases
    C.print_table(["case", "outcome", "safe", "lost"],
                  [[r["case"], r["outcome"], "yes" if r["ok"] else "NO",
                    "YES" if r["lost"] else "nothing"] for r in rows], align="llll")
    unsafe = [r["case"] for r in rows if not r["ok"] or r["lost"]]
    print(f"{len(rows)} cases: {len(rows) - len(unsafe)} safe"
          + (f"; NOT SAFE: {unsafe}" if unsafe else ", nothing lost"))


# ---------------------------------------------------------------------------
def run(args: Any, tmp: Path) -> None:
    from bigkern.datasets import make_scenes

    size = QUICK if args.small else FULL
    n_scenes, shape, chunks = size["n_scenes"], size["shape"], size["chunks"]
    C.header(f"faults (issue 11): {n_scenes} synthetic scenes of {shape[0]}x{shape[1]}, "
             f"store chunks {chunks}")
    print(f"# stores in {tmp}; fits: fit_scenes, features {FEATURES}, BinnedSVC {SVC}")
    t_all = time.perf_counter()
    with C.cluster() as client:
        print(f"# cluster: {len(client.scheduler_info()['workers'])} worker processes x 1 "
              "thread (bigkern.connect)")
        base = make_scenes(n_scenes, shape, seed=SEED, radiances=False).load()
        clean = write(base, tmp / "clean.zarr", chunks)
        stages = []

        def timed(name: str, fn: Any, *a: Any) -> Any:
            t = time.perf_counter()
            out = fn(*a)
            stages.append((name, time.perf_counter() - t))
            return out

        timed("1. NaN/inf sweep", sweep, base, tmp, chunks)
        timed("2. -9999 fills", fills, base, clean, tmp, chunks)
        model = timed("3. wild value", wild_value, base, tmp, chunks)
        timed("4. corruption", corruption, clean, model, tmp)
        timed("5. resume", resume, size["resume"], tmp)
    # its own clusters and command-line processes: after the benchmarks' cluster has closed
    t = time.perf_counter()
    trust(tmp, args.small)
    stages.append(("6. trust", time.perf_counter() - t))
    print("\n## wall time")
    total = time.perf_counter() - t_all
    C.print_table(["section", "s"], [*[[n, f"{s:.1f}"] for n, s in stages],
                                     ["total (with cluster start/stop)", f"{total:.1f}"]])


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], "faults")
    p.add_argument("--quick", dest="small", action="store_true", help="same as --small")
    p.add_argument("--out", type=Path, default=None,
                   help="where to write what is printed (default benchmarks/results/faults.txt; "
                        "with --quick, the workdir)")
    p.add_argument("--keep", action="store_true", help="keep the temporary stores")
    args = p.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    out = args.out or (args.workdir / "faults.txt" if args.small else
                       Path(__file__).resolve().parent / "results" / "faults.txt")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="run-", dir=args.workdir))
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(C.Tee(sys.stdout, buf)):
            run(args, tmp)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    out.write_text(buf.getvalue())
    print(f"output written to {out}")


if __name__ == "__main__":
    main()
