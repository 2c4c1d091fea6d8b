"""``bigkern ingest``: scene files into a checksummed zarr store, for users who read many times.

``misr-text`` reads the expert-labelled MISR text files (:mod:`bigkern.datasets.misr_text`);
``netcdf``, ``geotiff``, ``reference`` and ``auto`` read granules as
:func:`bigkern.open_scenes` does (:mod:`bigkern.scenes.granules`) — dims found or
``--dims``, coordinates, CRS and attributes kept — and write them with
:func:`bigkern.write_scenes`, which refuses what ``open_scenes`` would refuse
before writing anything.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bigkern.cli.checks import UsageError, validity_keywords
from bigkern.cli.inputs import dims_found_text, dims_keyword

__all__ = ["run_ingest"]


def _record_graph(X: Any, y: Any, mask: Any, pixel: Any) -> Any:
    from bigkern.reduce.recorded_histograms import KEY_HISTOGRAM_RECORDER

    return KEY_HISTOGRAM_RECORDER.graph(X, y, mask, pixel)


def _make_record(result: Any, meta: dict[str, Any]) -> Any:
    from bigkern.reduce.recorded_histograms import KEY_HISTOGRAM_RECORDER

    return KEY_HISTOGRAM_RECORDER.record(result, meta)


def _deferred_recorder() -> Any:
    """:data:`bigkern.reduce.recorded_histograms.KEY_HISTOGRAM_RECORDER`, imported only when
    the write computes it: the reductions take seconds to import, and granules that cannot
    be used (other label values, unmappable dims) are refused before that."""
    from bigkern.store.key_histograms import KeyHistogramRecorder

    return KeyHistogramRecorder(_record_graph, _make_record)


def run_ingest(args: argparse.Namespace) -> int:
    """``bigkern ingest``: granules (or MISR text files) into a checksummed zarr store."""
    t = time.perf_counter()
    if args.format == "misr-text":
        from bigkern.datasets.misr_text import ingest_misr_text

        path = ingest_misr_text(args.files, args.out, overwrite=args.overwrite,
                                **validity_keywords(args))
        n = len(args.files)
    else:
        from bigkern.scenes.granule_formats import expand_paths, granule_format
        from bigkern.scenes.reading import open_scenes
        from bigkern.scenes.writing import write_scenes
        from bigkern.store.outputs import check_not_input

        files = expand_paths(args.files)
        for f in files:
            found = granule_format(f)
            if args.format != "auto" and found != args.format:
                raise UsageError(f"{f} is a {found} file, not {args.format}: give "
                                 f"'bigkern ingest auto' or '{found}'")
        check_not_input(args.out, files)  # fail fast, before any reading
        scenes = open_scenes(files if len(files) > 1 else files[0], dims=dims_keyword(args),
                             **validity_keywords(args))
        found_dims = dims_found_text(scenes)
        if found_dims:
            print(f"bigkern: dims of {files[0]}{' …' if len(files) > 1 else ''}: {found_dims}",
                  flush=True)
        path = write_scenes(scenes, args.out, overwrite=args.overwrite, inputs=files,
                            recorder=_deferred_recorder())
        n = len(files)
    print(f"bigkern: ingested {n} file(s) into {path} ({time.perf_counter() - t:.1f} s)")
    return 0
