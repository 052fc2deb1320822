"""What an incremental report must read: the pure core of "read only what is new".

A report kept in one ``--out`` remembers, per log partition (the directory holding log files;
with the gateway's layout one UTC hour, ``dt=YYYY-MM-DD/hour=HH``), the name, size and
modification time of every file it read. The next run lists the logs again and reads only the
partitions that are new or whose files changed (a file added, grown, rewritten or removed:
late records for an old hour included); it drops what it knew of partitions that disappeared.
Anything that changes what a record means (another logs directory, window, time zone, or a
state written by another version) makes it start over.

No IO here: :mod:`gateway.pipeline.storage` lists files and reads and writes the state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Final

STATE_VERSION: Final = 1

#: file name -> (size in bytes, modification time in epoch ms)
FileStamps = Mapping[str, tuple[int, int]]


@dataclass(frozen=True, slots=True)
class Settings:
    """What the facts depend on besides the files: change any and every partition is re-read.
    ``traces``: the operations are kept too (``message_traces``); ``with_handles``: queue facts
    keep receipt handles, for logs with id-less deletes."""

    logs: str
    since_ms: int | None
    until_ms: int | None
    timezone: str
    traces: bool = False
    with_handles: bool = False


@dataclass(frozen=True, slots=True)
class State:
    settings: Settings
    partitions: Mapping[str, FileStamps] = field(default_factory=dict)

    def to_json(self) -> str:
        settings = self.settings
        document = {
            "version": STATE_VERSION,
            "logs": settings.logs,
            "since_ms": settings.since_ms,
            "until_ms": settings.until_ms,
            "timezone": settings.timezone,
            "traces": settings.traces,
            "with_handles": settings.with_handles,
            "partitions": {
                label: {name: list(stamp) for name, stamp in sorted(files.items())}
                for label, files in sorted(self.partitions.items())
            },
        }
        return json.dumps(document, indent=1)

    @classmethod
    def from_json(cls, text: str) -> State | None:
        """The state a run left, or None when it is unreadable or from another version."""
        try:
            document = json.loads(text)
            if document.get("version") != STATE_VERSION:
                return None
            settings = Settings(
                logs=str(document["logs"]),
                since_ms=document["since_ms"],
                until_ms=document["until_ms"],
                timezone=str(document["timezone"]),
                traces=bool(document["traces"]),
                with_handles=bool(document["with_handles"]),
            )
            partitions = {
                str(label): {str(name): (int(s), int(m)) for name, (s, m) in files.items()}
                for label, files in document["partitions"].items()
            }
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        return cls(settings, partitions)


@dataclass(frozen=True, slots=True)
class Plan:
    """``full``: forget every fact and read every partition. Otherwise read ``read`` (new or
    changed) and drop the facts of ``read`` and ``removed`` before writing the new ones."""

    full: bool
    read: tuple[str, ...]
    removed: tuple[str, ...]
    settings: Settings

    @property
    def touched(self) -> tuple[str, ...]:
        return tuple(sorted({*self.read, *self.removed}))

    @property
    def is_noop(self) -> bool:
        return not self.full and not self.read and not self.removed


def plan_run(listing: Mapping[str, FileStamps], previous: State | None, settings: Settings) -> Plan:
    """Compare the logs as listed now with what the previous run read. Receipt-handle
    resolution, once switched on, stays on: those logs needed it once."""
    if previous is None:
        return Plan(True, tuple(sorted(listing)), (), settings)
    before = previous.settings
    settings = replace(settings, with_handles=settings.with_handles or before.with_handles)
    if settings != replace(before, with_handles=settings.with_handles) or (
        settings.with_handles and not before.with_handles
    ):
        return Plan(True, tuple(sorted(listing)), (), settings)
    read = tuple(
        sorted(label for label, files in listing.items() if previous.partitions.get(label) != files)
    )
    removed = tuple(sorted(label for label in previous.partitions if label not in listing))
    return Plan(False, read, removed, settings)
