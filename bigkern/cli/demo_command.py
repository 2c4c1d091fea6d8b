"""``bigkern demo``: synthetic scenes, a binned model and its cloud masks, in one folder.

The work is :func:`bigkern.jobs.demo.run_demo`; this module passes it the flags and
says how long it took.
"""

from __future__ import annotations

import argparse
import time

__all__ = ["run_demo"]


def run_demo(args: argparse.Namespace) -> None:
    """Run the demo into ``-o`` on the command's cluster."""
    from bigkern.jobs import demo

    t = time.perf_counter()
    demo.run_demo(args.out, n_scenes=args.scenes, shape=tuple(args.shape), seed=args.seed,
                  model=args.model)
    print(f"bigkern demo finished in {time.perf_counter() - t:.1f} s")
