"""The data dir (SQLite database, keys, generated credentials), checked before any command uses it.

Without this check a read-only or misplaced data dir surfaced as a traceback from whichever
component touched it first, or, inside a gunicorn worker, as dozens of lines ending in "Worker
failed to boot" with the cause buried among them.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from pathlib import Path

from gateway.errors.commands import DataDirError

#: In the data dir: locked by the ``mns-gateway serve`` that uses it (SQLite), naming it.
SERVE_LOCK_FILE = "serve.lock"


def prepare_data_dir(path: Path) -> Path:
    """Create ``path`` if needed and prove a file can be written in it; raise if not."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        raise DataDirError(f"data dir {path} is not usable: {reason}") from error
    return path


def lock_for_serving(path: Path, url: str) -> int:
    """Take the data dir for one ``serve`` for the life of this process (and the gunicorn
    workers it forks, which share the lock), or raise naming the gateway that has it.

    A second ``serve`` on a SQLite data dir in use rewrote ``served-keys.json``, and after it
    stopped ``credentials show`` described a gateway that was gone. ``mns-gateway worker`` and
    the other commands do not take it: several processes on one SQLite database are fine. The
    lock goes with the process, however it ends: a gateway that crashed leaves no stale lock.
    Returns the lock file's descriptor, to be kept open.
    """
    lock_path = path / SERVE_LOCK_FILE
    try:
        descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise DataDirError(f"data dir {path} is not usable: {error.strerror}") from error
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(descriptor)
        os.close(descriptor)
        raise DataDirError(
            f"data dir {path} is in use by the gateway {holder}: stop it first, or give this "
            "one another --data-dir (PostgreSQL replicas may share one: MNS_GATEWAY_DATABASE_URL)"
        ) from None
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, json.dumps({"Url": url, "Pid": os.getpid()}).encode(), 0)
    return descriptor


def _holder(descriptor: int) -> str:
    """The locking gateway as its lock file names it: ``at URL (pid N)``."""
    try:
        document = json.loads(os.pread(descriptor, 4096, 0) or b"{}")
        return f"at {document['Url']} (pid {document['Pid']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "that started there"  # it has the lock and has not written its name yet
