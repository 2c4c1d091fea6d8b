"""OHT at scale: OHTED on a reduced Gaussian basis of 1,000 centers fitted to 10^7 samples.

The data are a zarr store (written on the first run under ``--workdir``) of
``X`` (n × 4 float32, features uniform on [-1.5, 1.5]) and
``y = f(x) + N(0, 0.3²)`` (float32) with a smooth ``f``; chunks of 5·10^6 rows
(100 MB of X and y). One task reads a slice of 5·10^5 rows of both arrays
(``--task-rows``), so that n = 10^6 and n = 10^7 run with the same task size on
both workers and their peak memory can be compared; the reads of every pass are
counted on the workers (calls of ``read_rows`` divided by the tasks of a pass).

A fit is three reads of the data:

1. the reduced set Ã: a uniform sample of 1,000 rows (``bigkern.sample_rows``);
2. ``reduced_normal_equations``: GᵀG, Gᵀy, Gᵀ1, yᵀy, Σy, n with G = K(A, Ã)
   (10^7 × 1000, never formed), then OHTED on the 1000 × 1000 system
   (``oht_from_normal_equations``) on the client;
3. ``reduced_residual_sums``: σ̂² checked on the data, (Σ r²)/(n − l) for the
   least-squares fit on the stable set (a second check, not needed by the fit).

The same is run on the first 10^6 rows to show that peak memory does not grow
with n (it is set by the chunk size and m̃²), and peers run on the first 10^5
rows (rows are i.i.d., so these are a uniform subsample): scikit-learn
``Nystroem(1000) + RidgeCV`` and the in-memory OHTED on the dense 10^5 × 1000
basis. Test MSE is on 10^5 fresh rows; ``noise variance`` is the floor.
"""

from __future__ import annotations

import itertools
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

D = 4
NOISE = 0.3
CHUNK_ROWS = 5_000_000  # 5e6 × (4 + 1) × 4 bytes = 100 MB per chunk of X and y
FULL = {"rows": (1_000_000, 10_000_000), "centers": 1000, "peer_rows": 100_000,
        "test_rows": 100_000}
SMALL = {"rows": (100_000, 400_000), "centers": 200, "peer_rows": 20_000, "test_rows": 20_000}


def target(X: np.ndarray) -> np.ndarray:
    """The smooth regression function f (float64)."""
    x = np.asarray(X, dtype=np.float64)
    return (np.sin(2.0 * x[:, 0]) * np.cos(1.5 * x[:, 1]) + 0.5 * x[:, 2] ** 2
            + 0.5 * np.tanh(2.0 * x[:, 3]) * x[:, 0])


def make_rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of (X float32, y float32) from generator ``seed``."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.5, 1.5, size=(n, D)).astype(np.float32)
    y = (target(X) + NOISE * rng.standard_normal(n)).astype(np.float32)
    return X, y


def _write_chunk(path: str, i: int, a: int, b: int) -> None:
    import zarr

    X, y = make_rows(b - a, seed=1000 + i)
    g = zarr.open_group(path, mode="r+")
    g["X"][a:b] = X
    g["y"][a:b] = y


def make_store(client: Any, path: Path, n: int) -> bool:
    """Write the store unless present with ``n`` rows; True when written."""
    import zarr

    if path.exists():
        try:
            g = zarr.open_group(str(path), mode="r")
            if g["X"].shape == (n, D) and g.attrs.get("complete"):
                return False
        except Exception:
            pass
        shutil.rmtree(path)
    g = zarr.open_group(str(path), mode="w")
    g.create_array("X", shape=(n, D), chunks=(CHUNK_ROWS, D), dtype="float32")
    g.create_array("y", shape=(n,), chunks=(CHUNK_ROWS,), dtype="float32")
    bounds = [*range(0, n, CHUNK_ROWS), n]
    futures = [client.submit(_write_chunk, str(path), i, a, b, pure=False)
               for i, (a, b) in enumerate(itertools.pairwise(bounds))]
    client.gather(futures)
    g.attrs["complete"] = True
    return True


def read_rows(path: str, a: int, b: int) -> np.ndarray:
    """Rows [a, b) of X and y as one float32 block [X | y] (one task per store chunk)."""
    import zarr

    _count_read()
    g = zarr.open_group(path, mode="r")
    out = np.empty((b - a, D + 1), dtype=np.float32)
    out[:, :D] = g["X"][a:b]
    out[:, D] = g["y"][a:b]
    return out


def source(path: Path, n: int, task_rows: int) -> tuple[Any, Any]:
    """Lazy X (n, 4) and y (n,) over the first ``n`` rows of the store, ``task_rows`` per task.

    Task bounds never straddle a store chunk.
    """
    import dask
    import dask.array as da

    bounds = sorted({*range(0, n, task_rows), *range(0, n, CHUNK_ROWS), n})
    fn = dask.delayed(read_rows, pure=True)
    blocks = [da.from_delayed(fn(str(path), a, b), shape=(b - a, D + 1), dtype=np.float32)
              for a, b in itertools.pairwise(bounds)]
    src = da.concatenate(blocks, axis=0)
    return src[:, :D], src[:, D]


def _count_read() -> None:
    """Count one read on this worker (an attribute of the distributed Worker object)."""
    try:
        from distributed import get_worker

        w = get_worker()
    except ValueError:  # not on a worker
        return
    w.bigkern_reads = getattr(w, "bigkern_reads", 0) + 1


def _reads_on(dask_worker: Any) -> int:
    return int(getattr(dask_worker, "bigkern_reads", 0))


class Reads:
    """Counts the ``read_rows`` calls on the workers while a block runs.

    Counted where the read happens (task fusion renames tasks, so the task
    stream does not always show them).
    """

    def __init__(self, client: Any) -> None:
        self.client = client

    def _total(self) -> int:
        return sum(self.client.run(_reads_on).values())

    def __enter__(self) -> Reads:
        self._start = self._total()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.count = self._total() - self._start


def mse(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((np.asarray(pred, dtype=np.float64) - y) ** 2))


def fit_bigkern(bench: C.Bench, client: Any, path: Path, n: int, m: int, omega: float,
                Xt: np.ndarray, yt: np.ndarray, profile: bool, task_rows: int
                ) -> dict[str, Any]:
    """One fit of OHTED on n rows: sample Ã, normal equations, solve, residual check."""
    import bigkern
    from bigkern.kernels import kernel_expansion
    from bigkern.reduce.reduced.normal_equations import (
        reduced_normal_equations,
        reduced_residual_sums,
    )
    from bigkern.solvers.oht import oht_from_normal_equations

    X, y = source(path, n, task_rows)
    n_chunks = X.numblocks[0]
    out: dict[str, Any] = {"n": n, "chunks": n_chunks}
    t_fit = time.perf_counter()
    with bench.stage(f"n={n:.0e}: centers (sample_rows, {m})", items=n) as st, \
            Reads(client) as r1:
        centers, _, _ = bigkern.sample_rows(X, n=m, seed=0)
    out["reads_centers"] = r1.count / n_chunks
    centers = centers.astype(np.float64)
    with bench.stage(f"n={n:.0e}: reduced_normal_equations", items=n) as st, \
            Reads(client) as r2, C.task_profile(client, profile, f"normal equations n={n}"):
        ds = reduced_normal_equations(X, y, centers, omega)
    out["reads_normal"] = r2.count / n_chunks
    out["stage_normal"] = st
    sols = {}
    with bench.stage(f"n={n:.0e}: OHTED solve (client, {m}x{m})") as st:
        for label, rtol in (("eta", 0.0), ("eta+rtol", m * np.finfo(float).eps)):
            sols[label] = oht_from_normal_equations(
                ds["GtG"].values, ds["Gty"].values, float(ds["yty"]), int(ds["n"]),
                method="ED", Gsum=ds["Gsum"].values, ysum=float(ds["ysum"]), rtol=rtol)
    out["fit_seconds"] = time.perf_counter() - t_fit
    # least-squares weights on the stable set (rtol rule) for the σ̂² check on the data
    sol = sols["eta+rtol"]
    evals, evecs = np.linalg.eigh(ds["GtG"].values)
    stable = evals > max(1e-10, m * np.finfo(float).eps * evals.max())
    Gty_c = ds["Gty"].values - sol.intercept * ds["Gsum"].values
    w_ls = evecs[:, stable] @ ((evecs[:, stable].T @ Gty_c) / evals[stable])
    with bench.stage(f"n={n:.0e}: reduced_residual_sums (sigma2 check)", items=n) as st, \
            Reads(client) as r3:
        res = reduced_residual_sums(X, y, centers, omega, w_ls, sol.intercept)
    out["reads_residual"] = r3.count / n_chunks
    out["stage_residual"] = st
    out["sigma2_data"] = float(res["rss"]) / (int(res["n"]) - int(stable.sum()))
    for label, s in sols.items():
        pred = kernel_expansion(Xt, centers, s.weights, omega, s.intercept, dtype=np.float64)
        pred32 = kernel_expansion(Xt, centers, s.weights, omega, s.intercept)
        out[label] = {"mse": mse(pred, yt), "mse32": mse(pred32, yt),
                      "kept": s.n_components, "stable": s.n_stable,
                      "sigma2": s.sigma2, "wnorm": float(np.linalg.norm(s.weights))}
    out["n_used"] = int(ds["n"])
    return out


def peers(bench: C.Bench, path: Path, n: int, m: int, omega: float, Xt: np.ndarray,
          yt: np.ndarray) -> dict[str, Any]:
    """scikit-learn Nystroem + RidgeCV and in-memory OHTED on the first n rows (client)."""
    import zarr
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from threadpoolctl import threadpool_limits

    from bigkern.kernels import gaussian_kernel, kernel_expansion, omega_to_gamma
    from bigkern.solvers.oht import oht_fit

    g = zarr.open_group(str(path), mode="r")
    X = np.asarray(g["X"][:n])
    y = np.asarray(g["y"][:n], dtype=np.float64)
    out: dict[str, Any] = {}
    with threadpool_limits(2):  # the two cores the cluster's two workers use
        with bench.stage(f"peer n={n:.0e}: sklearn Nystroem({m}) + RidgeCV", items=n) as st:
            model = make_pipeline(
                Nystroem(gamma=omega_to_gamma(omega), n_components=m, random_state=0),
                RidgeCV(alphas=np.logspace(-8, 2, 11)))
            model.fit(X.astype(np.float64), y)
        out["nystroem"] = {"seconds": st.seconds, "peak": st.peak,
                           "mse": mse(model.predict(Xt.astype(np.float64)), yt),
                           "alpha": float(model[-1].alpha_)}
        with bench.stage(f"peer n={n:.0e}: in-memory OHTED (dense G, oht_fit)", items=n) as st:
            rng = np.random.default_rng(0)
            centers = X[rng.choice(n, m, replace=False)].astype(np.float64)
            G = gaussian_kernel(X.astype(np.float64), centers, omega)
            sol = oht_fit(G, y, method="ED", rtol=m * np.finfo(float).eps)
            del G
        pred = kernel_expansion(Xt, centers, sol.weights, omega, sol.intercept,
                                dtype=np.float64)
        out["ohted_mem"] = {"seconds": st.seconds, "peak": st.peak, "mse": mse(pred, yt),
                            "kept": sol.n_components}
    return out


def fit_estimator_cv(bench: C.Bench, client: Any, path: Path, n: int, m: int,
                     grid: tuple[float, ...], Xt: np.ndarray, yt: np.ndarray, task_rows: int
                     ) -> dict[str, Any]:
    """``OHTRegressor(size=m, omega=grid)``: two-fold CV of every width from one pass.

    Against the same estimator at one width (``grid[0]``), so the ratio of the two
    fit times is the cost of the cross-validation.
    """
    from bigkern import OHTRegressor

    X, y = source(path, n, task_rows)
    n_chunks = X.numblocks[0]
    out: dict[str, Any] = {"n": n, "grid": grid}
    for label, widths in (("one width", grid[:1]), (f"{len(grid)} widths, 2 folds", grid)):
        est = OHTRegressor(method="ED", omega=widths, size=m, random_state=0)
        with bench.stage(f"n={n:.0e}: OHTRegressor(size={m}), {label}", items=n) as st, \
                Reads(client) as r:
            est.fit(X, y)
        pred = est.predict(Xt)
        out[label] = {"seconds": st.seconds, "peak": st.peak, "reads": r.count / n_chunks,
                      "omega": est.omega_, "cv": est.cv_scores_.tolist(),
                      "mse": mse(pred, yt), "kept": est.n_components_}
    return out


def warm_estimator(path: Path, task_rows: int, m: int) -> None:
    """Imports and BLAS on the workers before anything is timed."""
    from bigkern import OHTRegressor

    Xw, yw = source(path, 20_000, task_rows)
    OHTRegressor(method="ED", omega=(1.0, 2.0), size=min(m, 50), random_state=0).fit(Xw, yw)


def report_cv(cv: dict[str, Any], omega_validation: float, noise_mse: float) -> None:
    """Print the estimator-route comparison."""
    one, many = (cv[k] for k in cv if k not in ("n", "grid"))
    label_many = [k for k in cv if k not in ("n", "grid")][1]
    print(f"\n## OHTRegressor(method='ED', size=m) on n={cv['n']:.0e}: one width vs two-fold CV "
          f"over {cv['grid']} in one pass; noise variance (floor) {noise_mse:.5f}")
    rows = []
    for label, r in (("one width", one), (label_many, many)):
        rows.append([label, f"{r['omega']:g}", " ".join(f"{v:.5f}" for v in r["cv"]),
                     f"{r['mse']:.5f}", str(r["kept"]), f"{r['seconds']:.1f}",
                     f"{r['peak'] / C.GB:.2f}", f"{r['reads']:g}"])
    C.print_table(["fit", "omega", "CV MSE per width", "test MSE", "kept", "fit s", "peak GB",
                   "reads"], rows)
    print(f"  width by in-memory validation on the peers' subsample: {omega_validation:g}")
    print(f"  ratio: CV fit / one-width fit time {many['seconds'] / one['seconds']:.2f}x for "
          f"{len(cv['grid'])} widths x 2 folds; reads {many['reads']:g} vs {one['reads']:g} "
          f"(center sample + one pass)")


def choose_omega(bench: C.Bench, path: Path, n: int, m: int, grid: tuple[float, ...],
                 seed: int = 8) -> tuple[float, list[list[str]]]:
    """ω by validation: in-memory OHTED on the first n rows, MSE on fresh validation rows."""
    import zarr
    from threadpoolctl import threadpool_limits

    from bigkern.kernels import gaussian_kernel, kernel_expansion
    from bigkern.solvers.oht import oht_fit

    g = zarr.open_group(str(path), mode="r")
    X = np.asarray(g["X"][:n], dtype=np.float64)
    y = np.asarray(g["y"][:n], dtype=np.float64)
    Xv, yv = make_rows(n, seed)
    centers = X[np.random.default_rng(0).choice(n, m, replace=False)]
    table, best = [], (math.inf, grid[0])
    with threadpool_limits(2), bench.stage(f"omega by validation ({len(grid)} widths)"):
        for omega in grid:
            sol = oht_fit(gaussian_kernel(X, centers, omega), y, method="ED",
                          rtol=m * np.finfo(float).eps)
            pred = kernel_expansion(Xv, centers, sol.weights, omega, sol.intercept,
                                    dtype=np.float64)
            err = mse(pred, yv.astype(np.float64))
            best = min(best, (err, omega))
            table.append([f"{omega:g}", f"{err:.5f}", f"{sol.n_components}/{sol.n_stable}"])
    return best[1], table


def product_timings(m: int, rows: int = 4096, repeat: int = 5) -> list[list[str]]:
    """Per block of ``rows`` × (m + 2): the candidate products for GᵀG, one BLAS thread."""
    import scipy.linalg.blas as blas
    from threadpoolctl import threadpool_limits

    W = np.random.default_rng(0).random((rows, m + 2))
    W32 = W.astype(np.float32)
    acc = np.zeros((m + 2, m + 2), order="F")

    def syrk() -> None:
        blas.dsyrk(1.0, W.T, beta=1.0, c=acc, trans=0, lower=0, overwrite_c=1)

    def gemm() -> None:
        np.add(acc, W.T @ W, out=acc)

    def syrk32() -> None:
        np.add(acc, blas.ssyrk(1.0, W32.T, trans=0, lower=0), out=acc)

    out = []
    with threadpool_limits(1):
        for name, f in (("dsyrk into the float64 accumulator (used)", syrk),
                        ("W.T @ W (numpy) + add", gemm),
                        ("ssyrk float32 + add (not used: float32 sums)", syrk32)):
            f()
            t0 = time.perf_counter()
            for _ in range(repeat):
                f()
            out.append([name, f"{(time.perf_counter() - t0) / repeat * 1e3:.1f}"])
    return out


def main() -> None:
    p = C.parser(__doc__.split("\n")[0], "oht_scale")
    p.add_argument("--omega", type=float, default=None,
                   help="kernel width (default: chosen by validation over 0.7, 1, 1.4, 2 with "
                        "in-memory OHTED on the peers' subsample)")
    p.add_argument("--task-rows", type=int, default=None,
                   help="rows read per task (default 5e5; 5e4 with --small)")
    p.add_argument("--cv", action="store_true",
                   help="only the estimator route: OHTRegressor(size=m) choosing the width by "
                        "two-fold CV over 0.7, 1, 1.4, 2 from one pass, on the first (smaller) n")
    args = p.parse_args()
    args.task_rows = args.task_rows or (50_000 if args.small else 500_000)
    size = SMALL if args.small else FULL
    rows, m = size["rows"], size["centers"]
    n_max = max(rows)
    C.header(f"OHT at scale: OHTED on {m} reduced centers, up to {n_max:.0e} samples "
             f"x {D} features")
    import bigkern

    args.workdir.mkdir(parents=True, exist_ok=True)
    path = args.workdir / f"oht-{n_max}.zarr"
    Xt, yt_ = make_rows(size["test_rows"], seed=7)
    yt = yt_.astype(np.float64)
    noise_mse = mse(target(Xt), yt)
    with C.benched_cluster() as (client, bench), bigkern.config.set(progress=False):
        with bench.stage("store (write on first run)", items=n_max) as st:
            st.note = "written" if make_store(client, path, n_max) else "reused"
        print(f"# store {path}: {C.dir_size(path) / C.GB:.2f} GB, {st.note}; chunks of "
              f"{CHUNK_ROWS:.0e} rows (X float32 {CHUNK_ROWS * D * 4 / 1e6:.0f} MB + "
              f"y {CHUNK_ROWS * 4 / 1e6:.0f} MB)")
        omega = args.omega
        if omega is None:
            omega, table = choose_omega(bench, path, size["peer_rows"], m, (0.7, 1.0, 1.4, 2.0))
            print(f"# omega by validation (in-memory OHTED on the first {size['peer_rows']:.0e}"
                  f" rows, {size['peer_rows']:.0e} fresh validation rows): {omega:g}")
            C.print_table(["omega", "validation MSE", "kept/stable"], table)
        args.omega = omega
        if args.cv:
            # warm-up (untimed), then the estimator with one width and with the grid
            warm_estimator(path, args.task_rows, m)
            cv = fit_estimator_cv(bench, client, path, rows[0], m, (0.7, 1.0, 1.4, 2.0), Xt,
                                  yt, args.task_rows)
            report_cv(cv, omega, noise_mse)
            return
        with bench.stage("product timings (client, 1 thread)", quiet=True):
            timings = product_timings(m)
        print(f"# G'G products per block of 4096 x {m + 2} rows (ms, 1 BLAS thread):")
        C.print_table(["product", "ms"], timings)
        # warm-up: imports and BLAS on the workers (untimed)
        Xw, yw = source(path, 20_000, args.task_rows)
        from bigkern.reduce.reduced.normal_equations import reduced_normal_equations
        reduced_normal_equations(Xw, yw, np.zeros((3, D)), omega)
        fits = [fit_bigkern(bench, client, path, n, m, args.omega, Xt, yt, args.profile,
                            args.task_rows) for n in rows]
        peer = peers(bench, path, size["peer_rows"], m, args.omega, Xt, yt)

    print(f"\n## OHTED on {m} reduced centers (omega {args.omega:g}), test MSE on "
          f"{len(yt):.0e} fresh rows; noise variance (floor) {noise_mse:.5f}")
    rows_out = []
    for f in fits:
        ne, rs = f["stage_normal"], f["stage_residual"]
        for label in ("eta", "eta+rtol"):
            s = f[label]
            rows_out.append([
                f"bigkern n={f['n']:.0e} ({f['chunks']} tasks), {label}",
                f"{s['mse']:.5f}", f"{s['mse32']:.5f}", f"{s['kept']}/{s['stable']}",
                f"{s['wnorm']:.3g}", f"{s['sigma2']:.5f}",
                f"{f['fit_seconds']:.1f}", f"{ne.seconds:.1f}", f"{ne.peak / C.GB:.2f}",
                f"{rs.peak / C.GB:.2f}",
                f"{f['reads_centers']:g}+{f['reads_normal']:g}+{f['reads_residual']:g}"])
    for key, label in (("nystroem", "sklearn Nystroem+RidgeCV"), ("ohted_mem", "in-memory OHTED")):
        s = peer[key]
        kept = s.get("kept", f"alpha {s.get('alpha', float('nan')):.0e}")
        rows_out.append([f"{label} n={size['peer_rows']:.0e}", f"{s['mse']:.5f}", "", kept, "", "",
                         f"{s['seconds']:.1f}", "", f"{s['peak'] / C.GB:.2f}", "", ""])
    C.print_table(["fit", "test MSE", "MSE f32 pred", "kept/stable", "|w|", "sigma2 (21)", "fit s",
                   "normal-eq pass s", "peak GB (fit)", "peak GB (resid)", "reads"], rows_out)
    print("  eta: the paper's stable set (gamma > 1e-10); eta+rtol: also gamma > m eps gamma_1 "
          "(round-off of the formed G'G); MSE f32 pred: predicted with float32 kernels, as fitted")
    print("  fit s: sample Ã + normal-equations pass + both OHTED solves (bigkern); "
          "peak = client + workers RSS; reads = passes over the data (Ã + normal eq. + "
          "residual check), counted as read_rows calls / tasks")
    for f in fits:
        print(f"  n={f['n']:.0e}: sigma2 from the pieces (21) {f['eta+rtol']['sigma2']:.6f}, "
              f"from the residual pass {f['sigma2_data']:.6f} "
              f"(ratio {f['sigma2_data'] / f['eta+rtol']['sigma2']:.8f}); rows used "
              f"{f['n_used']:,}")
    big, small = fits[-1], fits[0]
    nys = peer["nystroem"]
    print("\n## ratios")
    print(f"  peak memory, normal-equations pass: n={big['n']:.0e} / n={small['n']:.0e} = "
          f"{big['stage_normal'].peak / small['stage_normal'].peak:.2f} "
          f"(rows x{big['n'] / small['n']:.0f})")
    print(f"  time per sample, normal-equations pass: n={big['n']:.0e} "
          f"{big['stage_normal'].seconds / big['n'] * 1e6:.2f} us vs n={small['n']:.0e} "
          f"{small['stage_normal'].seconds / small['n'] * 1e6:.2f} us")
    print(f"  bigkern n={big['n']:.0e} / sklearn Nystroem n={size['peer_rows']:.0e}: "
          f"test MSE {big['eta+rtol']['mse'] / nys['mse']:.3f}x, excess MSE over the noise "
          f"{(big['eta+rtol']['mse'] - noise_mse) / (nys['mse'] - noise_mse):.3f}x, "
          f"fit time {big['fit_seconds'] / nys['seconds']:.1f}x for "
          f"{big['n'] / size['peer_rows']:.0f}x the rows, per-sample time "
          f"{big['fit_seconds'] / big['n'] / (nys['seconds'] / size['peer_rows']):.3f}x")
    if not math.isfinite(big["eta"]["mse"]):
        print("  (the eta-only rule gave a non-finite prediction)")


if __name__ == "__main__":
    main()
