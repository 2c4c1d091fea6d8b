"""Bit-identical predictions in any block, chunk or worker, on every CPU's BLAS kernels.

A prediction is a sum over the centers for each row. Computed through BLAS, the
order of that sum depends on the kernels OpenBLAS picks, and it picks them by
the block's shape and the processor: a dask chunk of 20 rows and a numpy call
on 50 took other kernels on an Intel Xeon (SkylakeX) and differed by 1e-16.
:meth:`KernelExpansion.decision` therefore evaluates each row by itself, in
a fixed order, so its value cannot depend on the block around it. These tests
check that promise directly, row by row against whole arrays and random
chunkings; ``.ci/run`` runs every ``determinism`` test again under other
``OPENBLAS_CORETYPE`` kernel sets, so a green CI means green on other CPUs too.
What is *not* promised bit for bit (sums over rows in fits whose chunks differ)
is tested to a tolerance where it is tested (see the README's guarantees).
"""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bigkern.kernels import KernelExpansion
from bigkern.models import BinnedSVC, OHTRegressor, ReducedSVC

pytestmark = pytest.mark.determinism


def _expansion(dtype: str, d: int, m: int, seed: int) -> KernelExpansion:
    rng = np.random.default_rng(seed)
    return KernelExpansion.from_parts(rng.normal(size=(m, d)), rng.normal(size=m),
                                        rng.normal(), omega=1.3, offset=rng.normal(size=d),
                                        scale=rng.uniform(0.5, 2, size=d), dtype=dtype)


def _split(n: int, cuts: list[int]) -> list[int]:
    return sorted({c % n for c in cuts if c % n > 0})


@settings(max_examples=25)
@given(dtype=st.sampled_from(["float32", "float64"]), d=st.sampled_from([1, 3, 8, 13, 21]),
       m=st.sampled_from([1, 5, 150, 257]), seed=st.integers(0, 3),
       cuts=st.lists(st.integers(1, 10_000), max_size=5))
def test_a_row_has_one_value_in_any_block(dtype, d, m, seed, cuts):
    e = _expansion(dtype, d, m, seed)
    rng = np.random.default_rng(seed + 10)
    X = rng.normal(size=(203, d)).astype(np.float32 if seed % 2 else np.float64)
    X[17, 0] = np.nan
    whole = e.decision(X)
    by_row = np.concatenate([e.decision(X[i:i + 1]) for i in range(len(X))])
    by_block = np.concatenate([e.decision(part) for part in np.split(X, _split(len(X), cuts))])
    np.testing.assert_array_equal(by_row, whole)
    np.testing.assert_array_equal(by_block, whole)
    assert np.isnan(whole[17]) and np.isfinite(np.delete(whole, 17)).all()


def test_the_blas_path_agrees_to_round_off():
    for dtype, rtol in (("float64", 1e-12), ("float32", 1e-5)):
        e = _expansion(dtype, 5, 300, 1)
        X = np.random.default_rng(2).normal(size=(500, 5))
        scale = np.abs(e.decision(X)).max()
        np.testing.assert_allclose(e.decision(X, path="blas"), e.decision(X),
                                   rtol=0, atol=rtol * scale)


def _xy(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(X.sum(axis=1)) + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("chunks", [1, 7, 20, 64])
def test_model_predictions_do_not_depend_on_the_chunking(chunks):
    X, y = _xy(400, 4, 0)
    Xt, _ = _xy(129, 4, 1)
    labels = np.where(y > 0, 1, -1)
    models = [OHTRegressor(omega=(1.0,)).fit(X, y),
              BinnedSVC().fit(X[:, :3], labels),
              ReducedSVC(size=30, random_state=0).fit(X, labels)]
    for model in models:
        cols = Xt[:, :model.n_features_in_]
        want = model.decision_rows(cols) if hasattr(model, "decision_rows") else None
        got = model.predict(da.from_array(cols, chunks=(chunks, -1))).compute()
        np.testing.assert_array_equal(got, model.predict(cols))
        if want is not None:
            lazy = da.from_array(cols, chunks=(chunks, -1)).map_blocks(
                model.decision_rows, drop_axis=1, dtype=np.float64)
            np.testing.assert_array_equal(lazy.compute(), want)
