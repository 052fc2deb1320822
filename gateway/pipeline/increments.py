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
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Final

#: Raised whenever what the stored facts mean changes: a state another version wrote starts the
#: report over (3: a delivery's ``retry_due_ms`` is the latest retry any of its failures
#: scheduled, where it was the last failure's, null after a last try).
STATE_VERSION: Final = 3

#: file name -> (size in bytes, modification time in epoch ms)
FileStamps = Mapping[str, tuple[int, int]]
#: input figure -> value, for one log partition (``lines``, ``first_time_ms``, ...)
Inputs = Mapping[str, int | None]
#: The input summary's counts, in the order of its table; they add up over partitions.
INPUT_COUNTS: Final = (
    "lines",
    "malformed_lines",
    "unusable_records",
    "events_in_window",
    "events_without_message_id",
    "pushes_without_publish_time",
)
#: Its first and last event times: the earliest and the latest over partitions.
FIRST_TIME: Final = "first_time_ms"
LAST_TIME: Final = "last_time_ms"
INPUT_FIGURES: Final = (*INPUT_COUNTS, FIRST_TIME, LAST_TIME)


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
    """What a finished run read: the files of every partition and their input figures, and the
    timeline bucket widths its partial summaries were computed at."""

    settings: Settings
    partitions: Mapping[str, FileStamps] = field(default_factory=dict)
    inputs: Mapping[str, Inputs] = field(default_factory=dict)
    timeline_widths: tuple[int, ...] = ()

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
            "inputs": {label: dict(figures) for label, figures in sorted(self.inputs.items())},
            "timeline_widths": sorted(self.timeline_widths),
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
            inputs = {
                str(label): {str(name): _optional_int(value) for name, value in figures.items()}
                for label, figures in document["inputs"].items()
            }
            widths = tuple(int(width) for width in document["timeline_widths"])
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        return cls(settings, partitions, inputs, widths)


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


def _optional_int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def total_inputs(inputs: Mapping[str, Inputs]) -> dict[str, int | None]:
    """The input figures of all partitions together: counts add up, the first and last event
    times are the earliest and the latest (None when no partition has one)."""
    total: dict[str, int | None] = {}
    for figures in inputs.values():
        for name, value in figures.items():
            current = total.get(name)
            if name in (FIRST_TIME, LAST_TIME):
                pick = min if name == FIRST_TIME else max
                known = [v for v in (current, value) if v is not None]
                total[name] = pick(known) if known else None
            else:
                total[name] = (current or 0) + (value or 0)
    return total


def timeline_width_fits(stored_ms: int, bucket_ms: int) -> bool:
    """Whether timeline partials kept at ``stored_ms`` can be summed into ``bucket_ms``
    buckets (both aligned to the epoch)."""
    return bucket_ms % stored_ms == 0


def homes_to_recompute(
    plan: Plan,
    labels: Collection[str],
    sharing: Collection[str],
    previous_widths: Collection[int],
    bucket_ms: int,
) -> tuple[str, ...] | None:
    """The homes whose partial summaries this run must compute again, or None for all of them:
    the partitions read or removed and those sharing a message with them (``sharing``, found
    in the facts before and after), when the kept partials can be summed with this run's
    timeline bucket width. Homes of removed partitions are only dropped."""
    widths_fit = bool(previous_widths) and all(
        timeline_width_fits(width, bucket_ms) for width in previous_widths
    )
    if plan.full or plan.settings.with_handles or not widths_fit:
        return None
    return tuple(sorted({*plan.touched, *sharing} & set(labels)))
