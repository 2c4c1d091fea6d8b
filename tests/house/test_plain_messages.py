"""Messages that say what happened (issue 40, item 6)."""

from __future__ import annotations

import os

import dask.array as da
import numpy as np
import pytest

from bigkern import BinnedSVC
from bigkern.errors import StoreError
from bigkern.store.outputs import prepare_output


def test_a_dangling_link_as_output_is_called_a_link(tmp_path):
    link = tmp_path / "out.zarr"
    os.symlink(tmp_path / "gone.zarr", link)
    with pytest.raises(StoreError, match=r"out.zarr is a dangling symbolic link \(to .*gone.zarr, "
                                         r"which does not exist\)") as err:
        prepare_output(link, overwrite=True)
    assert "exists" not in str(err.value).replace("does not exist", "")


def test_rows_of_unknown_count_are_named_as_such():
    rng = np.random.default_rng(0)
    X = da.from_array(rng.normal(size=(400, 3)), chunks=100)
    y = da.from_array(np.where(rng.random(400) < 0.5, 1, -1), chunks=100)
    keep = X[:, 0] > -1
    with pytest.raises(ValueError, match=r"X is a dask array of unknown chunk sizes .* call "
                                         r"X.compute_chunk_sizes\(\) first") as err:
        BinnedSVC().fit(X[keep], y[keep])
    assert "nan" not in str(err.value)
