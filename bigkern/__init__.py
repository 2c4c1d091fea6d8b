"""bigkern: out-of-core, distributed Gaussian-kernel learning on satellite scenes.

Scenes in zarr → exact percentile bins on Dask → a small kernel solve →
lazy cloud masks written back to zarr.

Every public name is importable from here (``bigkern.BinnedSVC``,
``from bigkern import open_scenes``), and each is imported on first use: ``import
bigkern`` loads only the settings, so the command line, a worker and a quick
``bigkern.__version__`` do not pay for scikit-learn, SciPy, numba and matplotlib
until they need them.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from bigkern import config
from bigkern.version import __version__

# the module each public name comes from
_SOURCES: dict[str, str] = {
    # bigkern.cluster.client
    "connect": "bigkern.cluster.client",
    # bigkern.errors
    "BigkernError": "bigkern.errors",
    "BigkernWarning": "bigkern.errors",
    "ClusterError": "bigkern.errors",
    "DataQualityError": "bigkern.errors",
    "DoublePrecisionWarning": "bigkern.errors",
    "ExtendedPrecisionWarning": "bigkern.errors",
    "IllConditionedWarning": "bigkern.errors",
    "LabelError": "bigkern.errors",
    "MissingExtraError": "bigkern.errors",
    "NoResidualDegreesOfFreedomError": "bigkern.errors",
    "StoreError": "bigkern.errors",
    "UnknownSettingError": "bigkern.errors",
    # bigkern.features
    "with_features": "bigkern.features",
    # bigkern.io
    "ChunkWarning": "bigkern.cluster.chunking",
    "Samples": "bigkern.scenes",
    "ingest_misr_text": "bigkern.datasets",
    "load_regression": "bigkern.datasets",
    "open_scenes": "bigkern.scenes",
    "read_misr_text": "bigkern.datasets",
    "read_regression_csv": "bigkern.datasets",
    "stack_samples": "bigkern.scenes",
    "validate_scenes": "bigkern.scenes",
    "write_scenes": "bigkern.scenes",
    # bigkern.kernels
    "CompactSupport": "bigkern.kernels",
    "Gaussian": "bigkern.kernels",
    "GaussianBasis": "bigkern.kernels",
    "GaussianExpansion": "bigkern.kernels",
    "gaussian_kernel": "bigkern.kernels",
    "nystrom_spectrum": "bigkern.jobs.nystrom_spectrum",
    "plot_nystrom_spectrum": "bigkern.jobs.nystrom_figure",
    # bigkern.models
    "BinnedKernelRidgeClassifier": "bigkern.models",
    "BinnedSVC": "bigkern.models",
    "CompactKernelPCA": "bigkern.models",
    "CompactKernelRidge": "bigkern.models",
    "CompactLSSVC": "bigkern.models",
    "CompactSVC": "bigkern.models",
    "GaussianRLS": "bigkern.models",
    "KernelRidgeClassifier": "bigkern.models",
    "LOOKernelRidge": "bigkern.models",
    "NystromKernelRidge": "bigkern.models",
    "NystromKernelRidgeClassifier": "bigkern.models",
    "OHTRegressor": "bigkern.models",
    "PeriodicKernelRidge": "bigkern.models",
    "ReducedSVC": "bigkern.models",
    "ReducedSVR": "bigkern.models",
    "load_model": "bigkern.models",
    "save_model": "bigkern.models",
    # bigkern.jobs
    "fit_scenes": "bigkern.jobs.fit",
    "plot_scene": "bigkern.jobs.plot",
    # bigkern.jobs.predict
    "predict_scenes": "bigkern.jobs.predict",
    "write_predictions": "bigkern.jobs.predict",
    # bigkern.reduce
    "DECILES": "bigkern.reduce",
    "BinningPlan": "bigkern.reduce",
    "alignment_sparsity": "bigkern.reduce",
    "bin_statistics": "bigkern.reduce",
    "gram_report": "bigkern.reduce",
    "percentile_bins": "bigkern.reduce",
    "quantile_edges": "bigkern.reduce",
    "quantile_summary": "bigkern.reduce",
    "random_split": "bigkern.reduce",
    "reduced_normal_equations": "bigkern.reduce",
    "sample_rows": "bigkern.reduce",
    "select_reduced_set": "bigkern.reduce",
    "sparse_gram": "bigkern.reduce",
    # bigkern.models.criteria
    "choose_support_radius": "bigkern.models.criteria",
    "difference_noise_variance": "bigkern.models.criteria",
    "distance_quantile": "bigkern.models.criteria",
    "mallows_cp": "bigkern.models.criteria",
    # bigkern.jobs.tuning
    "grid_search_bins": "bigkern.jobs.tuning",
    "holdout_accuracy": "bigkern.jobs.tuning",
    "holdout_grid_search": "bigkern.jobs.tuning",
}
_SUBMODULES = frozenset({"config", "datasets"})


def __getattr__(name: str) -> Any:
    """Import a public name, or a submodule (``bigkern.io``), on first use; keep it here."""
    if name in _SOURCES:
        value: Any = getattr(importlib.import_module(_SOURCES[name]), name)
    elif name in _SUBMODULES or (not name.startswith("__")
                                 and importlib.util.find_spec(f"bigkern.{name}") is not None):
        value = importlib.import_module(f"bigkern.{name}")
    else:
        raise AttributeError(f"module 'bigkern' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from bigkern import config, datasets
    from bigkern.cluster.chunking import ChunkWarning
    from bigkern.cluster.client import connect
    from bigkern.datasets import (
        ingest_misr_text,
        load_regression,
        read_misr_text,
        read_regression_csv,
    )
    from bigkern.errors import (
        BigkernError,
        BigkernWarning,
        ClusterError,
        DataQualityError,
        DoublePrecisionWarning,
        ExtendedPrecisionWarning,
        IllConditionedWarning,
        LabelError,
        NoResidualDegreesOfFreedomError,
        StoreError,
        UnknownSettingError,
    )
    from bigkern.features import with_features
    from bigkern.jobs.fit import fit_scenes
    from bigkern.jobs.plot import plot_scene
    from bigkern.jobs.predict import predict_scenes, write_predictions
    from bigkern.jobs.tuning import (
        grid_search_bins,
        holdout_accuracy,
        holdout_grid_search,
    )
    from bigkern.kernels import (
        CompactSupport,
        Gaussian,
        GaussianBasis,
        GaussianExpansion,
        gaussian_kernel,
        nystrom_spectrum,
        plot_nystrom_spectrum,
    )
    from bigkern.models import (
        BinnedKernelRidgeClassifier,
        BinnedSVC,
        CompactKernelPCA,
        CompactKernelRidge,
        CompactLSSVC,
        CompactSVC,
        GaussianRLS,
        KernelRidgeClassifier,
        LOOKernelRidge,
        NystromKernelRidge,
        NystromKernelRidgeClassifier,
        OHTRegressor,
        PeriodicKernelRidge,
        ReducedSVC,
        ReducedSVR,
        load_model,
        save_model,
    )
    from bigkern.models.criteria import (
        choose_support_radius,
        difference_noise_variance,
        distance_quantile,
        mallows_cp,
    )
    from bigkern.reduce import (
        DECILES,
        BinningPlan,
        alignment_sparsity,
        bin_statistics,
        gram_report,
        percentile_bins,
        quantile_edges,
        quantile_summary,
        random_split,
        reduced_normal_equations,
        sample_rows,
        select_reduced_set,
        sparse_gram,
    )
    from bigkern.scenes import Samples, open_scenes, stack_samples, validate_scenes, write_scenes

__all__ = [
    "DECILES",
    "BigkernError",
    "BigkernWarning",
    "BinnedKernelRidgeClassifier",
    "BinnedSVC",
    "BinningPlan",
    "ChunkWarning",
    "ClusterError",
    "CompactKernelPCA",
    "CompactKernelRidge",
    "CompactLSSVC",
    "CompactSVC",
    "CompactSupport",
    "DataQualityError",
    "DoublePrecisionWarning",
    "ExtendedPrecisionWarning",
    "Gaussian",
    "GaussianBasis",
    "GaussianExpansion",
    "GaussianRLS",
    "IllConditionedWarning",
    "KernelRidgeClassifier",
    "LOOKernelRidge",
    "LabelError",
    "MissingExtraError",
    "NoResidualDegreesOfFreedomError",
    "NystromKernelRidge",
    "NystromKernelRidgeClassifier",
    "OHTRegressor",
    "PeriodicKernelRidge",
    "ReducedSVC",
    "ReducedSVR",
    "Samples",
    "StoreError",
    "UnknownSettingError",
    "__version__",
    "alignment_sparsity",
    "bin_statistics",
    "choose_support_radius",
    "config",
    "connect",
    "datasets",
    "difference_noise_variance",
    "distance_quantile",
    "fit_scenes",
    "gaussian_kernel",
    "gram_report",
    "grid_search_bins",
    "holdout_accuracy",
    "holdout_grid_search",
    "ingest_misr_text",
    "load_model",
    "load_regression",
    "mallows_cp",
    "nystrom_spectrum",
    "open_scenes",
    "percentile_bins",
    "plot_nystrom_spectrum",
    "plot_scene",
    "predict_scenes",
    "quantile_edges",
    "quantile_summary",
    "random_split",
    "read_misr_text",
    "read_regression_csv",
    "reduced_normal_equations",
    "sample_rows",
    "save_model",
    "select_reduced_set",
    "sparse_gram",
    "stack_samples",
    "validate_scenes",
    "with_features",
    "write_predictions",
    "write_scenes",
]
