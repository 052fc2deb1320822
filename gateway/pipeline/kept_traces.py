"""``report --out DIR --trace MESSAGE_ID``: one message's story from what the report keeps under
``--out``, without Spark and without reading the logs again (a second or two on a day of logs).

With a ``message_traces`` table (reports run with ``--traces``) every operation is there: they
are read with pyarrow, receipt handles followed as :func:`.transforms.parsing.message_trace`
does. Without it, the ``message_facts`` table says per message and place (topic, subscription
and endpoint, or queue) how many operations of each kind there were and when the first and the
last happened: the trace is one line per kind, with its count (``--logs`` gives every record).
Pure functions turn rows into lines; :func:`read_rows` is the only IO.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, Final

Row = Mapping[str, Any]

FACTS_TABLE: Final = "message_facts"
EVENTS_TABLE: Final = "message_traces"
_KEYS: Final = ("topic_name", "subscription_name", "endpoint", "queue_name")
_SUMMED: Final = ("publishes", "attempts", "failed_attempts", "replays", "sends", "receives")
_SUMMED_MORE: Final = ("deletes",)
_EARLIEST: Final = ("published_ms", "first_attempt_key", "first_success_ms", "dead_letter_ms")
_EARLIEST_MORE: Final = ("sent_ms", "deleted_ms", "first_ms")
_LATEST: Final = ("last_attempt_ms", "last_ms")
#: Tie-break for lines at the same millisecond, as the full trace orders operations.
_RANK: Final = {"Publish": 0, "Send": 0, "Push": 2, "Receive": 2, "Delete": 4, "Dead": 5}


def read_rows(table: Path, column: str, values: Iterable[object]) -> list[dict[str, Any]]:
    """The rows of a Parquet table (Spark's, partitioned by log_partition) whose ``column`` is
    one of ``values``."""
    import pyarrow.dataset as ds

    wanted = list(values)
    if not wanted or not table.is_dir():
        return []
    dataset = ds.dataset(str(table), format="parquet", partitioning="hive")
    return dataset.to_table(filter=ds.field(column).isin(wanted)).to_pylist()


def facts(table: Path, message_id: str) -> list[dict[str, Any]]:
    """The message's fact rows, with those of deletes logged with only a receipt handle one of
    its receives handed out (kept under the handle's hash when the report resolved them)."""
    own = read_rows(table, "message_id", [message_id])
    hashes = {row["handle_hash"] for row in own if row.get("handle_hash") is not None}
    by_handle = [
        {**row, "message_id": message_id}
        for row in read_rows(table, "handle_hash", hashes)
        if row.get("message_id") is None
    ]
    return own + by_handle


def operations(table: Path, message_id: str) -> list[dict[str, Any]]:
    """Every kept operation of the message, deletes and visibility changes logged with only a
    receipt handle it was given included, in the order they happened."""
    from gateway.pipeline.schema import ACTION_ORDER, HANDLE_ISSUING_ACTIONS

    own = read_rows(table, "message_id", [message_id])
    issued = {
        row["receipt_handle_in_response"]
        for row in own
        if row["action"] in HANDLE_ISSUING_ACTIONS and row.get("receipt_handle_in_response")
    }
    by_handle = [
        {**row, "message_id": message_id}
        for row in read_rows(table, "receipt_handle_in_request", issued)
        if row.get("message_id") is None
    ]
    return sorted(
        own + by_handle,
        key=lambda e: (e["time_ms"], ACTION_ORDER.get(e["action"], 99), e.get("attempt") or 0),
    )


def merge(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """One row per place over the log partitions a message's facts were split across."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = tuple(row.get(name) for name in _KEYS)
        into = merged.setdefault(key, {name: row.get(name) for name in _KEYS})
        for name in (*_SUMMED, *_SUMMED_MORE):
            into[name] = (into.get(name) or 0) + (row.get(name) or 0)
        for name, pick in ((n, min) for n in (*_EARLIEST, *_EARLIEST_MORE)):
            into[name] = _pick(pick, into.get(name), row.get(name))
        if _pick(max, into.get("last_attempt_ms"), row.get("last_attempt_ms")) == row.get(
            "last_attempt_ms"
        ):
            into["last_status_code"] = row.get("last_status_code") or into.get("last_status_code")
        for name in _LATEST:
            into[name] = _pick(max, into.get(name), row.get(name))
        into["max_dequeue_count"] = _pick(
            max, into.get("max_dequeue_count"), row.get("max_dequeue_count")
        )
    return list(merged.values())


def _pick(choose: Callable[[int, int], int], a: int | None, b: int | None) -> int | None:
    if a is None or b is None:
        return a if b is None else b
    return choose(a, b)


def summary_lines(rows: Iterable[Row], zone: tzinfo = UTC) -> list[tuple[int, int, str, str]]:
    """(time, rank, action, details) per kind of operation at each place, from merged facts;
    times in the details are written for people in ``zone``, as the lines' own."""
    lines: list[tuple[int, int, str, str]] = []
    for row in merge(rows):
        lines += _topic_lines(row, zone) if row.get("topic_name") else _queue_lines(row)
    return sorted((line for line in lines if line[0] is not None), key=lambda x: x[:2])


def _topic_lines(row: Row, zone: tzinfo) -> list[tuple[int, int, str, str]]:
    where = _fields(row, "topic_name", "subscription_name", "endpoint")
    lines = []
    if row.get("publishes"):
        lines.append((row["published_ms"], _RANK["Publish"], "PublishMessage", where))
    if row.get("attempts"):
        first = row["first_attempt_key"] // 2 if row.get("first_attempt_key") is not None else None
        counts = (
            f"attempts={row['attempts']} failed={row.get('failed_attempts') or 0} "
            f"last_status_code={_status(row.get('last_status_code'))} "
            f"last_attempt={_stamp(row.get('last_attempt_ms'), zone, sep='T')}"
        )
        if row.get("replays"):
            counts += f" replays={row['replays']}"
        lines.append((first, _RANK["Push"], "PushMessage", f"{where} {counts}"))
    if row.get("dead_letter_ms") is not None:
        lines.append((row["dead_letter_ms"], _RANK["Dead"], "DeadLetter", where))
    return lines


def _queue_lines(row: Row) -> list[tuple[int, int, str, str]]:
    where = _fields(row, "queue_name")
    start = row.get("sent_ms") or row.get("first_ms")
    lines = []
    if row.get("sends"):
        lines.append((row["sent_ms"], _RANK["Send"], "SendMessage", where))
    if row.get("receives"):
        most = row.get("max_dequeue_count")
        counts = f"receives={row['receives']}" + (f" dequeue_count={most}" if most else "")
        lines.append((start, _RANK["Receive"], "ReceiveMessage", f"{where} {counts}"))
    if row.get("deletes"):
        lines.append((row.get("deleted_ms") or start, _RANK["Delete"], "DeleteMessage", where))
    return lines


def _fields(row: Row, *names: str) -> str:
    return " ".join(f"{name}={row[name]}" for name in names if row.get(name) is not None)


def format_summary(lines: Sequence[tuple[int, int, str, str]], zone: tzinfo = UTC) -> list[str]:
    """``<time>  <Action>  details`` as the full trace writes its lines."""
    formatted = []
    for time_ms, _, action, details in lines:
        formatted.append(f"{_stamp(time_ms, zone)}  {action:<24} {details}".rstrip())
    return formatted


def _status(code: int | None) -> str:
    """A push's last HTTP status; a push that got none (a timeout, a refused connection) says
    so in words, not ``None``."""
    return "(no answer)" if code is None else str(code)


def _stamp(time_ms: int | None, zone: tzinfo, *, sep: str = " ") -> str:
    """``2024-06-01 14:03:07.250Z`` (``+08:00`` in another zone); ``-`` for no time."""
    from gateway.pipeline.formatting import format_offset

    if time_ms is None:
        return "-"
    moment = datetime.fromtimestamp(time_ms / 1000, tz=zone)
    return f"{moment:%Y-%m-%d}{sep}{moment:%H:%M:%S.%f}"[:-3] + format_offset(moment)
