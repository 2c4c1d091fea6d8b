"""Reader of the regression CSV files (Delve / StatLib sets of ``shared/data/regression``).

Format: a header row of column names, one sample a row, comma separated, the
**last column is the target**. Input columns:

* A column whose every value parses as a number is numeric. Numerically coded
  nominal columns (autoMpg's ``cylinders``, ``model``, ``origin``) stay numbers by
  default, as in Hagiwara's experiments (Table 1: auto-mpg with d = 7 inputs);
  name them in ``one_hot`` to expand them instead.
* A column with any non-numeric value (abalone's ``Sex``: M/F/I) is nominal and
  is one-hot encoded: one 0/1 column ``name=level`` per level, levels sorted.
* Missing values (empty, ``?``, ``NA``, ``NaN``) raise
  :class:`~bigkern.errors.DataQualityError` naming the line and the column; the
  files of ``shared/data/regression`` have none.

Files are local paths or fsspec URLs (``s3://…``, ``memory://…``) with
``storage_options``.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bigkern.errors import DataQualityError
from bigkern.store.urls import PathOrURL, StorageOptions, location

__all__ = ["REGRESSION_SETS", "RegressionData", "load_regression", "read_regression_csv"]

REGRESSION_SETS: tuple[str, ...] = (
    "abalone", "ailerons", "autoMpg", "bank8FM", "boston_housing", "cpu_small", "elevators",
    "kin8nm", "puma8NH",
)
"""Names (file stems) of the regression sets in ``shared/data/regression``."""

_MISSING = {"", "?", "na", "nan", "null"}


@dataclass(frozen=True)
class RegressionData:
    """A regression data set read from CSV.

    Attributes
    ----------
    X : ndarray, shape (n, d), float64
        Inputs (nominal columns one-hot encoded).
    y : ndarray, shape (n,), float64
        Target.
    feature_names : tuple of str
        Names of the ``d`` input columns (``col=level`` for one-hot columns).
    target_name : str
        Header of the target column.
    name : str
        The file's stem.
    """

    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    target_name: str
    name: str

    @property
    def n_samples(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_regression_csv(
    path: PathOrURL, *, one_hot: Sequence[str] = (), storage_options: StorageOptions = None
) -> RegressionData:
    """Read a regression CSV file (header row, last column = target).

    Parameters
    ----------
    path : str, Path or URL
        The CSV file: a local path or an fsspec URL.
    one_hot : sequence of str
        Numeric input columns to one-hot encode as nominal (non-numeric columns
        always are).
    storage_options : mapping, optional
        fsspec options for a URL (see :func:`bigkern.store.urls.location`).

    Returns
    -------
    RegressionData

    Raises
    ------
    FileNotFoundError
        No such file.
    DataQualityError
        A missing or non-numeric target, a missing input value, a row of the wrong
        length, or fewer than two columns / no data rows.
    ValueError
        A name in ``one_hot`` that is not an input column.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from bigkern import read_regression_csv
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(tmp.name) / "toy.csv"
    >>> _ = path.write_text("x1,colour,y\\n0.5,red,1.0\\n1.5,blue,2.5\\n2.5,red,3.0\\n")
    >>> data = read_regression_csv(path)
    >>> data.name, data.feature_names, data.target_name
    ('toy', ('x1', 'colour=blue', 'colour=red'), 'y')
    >>> data.X.tolist(), data.y.tolist()
    ([[0.5, 0.0, 1.0], [1.5, 1.0, 0.0], [2.5, 0.0, 1.0]], [1.0, 2.5, 3.0])
    >>> tmp.cleanup()
    """
    loc = location(path, storage_options)
    if not loc.local and not loc.exists():
        raise FileNotFoundError(f"no such file: {path}")
    with loc.open("r", newline="") as fh:
        rows = [r for r in csv.reader(fh) if r and any(c.strip() for c in r)]
    if not rows:
        raise DataQualityError(f"{path}: empty file (no header row)")
    header = [h.strip() for h in rows[0]]
    body = rows[1:]
    if len(header) < 2:
        raise DataQualityError(f"{path}: needs at least one input and a target column; "
                               f"header is {header}")
    if not body:
        raise DataQualityError(f"{path}: no data rows after the header")
    for i, r in enumerate(body):
        if len(r) != len(header):
            raise DataQualityError(f"{path}, line {i + 2}: {len(r)} fields, the header has "
                                   f"{len(header)}")
    unknown = [c for c in one_hot if c not in header[:-1]]
    if unknown:
        raise ValueError(f"one_hot names {unknown}, not input columns of {path} "
                         f"({header[:-1]})")
    cells = [[c.strip() for c in r] for r in body]
    for j, name in enumerate(header):
        for i, r in enumerate(cells):
            if r[j].lower() in _MISSING:
                raise DataQualityError(f"{path}, line {i + 2}, column {name!r}: missing "
                                       f"value {r[j]!r}")
    target = []
    for i, r in enumerate(cells):
        value = _number(r[-1])
        if value is None:
            raise DataQualityError(f"{path}, line {i + 2}, target column {header[-1]!r}: "
                                   f"{r[-1]!r} is not a finite number")
        target.append(value)
    columns: list[np.ndarray] = []
    names: list[str] = []
    for j, name in enumerate(header[:-1]):
        raw = [r[j] for r in cells]
        values = [_number(v) for v in raw]
        if name not in one_hot and all(v is not None for v in values):
            columns.append(np.array(values, dtype=np.float64))
            names.append(name)
            continue
        for level in sorted(set(raw)):
            columns.append(np.array([v == level for v in raw], dtype=np.float64))
            names.append(f"{name}={level}")
    X = np.column_stack(columns)
    return RegressionData(X=X, y=np.array(target, dtype=np.float64),
                          feature_names=tuple(names), target_name=header[-1],
                          name=loc.name[: -len(loc.suffix)] if loc.suffix else loc.name)


def load_regression(name: str, root: PathOrURL | None = None, *,
                    one_hot: Sequence[str] = (),
                    storage_options: StorageOptions = None) -> RegressionData:
    """Read ``<root>/<name>.csv`` (default root: ``shared_data_dir() / "regression"``).

    Parameters
    ----------
    name : str
        File stem, e.g. ``"kin8nm"`` (see :data:`REGRESSION_SETS`).
    root : str, Path or URL, optional
        Folder of the CSV files (a local path or an fsspec URL).
    one_hot : sequence of str
        See :func:`read_regression_csv`.
    storage_options : mapping, optional
        fsspec options for a URL (see :func:`bigkern.store.urls.location`).

    Returns
    -------
    RegressionData

    Raises
    ------
    FileNotFoundError
        The folder or the file is absent.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from bigkern import load_regression
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(tmp.name) / "toy.csv"  # root/<name>.csv
    >>> _ = path.write_text("x1,x2,y\\n0,1,0.5\\n1,0,1.5\\n1,1,2\\n")
    >>> data = load_regression("toy", root=tmp.name)
    >>> data.n_samples, data.feature_names, data.y.tolist()
    (3, ('x1', 'x2'), [0.5, 1.5, 2.0])
    >>> tmp.cleanup()
    """
    if root is None:
        from bigkern.datasets import shared_data_dir

        base = shared_data_dir()
        if base is None:
            raise FileNotFoundError("the shared data folder (../shared/data) is absent; set "
                                    "BIGKERN_SHARED_DATA or pass root")
        root = base / "regression"
    path = location(root, storage_options).joinpath(f"{name}.csv")
    if not path.isfile():
        raise FileNotFoundError(f"no regression set {name!r}: {path} does not exist")
    return read_regression_csv(path.local_path if path.local else path, one_hot=one_hot)
