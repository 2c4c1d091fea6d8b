"""Hagiwara (2011) Tables 2-3 on the regression sets of ``../shared/data/regression``.

For each data set and repetition: a random train/test split; inputs standardized
with the training statistics; for every method (RM, OHTED, OHTED2, OHTGS,
OHTGS2) the Gaussian width is chosen from {1, 2, 5, 8} by two-fold CV on the
training set (RM's λ by exact LOO inside each fit); the test MSE divided by the
test variance is recorded, and for every OHT method the number of kept
components. Tables: mean ± 2 SD (SD with ddof = 1) over repetitions, next to the
paper's figures.

One kernel matrix, one eigendecomposition (RM, ED, ED2) and one pivoted Cholesky
(GS, GS2) per (training set, width) serve all five methods
(:func:`bigkern.models.regression.oht.fit_at_width`). Repetitions run in ``--jobs``
processes, BLAS pinned to one thread each (OpenBLAS threads thrash on a shared
2-core machine: ``eigh`` of 1000×1000 took 5 s with threads vs 0.4 s without).

Not part of the test suite. ``--small`` is a < 1 min smoke run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Hagiwara's Table 1 (n_train, n_test, d) and Tables 2-3 (mean, 2 SD), for the sets we have.
PAPER_SIZES = {"ailerons": (4000, 2000), "elevators": (4000, 2000), "kin8nm": (4000, 2000),
               "puma8NH": (3000, 1499), "autoMpg": (300, 92)}
PAPER_T2 = {  # RM, OHTED, OHTED2, OHTGS, OHTGS2
    "ailerons": [(0.422, 0.031), (0.178, 0.011), (0.178, 0.012), (0.526, 0.053), (0.525, 0.054)],
    "elevators": [(0.116, 0.016), (0.106, 0.015), (0.100, 0.014), (0.115, 0.016),
                  (0.109, 0.015)],
    "kin8nm": [(0.117, 0.011), (0.158, 0.025), (0.123, 0.023), (0.171, 0.020), (0.135, 0.020)],
    "puma8NH": [(0.342, 0.026), (0.373, 0.029), (0.350, 0.056), (0.414, 0.030), (0.360, 0.027)],
    "autoMpg": [(0.129, 0.046), (0.144, 0.047), (0.141, 0.059), (0.145, 0.057), (0.136, 0.049)],
}
PAPER_T3 = {"ailerons": [(6.70, 2.92), (10.54, 2.59)], "elevators": [(40.88, 7.22),
                                                                     (101.42, 5.38)],
            "kin8nm": [(208.84, 17.90), (612.28, 17.23)], "puma8NH": [(64.26, 7.93),
                                                                       (254.82, 128.47)],
            "autoMpg": [(10.30, 4.38), (24.52, 34.58)]}
SETS = ("ailerons", "elevators", "kin8nm", "puma8NH", "autoMpg",  # in the paper
        "bank8FM", "cpu_small", "abalone", "boston_housing")  # present, not in the paper
MODELS = ("RM", "ED", "ED2", "GS", "GS2")
LABELS = {"RM": "RM", "ED": "OHTED", "ED2": "OHTED2", "GS": "OHTGS", "GS2": "OHTGS2"}


def one_rep(name: str, rep: int, n_train: int, n_test: int, widths: tuple[float, ...],
            seed: int) -> dict[str, Any]:
    """One train/test split of data set ``name``: every model's test error and sizes."""
    from sklearn.metrics import mean_squared_error
    from threadpoolctl import threadpool_limits

    from bigkern.datasets.regression_csv import load_regression
    from bigkern.kernels import kernel_expansion
    from bigkern.models.regression.kernel_regression import fit_at_width, two_fold_width_scores

    t0 = time.perf_counter()
    with threadpool_limits(1):
        data = load_regression(name)
        rng = np.random.default_rng([seed, rep])
        idx = rng.permutation(data.n_samples)
        tr, te = idx[:n_train], idx[n_train:n_train + n_test]
        X, y = data.X, data.y
        offset = X[tr].mean(0)
        scale = X[tr].std(0)
        scale[scale == 0] = 1.0
        Ztr, Zte = (X[tr] - offset) / scale, (X[te] - offset) / scale
        cv = two_fold_width_scores(Ztr, y[tr], widths, MODELS, random_state=seed + rep)
        chosen = {m: widths[int(np.argmin(cv[m]))] for m in MODELS}
        out: dict[str, Any] = {"name": name, "rep": rep, "cv": {m: cv[m].tolist()
                                                                for m in MODELS}}
        var = float(np.var(y[te]))
        for omega in sorted(set(chosen.values())):
            ms = tuple(m for m in MODELS if chosen[m] == omega)
            fits = fit_at_width(Ztr, y[tr], omega, ms)
            for m in ms:
                if m not in fits:  # l = n at every width: no usable fit
                    out[m] = {"omega": omega, "error": None}
                    continue
                w, b, info = fits[m]
                pred = kernel_expansion(Zte, Ztr, w, omega, b, dtype=np.float64)
                rec = {"omega": omega, "error": mean_squared_error(y[te], pred) / var}
                if m == "RM":
                    rec["ridge"] = info[0]
                else:
                    rec.update(n_components=info.n_components, n_stable=info.n_stable,
                               n_basis=len(info.basis_used), sigma2=info.sigma2)
                out[m] = rec
    out["seconds"] = time.perf_counter() - t0
    return out


def _ms(values: list[float]) -> tuple[float, float]:
    a = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if a.size == 0:
        return float("nan"), float("nan")
    return float(a.mean()), float(2 * a.std(ddof=1)) if a.size > 1 else 0.0


def _cell(m: float, s: float, digits: int = 3) -> str:
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def report(results: list[dict[str, Any]], sizes: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """Print Tables 2 and 3 (ours next to the paper's); return the summary."""
    from _common import print_table

    names = [n for n in SETS if any(r["name"] == n for r in results)]
    summary: dict[str, Any] = {}
    for n in names:
        rs = [r for r in results if r["name"] == n]
        summary[n] = {"reps": len(rs), "n_train": sizes[n][0], "n_test": sizes[n][1]}
        for m in MODELS:
            errs = [r[m]["error"] for r in rs]
            summary[n][m] = {"error": _ms(errs),
                             "failed": sum(e is None for e in errs),
                             "omega": [r[m]["omega"] for r in rs]}
            if m != "RM":
                summary[n][m]["n_components"] = _ms([r[m].get("n_components") for r in rs])
                summary[n][m]["n_stable"] = _ms([r[m].get("n_stable") for r in rs])
                summary[n][m]["n_basis"] = _ms([r[m].get("n_basis") for r in rs])
    print("\n## Table 2: test MSE / test variance, mean ± 2 SD over repetitions "
          "(paper in the line below)\n")
    rows = []
    for n in names:
        s = summary[n]
        rows.append([f"{n} ({s['reps']}×, n={s['n_train']}/{s['n_test']})",
                     *[_cell(*s[m]["error"]) for m in MODELS]])
        if n in PAPER_T2:
            p = PAPER_SIZES[n]
            rows.append([f"  paper (50×, n={p[0]}/{p[1]})",
                         *[_cell(*v) for v in PAPER_T2[n]]])
    print_table(["data set", *[LABELS[m] for m in MODELS]], rows)
    print("\n## Table 3: kept orthogonal components of OHTGS / OHTGS2, mean ± 2 SD "
          "(stable-set size l and basis functions used alongside)\n")
    rows = []
    for n in names:
        s = summary[n]
        rows.append([n, *[_cell(*s[m]["n_components"], digits=2) for m in ("GS", "GS2")],
                     _cell(*s["GS2"]["n_stable"], digits=1),
                     _cell(*s["GS2"]["n_basis"], digits=2),
                     _cell(*s["ED2"]["n_components"], digits=1)])
        if n in PAPER_T3:
            rows.append(["  paper", *[_cell(*v, digits=2) for v in PAPER_T3[n]], "", "", ""])
    print_table(["data set", "OHTGS", "OHTGS2", "GS2 stable l", "GS2 basis used",
                 "OHTED2 kept"], rows)
    print("\n## Chosen widths (count per ω over repetitions)\n")
    rows = []
    for n in names:
        cells = []
        for m in MODELS:
            om = summary[n][m]["omega"]
            cells.append(" ".join(f"{w:g}:{om.count(w)}" for w in sorted(set(om))))
        rows.append([n, *cells])
    print_table(["data set", *[LABELS[m] for m in MODELS]], rows)
    print("\n## Pattern checks (ED2 ≤ ED, GS2 ≤ GS in mean error; ED2/GS2 vs RM)\n")
    rows = []
    for n in names:
        e = {m: summary[n][m]["error"][0] for m in MODELS}
        rows.append([n, "yes" if e["ED2"] <= e["ED"] else "no",
                     "yes" if e["GS2"] <= e["GS"] else "no",
                     f"{e['ED2'] / e['RM']:.3f}", f"{e['GS2'] / e['RM']:.3f}"])
    print_table(["data set", "ED2 ≤ ED", "GS2 ≤ GS", "ED2 / RM", "GS2 / RM"], rows)
    return summary


def main() -> None:
    from _common import command_line, header

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true", help="smoke run (< 1 min)")
    p.add_argument("--sets", nargs="*", default=list(SETS))
    p.add_argument("--reps", type=int, default=20,
                   help="repetitions per set of the paper (paper: 50; 50 where n_train <= 500)")
    p.add_argument("--extra-reps", type=int, default=10,
                   help="repetitions per set not in the paper")
    p.add_argument("--max-train", type=int, default=2000,
                   help="cap on the training size (paper: Table 1, up to 4000)")
    p.add_argument("--max-test", type=int, default=2000, help="cap on the test size")
    p.add_argument("--widths", type=float, nargs="*", default=[1.0, 2.0, 5.0, 8.0],
                   help="candidate widths ω (paper: 1 2 5 8)")
    p.add_argument("--wide", type=float, nargs="*", default=[],
                   help="a second candidate set run after the first (e.g. 1 2 5 8 16 32)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=2011)
    p.add_argument("--out", type=Path, help="write the raw results and summary as JSON")
    a = p.parse_args()
    if a.small:
        a.sets, a.reps, a.max_train, a.max_test = ["kin8nm", "autoMpg"], 2, 300, 300
        a.extra_reps = 2
    header("Hagiwara (2011) Tables 2-3: OHT vs RM on the shared regression sets")
    from bigkern.datasets.regression_csv import load_regression

    sizes = {}
    for n in a.sets:
        total = load_regression(n).n_samples
        tr, te = PAPER_SIZES.get(n, (min(4000, total * 2 // 3), total // 3))
        tr = min(tr, a.max_train, total - 1)
        sizes[n] = (tr, max(1, min(te, a.max_test, total - tr)))
    reps = {n: (a.reps if n in PAPER_SIZES else a.extra_reps) for n in a.sets}
    if not a.small:
        reps.update({n: max(reps[n], 50) for n in a.sets if sizes[n][0] <= 500})
    print(f"# repetitions {reps}, sizes (train/test) {sizes}, {a.jobs} processes", flush=True)
    runs = []
    for widths in (a.widths, a.wide):
        if not widths:
            continue
        print(f"\n# ---- candidate widths ω ∈ {widths} ----", flush=True)
        t0 = time.perf_counter()
        results = []
        with ProcessPoolExecutor(a.jobs) as pool:
            futs = [pool.submit(one_rep, n, r, *sizes[n], tuple(widths), a.seed)
                    for n in a.sets for r in range(reps[n])]
            for f in futs:
                r = f.result()
                results.append(r)
                print(f"  {r['name']} rep {r['rep']}: {r['seconds']:.1f} s; "
                      + ", ".join(f"{m} {r[m]['error']:.3f}" if r[m]['error'] is not None
                                  else f"{m} -" for m in MODELS), flush=True)
        print(f"# total {time.perf_counter() - t0:.0f} s for widths {widths}")
        print(f"\n# ==== tables for candidate widths ω ∈ {widths} ====")
        runs.append({"widths": widths, "summary": report(results, sizes), "results": results})
    if a.out:
        a.out.write_text(json.dumps({"command": command_line(), "sizes": sizes, "reps": reps,
                                     "runs": runs}, indent=1))
        print(f"# results written to {a.out}")


if __name__ == "__main__":
    main()
