"""The Dask cluster a ``bigkern`` command runs on, for the duration of the command.

``--scheduler ADDRESS`` (or ``DASK_SCHEDULER_ADDRESS``) or ``--scheduler-file FILE``
connects to a running cluster, ``--profile NAME`` builds one from
``bigkern.cluster.profiles``; by default an embedded LocalCluster is started
(:func:`bigkern.cluster.client.connect`). :func:`command_cluster` also keeps the
cluster's logs of an expected error off the terminal unless ``--verbose``;
:func:`stall_timeout` applies ``--timeout``.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

from bigkern.cli.signals import children_ignore_sigint

__all__ = ["command_cluster", "stall_timeout"]


def stall_timeout(args: argparse.Namespace) -> contextlib.AbstractContextManager[Any]:
    """``--timeout``: ``bigkern.stall_timeout`` for the duration of the command."""
    if args.timeout is None:
        return contextlib.nullcontext()
    import dask.config

    return dask.config.set({"bigkern.stall_timeout": args.timeout})


@contextlib.contextmanager
def command_cluster(args: argparse.Namespace) -> Iterator[Any]:
    """The command's Dask client; unless ``--verbose``, expected errors stay off the terminal.

    The filter of :mod:`bigkern.cluster.logs` covers this process (an embedded
    cluster's scheduler and nannies run here) from before the connection to
    after the cluster closed; the workers of a cluster built here, which lives
    and dies with the command (an embedded one's share the terminal); and,
    once the command's work is over, the chatter of the cluster closing. The
    error itself is printed as one line by :func:`bigkern.cli.main.main`.
    """
    import sys

    from bigkern.cluster.client import connect, connection_line, owns_cluster
    from bigkern.cluster.logs import QuietLogs

    def connected() -> Any:
        # the worker processes of an embedded cluster leave Ctrl-C to the command
        with children_ignore_sigint() if _embedded(args) else contextlib.nullcontext():
            client = connect(args.scheduler, scheduler_file=args.scheduler_file,
                             profile=args.profile, n_workers=args.workers,
                             timeout=args.connect_timeout, quiet=True)
        # said once Ctrl-C is the command's again: from this line on it is acted on
        print(connection_line(client, verbose=args.verbose), file=sys.stderr)
        return client

    if args.verbose:
        with connected() as client:
            yield client
        return
    with QuietLogs() as quiet, connected() as client, \
            quiet.cluster(client, owned=owns_cluster(client)):
        yield client


def _embedded(args: argparse.Namespace) -> bool:
    """Whether the command builds a cluster of local worker processes (a ``local`` profile)."""
    import os

    import dask.config

    if args.scheduler or args.scheduler_file or os.environ.get("DASK_SCHEDULER_ADDRESS"):
        return False
    name = args.profile or dask.config.get("bigkern.cluster.default_profile", "local")
    profile = dask.config.get(f"bigkern.cluster.profiles.{name}", None) or {}
    return profile.get("kind", name) == "local"
