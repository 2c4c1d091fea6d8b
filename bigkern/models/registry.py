"""The model registry: one table of every estimator, read by the CLI, persistence and tests.

Each row (:class:`ModelSpec`) says what an estimator is: its class, what it
predicts (a class, a value, or nothing — a transform), the engine that fits it
at scale, the family of its saved files, and, for the models ``bigkern fit``
offers, their ``--model`` name and default search grid. ``bigkern fit --model``
choices, :func:`~bigkern.models.persistence.model_files.load_model`, the default grids and
the scikit-learn conformance tests all read this table; adding a model takes
its module plus one row (:func:`register` adds a row at run time).

The engines:

``bins``
    percentile bins of the labelled pixels, one pass (Shi & Yu);
``reduced``
    a reduced kernel fitted by passes over the rows (Lee & Huang, Nyström, Hagiwara);
``sparse``
    a sparse Gram matrix of a compactly supported kernel (Zhang, Genton & Liu);
``direct``
    the kernel matrix of the rows in memory (baselines, Lippert & Rifkin).

Examples
--------
>>> from bigkern.models.registry import cli_names, model_class, spec_of
>>> cli_names()
('svc', 'ridge', 'reduced-svc', 'reduced-svr', 'nystrom-krr')
>>> model_class("nystrom-krr", target="value").__name__
'NystromKernelRidge'
>>> spec_of("CompactLSSVC").engine
'sparse'
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

__all__ = ["SECTIONS", "ModelSpec", "check_instances", "cli_names", "cli_spec", "default_grid",
           "model_class", "reference_width", "register", "spec_of", "specs"]

Target = Literal["class", "value", "none"]
Engine = Literal["bins", "reduced", "sparse", "direct"]
Family = Literal["expansion", "compact", "rls", "periodic"]


@dataclass(frozen=True)
class ModelSpec:
    """One row of the registry.

    Attributes
    ----------
    estimator : type or str
        The estimator class, or where it is, ``"module:Class"``: the table names
        bigkern's own by place, so that reading it (``bigkern --help``, the
        ``--model`` choices) imports no estimator; :attr:`cls` imports it.
    target : {"class", "value", "none"}
        What it predicts: a class (a classifier), a value (a regressor) or nothing
        (a transformer).
    engine : {"bins", "reduced", "sparse", "direct"}
        How it is fitted at scale (see the module's docstring).
    family : {"expansion", "compact", "rls", "periodic"}
        The layout of its saved files: every model with a kernel expansion, classifier
        or regressor, is ``expansion``
        (:mod:`bigkern.models.persistence.expansion_files`).
    cli : str, optional
        Its ``bigkern fit --model`` name; one name may serve a classifier and a
        regressor (then ``--target`` picks the regressor).
    grid : mapping, optional
        Its default search grid (parameter → candidates), read through
        :func:`default_grid`: the ``omega`` candidates are multiples of the
        reference width √(d/2) of ``d`` standardized features. ``bigkern fit``
        searches it for the ``bins`` engine; a ``reduced`` model is fitted once,
        at the parameters given, and its grid is the one to search with
        scikit-learn on rows in memory.
    check_params : mapping
        Constructor arguments of the instance scikit-learn's checks run on.
    section : str
        The section of the API reference that lists it (a key of
        :data:`SECTIONS`); empty for a model registered from outside bigkern.
    """

    estimator: type | str
    target: Target
    engine: Engine
    family: Family
    cli: str | None = None
    grid: Mapping[str, tuple[Any, ...]] | None = None
    check_params: Mapping[str, Any] = field(default_factory=dict)
    section: str = ""

    @cached_property
    def cls(self) -> type:
        """The estimator class (imported on first use)."""
        if not isinstance(self.estimator, str):
            return self.estimator
        module, _, name = self.estimator.partition(":")
        return getattr(importlib.import_module(module), name)

    @property
    def name(self) -> str:
        """The class's name (what a saved model records)."""
        if isinstance(self.estimator, str):
            return self.estimator.partition(":")[2]
        return self.estimator.__name__


#: Width candidates in units of the reference width √(d/2), spaced by √2. A squared distance
#: between two rows of d standardized features averages 2d, so a width's effect depends on
#: it only through ω/√(d/2) (the unit is scikit-learn's ``gamma="scale"``). Each grid spans
#: the optima that nested cross-validation finds on data sets of 3 to 116 features (the
#: benchmark page "Default grids against nested cross-validation"); the reduced models'
#: lie in the middle of the range, and Nyström's go wider only as λ → 0, near the linear
#: limit (at λ = 10⁻⁷ its system on mushroom is not positive definite, so its λ grid
#: stops at 10⁻⁶).
_WIDTHS = tuple(2 ** (k / 2) for k in range(-3, 7))  # 0.354 … 8
_WIDTHS_REDUCED = (0.5, 1.0, 2.0, 4.0, 8.0)
_WIDTHS_NYSTROM = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)

#: Shorthands of the table: where each of bigkern's estimators lives, and the seed of the
#: instances scikit-learn's checks run on.
_M = "bigkern.models."

#: The API reference's sections of estimators, by key of :attr:`ModelSpec.section`.
SECTIONS = {
    "bins": "Models on percentile bins",
    "reduced": "Reduced-kernel models",
    "compact": "Compactly supported kernel models",
    "regression": "Regression family",
}
_SEED0 = {"random_state": 0}

_TABLE: list[ModelSpec] = [
    ModelSpec(_M + "binned_svc:BinnedSVC", "class", "bins", "expansion", cli="svc", section="bins",
              grid={"omega": _WIDTHS, "C": (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0)}),
    ModelSpec(_M + "binned:BinnedKernelRidgeClassifier", "class", "bins", "expansion",
              cli="ridge", section="bins",
              grid={"omega": _WIDTHS, "lam": tuple(10.0 ** k for k in range(-4, 3))}),
    ModelSpec(_M + "baselines:KernelRidgeClassifier", "class", "direct", "expansion",
              section="bins"),
    ModelSpec(_M + "reduced_kernel.reduced:ReducedSVC", "class", "reduced", "expansion",
              cli="reduced-svc", section="reduced",
              grid={"omega": _WIDTHS_REDUCED, "C": tuple(10.0 ** k for k in range(-1, 7))}),
    ModelSpec(_M + "reduced_kernel.reduced_svr:ReducedSVR", "value", "reduced", "expansion",
              cli="reduced-svr", check_params=_SEED0, section="reduced"),
    ModelSpec(_M + "reduced_kernel.nystrom:NystromKernelRidgeClassifier", "class", "reduced",
              "expansion", cli="nystrom-krr", check_params=_SEED0, section="reduced",
              grid={"omega": _WIDTHS_NYSTROM, "lam": tuple(10.0 ** k for k in range(-6, 3))}),
    ModelSpec(_M + "reduced_kernel.nystrom:NystromKernelRidge", "value", "reduced", "expansion",
              cli="nystrom-krr", check_params=_SEED0, section="reduced"),
    ModelSpec(_M + "compact.classifiers:CompactSVC", "class", "sparse", "compact",
              section="compact"),
    ModelSpec(_M + "compact.classifiers:CompactLSSVC", "class", "sparse", "compact",
              section="compact"),
    ModelSpec(_M + "compact.ridge:CompactKernelRidge", "value", "sparse", "compact",
              section="compact"),
    ModelSpec(_M + "compact.pca:CompactKernelPCA", "none", "sparse", "compact", section="compact"),
    ModelSpec(_M + "regression.oht:OHTRegressor", "value", "reduced", "expansion",
              check_params={"random_state": 1}, section="regression"),
    ModelSpec(_M + "regression.kernel_regression:LOOKernelRidge", "value", "direct",
              "expansion", section="regression"),
    ModelSpec(_M + "regression.rls:GaussianRLS", "value", "direct", "rls",
              section="regression"),
    ModelSpec(_M + "regression.periodic:PeriodicKernelRidge", "value", "direct", "periodic",
              section="regression"),
]


def specs() -> tuple[ModelSpec, ...]:
    """Every row of the registry, in the table's order."""
    return tuple(_TABLE)


def register(spec: ModelSpec) -> ModelSpec:
    """Add a row (a model of another package, or a test's); its class name must be new.

    Raises
    ------
    ValueError
        A row for a class of that name exists, or the CLI name is taken for that target.
    """
    if any(s.name == spec.name for s in _TABLE):
        raise ValueError(f"a model named {spec.name} is registered already")
    if spec.cli is not None and any(s.cli == spec.cli and s.target == spec.target
                                    for s in _TABLE):
        raise ValueError(f"--model {spec.cli} for target kind {spec.target!r} is taken")
    _TABLE.append(spec)
    return spec


def spec_of(name: str) -> ModelSpec:
    """The row of the class named ``name`` (as a saved model records it).

    Raises
    ------
    KeyError
        No registered class has that name.
    """
    for spec in _TABLE:
        if spec.name == name:
            return spec
    raise KeyError(f"no bigkern model is named {name!r}")


def cli_names() -> tuple[str, ...]:
    """The ``bigkern fit --model`` choices, in the table's order."""
    return tuple(dict.fromkeys(s.cli for s in _TABLE if s.cli is not None))


def cli_spec(cli: str, target: str | None = None) -> ModelSpec:
    """The row ``bigkern fit --model cli`` fits: the regressor's when there is a ``target``.

    Raises
    ------
    ValueError
        An unknown name, or a target for a model that only classifies (or none for
        one that only regresses), saying which model would do.
    """
    rows = [s for s in _TABLE if s.cli == cli]
    if not rows:
        raise ValueError(f"model must be one of {list(cli_names())}; got {cli!r}")
    want = "class" if target is None else "value"
    for spec in rows:
        if spec.target == want:
            return spec
    if target is not None:
        regressors = dict.fromkeys(s.cli for s in _TABLE if s.cli and s.target == "value")
        raise ValueError(f"{cli} is a classifier of the labels: it takes no target (got "
                         f"{target!r}); use {' or '.join(regressors)} to regress {target}")
    raise ValueError(f"{cli} is a regression: name the variable it predicts (a target)")


def model_class(cli: str, target: str | None = None) -> type:
    """The class of :func:`cli_spec`'s row."""
    return cli_spec(cli, target).cls


def check_instances() -> list[Any]:
    """One unfitted instance of every registered class, as scikit-learn's checks run them."""
    return [spec.cls(**spec.check_params) for spec in _TABLE]


def reference_width(n_features: int) -> float:
    """The unit of the default grids' widths: √(d/2) for ``d`` standardized features.

    Two rows of ``d`` independent standardized features lie √(2d) apart on
    average, so ``exp(−‖x − z‖² / (2ω²))`` at this width is e^(−2) ≈ 0.14 there:
    scikit-learn's ``gamma="scale"`` on unit-variance features.

    Examples
    --------
    >>> reference_width(8)
    2.0
    """
    if n_features < 1:
        raise ValueError(f"n_features must be at least 1; got {n_features}")
    return (n_features / 2) ** 0.5


def default_grid(cli: str, n_features: int | None = None, *,
                 target: str | None = None) -> dict[str, list[Any]]:
    """The default search grid of ``bigkern fit --model cli`` on ``n_features`` features.

    ``bigkern fit`` searches it for the binned models; the reduced models'
    grids are for a search with scikit-learn (their fit job fits once).

    Parameters
    ----------
    cli : str
        A ``--model`` name.
    n_features : int, optional
        The number of (standardized) features: the widths are multiples of
        :func:`reference_width`. None gives the multiples themselves.
    target : str, optional
        A target: the grid of the regressor of that ``--model`` name.

    Returns
    -------
    dict
        Parameter → ascending candidates; empty when the model has no grid.

    Examples
    --------
    >>> grid = default_grid("svc", n_features=3)
    >>> len(grid["omega"]), grid["omega"][:3], grid["C"][:3]
    (10, [0.433, 0.612, 0.866], [0.1, 0.3, 1.0])
    """
    spec = cli_spec(cli, target)
    if not spec.grid:
        return {}
    unit = 1.0 if n_features is None else reference_width(n_features)
    return {k: [float(f"{v * unit:.3g}") if k == "omega" else v for v in values]
            for k, values in spec.grid.items()}
