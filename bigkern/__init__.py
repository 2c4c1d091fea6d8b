"""bigkern: out-of-core, distributed Gaussian-kernel learning on satellite scenes.

Scenes in zarr, netCDF or GeoTIFF → exact percentile bins on Dask → a small kernel
solve → lazy cloud masks written back.

Every public name is importable from here (``bigkern.BinnedSVC``,
``from bigkern import open_scenes``), and each is imported on first use: ``import
bigkern`` loads only the settings and the model registry, so the command line, a
worker and a quick ``bigkern.__version__`` do not pay for scikit-learn, SciPy,
numba and matplotlib until they need them.

The names live in one table, :data:`PUBLIC_NAMES`; the estimators' rows are the
model registry's. ``__all__``, the lazy imports, the type stubs
(``bigkern/__init__.pyi``) and the API reference (``docs/api/index.md``) are made
from it, and a test checks that they agree.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from bigkern import config as config
from bigkern.lazy import Section, facade_sources
from bigkern.models.registry import SECTIONS, specs
from bigkern.version import __version__ as __version__


def _estimators(section: str) -> dict[str, str]:
    """The registry's estimators of one API section: class name → module."""
    return {spec.name: str(spec.estimator).partition(":")[0]
            for spec in specs() if spec.section == section}


_ERRORS = "bigkern.errors"

#: Every public name, by section of the API reference.
PUBLIC_NAMES: tuple[Section, ...] = (
    Section("Scenes and stores", {
        "open_scenes": "bigkern.scenes.reading",
        "write_scenes": "bigkern.scenes.writing",
        "validate_scenes": "bigkern.scenes.reading",
        "ingest_misr_text": "bigkern.datasets.misr_text",
        "read_misr_text": "bigkern.datasets.misr_text",
        "with_features": "bigkern.features.derived",
        "stack_samples": "bigkern.scenes.samples",
        "Samples": "bigkern.scenes.samples",
    }),
    Section("Jobs: fit, predict, plot", {
        "fit_scenes": "bigkern.jobs.fit",
        "predict_scenes": "bigkern.jobs.predict",
        "write_predictions": "bigkern.jobs.predict",
        "plot_scene": "bigkern.jobs.plot",
        "plot_reliability": "bigkern.jobs.reliability_figure",
    }),
    Section("Clusters", {"connect": "bigkern.cluster.client"}),
    *(Section(title, _estimators(key)) for key, title in SECTIONS.items()),
    Section("Model files", {
        "save_model": "bigkern.models.persistence.model_files",
        "load_model": "bigkern.models.persistence.model_files",
    }),
    Section("Kernels", {
        "Gaussian": "bigkern.kernels.kernel",
        "Laplacian": "bigkern.kernels.kernel",
        "Matern32": "bigkern.kernels.kernel",
        "Matern52": "bigkern.kernels.kernel",
        "Kernel": "bigkern.kernels.kernel",
        "Basis": "bigkern.kernels.basis",
        "KernelExpansion": "bigkern.kernels.expansion",
        "gaussian_kernel": "bigkern.kernels.kernel",
        "CompactSupport": "bigkern.kernels.compact",
        "PeriodicGaussian": "bigkern.kernels.periodic",
        "nystrom_spectrum": "bigkern.jobs.nystrom_spectrum",
        "plot_nystrom_spectrum": "bigkern.jobs.nystrom_figure",
    }),
    Section("Distributed passes", {
        "percentile_bins": "bigkern.reduce.binning.percentile",
        "bin_statistics": "bigkern.reduce.binning.bins",
        "BinningPlan": "bigkern.reduce.binning.plan",
        "DECILES": "bigkern.reduce.binning.percentile",
        "quantile_edges": "bigkern.reduce.binning.quantiles",
        "quantile_summary": "bigkern.reduce.binning.quantiles",
        "select_reduced_set": "bigkern.reduce.reduced.reduced_set",
        "reduced_normal_equations": "bigkern.reduce.reduced.normal_equations",
        "sample_rows": "bigkern.reduce.sampling",
        "random_split": "bigkern.reduce.sampling",
        "sparse_gram": "bigkern.reduce.compact.sparse_gram",
        "gram_report": "bigkern.reduce.compact.sparse_gram",
        "alignment_sparsity": "bigkern.reduce.compact.alignment",
    }, intro="Percentile bins and exact quantiles, the reduced set and its normal equations, "
             "row\nsamples and splits, the sparse Gram matrix and its alignment curves."),
    Section("Tuning", {
        "grid_search_bins": "bigkern.jobs.tuning",
        "holdout_grid_search": "bigkern.jobs.tuning",
        "holdout_accuracy": "bigkern.jobs.tuning",
        "choose_support_radius": "bigkern.models.criteria",
        "distance_quantile": "bigkern.models.criteria",
        "mallows_cp": "bigkern.models.criteria",
        "difference_noise_variance": "bigkern.models.criteria",
    }),
    Section("Regression data files", {
        "read_regression_csv": "bigkern.datasets.regression_csv",
        "load_regression": "bigkern.datasets.regression_csv",
    }),
    Section("Errors and warnings", {
        **dict.fromkeys(("BigkernError", "StoreError", "LabelError", "DataQualityError",
                         "ClusterError", "NoResidualDegreesOfFreedomError",
                         "UnknownSettingError", "MissingExtraError", "BigkernWarning"),
                        _ERRORS),
        "ChunkWarning": "bigkern.cluster.chunking",
        **dict.fromkeys(("IllConditionedWarning", "DoublePrecisionWarning",
                         "ExtendedPrecisionWarning"), _ERRORS),
    }),
    Section("Settings: `bigkern.config`", dict.fromkeys(("get", "set", "known_settings"),
                                                        "bigkern.config"),
            intro="The [settings page](../user-guide/settings.md) lists every setting and "
                  "its default.", module="bigkern.config"),
    Section("Synthetic data: `bigkern.datasets`", {
        "make_scenes": "bigkern.datasets.synthetic_scenes",
        "GreenRed": "bigkern.datasets.kernel_examples",
        "make_three_clusters": "bigkern.datasets.kernel_examples",
        "shared_data_dir": "bigkern.datasets.shared",
    }, module="bigkern.datasets"),
)

#: Submodules that are public names themselves.
SUBMODULES = ("config", "datasets")

_SOURCES = facade_sources(PUBLIC_NAMES)

__all__ = sorted([*_SOURCES, *SUBMODULES, "__version__"])


def __getattr__(name: str) -> Any:
    """Import a public name, or a submodule (``bigkern.scenes``), on first use; keep it here."""
    if name in _SOURCES:
        value: Any = getattr(importlib.import_module(_SOURCES[name]), name)
    elif name in SUBMODULES or (not name.startswith("__")
                                and importlib.util.find_spec(f"bigkern.{name}") is not None):
        value = importlib.import_module(f"bigkern.{name}")
    else:
        raise AttributeError(f"module 'bigkern' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
