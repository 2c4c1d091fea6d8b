"""Lee & Huang's Table 1 pattern (benchmarks/lee_huang_tables.py) on the shared real data.

The paper's pattern, checked at fixed parameters — the points the benchmark's
nested selection chose most often over its 10 outer folds
(``benchmarks/results/lee_huang_table1.txt``), never a choice made on these folds:

* mushroom: ``ReducedSVC`` with 400 centers (≤ 10% of each training fold) has a
  5-fold CV test error within 1 point of scikit-learn's ``SVC``;
* cpu_small: ``ReducedSVR`` with 10% of each training fold as centers has a 3-fold CV
  test MSE within 5% of scikit-learn's ``SVR``.

5- and 3-fold rather than the benchmark's 10-fold CV (same ``StratifiedKFold`` /
``KFold``, shuffled, seed 0; per-fold ``StandardScaler``, targets standardized, ε = 0.1
SD) to keep the file near a minute on two cores: libsvm's SVR at the chosen C = 100
takes ~4 s per fit on cpu_small, and 5 folds of it took 80 s in a full run. And the
benchmark's ``--small`` path runs once.
Every test skips when ``../shared/data`` is absent.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow_file(seconds=95)

# The benchmark's most frequent choices (10-fold nested selection, seed 0): (ω, C).
MUSHROOM = {"svc": (2.0, 1.0), "rsvm": (4.0, 10.0), "size": 400}
CPU_SMALL = {"svr": (5.0, 100.0), "rsvr": (8.0, 1e9)}


def _data(benchmark_script, name):
    mod = benchmark_script("lee_huang_tables")
    absent = mod.missing_files([name])
    if absent:
        pytest.skip(f"real data absent: {', '.join(absent)}")
    return mod, mod.load_set(name)


def _single_core():
    import contextlib

    import dask
    from threadpoolctl import threadpool_limits

    stack = contextlib.ExitStack()
    stack.enter_context(threadpool_limits(limits=1))
    stack.enter_context(dask.config.set(scheduler="sync"))
    return stack


@pytest.mark.realdata
def test_mushroom_rsvm_within_one_point_of_libsvm(benchmark_script):
    from sklearn.model_selection import StratifiedKFold
    from sklearn.svm import SVC

    from bigkern import ReducedSVC

    _, data = _data(benchmark_script, "mushroom")
    X, y = data.X, data.y
    assert X.shape == (8124, 116) and set(np.unique(X)) == {0.0, 1.0}
    (om_s, c_s), (om_r, c_r) = MUSHROOM["svc"], MUSHROOM["rsvm"]
    err = {"svc": [], "rsvm": []}
    with _single_core():
        for k, (tr, te) in enumerate(StratifiedKFold(5, shuffle=True, random_state=0)
                                     .split(X, y)):
            assert MUSHROOM["size"] <= 0.1 * len(tr)
            svc = SVC(C=c_s, gamma=1 / (2 * om_s**2)).fit(X[tr], y[tr])
            rsvm = ReducedSVC(om_r, c_r, size=MUSHROOM["size"], standardize=False,
                              random_state=k).fit(X[tr], y[tr])
            assert rsvm.fit_report_["converged"] and rsvm.fit_report_["n_basis"] == 400
            err["svc"].append(np.mean(svc.predict(X[te]) != y[te]))
            err["rsvm"].append(np.mean(rsvm.predict(X[te]) != y[te]))
    svc_err, rsvm_err = np.mean(err["svc"]), np.mean(err["rsvm"])
    print(f"mushroom 5-fold test error: SVC {svc_err:.4f}, ReducedSVC(400) {rsvm_err:.4f}")
    assert rsvm_err <= svc_err + 0.01, (svc_err, rsvm_err)


@pytest.mark.realdata
def test_cpu_small_rsvr_within_five_percent_mse_of_svr(benchmark_script):
    from sklearn.model_selection import KFold
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR

    from bigkern import ReducedSVR

    mod, data = _data(benchmark_script, "cpu_small")
    X, y = data.X, data.y
    assert X.shape == (8192, 12)
    (om_s, c_s), (om_r, c_r) = CPU_SMALL["svr"], CPU_SMALL["rsvr"]
    eps = mod.EPSILON
    mse = {"svr": [], "rsvr": []}
    with _single_core():  # 3 folds (80 s with 5): the benchmark runs the full 10-fold table
        for k, (tr, te) in enumerate(KFold(3, shuffle=True, random_state=0).split(X)):
            sc = StandardScaler().fit(X[tr])
            Xtr, Xte = sc.transform(X[tr]), sc.transform(X[te])
            ym, ys = y[tr].mean(), y[tr].std()
            ytr = (y[tr] - ym) / ys
            size = int(0.1 * len(tr))  # 546 centers: 10% of the training fold
            svr = SVR(C=c_s, gamma=1 / (2 * om_s**2), epsilon=eps).fit(Xtr, ytr)
            rsvr = ReducedSVR(om_r, c_r, epsilon=eps, size=size, standardize=False,
                              random_state=k).fit(Xtr, ytr)
            assert rsvr.fit_report_["converged"] and rsvr.fit_report_["n_basis"] == size
            mse["svr"].append(np.mean((svr.predict(Xte) * ys + ym - y[te]) ** 2))
            mse["rsvr"].append(np.mean((rsvr.predict(Xte) * ys + ym - y[te]) ** 2))
    svr_mse, rsvr_mse = np.mean(mse["svr"]), np.mean(mse["rsvr"])
    print(f"cpu_small 3-fold test MSE: SVR {svr_mse:.3f}, ReducedSVR {rsvr_mse:.3f} "
          f"({100 * (rsvr_mse / svr_mse - 1):+.1f}%)")
    assert rsvr_mse <= 1.05 * svr_mse, (svr_mse, rsvr_mse)


@pytest.mark.realdata
def test_small_run_tables(tmp_path, capsys, benchmark_script):
    """The benchmark's ``table1 --small`` path: 3 folds, 2 x 2 mesh, 1,500-row caps."""
    mod, _ = _data(benchmark_script, "ionosphere")
    if mod.missing_files(["mushroom", "cpu_small"]):
        pytest.skip("real data absent")
    args = mod.argparse.Namespace(sets=list(mod.DEFAULT_SETS), folds=10, seed=0,
                                  max_rows=None, json=tmp_path / "t1.json", small=True)
    mod.small_table1(args)
    assert args.folds == 3 and args.sets == ["ionosphere", "mushroom", "cpu_small"]
    summaries = mod.run_table1(args)
    out = capsys.readouterr().out
    assert "## Ratios and the acceptance pattern" in out and "Comp-Activ (8192x21)" in out
    assert [s["name"] for s in summaries] == args.sets
    assert (tmp_path / "t1.json").is_file()
    for s in summaries:
        assert s["folds"] == 3 and s["n"] <= 1500
        lib = s["methods"]["libsvm"]
        for key, m in s["methods"].items():
            assert len(m["test_errors"]) == 3 and m["cpu"] > 0
            if s["kind"] == "classification":
                assert 0 <= m["test_error"] <= 0.5
            else:
                assert 0 < m["test_rel"] < 0.2
            if key != "libsvm":
                assert m["basis"] <= 0.1 * s["n"] and m["basis_max_fraction"] <= 0.1
                assert np.isfinite(m["time_ratio"]) and "accept" in m
        assert lib["basis"] > 0
