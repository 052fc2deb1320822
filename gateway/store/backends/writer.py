"""A single writer thread that commits many callers' work in one transaction (group commit).

SQLite allows one writer at a time. Letting every request thread fight for the write lock makes
them sleep in SQLite's busy handler (milliseconds at a time), which is what collapses threaded
servers. Instead, request threads hand their write as a function to this thread and wait; it runs
whatever has queued up inside one ``BEGIN IMMEDIATE … COMMIT``, each job under its own savepoint
so one job's error rolls back only that job. One fsync then covers the whole batch.

Between processes (several gunicorn workers on one data dir) an ``fcntl`` lock file serialises
the writers; a blocked ``flock`` wakes as soon as the lock is free, unlike the busy handler.

A full disk fails writes, never the writer: a batch whose statements or COMMIT fail for want of
space (SQLite has then rolled the whole transaction back itself) fails each of its jobs with
:class:`~gateway.errors.StoreUnavailableError`, and the writer takes the next
batch, which succeeds as soon as there is room again. Nothing of a failed batch was committed,
so nothing acknowledged is lost, and the file stays intact (SQLite's own guarantee for
SQLITE_FULL).
"""

from __future__ import annotations

import fcntl
import os
import queue
import sqlite3
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from gateway.errors import StoreUnavailableError
from gateway.store.backends.outage import Outage

T = TypeVar("T")

#: SQLite's primary result codes for a disk that cannot take the write: SQLITE_FULL, and
#: SQLITE_IOERR (a failed write or fsync, what a full disk gives outside the database file).
_STORAGE_ERRORS = frozenset({10, 13})


def storage_error(exc: BaseException) -> StoreUnavailableError | None:
    """``exc`` as the store's error when it says the disk cannot take the write, else None."""
    if isinstance(exc, StoreUnavailableError):
        return exc
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(exc, sqlite3.Error) and code is not None and code & 0xFF in _STORAGE_ERRORS:
        return StoreUnavailableError(str(exc), full=True)
    if isinstance(exc, OSError) and exc.errno is not None and exc.errno in _NO_SPACE:
        return StoreUnavailableError(str(exc), full=True)
    return None


_NO_SPACE = frozenset({28, 122})  # ENOSPC, EDQUOT


class _Job(Generic[T]):
    __slots__ = ("done", "durable", "error", "result", "work")

    def __init__(self, work: Callable[[sqlite3.Connection], T], durable: bool) -> None:
        self.work = work
        self.durable = durable
        self.done = threading.Event()
        self.result: T | None = None
        self.error: BaseException | None = None


class _Stop:
    """Sentinel that ends the writer thread."""


def _fsync_file(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _off_the_event_loop(function: Callable[..., None], *args: Any) -> None:
    """Call ``function`` so that it blocks only the writer.

    Under gevent (gunicorn's gevent worker patches threading) the writer is a greenlet and an
    fsync would stall every request of the process, so it runs on a real thread from the hub's
    pool; only C-level, GIL-free work is sent there. Elsewhere the writer is a real thread.
    """
    if "gevent.monkey" in sys.modules:
        from gevent import get_hub
        from gevent.monkey import is_module_patched

        if is_module_patched("threading"):
            get_hub().threadpool.apply(function, args)
            return
    function(*args)


class GroupCommitWriter:
    """Runs write jobs on one connection in batched transactions."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        lock_path: Path,
        max_batch: int = 512,
        *,
        durable_mode: str = "FULL",
        relaxed_mode: str = "NORMAL",
        sync_file: Path | None = None,
        outage: Outage | None = None,
    ) -> None:
        self._connect = connect
        self.outage = outage or Outage("storage")
        # With ``sync_file`` (the WAL), a durable batch commits in the relaxed mode and is then
        # made durable by one fsync of that file, done after the cross-process lock is released
        # and away from the event loop under gevent. In WAL mode that is what FULL does at
        # commit; nobody is told "done" before it.
        self._sync_file = sync_file if durable_mode in ("FULL", "EXTRA") else None
        self._modes = {
            True: relaxed_mode if self._sync_file else durable_mode,
            False: relaxed_mode,
        }
        self._mode = ""
        self._lock_path = lock_path
        self._max_batch = max_batch
        self._jobs: queue.SimpleQueue[_Job[Any] | _Stop] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._start_lock = threading.Lock()

    def submit(self, work: Callable[[sqlite3.Connection], T], durable: bool = True) -> T:
        """Run ``work(connection)`` inside a committed transaction and return its result.

        ``durable=False`` is for writes that may be lost in a power cut without losing anything
        acknowledged (a delivery claim, an attempt's outcome): a batch made only of those is
        committed without an fsync.
        """
        self._ensure_started()
        job: _Job[T] = _Job(work, durable)
        self._jobs.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]

    def close(self) -> None:
        if self._thread is not None and self._pid == os.getpid():
            self._jobs.put(_Stop())
            self._thread.join(timeout=10)
            self._thread = None

    def _ensure_started(self) -> None:
        # A forked child (gunicorn worker) inherits no threads: start a writer of its own.
        if self._thread is not None and self._pid == os.getpid():
            return
        with self._start_lock:
            if self._thread is None or self._pid != os.getpid():
                self._jobs = queue.SimpleQueue()
                self._pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._run, name="mns-store-writer", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        try:
            connection = self._connect()
        except BaseException as exc:  # nobody may wait forever: fail what is queued, restart later
            self._thread = None
            self._fail_queued(exc)
            return
        lock_file = open(self._lock_path, "a+b")  # noqa: SIM115 - held for the thread's life
        try:
            while True:
                batch = self._next_batch()
                if batch is None:
                    return
                try:
                    self._write(connection, lock_file, batch)
                except Exception as exc:  # never end the writer: fail this batch, take the next
                    for job in batch:
                        job.error = job.error or exc
                self._report(batch)
                for job in batch:
                    job.done.set()
        finally:
            lock_file.close()
            connection.close()

    def _write(
        self, connection: sqlite3.Connection, lock_file: Any, batch: list[_Job[Any]]
    ) -> None:
        durable = any(job.durable for job in batch)
        self._set_mode(connection, durable)
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            self._commit(connection, batch)
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)
        if durable and self._sync_file is not None:
            self._sync(batch)

    def _report(self, batch: list[_Job[Any]]) -> None:
        """Jobs failed for want of space get the store's error, and the outage is logged once;
        a batch that committed anything ends it."""
        full = False
        for job in batch:
            if job.error is not None and (error := storage_error(job.error)) is not None:
                job.error, full = error, True
        if full:
            self.outage.failed("no space left for the database (disk full)")
        elif any(job.error is None for job in batch):
            self.outage.succeeded()

    def _fail_queued(self, error: BaseException) -> None:
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            if isinstance(job, _Job):
                job.error = error
                job.done.set()

    def _next_batch(self) -> list[_Job[Any]] | None:
        first = self._jobs.get()
        if isinstance(first, _Stop):
            return None
        batch = [first]
        while len(batch) < self._max_batch:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if isinstance(job, _Stop):
                self._jobs.put(job)
                break
            batch.append(job)
        return batch

    def _sync(self, batch: list[_Job[Any]]) -> None:
        assert self._sync_file is not None
        try:
            _off_the_event_loop(_fsync_file, self._sync_file)
        except OSError as exc:  # not known to be durable: do not acknowledge it
            for job in batch:
                job.error = job.error or exc

    def _set_mode(self, connection: sqlite3.Connection, durable: bool) -> None:
        """``PRAGMA synchronous`` for the next commit: FULL fsyncs the WAL, NORMAL does not
        (in WAL mode a NORMAL commit survives a process crash, not a power cut)."""
        mode = self._modes[durable]
        if mode != self._mode:
            connection.execute(f"PRAGMA synchronous={mode}")
            self._mode = mode

    @staticmethod
    def _commit(connection: sqlite3.Connection, batch: list[_Job[Any]]) -> None:
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            for job in batch:
                job.error = exc
            return
        for job in batch:
            connection.execute("SAVEPOINT job")
            try:
                job.result = job.work(connection)
            except BaseException as exc:  # handed back to the submitting thread
                job.error = exc
                if not connection.in_transaction:
                    # SQLite rolled the whole transaction back (a full disk does that): the
                    # jobs before this one are undone too, and the rest must not run outside it.
                    _fail_all(batch, exc)
                    return
                connection.execute("ROLLBACK TO job")
            connection.execute("RELEASE job")
        try:
            connection.execute("COMMIT")
        except sqlite3.Error as exc:
            # A failed COMMIT may have rolled back already (SQLITE_FULL does): then there is
            # no transaction left to roll back, and ROLLBACK itself would fail.
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            _fail_all(batch, exc)


def _fail_all(batch: list[_Job[Any]], error: BaseException) -> None:
    """Nothing of ``batch`` was committed: every job fails (with its own error if it had one)."""
    for job in batch:
        job.result = None
        job.error = job.error or error
