"""Old private home of :mod:`bigkern.reduce.passes`; import from there.

Kept only so that modules of :mod:`bigkern.reduce` still being edited elsewhere
keep importing; delete once nothing imports ``bigkern.reduce._tree``.
"""

from bigkern.reduce.passes import (
    NONFINITE_FEATURE,
    add_counts,
    as_float_block,
    as_row_chunked,
    nonfinite_by_column,
    per_feature_counts,
    require_finite_rows,
    row_partials,
    tree_reduce,
    valid_rows,
    without_per_feature,
)

__all__ = [
    "NONFINITE_FEATURE",
    "add_counts",
    "as_float_block",
    "as_row_chunked",
    "nonfinite_by_column",
    "per_feature_counts",
    "require_finite_rows",
    "row_partials",
    "tree_reduce",
    "valid_rows",
    "without_per_feature",
]
