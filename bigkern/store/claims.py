"""One writer per output: a lease claimed before anything is written, released at the end.

Two commands writing the same output at the same time — two ``bigkern
predict … -o R.zarr --overwrite`` started together — would interleave their
chunks into one store that reads as complete. So every writer in bigkern first
*claims* its output: it creates the hidden sibling ``.<name>.bigkern-lock``
exclusively, holding a random token, the host, the process and the command.
A second writer finds the claim and fails at once with an error naming the
holder; nothing of the first writer's output is touched.

Exclusive creation is ``O_CREAT | O_EXCL`` on local and shared (NFS v3+) file
systems, and a conditional put (``If-None-Match: *``) on object stores that
support one (S3, and fsspec's other filesystems through their
``pipe_file(mode="create")``). The claim is a *lease*: the holder renews it
(rewrites the file) every ``bigkern.claim_lease / 3`` seconds from a
background thread, and before publishing its output it checks that the lease
still holds its token (:meth:`OutputClaim.check`). A claim whose holder has
died is taken over by the next writer — at once when the holder ran on the
same host and its process is gone, otherwise once the lease has not been
renewed for ``bigkern.claim_lease`` seconds — so a run killed by SIGKILL or a
lost node never blocks the rerun that resumes it.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bigkern.errors import StoreError
from bigkern.store.urls import Location, PathOrURL, StorageOptions, location

__all__ = ["LOCK_SUFFIX", "OutputClaim", "claim_output", "lock_location", "shared_claim"]

LOCK_SUFFIX = ".bigkern-lock"


#: Claims shared with the code a command calls (:func:`shared_claim`), by lease file.
_HELD: dict[str, list[Any]] = {}
_HELD_LOCK = threading.Lock()


@contextmanager
def shared_claim(claim: OutputClaim) -> Iterator[OutputClaim]:
    """Within the block, :func:`claim_output` of ``claim``'s output yields ``claim`` itself.

    A command claims its output as it starts (``bigkern fit`` before it reads
    anything) and shares the claim with the writer it calls at the end
    (``save_model``), which would otherwise find the output claimed and refuse.
    Outside such a block a second claim, even from the same process, is refused.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "m.zarr"
    >>> with claim_output(out) as claim, shared_claim(claim):
    ...     with claim_output(out) as again:
    ...         again is claim
    True
    """
    with _HELD_LOCK:
        _HELD[claim.lock.url] = [claim, 0]
    try:
        yield claim
    finally:
        with _HELD_LOCK:
            _HELD.pop(claim.lock.url, None)


def lock_location(path: Location) -> Location:
    """Where the claim of the output ``path`` lives: its hidden sibling ``.<name>.bigkern-lock``."""
    return path.with_name(f".{path.name}{LOCK_SUFFIX}")


def _lease_seconds() -> float:
    import dask.config

    lease = float(dask.config.get("bigkern.claim_lease", 120.0))
    if not lease > 0:
        raise ValueError(f"bigkern.claim_lease must be a positive number of seconds; got {lease}")
    return lease


def _process_started(pid: int) -> float | None:
    """When process ``pid`` of this host started (None if it does not exist)."""
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.Error:  # exists, but we may not look at it: assume alive
        return -1.0


def _command() -> str:
    return " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))[:300]


@dataclass
class OutputClaim:
    """The lease this process holds on one output (see :func:`claim_output`).

    Attributes
    ----------
    output : Location
        The claimed output.
    lock : Location
        The lease file, ``.<name>.bigkern-lock`` beside the output.
    token : str
        The random token that makes the lease this process's.
    """

    output: Location
    lock: Location
    token: str
    record: dict[str, Any] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _renewer: threading.Thread | None = field(default=None, repr=False)
    _lost: str | None = field(default=None, repr=False)

    def holder(self) -> dict[str, Any] | None:
        """The record in the lease file now (None if there is none)."""
        return _read(self.lock)

    def check(self) -> None:
        """Raise :class:`StoreError` unless the lease file still holds this claim's token."""
        current = self.holder()
        if self._lost or current is None or current.get("token") != self.token:
            who = _describe_holder(current) if current else "nobody (the lease file is gone)"
            raise StoreError(
                f"{self.output.url}: this command's claim on the output was lost (it is now "
                f"held by {who}); another writer may have replaced it, so nothing more is "
                f"written or published")

    def _renew_forever(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                current = _read(self.lock)
                if current is None or current.get("token") != self.token:
                    self._lost = "taken"
                    return
                _write(self.lock, {**self.record, "renewed": time.time()}, exclusive=False)
            except Exception:  # a transient storage error: try again at the next tick
                continue

    def start_renewing(self) -> None:
        """Renew the lease every third of ``bigkern.claim_lease`` from a daemon thread."""
        every = _lease_seconds() / 3
        self._renewer = threading.Thread(target=self._renew_forever, args=(every,),
                                         name=f"bigkern-claim-{self.output.name}", daemon=True)
        self._renewer.start()

    def release(self) -> None:
        """Stop renewing and delete the lease file if it is still this claim's."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=10)
        try:
            current = _read(self.lock)
            if current is not None and current.get("token") == self.token:
                _remove(self.lock)
        except Exception:  # the lease expires by itself
            pass


def _describe_holder(record: dict[str, Any]) -> str:
    started = record.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if started else "?"
    return (f"process {record.get('pid', '?')} on host {record.get('host', '?')} "
            f"(started {when}: {record.get('command', '?')!r})")


def _read(lock: Location) -> dict[str, Any] | None:
    try:
        if lock.local:
            with open(lock.path, "rb") as f:
                raw = f.read()
        else:
            lock.refresh()
            raw = lock.fs.cat_file(lock.path)
    except FileNotFoundError:
        return None
    try:
        record = json.loads(raw.decode())
        return record if isinstance(record, dict) else {}
    except (UnicodeDecodeError, ValueError):
        return {}  # a lease file being written, or damaged: held by somebody unknown


def _age(lock: Location, record: dict[str, Any]) -> float:
    """Seconds since the lease was last renewed, by the storage's clock where it has one."""
    try:
        if lock.local:
            stamp = os.stat(lock.path).st_mtime
        else:
            info = lock.fs.info(lock.path)
            modified = info.get("LastModified") or info.get("mtime") or info.get("created")
            stamp = modified.timestamp() if hasattr(modified, "timestamp") else float(modified)
    except Exception:
        stamp = float(record.get("renewed") or record.get("started") or 0.0)
    return time.time() - stamp


def _write(lock: Location, record: dict[str, Any], *, exclusive: bool) -> bool:
    """Write the lease file; with ``exclusive``, only if absent (False if it exists)."""
    data = json.dumps(record, sort_keys=True).encode()
    if lock.local:
        flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
        try:
            fd = os.open(lock.path, flags, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return True
    try:
        lock.fs.pipe_file(lock.path, data, mode="create" if exclusive else "overwrite")
    except FileExistsError:
        return False
    except Exception as err:  # S3 answers a failed If-None-Match with 412 PreconditionFailed
        if exclusive and "precondition" in str(err).lower():
            return False
        raise
    lock.refresh()
    return True


def _remove(lock: Location) -> None:
    try:
        if lock.local:
            os.unlink(lock.path)  # the lease file: bigkern's own (callers checked its token)
        else:
            lock.fs.rm_file(lock.path)
            lock.refresh()
    except FileNotFoundError:
        pass


def _stale_reason(lock: Location, record: dict[str, Any], lease: float) -> str | None:
    """Why the holder of ``record`` no longer holds the claim (None if it may)."""
    if record.get("host") == socket.gethostname() and isinstance(record.get("pid"), int):
        started = _process_started(record["pid"])
        if started is None:
            return f"its process {record['pid']} has ended"
        recorded = record.get("pid_started")
        if started >= 0 and recorded is not None and abs(started - float(recorded)) > 1.0:
            return f"its process {record['pid']} has ended (the number was reused)"
        return None
    age = _age(lock, record)
    if age > lease:
        return f"its lease was last renewed {age:.0f} s ago (bigkern.claim_lease = {lease:g} s)"
    return None


def _take_over(lock: Location, record: dict[str, Any]) -> bool:
    """Remove the stale lease ``record`` — only if it is still the one judged stale."""
    if lock.local:
        aside = f"{lock.path}.stale-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(lock.path, aside)  # atomic: of two takers, one gets the file
        except FileNotFoundError:
            return True
        moved = _read(Location(aside, aside, "file"))
        if moved is not None and moved.get("token") != record.get("token"):
            # a live claim was made in between: put it back where it was (never overwrite)
            try:
                os.link(aside, lock.path)
            finally:
                os.unlink(aside)  # a lease file we renamed, just linked back into place
            return False
        os.unlink(aside)  # the stale lease file we renamed: its token is the one judged stale
        return True
    current = _read(lock)
    if current is not None and current.get("token") == record.get("token"):
        _remove(lock)
    return True


@contextmanager
def claim_output(
    path: PathOrURL | Location, storage_options: StorageOptions = None
) -> Iterator[OutputClaim]:
    """Hold the one-writer claim on the output ``path`` for the duration of the block.

    Parameters
    ----------
    path : str, Path, URL or Location
        The output (which need not exist yet).
    storage_options : mapping, optional
        fsspec options for a URL (see :func:`bigkern.store.urls.location`).

    Yields
    ------
    OutputClaim
        Call :meth:`OutputClaim.check` before publishing.

    Raises
    ------
    StoreError
        Another live process holds the claim; the message names it.

    Notes
    -----
    Inside :func:`shared_claim` of a claim on the same output, the shared claim
    is yielded (and released by its owner): a command claims its output before
    its work starts and the writer it calls at the end uses that claim.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "R.zarr"
    >>> with claim_output(out) as claim:
    ...     claim.check()  # still ours: safe to publish
    """
    loc = location(path, storage_options)
    if loc.local:  # an output in a folder not made yet: made, as mkdir -p would
        loc.local_path.parent.mkdir(parents=True, exist_ok=True)
    lock = lock_location(loc)
    with _HELD_LOCK:
        held = _HELD.get(lock.url)
        if held is not None:
            held[1] += 1
    if held is not None:  # the command that called this writer shares its claim
        try:
            yield held[0]
        finally:
            with _HELD_LOCK:
                held[1] -= 1
        return
    lease = _lease_seconds()
    token = uuid.uuid4().hex
    pid = os.getpid()
    record = {"token": token, "host": socket.gethostname(), "pid": pid,
              "pid_started": _process_started(pid), "started": time.time(),
              "renewed": time.time(), "command": _command(), "output": loc.url}
    for _ in range(5):
        if _write(lock, record, exclusive=True):
            break
        holder = _read(lock)
        if holder is None:
            continue  # released in between: try again
        if _stale_reason(lock, holder, lease) is None:
            raise StoreError(
                f"{loc.url} is being written by another command: {_describe_holder(holder)} "
                f"holds its claim ({lock.url}). Two writers would mix their outputs; wait for "
                f"it to finish, or choose another output path")
        _take_over(lock, holder)
    else:
        raise StoreError(f"{loc.url}: could not claim the output ({lock.url} keeps changing: "
                         f"other writers are starting at the same time)")
    claim = OutputClaim(loc, lock, token, record)
    claim.start_renewing()
    try:
        yield claim
    finally:
        claim.release()
