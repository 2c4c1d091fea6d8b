"""``bigkern synth``: seeded synthetic scenes written to a zarr scene store.

The scenes are :func:`bigkern.datasets.make_scenes`, generated a scene a task on the
command's cluster and stored in chunks of bigkern's size
(:func:`bigkern.scenes.reading.default_chunks`).
"""

from __future__ import annotations

import argparse

__all__ = ["run_synth"]


def run_synth(args: argparse.Namespace) -> None:
    """Write ``--scenes`` scenes of ``--shape`` from ``--seed`` to ``-o``."""
    from bigkern.datasets import make_scenes
    from bigkern.reduce.recorded_histograms import KEY_HISTOGRAM_RECORDER
    from bigkern.scenes.reading import default_chunks
    from bigkern.scenes.writing import write_scenes

    # generated a scene a task, stored in chunks of bigkern's size (~100 MB)
    shape = (args.scenes, *args.shape)
    scenes = make_scenes(args.scenes, tuple(args.shape), seed=args.seed,
                         chunks=default_chunks(shape), classes=getattr(args, "classes", 2))
    path = write_scenes(scenes, args.out, overwrite=args.overwrite,
                        recorder=KEY_HISTOGRAM_RECORDER)
    print(f"bigkern: wrote {args.scenes} scenes to {path}")
