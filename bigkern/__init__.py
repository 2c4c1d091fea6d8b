"""bigkern: out-of-core, distributed Gaussian-kernel learning on satellite scenes.

Scenes in zarr → exact percentile bins on Dask → a small kernel solve →
lazy cloud masks written back to zarr.
"""

from bigkern import config
from bigkern.cluster import connect
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
)
from bigkern.features import with_features
from bigkern.io import (
    Samples,
    ingest_misr_text,
    load_model,
    load_regression,
    open_scenes,
    read_misr_text,
    read_regression_csv,
    save_model,
    stack_samples,
    validate_scenes,
    write_scenes,
)
from bigkern.kernels import CompactSupport, Gaussian, gaussian_kernel
from bigkern.models import (
    BinnedKernelRidge,
    BinnedSVC,
    CompactKernelPCA,
    CompactKernelRidge,
    CompactLSSVC,
    CompactSVC,
    GaussianRLS,
    KernelExpansion,
    KernelRidgeClassifier,
    LOOKernelRidge,
    OHTRegressor,
    PeriodicKernelRidge,
)
from bigkern.predict import predict_scenes, write_predictions
from bigkern.reduce import (
    DECILES,
    alignment_sparsity,
    bin_statistics,
    gram_report,
    percentile_bins,
    quantile_edges,
    quantile_summary,
    reduced_normal_equations,
    sparse_gram,
)
from bigkern.sampling import random_split, sample_rows
from bigkern.tuning import (
    choose_support_radius,
    difference_noise_variance,
    distance_quantile,
    grid_search_bins,
    holdout_accuracy,
    holdout_grid_search,
    mallows_cp,
)

__version__ = "0.1.0"

__all__ = [
    "DECILES",
    "BigkernError",
    "BigkernWarning",
    "BinnedKernelRidge",
    "BinnedSVC",
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
    "GaussianRLS",
    "IllConditionedWarning",
    "KernelExpansion",
    "KernelRidgeClassifier",
    "LOOKernelRidge",
    "LabelError",
    "NoResidualDegreesOfFreedomError",
    "OHTRegressor",
    "PeriodicKernelRidge",
    "Samples",
    "StoreError",
    "__version__",
    "alignment_sparsity",
    "bin_statistics",
    "choose_support_radius",
    "config",
    "connect",
    "difference_noise_variance",
    "distance_quantile",
    "gaussian_kernel",
    "gram_report",
    "grid_search_bins",
    "holdout_accuracy",
    "holdout_grid_search",
    "ingest_misr_text",
    "load_model",
    "load_regression",
    "mallows_cp",
    "open_scenes",
    "percentile_bins",
    "predict_scenes",
    "quantile_edges",
    "quantile_summary",
    "random_split",
    "read_misr_text",
    "read_regression_csv",
    "reduced_normal_equations",
    "sample_rows",
    "save_model",
    "sparse_gram",
    "stack_samples",
    "validate_scenes",
    "with_features",
    "write_predictions",
    "write_scenes",
]
