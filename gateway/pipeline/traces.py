"""Traces of single messages without a copy of every operation: the facts say in which log
partitions a message appears, and only those are parsed again, keeping that message's records.

The page shows the traces of the messages that need attention; ``--trace`` uses the same path
when no ``message_traces`` table was written (``--traces``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from gateway.observability.operations import Action
from gateway.pipeline.increments import Settings
from gateway.pipeline.schema import ACTION_ORDER
from gateway.pipeline.storage import Listing
from gateway.pipeline.transforms import facts, parsing

Event = dict[str, object]


class PartitionReader(Protocol):
    """Parses the lines of some log partitions (:func:`.reader.read_partitions`); with
    ``mentioning``, it may skip lines whose text contains none of those strings."""

    def __call__(
        self,
        spark: SparkSession,
        listing: Listing,
        labels: Sequence[str],
        *,
        mentioning: Sequence[str] = (),
    ) -> DataFrame: ...


def collect_trace(events: DataFrame, message_id: str) -> list[Event]:
    """One message's operations in order, receipt handles followed (see
    :func:`~gateway.pipeline.transforms.parsing.message_trace`)."""
    trace = parsing.message_trace(events, message_id)
    if facts.PARTITION in trace.columns:
        trace = trace.drop(facts.PARTITION)
    return [row.asDict() for row in trace.collect()]


@dataclass(frozen=True, slots=True)
class TraceSource:
    """Where traces are read from: the logs, the facts that say which partitions hold a message,
    the report's settings (window), and how a partition is parsed."""

    listing: Listing
    all_facts: DataFrame
    settings: Settings
    reader: PartitionReader


def read_traces(
    spark: SparkSession, source: TraceSource, message_ids: Sequence[str]
) -> dict[str, list[Event]]:
    """The operations of ``message_ids``, by message, each in time order: parsed again from
    the log partitions whose facts mention them (usually the last hour or two)."""
    wanted = sorted(set(message_ids))
    listing = source.listing
    labels = partitions_of(source.all_facts, wanted, listing)
    if not labels:
        return {}
    reader = source.reader
    events = events_of(spark, listing, labels, source.settings, reader=reader, mentioning=wanted)
    events = events.where(F.col("message_id").isin(wanted))
    found: dict[str, list[Event]] = defaultdict(list)
    for row in events.drop(facts.PARTITION).collect():
        event = row.asDict()
        found[str(event["message_id"])].append(event)
    return {message_id: sorted(trace, key=_order) for message_id, trace in found.items()}


def partitions_of(all_facts: DataFrame, message_ids: Sequence[str], listing: Listing) -> list[str]:
    """The log partitions, still in the logs, whose facts mention one of ``message_ids``."""
    if not message_ids:
        return []
    found = (
        all_facts.where(F.col("message_id").isin(list(message_ids)))
        .select(facts.PARTITION)
        .distinct()
        .collect()
    )
    return sorted(row[0] for row in found if row[0] in listing.paths)


def events_of(
    spark: SparkSession,
    listing: Listing,
    labels: Sequence[str],
    settings: Settings,
    *,
    reader: PartitionReader,
    mentioning: Sequence[str] = (),
) -> DataFrame:
    """The usable events of some log partitions inside the report's window (only those whose
    line mentions one of ``mentioning``, when given)."""
    parsed = reader(spark, listing, labels, mentioning=mentioning)
    return parsing.within_time_window(
        parsing.usable_events(parsed), settings.since_ms, settings.until_ms
    )


def complete_failing_endpoints(
    endpoints: Sequence[MutableMapping[str, object]], found: Mapping[str, Sequence[Event]]
) -> list[MutableMapping[str, object]]:
    """Fill the last outcome, status and error of failing endpoints from the traces: the facts
    keep no text, and the latest failures of every failing endpoint are among the traces.
    Returns the rows filled in."""
    latest: dict[tuple[object, ...], Event] = {}
    for trace in found.values():
        for event in trace:
            if event.get("action") != Action.PUSH_MESSAGE.value:
                continue
            key = (event.get("topic_name"), event.get("subscription_name"), event.get("endpoint"))
            if key not in latest or _order(event) > _order(latest[key]):
                latest[key] = event
    completed = []
    for row in endpoints:
        if not row.get("currently_failing"):
            continue
        key = (row.get("topic_name"), row.get("subscription_name"), row.get("endpoint"))
        event = latest.get(key)
        if event is not None:
            row["last_outcome"] = event.get("outcome")
            row["last_status_code"] = event.get("status_code")
            row["last_error"] = event.get("error")
            completed.append(row)
    return completed


def _order(event: Mapping[str, object]) -> tuple[int, int, int]:
    action = str(event.get("action"))
    time_ms = event.get("time_ms")
    attempt = event.get("attempt")
    return (
        time_ms if isinstance(time_ms, int) else 0,
        ACTION_ORDER.get(action, 99),
        attempt if isinstance(attempt, int) else 0,
    )
