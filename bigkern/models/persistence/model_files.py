"""Saving and loading fitted estimators: every one of them, as zarr or netCDF, never a pickle.

An estimator's ``to_dataset()`` is a small :class:`xarray.Dataset` (its basis,
coefficients, parameters, classes, feature names, ``bigkern_format`` and
``bigkern_version``); :func:`save_model` writes it through
:mod:`bigkern.models.persistence.model_store` (checksummed, staged, never over an input or a
foreign file) and :func:`load_model` rebuilds the estimator from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import xarray as xr

from bigkern.errors import StoreError
from bigkern.models._format import check_format
from bigkern.models._model_checks import check_model_dataset
from bigkern.models.compact.classifiers import CompactSVC
from bigkern.models.persistence.model_digest import verify_model_digest
from bigkern.models.persistence.model_store import read_model_dataset, write_model_dataset
from bigkern.models.registry import ModelSpec, spec_of

__all__ = ["load_model", "load_model_dataset", "save_model"]


def save_model(
    model: Any, path: str | Path, *, overwrite: bool = False,
    inputs: Sequence[str | Path] = (), storage_options: dict[str, Any] | None = None,
) -> Path | str:
    """Save a fitted bigkern estimator; ``.nc`` paths are netCDF, anything else zarr.

    Parameters
    ----------
    model : fitted bigkern estimator
        Anything with a ``to_dataset`` method (every bigkern estimator).
    path : str, Path or URL
        Target file (``.nc``) or zarr store: a local path or an fsspec URL
        (``s3://bucket/model.zarr``, ``memory://m.nc`` …).
    overwrite : bool
        Replace an existing model file that bigkern wrote (never anything else).
    inputs : sequence of paths
        What the model was fitted from: ``path`` may not be, contain or lie in them.
    storage_options : dict, optional
        fsspec options for a URL (credentials, ``endpoint_url`` …).

    Returns
    -------
    pathlib.Path or str
        The model written: a Path for a local path, the URL as given for a URL.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from bigkern import KernelRidgeClassifier, load_model, save_model
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(100, 2)), rng.integers(0, 2, 100)
    >>> model = KernelRidgeClassifier(omega=0.8).fit(X, y)
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = save_model(model, f"{tmp.name}/model.nc")  # netCDF; other paths: zarr
    >>> path.name, bool((load_model(path).predict(X) == model.predict(X)).all())
    ('model.nc', True)
    >>> tmp.cleanup()
    """
    if not callable(getattr(model, "to_dataset", None)):
        raise TypeError(f"{type(model).__name__} cannot be saved: save_model takes bigkern's "
                        f"fitted estimators (anything with a to_dataset method)")
    return write_model_dataset(model.to_dataset(), path, overwrite=overwrite, inputs=inputs,
                               storage_options=storage_options)


def load_model(path: str | Path, *, storage_options: dict[str, Any] | None = None) -> Any:
    """Load an estimator saved by :func:`save_model`.

    Parameters
    ----------
    path : str, Path or URL
        The model file or store: a local path or an fsspec URL.
    storage_options : dict, optional
        fsspec options for a URL (credentials, ``endpoint_url`` …).

    Raises
    ------
    StoreError
        No model at ``path``, an unfinished or damaged model store (a chunk
        missing or failing its checksum), or a model format newer than this
        bigkern reads (both versions named); a missing digest or a part that
        does not match it; declared sizes over ``bigkern.max_model_elements`` /
        ``bigkern.max_model_chunks``; hyperparameters or arrays no estimator
        can use (see :func:`bigkern.models._model_checks.check_model_dataset`).

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from bigkern import LOOKernelRidge, load_model, save_model
    >>> X = np.linspace(0, 1, 50)[:, None]
    >>> model = LOOKernelRidge(0.5).fit(X, np.sin(6 * X[:, 0]))
    >>> tmp = tempfile.TemporaryDirectory()
    >>> again = load_model(save_model(model, f"{tmp.name}/model.zarr"))
    >>> type(again).__name__, again.omega_, bool(np.allclose(again.predict(X), model.predict(X)))
    ('LOOKernelRidge', 0.5, True)
    >>> tmp.cleanup()
    """
    where = str(path)
    ds = read_model_dataset(path, storage_options, verify=False)
    check_format(ds, _known_format(ds.attrs.get("model")))  # a newer file: "upgrade bigkern"
    verify_model_digest(ds, where)
    return load_model_dataset(ds, where=where)


def _spec(name: Any) -> ModelSpec | None:
    """The registry's row of the class a saved model names (None: no such class)."""
    try:
        return spec_of(str(name))
    except KeyError:
        return None


def _known_format(name: Any) -> int:
    """The model format this bigkern reads for the family of the class named ``name``."""
    from bigkern.models.persistence import compact_files, expansion_files, regression_files

    spec = _spec(name)
    family = spec.family if spec is not None else "expansion"
    return {"rls": regression_files.FORMAT, "periodic": regression_files.FORMAT,
            "compact": compact_files.FORMAT, "expansion": expansion_files.FORMAT}[family]


def load_model_dataset(ds: xr.Dataset, *, where: str = "dataset") -> Any:
    """Rebuild a fitted estimator from its ``to_dataset()`` output.

    Parameters
    ----------
    ds : xarray.Dataset
        A model's dataset.
    where : str
        Where it came from (the model's path or URL), for messages.

    Raises
    ------
    StoreError
        A hyperparameter, label or array no estimator can use, or a part the
        model's family needs is missing: naming ``where`` and the part.
    """
    check_model_dataset(ds, where)
    try:
        return _rebuild(ds)
    except StoreError:
        raise
    except KeyError as err:
        raise StoreError(f"model {where}: {err} is missing") from None
    except (ValueError, TypeError, IndexError) as err:
        raise StoreError(f"model {where} cannot be rebuilt: {type(err).__name__}: {err}") from None


def _rebuild(ds: xr.Dataset) -> Any:
    from bigkern.models.persistence.compact_files import compact_from_dataset
    from bigkern.models.persistence.expansion_files import expansion_from_dataset
    from bigkern.models.persistence.regression_files import regressor_from_dataset

    name = ds.attrs.get("model")
    spec = _spec(name)
    if spec is None:
        raise ValueError(f"not a bigkern model dataset (model={name!r})")
    if spec.family in ("rls", "periodic"):
        return regressor_from_dataset(ds, spec.cls)
    if spec.family == "compact":
        return compact_from_dataset(ds, spec.cls,
                                    support_from_coef=issubclass(spec.cls, CompactSVC))
    return expansion_from_dataset(ds, spec.cls)
