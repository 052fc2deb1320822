"""Operation logs for queues and topics with ``LoggingEnabled=True``.

Field names: docs/protocol.md#operation-log-fields.

One JSON object per line, one line per message operation, under
``<directory>/dt=YYYY-MM-DD/hour=HH/`` (UTC). The delivery-report pipeline
(:mod:`gateway.pipeline`) reads these files, and the same field names as the real service's log
export, so a user can point it at either.

Logging is a side channel: it must never slow down or fail the request that produced the record.
``write()`` therefore only copies the record into a bounded in-memory queue; a background thread
does the JSON encoding and the file IO. When the queue is full or the disk refuses a write, the
record is dropped and ``mns_oplog_dropped_total{reason=...}`` is incremented instead of raising.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, Final

from prometheus_client import CollectorRegistry, Counter

# What a record holds lives apart, with no IO, for the pure code that reads or builds records;
# it is re-exported here for the writers' callers.
from gateway.observability.operations import Action as Action
from gateway.observability.operations import DropReason as DropReason
from gateway.observability.operations import Field as Field
from gateway.observability.operations import NullOperationLog as NullOperationLog
from gateway.observability.operations import OperationLog as OperationLog
from gateway.observability.operations import Outcome as Outcome
from gateway.observability.operations import RequestFacts as RequestFacts

DEFAULT_MAX_FILE_BYTES: Final = 64 * 1024 * 1024
DEFAULT_MAX_PENDING: Final = 100_000
_BATCH_LIMIT: Final = 1_000
_IDLE_POLL_SECONDS: Final = 0.2
_UNSAFE_NAME_CHARS: Final = re.compile(r"[^A-Za-z0-9_.-]")
_HOUR_PATH: Final = re.compile(r"dt=(\d{4}-\d{2}-\d{2})/hour=(\d{2})")


@dataclass(frozen=True, slots=True)
class _Pending:
    """A record and the writer-clock time it was handed in; that time picks its file."""

    enqueued_at: float
    record: dict[str, object]


@dataclass(slots=True)
class _OpenFile:
    handle: BinaryIO
    hour: int  # whole hours since the epoch, UTC
    opened_at: float
    size: int


def partition_path(epoch_seconds: float) -> str:
    """``dt=YYYY-MM-DD/hour=HH`` in UTC, so the layout does not depend on the host's zone."""
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return f"dt={moment:%Y-%m-%d}/hour={moment:%H}"


def expired_hours(paths: Iterable[str], now: float, retention_seconds: float) -> list[str]:
    """Those of ``paths`` (``dt=YYYY-MM-DD/hour=HH``) whose whole hour ended more than
    ``retention_seconds`` before ``now``; other names are left alone."""
    expired = []
    for path in paths:
        found = _HOUR_PATH.fullmatch(path)
        if found is None:
            continue
        start = datetime.strptime(" ".join(found.groups()), "%Y-%m-%d %H").replace(tzinfo=UTC)
        if start.timestamp() + 3600 <= now - retention_seconds:
            expired.append(path)
    return expired


class JsonLinesOperationLog:
    """Appends records as JSON lines; safe to share one directory among processes and hosts.

    Every file name carries host, pid and a per-instance token, so gunicorn workers never write
    to the same file and need no locking. A file is closed and a new one started when the UTC
    hour changes, when it is ``rotate_seconds`` old or when the next line would exceed
    ``max_file_bytes``.

    With ``retention_seconds`` (``MNS_GATEWAY_LOG_RETENTION``) the writer removes the hours that
    ended longer ago than that, every process's files in them, each time it starts a file: at
    least hourly while records come, on the writer thread, never in a request.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        rotate_seconds: float = 3600,
        max_pending: int = DEFAULT_MAX_PENDING,
        registry: CollectorRegistry | None = None,
        start_writer: bool = True,
        retention_seconds: float | None = None,
    ) -> None:
        self._directory = Path(directory)
        self._retention_seconds = retention_seconds
        self._clock = clock
        self._max_file_bytes = max_file_bytes
        self._rotate_seconds = rotate_seconds
        self._pending: queue.Queue[_Pending | None] = queue.Queue(maxsize=max_pending)
        self._dropped = Counter(
            "mns_oplog_dropped",
            "Operation-log records dropped instead of written.",
            ["reason"],
            registry=registry,
        )
        for reason in DropReason:  # export zeros, so alerts can rate() from the first scrape
            self._dropped.labels(reason)
        self._written = Counter(
            "mns_oplog_written", "Operation-log records written to disk.", registry=registry
        )
        host = _UNSAFE_NAME_CHARS.sub("_", socket.gethostname()) or "host"
        self._file_prefix = f"oplog-{host}-{os.getpid()}-{secrets.token_hex(4)}"
        self._file_sequence = 0
        self._current: _OpenFile | None = None
        self._closed = threading.Event()
        self._drainer = threading.Thread(target=self._drain, name="oplog-writer", daemon=True)
        if start_writer:
            self.start()

    def start(self) -> None:
        """Start the writer thread; separate from construction so a gunicorn app preloaded in
        the master can start it after fork (threads do not survive ``fork``)."""
        if not self._drainer.is_alive() and not self._closed.is_set():
            self._drainer.start()

    def write(self, record: Mapping[str, object]) -> None:
        """Queue a copy of ``record``; adds ``Time`` (epoch ms) when the caller left it out."""
        if self._closed.is_set():
            self._dropped.labels(DropReason.CLOSED).inc()
            return
        now = self._clock()
        try:
            copied = dict(record)
        except (TypeError, ValueError):
            self._dropped.labels(DropReason.UNSERIALIZABLE).inc()
            return
        copied.setdefault(Field.TIME.value, int(now * 1000))
        try:
            self._pending.put_nowait(_Pending(now, copied))
        except queue.Full:
            self._dropped.labels(DropReason.QUEUE_FULL).inc()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued record is written or dropped; False if ``timeout`` ran out."""
        deadline = time.monotonic() + timeout
        while self._pending.unfinished_tasks:
            if time.monotonic() >= deadline or not self._drainer.is_alive():
                return False
            time.sleep(0.005)
        return True

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, then stop the writer thread and close the current file."""
        self._closed.set()
        with contextlib.suppress(queue.Full):  # a full queue keeps the writer awake anyway
            self._pending.put_nowait(None)  # wake the writer now rather than at its next poll
        if self._drainer.is_alive():
            self._drainer.join(timeout)

    def _drain(self) -> None:
        while True:
            batch = self._take_batch()
            if batch:
                try:
                    self._write_batch(batch)
                finally:
                    for _ in batch:
                        self._pending.task_done()
            elif self._closed.is_set():
                break
        self._close_current()

    def _take_batch(self) -> list[_Pending]:
        """Up to ``_BATCH_LIMIT`` records; the ``None`` wake-up marker from close() is skipped."""
        batch: list[_Pending] = []
        try:
            item = self._pending.get(timeout=_IDLE_POLL_SECONDS)
            while True:
                if item is None:
                    self._pending.task_done()
                else:
                    batch.append(item)
                if len(batch) >= _BATCH_LIMIT:
                    break
                item = self._pending.get_nowait()
        except queue.Empty:
            pass
        return batch

    def _write_batch(self, batch: list[_Pending]) -> None:
        for position, pending in enumerate(batch):
            line = self._encode(pending.record)
            if line is None:
                continue
            try:
                self._append(pending.enqueued_at, line)
            except (OSError, ValueError, OverflowError):  # ValueError/Overflow: absurd clock
                # Drop the rest of the batch rather than retrying against a full disk; the next
                # batch opens a fresh file, so logging resumes by itself once space is back.
                self._dropped.labels(DropReason.IO_ERROR).inc(len(batch) - position)
                self._close_current()
                return
            self._written.inc()

    def _encode(self, record: dict[str, object]) -> bytes | None:
        try:
            text = json.dumps(record, separators=(",", ":"), ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            self._dropped.labels(DropReason.UNSERIALIZABLE).inc()
            return None
        return text.encode("utf-8", "replace") + b"\n"

    def _append(self, at: float, line: bytes) -> None:
        """One unbuffered write per line: an OSError surfaces on the record that caused it, and
        a short write (disk full mid-line) is treated as a failure so no later line joins it."""
        target = self._file_for(at, len(line))
        written = target.handle.write(line)
        if written != len(line):
            raise OSError(f"short write: {written} of {len(line)} bytes")
        target.size += len(line)

    def _file_for(self, at: float, line_size: int) -> _OpenFile:
        hour = int(at // 3600)
        current = self._current
        if current is not None and (
            current.hour != hour
            or at - current.opened_at >= self._rotate_seconds
            or (current.size > 0 and current.size + line_size > self._max_file_bytes)
        ):
            self._close_current()
            current = None
        if current is None:
            current = self._open(hour, at)
        return current

    def _open(self, hour: int, at: float) -> _OpenFile:
        if self._retention_seconds is not None:
            self._forget_old(at, self._retention_seconds)
        folder = self._directory / partition_path(hour * 3600)
        folder.mkdir(parents=True, exist_ok=True)
        self._file_sequence += 1
        path = folder / f"{self._file_prefix}-{self._file_sequence:06d}.jsonl"
        handle = path.open("xb", buffering=0)
        self._current = _OpenFile(handle=handle, hour=hour, opened_at=at, size=0)
        return self._current

    def _forget_old(self, now: float, retention_seconds: float) -> None:
        """Remove the expired hours' files and folders; another process removing them at the
        same time, or a file that will not go, is no error: the next file retries."""
        found = [
            f"{day.name}/{hour.name}"
            for day in self._directory.glob("dt=*")
            for hour in day.glob("hour=*")
        ]
        for path in expired_hours(found, now, retention_seconds):
            folder = self._directory / path
            for file in folder.glob("*"):
                with contextlib.suppress(OSError):
                    file.unlink()
            for emptied in (folder, folder.parent):
                with contextlib.suppress(OSError):  # not empty (yet), or gone
                    emptied.rmdir()

    def _close_current(self) -> None:
        current, self._current = self._current, None
        if current is not None:
            with contextlib.suppress(OSError):
                current.handle.close()


def open_operation_log(
    directory: str | None,
    *,
    registry: CollectorRegistry | None = None,
    retention_seconds: float | None = None,
) -> OperationLog:
    """The writer for ``MNS_GATEWAY_LOG_DIR``: JSON lines when set, a no-op when empty/unset;
    files kept ``retention_seconds`` (``MNS_GATEWAY_LOG_RETENTION``), forever when ``None``."""
    if not directory:
        return NullOperationLog()
    return JsonLinesOperationLog(directory, registry=registry, retention_seconds=retention_seconds)
