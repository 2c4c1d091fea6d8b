"""Lippert & Rifkin, Fig. 3: Gaussian RLS tends to the degree-k polynomial fit as σ → ∞.

Data (the paper's section 6): n = 150 points x ~ U[0, 1], y = f(x) + N(0, .05²) with
f(x) = .5(1 − x) + 150x(x − .25)(x − .3)(x − .75)(x − .95), seed 0.

For k = 0, 1, 2, 4 and s = 10⁰ … 10¹²: ``GaussianRLS(omega=s, lam=s^−(2k+1))`` fitted in
double precision (``precision="double"``: the eigensystem path; a
``DoublePrecisionWarning`` is counted) and in extended precision
(``precision="extended"``: python-flint arb, else mpmath; predictions as
``yᵀ[(K + λnI)⁻¹ k(x)]``). Printed per (k, s): the condition estimate of K + λnI, the
max |prediction − polyfit_k| on 201 grid points of [0, 1] for both precisions, the
digits used, and the wall time of fit + predict for both (one run each; the fit
includes the exact LOO error of the single λ). A second table checks the even-power
regime λ = s^−2k, whose limit is the degree-k fit with penalty n·k!·a_k² on its
leading coefficient (see tests/solvers/test_gaussian_rls.py), not plain polyfit. A last
table times the two extended backends (python-flint, mpmath) on one solve at n = 30 and 60.

Writes the table to ``--out`` (default benchmarks/results/lippert_rifkin.txt) and the
figure (prediction curves for growing s against the polyfit limit, one panel per k)
next to it as .png.

    python benchmarks/lippert_rifkin.py [--small] [--out PATH]
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
import warnings
from math import factorial
from pathlib import Path

import _common as C
import numpy as np

from bigkern.models.regression.rls import GaussianRLS
from bigkern.solvers.rls import DoublePrecisionWarning
from bigkern.solvers.rls_extended import extended_backend

KS = (0, 1, 2, 4)
CURVE_SCALES = (1.0, 1e1, 1e2, 1e3, 1e4, 1e6, 1e8, 1e10)


def sample(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The paper's data set: x ~ U[0, 1], y = f(x) + N(0, .05²)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n)
    return x, truth(x) + 0.05 * rng.standard_normal(n)


def truth(x: np.ndarray) -> np.ndarray:
    """f(x) = .5(1 − x) + 150x(x − .25)(x − .3)(x − .75)(x − .95)."""
    return 0.5 * (1 - x) + 150 * x * (x - 0.25) * (x - 0.3) * (x - 0.75) * (x - 0.95)


def fit_predict(x, y, grid, s, lam, precision):
    """Fit + predict; returns (predictions, model, seconds, warned)."""
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = GaussianRLS(omega=s, lam=lam, precision=precision).fit(x[:, None], y)
        pred = model.predict(grid[:, None])
    warned = any(issubclass(w.category, DoublePrecisionWarning) for w in caught)
    return pred, model, time.perf_counter() - t, warned


def regularized_limit(x, y, grid, k):
    """The λ = s^−2k limit: min Σ (y − p(x))² + n·k!·a_k² over polynomials of degree k."""
    M = x[:, None] ** np.arange(k + 1)
    pen = np.zeros((k + 1, k + 1))
    pen[k, k] = np.sqrt(len(x) * factorial(k))
    a = np.linalg.lstsq(np.vstack([M, pen]), np.concatenate([y, np.zeros(k + 1)]),
                        rcond=None)[0]
    return (grid[:, None] ** np.arange(k + 1)) @ a


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], "lippert-rifkin")
    p.add_argument("--out", type=Path, default=None,
                   help="table path (default benchmarks/results/lippert_rifkin.txt; "
                        "with --small, the workdir)")
    args = p.parse_args()
    out = args.out or (args.workdir / "lippert_rifkin.txt" if args.small else
                       Path(__file__).parent / "results" / "lippert_rifkin.txt")
    out.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    with contextlib.redirect_stdout(C.Tee(sys.stdout, buf)):
        run(args.small, out.with_suffix(".png"))
    out.write_text(buf.getvalue())
    print(f"table written to {out}")


def run(small: bool, png: Path) -> None:
    C.header("Lippert & Rifkin Fig. 3: Gaussian RLS → polyfit as σ = s → ∞, λ = s^-(2k+1)")
    n = 60 if small else 150
    scales = [10.0**e for e in (range(0, 13, 3) if small else range(13))]
    backend = "python-flint" if extended_backend() == "flint" else "mpmath"
    print(f"# n = {n}, noise SD .05, seed 0, x grid of 201 points; extended backend {backend}")
    x, y = sample(n)
    grid = np.linspace(0, 1, 201)
    rows, curves = [], {}
    t_dbl, t_ext = [], []
    for k in KS:
        limit = np.polyval(np.polyfit(x, y, k), grid)
        for s in scales:
            lam = s ** -(2 * k + 1)
            pd, md, td, warned = fit_predict(x, y, grid, s, lam, "double")
            pe, me, te, _ = fit_predict(x, y, grid, s, lam, "extended")
            t_dbl.append(td)
            t_ext.append(te)
            curves[k, s] = pe
            rows.append([k, f"{s:.0e}", f"{lam:.1e}", f"{md.condition_:.1e}",
                         f"{np.abs(pd - limit).max():.2e}", "yes" if warned else "no",
                         f"{np.abs(pe - limit).max():.2e}", me.dps_,
                         f"{np.abs(pd - pe).max():.1e}", f"{td:.3f}", f"{te:.2f}",
                         f"{te / td:.0f}"])
    print()
    print("max |prediction − polyfit(x, y, k)| over the grid (double: precision='double', "
          "ext: precision='extended'); warned = DoublePrecisionWarning raised")
    C.print_table(["k", "s", "λ", "cond(K+λnI)", "double", "warned", "ext", "digits",
                   "|double−ext|", "t double s", "t ext s", "ratio"], rows)
    print(f"\ntotal fit+predict time: double {sum(t_dbl):.2f} s, extended {sum(t_ext):.2f} s "
          f"(median ratio ext/double {np.median(np.divide(t_ext, t_dbl)):.0f}x)")

    print("\neven power λ = s^-2k (extended): the limit is the degree-k fit with penalty "
          "n·k!·a_k², not polyfit")
    rows = []
    for k in (1, 2, 4):
        reg = regularized_limit(x, y, grid, k)
        plain = np.polyval(np.polyfit(x, y, k), grid)
        for s in scales[2::2] if not small else scales[1:]:
            pe, _, _, _ = fit_predict(x, y, grid, s, s ** (-2.0 * k), "extended")
            rows.append([k, f"{s:.0e}", f"{np.abs(pe - reg).max():.2e}",
                         f"{np.abs(pe - plain).max():.2e}"])
    C.print_table(["k", "s", "|ext − regularized limit|", "|ext − polyfit|"], rows)
    backends(small)
    plot(x, y, grid, curves, scales, png)


def backends(small: bool) -> None:
    """Time the two extended-precision backends on the same solve (k = 2, s = 1e3)."""
    from bigkern.solvers.rls_extended import extended_solve

    print("\nextended backends, predict at 201 points (k = 2, s = 1e3, λ = s^-5), one run each")
    rows = []
    for n in (30,) if small else (30, 60):
        x, y = sample(n)
        ridge = n * 1e3**-5
        res = {}
        for backend in ("flint", "mpmath"):
            if backend == "flint" and extended_backend() != "flint":
                continue
            t = time.perf_counter()
            pred, dps = extended_solve(x[:, None], y, 1e3, [ridge],
                                       Z=np.linspace(0, 1, 201)[:, None], backend=backend)
            res[backend] = (time.perf_counter() - t, dps, pred)
        if len(res) == 2:
            (tf, df, pf), (tm, dm, pm) = res["flint"], res["mpmath"]
            rows.append([n, f"{tf:.2f}", df, f"{tm:.2f}", dm, f"{tm / tf:.0f}",
                         f"{np.abs(pf - pm).max():.1e}"])
    if rows:
        C.print_table(["n", "flint s", "digits", "mpmath s", "digits", "ratio",
                       "max |flint − mpmath|"], rows)


def plot(x, y, grid, curves, scales, png: Path) -> None:
    """One panel per k: data, f, the polyfit limit and the extended-precision curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8), sharex=True, sharey=True)
    shown = [s for s in CURVE_SCALES if s in scales] or scales
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(shown)))
    for ax, k in zip(axes.flat, KS, strict=True):
        ax.plot(x, y, ".", color="0.6", ms=4, label="data")
        ax.plot(grid, truth(grid), color="0.3", lw=1, label="f")
        for s, c in zip(shown, colors, strict=True):
            ax.plot(grid, curves[k, s], color=c, lw=1.2, label=f"s = {s:.0e}")
        ax.plot(grid, np.polyval(np.polyfit(x, y, k), grid), "r--", lw=2,
                label="polyfit, degree k")
        ax.set_title(f"k = {k}: σ = s, λ = s^-{2 * k + 1}")
        ax.set_ylim(-0.6, 1.0)
    for ax in axes[1]:
        ax.set_xlabel("x")
    axes[0, 0].legend(fontsize=7, ncol=2)
    fig.suptitle("Gaussian RLS (extended precision) → the degree-k polynomial fit as s → ∞")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"figure written to {png}")


if __name__ == "__main__":
    main()
