"""Type stubs of the public names; made from the table in bigkern/__init__.py."""

from bigkern import config as config
from bigkern import datasets as datasets
from bigkern.cluster.chunking import ChunkWarning as ChunkWarning
from bigkern.cluster.client import connect as connect
from bigkern.datasets.misr_text import ingest_misr_text as ingest_misr_text
from bigkern.datasets.misr_text import read_misr_text as read_misr_text
from bigkern.datasets.regression_csv import load_regression as load_regression
from bigkern.datasets.regression_csv import read_regression_csv as read_regression_csv
from bigkern.errors import BigkernError as BigkernError
from bigkern.errors import BigkernWarning as BigkernWarning
from bigkern.errors import ClusterError as ClusterError
from bigkern.errors import DataQualityError as DataQualityError
from bigkern.errors import DoublePrecisionWarning as DoublePrecisionWarning
from bigkern.errors import ExtendedPrecisionWarning as ExtendedPrecisionWarning
from bigkern.errors import IllConditionedWarning as IllConditionedWarning
from bigkern.errors import LabelError as LabelError
from bigkern.errors import MissingExtraError as MissingExtraError
from bigkern.errors import NoResidualDegreesOfFreedomError as NoResidualDegreesOfFreedomError
from bigkern.errors import StoreError as StoreError
from bigkern.errors import UnknownSettingError as UnknownSettingError
from bigkern.features.derived import with_features as with_features
from bigkern.jobs.fit import fit_scenes as fit_scenes
from bigkern.jobs.nystrom_figure import plot_nystrom_spectrum as plot_nystrom_spectrum
from bigkern.jobs.nystrom_spectrum import nystrom_spectrum as nystrom_spectrum
from bigkern.jobs.plot import plot_scene as plot_scene
from bigkern.jobs.predict import predict_scenes as predict_scenes
from bigkern.jobs.predict import write_predictions as write_predictions
from bigkern.jobs.reliability_figure import plot_reliability as plot_reliability
from bigkern.jobs.tuning import grid_search_bins as grid_search_bins
from bigkern.jobs.tuning import holdout_accuracy as holdout_accuracy
from bigkern.jobs.tuning import holdout_grid_search as holdout_grid_search
from bigkern.kernels.basis import Basis as Basis
from bigkern.kernels.compact import CompactSupport as CompactSupport
from bigkern.kernels.expansion import KernelExpansion as KernelExpansion
from bigkern.kernels.kernel import Gaussian as Gaussian
from bigkern.kernels.kernel import Kernel as Kernel
from bigkern.kernels.kernel import Laplacian as Laplacian
from bigkern.kernels.kernel import Matern32 as Matern32
from bigkern.kernels.kernel import Matern52 as Matern52
from bigkern.kernels.kernel import gaussian_kernel as gaussian_kernel
from bigkern.kernels.periodic import PeriodicGaussian as PeriodicGaussian
from bigkern.models.baselines import KernelRidgeClassifier as KernelRidgeClassifier
from bigkern.models.binned import BinnedKernelRidgeClassifier as BinnedKernelRidgeClassifier
from bigkern.models.binned_svc import BinnedSVC as BinnedSVC
from bigkern.models.compact.classifiers import CompactLSSVC as CompactLSSVC
from bigkern.models.compact.classifiers import CompactSVC as CompactSVC
from bigkern.models.compact.pca import CompactKernelPCA as CompactKernelPCA
from bigkern.models.compact.ridge import CompactKernelRidge as CompactKernelRidge
from bigkern.models.criteria import choose_support_radius as choose_support_radius
from bigkern.models.criteria import difference_noise_variance as difference_noise_variance
from bigkern.models.criteria import distance_quantile as distance_quantile
from bigkern.models.criteria import mallows_cp as mallows_cp
from bigkern.models.persistence.model_files import load_model as load_model
from bigkern.models.persistence.model_files import save_model as save_model
from bigkern.models.reduced_kernel.nystrom import NystromKernelRidge as NystromKernelRidge
from bigkern.models.reduced_kernel.nystrom import NystromKernelRidgeClassifier as NystromKernelRidgeClassifier
from bigkern.models.reduced_kernel.reduced import ReducedSVC as ReducedSVC
from bigkern.models.reduced_kernel.reduced_svr import ReducedSVR as ReducedSVR
from bigkern.models.regression.kernel_regression import LOOKernelRidge as LOOKernelRidge
from bigkern.models.regression.oht import OHTRegressor as OHTRegressor
from bigkern.models.regression.periodic import PeriodicKernelRidge as PeriodicKernelRidge
from bigkern.models.regression.rls import GaussianRLS as GaussianRLS
from bigkern.reduce.binning.bins import bin_statistics as bin_statistics
from bigkern.reduce.binning.percentile import DECILES as DECILES
from bigkern.reduce.binning.percentile import percentile_bins as percentile_bins
from bigkern.reduce.binning.plan import BinningPlan as BinningPlan
from bigkern.reduce.binning.quantiles import quantile_edges as quantile_edges
from bigkern.reduce.binning.quantiles import quantile_summary as quantile_summary
from bigkern.reduce.compact.alignment import alignment_sparsity as alignment_sparsity
from bigkern.reduce.compact.sparse_gram import gram_report as gram_report
from bigkern.reduce.compact.sparse_gram import sparse_gram as sparse_gram
from bigkern.reduce.reduced.normal_equations import reduced_normal_equations as reduced_normal_equations
from bigkern.reduce.reduced.reduced_set import select_reduced_set as select_reduced_set
from bigkern.reduce.sampling import random_split as random_split
from bigkern.reduce.sampling import sample_rows as sample_rows
from bigkern.scenes.reading import open_scenes as open_scenes
from bigkern.scenes.reading import validate_scenes as validate_scenes
from bigkern.scenes.samples import Samples as Samples
from bigkern.scenes.samples import stack_samples as stack_samples
from bigkern.scenes.writing import write_scenes as write_scenes
from bigkern.version import __version__ as __version__

__all__ = [
    "Basis",
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
    "DECILES",
    "DataQualityError",
    "DoublePrecisionWarning",
    "ExtendedPrecisionWarning",
    "Gaussian",
    "GaussianRLS",
    "IllConditionedWarning",
    "Kernel",
    "KernelExpansion",
    "KernelRidgeClassifier",
    "LOOKernelRidge",
    "LabelError",
    "Laplacian",
    "Matern32",
    "Matern52",
    "MissingExtraError",
    "NoResidualDegreesOfFreedomError",
    "NystromKernelRidge",
    "NystromKernelRidgeClassifier",
    "OHTRegressor",
    "PeriodicGaussian",
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
    "plot_reliability",
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
