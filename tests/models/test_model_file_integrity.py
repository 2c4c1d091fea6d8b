"""Models checksummed whole and loads that cannot be bombed.

Every model file (zarr and netCDF, every family) records a digest of its
attributes and arrays; a flipped attribute, swapped classes or a changed array
is refused naming the model and the part. Declared shapes and chunk counts are
checked from metadata before anything is allocated, and hyperparameters no
estimator can use are refused by name.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr

from bigkern import CompactLSSVC, GaussianRLS, OHTRegressor, PeriodicKernelRidge, ReducedSVC
from bigkern.errors import StoreError
from bigkern.models import (
    BinnedKernelRidgeClassifier,
    KernelRidgeClassifier,
    load_model,
    save_model,
)
from bigkern.models.persistence.model_limits import netcdf_header_shapes
from bigkern.models.persistence.model_store import write_model_dataset

pytestmark = [
    pytest.mark.timeout(120),
    # the compact models fitted on a few rows leave some without a neighbour within the
    # support radius, and say so (a BigkernWarning): expected of these tiny fits
    pytest.mark.filterwarnings(
        "ignore:.*have no neighbour within radius:bigkern.errors.BigkernWarning"),
]

FEATURES = ["NDAI", "SD", "CORR"]


def _data(n: int = 200, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=FEATURES)
    y = np.where(X["NDAI"] + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def _fit(family: str):
    X, y = _data()
    if family == "binned":
        return BinnedKernelRidgeClassifier(omega=1.0).fit(X, y)
    if family == "baseline":
        return KernelRidgeClassifier(omega=1.0).fit(X, y)
    if family == "reduced":
        return ReducedSVC(omega=1.0, random_state=0).fit(X, y)
    if family == "compact":
        return CompactLSSVC(omega=0.8, lam=1e-3).fit(X.values, np.where(y > 0, "cloud", "clear"))
    if family == "oht":
        return OHTRegressor(method="ED", omega=(2.0,)).fit(X, X["NDAI"].values)
    if family == "rls":
        return GaussianRLS().fit(X.values[:60], X["NDAI"].values[:60])
    x = np.random.default_rng(0).uniform(0, 1, 100)
    return PeriodicKernelRidge(omega=0.5, lam=1e-3).fit(x, np.sin(2 * np.pi * x))


FAMILIES = ["binned", "baseline", "reduced", "compact", "oht", "rls", "periodic"]
SUFFIXES = ["zarr", "nc"]
_CACHE: dict[str, object] = {}


def _model(family: str):
    if family not in _CACHE:
        _CACHE[family] = _fit(family)
    return _CACHE[family]


def _test_rows(model) -> np.ndarray:
    n = int(model.n_features_in_)
    return np.random.default_rng(5).uniform(0, 1, size=(40, n))  # periodic: on the circle


def _out(model, Z):
    return model.predict(pd.DataFrame(Z, columns=FEATURES)
                         if getattr(model, "feature_names_in_", None) is not None else Z)


def _edit_attrs(path: Path, edit) -> None:
    """Change a model's root attributes in place, as an editor (not bigkern) would."""
    if path.suffix == ".nc":
        with xr.open_dataset(path) as opened:
            ds = opened.load()
        edit(ds.attrs)
        path.unlink()
        ds.to_netcdf(path, engine="scipy")
    else:
        meta = json.loads((path / "zarr.json").read_text())
        edit(meta["attributes"])
        (path / "zarr.json").write_text(json.dumps(meta))


def _key_attr(ds_attrs: dict) -> str:
    for key in ("intercept", "omega", "params_json"):
        if key in ds_attrs:
            return key
    raise AssertionError(ds_attrs)


# --- a good model round-trips; the digest is written ----------------------------------------

@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("family", FAMILIES)
def test_a_good_model_round_trips_unchanged(tmp_path, family, suffix):
    model = _model(family)
    path = save_model(model, tmp_path / f"m.{suffix}")
    back = load_model(path)
    assert type(back) is type(model) and back.get_params() == model.get_params()
    Z = _test_rows(model)
    np.testing.assert_array_equal(_out(back, Z), _out(model, Z))
    with (xr.open_zarr(path) if suffix == "zarr" else xr.open_dataset(path)) as opened:
        digest = json.loads(opened.attrs["bigkern_digest"])
    assert digest["algorithm"] == "sha256" and set(digest["arrays"]) >= {"feature"}


# --- tampering is refused, naming the model and the part -----------------------------------

@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("family", FAMILIES)
def test_a_flipped_attribute_is_refused(tmp_path, family, suffix):
    path = save_model(_model(family), tmp_path / f"m.{suffix}")

    def flip(attrs):
        key = _key_attr(attrs)
        if key == "params_json":
            attrs[key] = str(attrs[key]).replace("0", "9", 1)
        else:
            attrs[key] = float(attrs[key]) + 8.0  # -1.62 -> 6.38: a wrong model, still plausible

    _edit_attrs(Path(path), flip)
    with pytest.raises(StoreError, match=rf"model {path}: root attributes digest mismatch"):
        load_model(path)


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("family", ["binned", "baseline", "reduced", "compact"])
def test_swapped_classes_are_refused(tmp_path, family, suffix):
    path = save_model(_model(family), tmp_path / f"m.{suffix}")

    def swap(attrs):
        if "classes_json" in attrs:
            attrs["classes_json"] = json.dumps(json.loads(attrs["classes_json"])[::-1])
        else:
            attrs["classes"] = list(np.asarray(attrs["classes"]).tolist())[::-1]

    _edit_attrs(Path(path), swap)
    with pytest.raises(StoreError, match="root attributes digest mismatch"):
        load_model(path)


@pytest.mark.parametrize("family", FAMILIES)
def test_an_array_rewritten_with_a_valid_chunk_checksum_is_refused(tmp_path, family):
    """zarr's CRC-32C covers a chunk's bytes, not what they should be: a value written
    through zarr (a fresh, valid checksum) is caught by the digest."""
    path = save_model(_model(family), tmp_path / "m.zarr")
    name = "coef" if (path / "coef").exists() else next(
        p.name for p in sorted(path.iterdir()) if p.is_dir() and p.name != "feature")
    arr = zarr.open_array(str(path / name), mode="r+")
    first = (0,) * arr.ndim
    arr[first] = float(arr[first]) + 1.0
    with pytest.raises(StoreError, match=rf"variable {name!r} digest mismatch"):
        load_model(path)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_flipped_byte_in_a_netcdf_array_is_refused(tmp_path, family):
    model = _model(family)
    path = save_model(model, tmp_path / "m.nc")
    ds = model.to_dataset()
    name = "coef" if "coef" in ds else next(n for n in ds.data_vars if ds[n].dtype.kind == "f")
    data = bytearray(path.read_bytes())
    first = np.asarray(ds[name].values, dtype=np.float64).ravel()[0]
    at = bytes(data).find(struct.pack(">d", first))
    assert at > 0
    data[at + 7] ^= 0x01  # the last bit of the mantissa: a value wrong in its 16th digit
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=rf"model {path}: variable {name!r} digest mismatch"):
        load_model(path)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_model_without_a_digest_is_refused(tmp_path, suffix):
    path = save_model(_model("baseline"), tmp_path / f"m.{suffix}")
    _edit_attrs(Path(path), lambda attrs: attrs.pop("bigkern_digest"))
    with pytest.raises(StoreError, match=r"records no digest \(bigkern_digest\)"):
        load_model(path)


# --- declared sizes are refused from metadata, fast -----------------------------------------

def _declare(path: Path, name: str, shape: list[int], chunks: list[int] | None = None) -> None:
    """Rewrite a zarr variable's declared shape (and chunks) in every metadata copy."""
    root = json.loads((path / "zarr.json").read_text())
    metas = [json.loads((path / name / "zarr.json").read_text()),
             root["consolidated_metadata"]["metadata"][name]]
    for meta in metas:
        meta["shape"] = shape
        if chunks is not None:
            meta["chunk_grid"]["configuration"]["chunk_shape"] = chunks
    (path / name / "zarr.json").write_text(json.dumps(metas[0]))
    (path / "zarr.json").write_text(json.dumps(root))


@pytest.mark.parametrize(("shape", "chunks", "what"), [
    ([10**9], None, r"declares shape \(1000000000,\) \(1e\+09 elements\), over the limit of "
                    r"200,000,000 \(bigkern.max_model_elements\)"),
    ([10**12], None, r"declares shape \(1000000000000,\) \(1e\+12 elements\).*"
                     r"bigkern.max_model_elements"),
    ([10**8], [1], r"declares 100,000,000 chunks .* \(bigkern.max_model_chunks\)"),
])
def test_a_huge_declared_zarr_model_is_refused_before_allocating(tmp_path, shape, chunks, what):
    model = _model("baseline")
    path = save_model(model, tmp_path / "m.zarr")
    with xr.open_zarr(path) as opened:
        dims = opened["coef"].dims
    assert len(dims) == 1
    _declare(path, "coef", shape, chunks)
    start = time.perf_counter()
    with pytest.raises(StoreError, match=rf"model {path}: variable 'coef' {what}"):
        load_model(path)
    assert time.perf_counter() - start < 5  # well under a second when the machine is free


def test_a_huge_declared_netcdf_dimension_is_refused_before_allocating(tmp_path):
    path = save_model(_model("baseline"), tmp_path / "m.nc")
    data = bytearray(path.read_bytes())
    shapes = netcdf_header_shapes(bytes(data))
    n = shapes["coef"][0]
    at = bytes(data).find(b"basis\x00\x00\x00" + struct.pack(">i", n))
    assert at > 0
    data[at + 8:at + 12] = struct.pack(">i", 10**9)
    path.write_bytes(bytes(data))
    start = time.perf_counter()
    with pytest.raises(StoreError, match=rf"model {path}: variable '\w+' declares shape "
                                         r"\(1000000000.*bigkern.max_model_elements"):
        load_model(path)
    assert time.perf_counter() - start < 5


# --- hyperparameters no estimator can use ---------------------------------------------------

@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("omega", [0.0, -1.0, float("nan"), float("inf"), 1e-300, 1e300])
def test_a_bad_omega_is_named(tmp_path, omega, suffix):
    ds = _model("baseline").to_dataset()
    ds.attrs["omega"] = omega
    path = write_model_dataset(ds, tmp_path / f"m.{suffix}")  # a valid digest of a bad value
    with pytest.raises(StoreError, match=rf"model {path}: attribute 'omega' \(the kernel "
                                         r"width\) is .*reals in \[1e-100, 1e\+100\]"):
        load_model(path)


@pytest.mark.parametrize(("classes", "why"), [
    ([1, 1], "must differ"), ([1], "two class labels or more"), ([float("nan"), 1.0], "finite"),
    (["cloud", 1], "must all be finite numbers or all strings"),
])
def test_bad_classes_are_named(tmp_path, classes, why):
    ds = _model("compact").to_dataset()
    ds.attrs["classes_json"] = json.dumps(classes)
    path = write_model_dataset(ds, tmp_path / "m.zarr")
    with pytest.raises(StoreError, match=rf"model {path}: attribute 'classes_json' .*{why}"):
        load_model(path)


@pytest.mark.parametrize("kind", ["baseline", "compact"])
def test_more_classes_than_columns_are_named(tmp_path, kind):
    ds = _model(kind).to_dataset()
    key = "classes_json" if "classes_json" in ds.attrs else "classes"
    ds.attrs[key] = json.dumps([1, 2, 3]) if key == "classes_json" else [1, 2, 3]
    path = write_model_dataset(ds, tmp_path / "m.zarr")
    with pytest.raises(StoreError, match=rf"attribute '{key}' names 3 classes but variable "
                                         rf"'\w+' has 1 column\(s\); 3 expected"):
        load_model(path)


def test_a_non_finite_intercept_and_a_missing_variable_are_named(tmp_path):
    ds = _model("baseline").to_dataset()
    bad = ds.copy()
    bad.attrs["intercept"] = float("inf")
    path = write_model_dataset(bad, tmp_path / "inf.zarr")
    with pytest.raises(StoreError, match="attribute 'intercept' is inf; it must be finite"):
        load_model(path)
    path = write_model_dataset(ds.drop_vars("offset"), tmp_path / "missing.nc")
    with pytest.raises(StoreError, match=rf"model {path}: .*'offset'"):
        load_model(path)


# --- the command -----------------------------------------------------------------------------

@pytest.mark.slow
def test_predict_with_a_tampered_model_prints_one_line(tmp_path):
    from bigkern.datasets import make_scenes
    from bigkern.scenes import write_scenes

    write_scenes(make_scenes(1, (16, 16), seed=1, radiances=False).compute(),
                 tmp_path / "scenes.zarr")
    path = save_model(_model("baseline"), tmp_path / "model.zarr")
    _edit_attrs(path, lambda attrs: attrs.update(intercept=float(attrs["intercept"]) + 8.0))
    out = subprocess.run(
        [sys.executable, "-m", "bigkern", "predict", "scenes.zarr", "model.zarr", "-o", "p.zarr",
         "--workers", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=240,
        env=dict(os.environ))
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("bigkern: error:")]
    assert errors == [out.stderr.strip().splitlines()[-1]], out.stderr
    assert errors[0] == ("bigkern: error: model model.zarr: root attributes digest mismatch "
                         "(the file was changed or damaged after it was written)"), out.stderr
    assert not (tmp_path / "p.zarr").exists()


@pytest.mark.parametrize("family", ["expansion", "regressor", "compact"])
def test_a_parameter_this_bigkern_does_not_take_is_an_error_not_a_default(family, tmp_path):
    """A model written by a bigkern with another parameter name (GaussianRLS's ``sigma``
    before ``omega``) is refused: dropped, the width would come back at its default."""
    import json

    from bigkern.models import CompactLSSVC, GaussianRLS
    from bigkern.models.persistence.model_files import load_model_dataset

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    model = {"expansion": lambda: KernelRidgeClassifier(omega=0.7).fit(X, y),
             "regressor": lambda: GaussianRLS(omega=0.3).fit(X, X[:, 0]),
             "compact": lambda: CompactLSSVC(omega=0.7, radius=2.0).fit(X, y)}[family]()
    ds = model.to_dataset()
    params = json.loads(ds.attrs["params_json"])
    params["sigma"] = params.pop("omega")
    ds.attrs["params_json"] = json.dumps(params, sort_keys=True)
    with pytest.raises(StoreError, match=r"records parameters \['sigma'\] that \w+ of bigkern "
                                         r".* does not take .* refit the model"):
        load_model_dataset(ds, where="old.zarr")
    path = write_model_dataset(ds, tmp_path / "old.zarr")  # a whole, checksummed old file
    with pytest.raises(StoreError, match=r"model .*old\.zarr cannot be rebuilt.*\['sigma'\]"):
        load_model(path)
