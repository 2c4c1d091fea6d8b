"""Seeded synthetic data (MISR-like scenes, the papers' toy examples) and the real data's home."""

from bigkern.datasets.kernel_examples import GreenRed, make_three_clusters
from bigkern.datasets.scenes import FEATURES, RADIANCES, make_scenes
from bigkern.datasets.shared import shared_data_dir

__all__ = [
    "FEATURES",
    "RADIANCES",
    "GreenRed",
    "make_scenes",
    "make_three_clusters",
    "shared_data_dir",
]
