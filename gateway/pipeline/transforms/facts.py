"""Per-message facts: what the report remembers of every message, so summaries never need the
raw operations again and an incremental run reads only the log partitions that are new.

One aggregation over the parsed records of some log partitions gives :func:`partition_facts`:
a row per log partition and message key (a topic message's publication, a message's deliveries
to one subscription endpoint, a queue message) with mergeable figures: counts, first and last
times, the last attempt's status. Rows of the same message from different partitions (a retry in
the next hour, a delete long after the send) are combined by :func:`merge_facts`. Lines that are
not events (malformed, unusable, outside the window) land in one keyless row per partition, so
the same rows also carry the input summary (:func:`partition_inputs`).

Every aggregate has a fixed-width buffer (counts, longs, ``max_by`` of an int), which keeps the
aggregation hash-based: a string min/max would make Spark sort all records instead.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from gateway.observability.operations import Action, Outcome
from gateway.pipeline.increments import FIRST_TIME, INPUT_COUNTS, LAST_TIME
from gateway.pipeline.schema import (
    DELETED_ACTIONS,
    HANDLE_ISSUING_ACTIONS,
    RECEIVED_ACTIONS,
    SENT_ACTIONS,
)
from gateway.pipeline.transforms import parsing
from gateway.pipeline.transforms.columns import PARTITION, action_is
from gateway.pipeline.transforms.homes import HOME, MESSAGE_HASH, message_hash

#: Columns that identify what a fact is about; null where they do not apply.
KEYS: Final = (
    "topic_name",
    "subscription_name",
    "endpoint",
    "queue_name",
    "message_id",
)
#: Set on the rows of EndpointCircuit records only (one per transition: no MessageId, so no
#: message summary sees them): the transition as JSON (:mod:`gateway.pipeline.circuits`).
CIRCUIT: Final = "circuit"
#: Set on queue rows only when receipt handles must be resolved (``with_handles``): the handle a
#: receive handed out, or the one an id-less delete used. xxhash64 keeps the key fixed-width.
HANDLE_HASH: Final = "handle_hash"

#: The parsed columns the facts are computed from: what a report asks the JSON reader for.
INPUT_COLUMNS: Final = (
    "time_ms",
    "action",
    "message_id",
    "topic_name",
    "subscription_name",
    "endpoint",
    "queue_name",
    "outcome",
    "status_code",
    "publish_time_ms",
    "dequeue_count",
    "receipt_handle_in_request",
    "receipt_handle_in_response",
    "next_attempt_time_ms",
    "circuit_state",
    "previous_circuit_state",
    "failure_rate",
    "next_probe_time_ms",
    "circuit_override",
)
#: What an EndpointCircuit record's row keeps, in its ``circuit`` JSON.
CIRCUIT_COLUMNS: Final = (
    "time_ms",
    "topic_name",
    "subscription_name",
    "circuit_state",
    "previous_circuit_state",
    "failure_rate",
    "next_probe_time_ms",
    "circuit_override",
)
TOPIC_ACTIONS: Final = (
    Action.PUBLISH_MESSAGE.value,
    Action.PUSH_MESSAGE.value,
    Action.DEAD_LETTER.value,
    Action.REPLAY.value,
)
DELIVERY_ACTIONS: Final = TOPIC_ACTIONS[1:]


def label_partitions(raw: DataFrame, root_path: str) -> DataFrame:
    """Add ``log_partition``: the directory of the line's file relative to the logs directory
    (``.`` for the directory itself), e.g. ``dt=2024-06-01/hour=03``. ``root_path`` is the
    logs directory's URL-encoded path (no scheme or host), as in Spark's file paths. Computed
    from the scan's per-file metadata with substring operations, cheap next to parsing."""
    file_path = "_metadata.file_path"
    parent = F.expr(
        f"substring({file_path}, 1,"
        f" length({file_path}) - length(substring_index({file_path}, '/', -1)) - 1)"
    )
    root = root_path.rstrip("/")
    start = F.instr(parent, root + "/") + F.lit(len(root) + 1)
    relative = F.when(parent.endswith(root), F.lit(".")).otherwise(
        parent.substr(start, F.lit(1 << 30))
    )
    return raw.withColumn(PARTITION, relative)


def partition_facts(
    parsed: DataFrame, since_ms: int | None, until_ms: int | None, *, with_handles: bool
) -> DataFrame:
    """Facts of the parsed records (:func:`~.parsing.parse_records` with ``log_partition``),
    one row per log partition and message key."""
    usable = parsing.usable()
    marked = parsed.withColumn("_event", usable & parsing.in_window(since_ms, until_ms))
    keys = _key_columns(F.col("_event"), with_handles=with_handles)
    figures = marked.groupBy(PARTITION, *keys).agg(
        *_input_figures(usable), *_topic_figures(), *_queue_figures()
    )
    return figures.withColumn(MESSAGE_HASH, message_hash())


def _key_columns(event: Column, *, with_handles: bool) -> list[Column]:
    is_topic = event & F.col("action").isin(*TOPIC_ACTIONS) & F.col("topic_name").isNotNull()
    is_delivery = is_topic & F.col("action").isin(*DELIVERY_ACTIONS)
    is_queue = event & ~is_topic & F.col("queue_name").isNotNull()
    id_less = F.col("message_id").isNull() & F.col("receipt_handle_in_request").isNotNull()
    # Id-less deletes keep their handle always, so they are counted and, when resolution is
    # on, matched to the receive that handed the handle out.
    handle = F.when(is_queue & id_less, F.xxhash64("receipt_handle_in_request"))
    if with_handles:
        issues = (
            F.col("action").isin(*HANDLE_ISSUING_ACTIONS)
            & F.col("receipt_handle_in_response").isNotNull()
        )
        handle = handle.when(is_queue & issues, F.xxhash64("receipt_handle_in_response"))
    is_circuit = (
        event
        & action_is(Action.ENDPOINT_CIRCUIT)
        & F.col("subscription_name").isNotNull()
        & F.col("circuit_state").isNotNull()
    )
    return [
        F.when(is_topic, F.col("topic_name")).alias("topic_name"),
        F.when(is_delivery, F.col("subscription_name")).alias("subscription_name"),
        F.when(is_delivery, F.col("endpoint")).alias("endpoint"),
        F.when(is_queue, F.col("queue_name")).alias("queue_name"),
        F.when(is_topic | is_queue, F.col("message_id")).alias("message_id"),
        handle.alias(HANDLE_HASH),
        F.when(is_circuit, F.to_json(F.struct(*CIRCUIT_COLUMNS))).alias(CIRCUIT),
    ]


def _input_figures(usable: Column) -> list[Column]:
    event = F.col("_event")
    return [
        F.count(F.lit(1)).alias("lines"),
        F.count_if(F.col("is_malformed")).alias("malformed_lines"),
        F.count_if(~F.col("is_malformed") & ~usable).alias("unusable_records"),
        F.count_if(event).alias("events"),
        F.count_if(event & F.col("message_id").isNull()).alias("events_without_message_id"),
        F.min(F.when(event, F.col("time_ms"))).alias("first_ms"),
        F.max(F.when(event, F.col("time_ms"))).alias("last_ms"),
    ]


def push_succeeded() -> Column:
    """Success is ``Outcome == "success"``; records without an Outcome (other producers) fall
    back to a 2xx StatusCode."""
    by_status = F.col("status_code").between(200, 299)
    return F.coalesce(F.col("outcome") == F.lit(Outcome.SUCCESS.value), by_status, F.lit(False))


def _topic_figures() -> list[Column]:
    push = action_is(Action.PUSH_MESSAGE)
    ok = push & push_succeeded()
    failed = push & ~push_succeeded()
    # Orders attempts by time; the lowest bit of the smallest key says whether the first failed.
    attempt_key = F.col("time_ms") * 2 + F.when(ok, 0).otherwise(1)
    return [
        F.count_if(action_is(Action.PUBLISH_MESSAGE)).alias("publishes"),
        F.min(F.when(action_is(Action.PUBLISH_MESSAGE), F.col("time_ms"))).alias("published_ms"),
        F.count_if(push).alias("attempts"),
        F.count_if(failed).alias("failed_attempts"),
        F.count_if(F.col("_event") & push & F.col("publish_time_ms").isNull()).alias(
            "pushes_without_publish_time"
        ),
        F.min(F.when(push, attempt_key)).alias("first_attempt_key"),
        F.max(F.when(push, F.col("time_ms"))).alias("last_attempt_ms"),
        F.min(F.when(ok, F.col("time_ms"))).alias("first_success_ms"),
        F.max(F.when(ok, F.col("time_ms"))).alias("last_success_ms"),
        F.min(F.when(failed, F.col("time_ms"))).alias("first_failure_ms"),
        F.max(F.when(failed, F.col("time_ms"))).alias("last_failure_ms"),
        F.max_by(F.when(push, F.col("status_code")), F.when(push, F.col("time_ms"))).alias(
            "last_status_code"
        ),
        # When the latest retry was due: the latest NextAttemptTime of a failure (null: no
        # failure scheduled one). A last try that failed schedules none; its wait began at
        # the retry due before it, so that one is kept rather than a null.
        F.max(F.when(failed, F.col("next_attempt_time_ms"))).alias("retry_due_ms"),
        F.min(F.when(push, F.col("publish_time_ms"))).alias("publish_time_ms"),
        F.min(F.when(action_is(Action.DEAD_LETTER), F.col("time_ms"))).alias("dead_letter_ms"),
        F.count_if(action_is(Action.REPLAY)).alias("replays"),
    ]


def _queue_figures() -> list[Column]:
    sent = F.col("action").isin(*SENT_ACTIONS)
    received = F.col("action").isin(*RECEIVED_ACTIONS)
    deleted = F.col("action").isin(*DELETED_ACTIONS)
    return [
        F.count_if(sent).alias("sends"),
        F.min(F.when(sent, F.col("time_ms"))).alias("sent_ms"),
        F.count_if(received).alias("receives"),
        F.max(F.when(received, F.col("dequeue_count"))).alias("max_dequeue_count"),
        F.count_if(deleted).alias("deletes"),
        F.min(F.when(deleted, F.col("time_ms"))).alias("deleted_ms"),
    ]


#: How each figure combines across partitions (and across a resolved delete and its message).
SUMMED: Final = (
    "lines",
    "malformed_lines",
    "unusable_records",
    "events",
    "events_without_message_id",
    "publishes",
    "attempts",
    "failed_attempts",
    "pushes_without_publish_time",
    "replays",
    "sends",
    "receives",
    "deletes",
)
EARLIEST: Final = (
    "first_ms",
    "published_ms",
    "first_attempt_key",
    "first_success_ms",
    "first_failure_ms",
    "publish_time_ms",
    "dead_letter_ms",
    "sent_ms",
    "deleted_ms",
)
#: Latest across partitions; ``retry_due_ms`` too, since a later failure's retry is due after an
#: earlier one's.
LATEST: Final = ("last_ms", "last_attempt_ms", "last_success_ms", "last_failure_ms", "retry_due_ms")


def merge_facts(facts: DataFrame, *, resolve_handles: bool) -> DataFrame:
    """One row per message key over all partitions: the keyless input rows are dropped, and
    with ``resolve_handles`` id-less deletes take the MessageId of the receive whose handle
    they used (the real service logs some deletes with only a receipt handle)."""
    keyed = keyed_facts(facts, resolve_handles=resolve_handles)
    return keyed.groupBy(*KEYS).agg(*_merged_figures())


def keyed_facts(facts: DataFrame, *, resolve_handles: bool) -> DataFrame:
    """The facts about a message: without the keyless input rows, and with
    ``resolve_handles`` id-less deletes given the MessageId (and hash) of their receive."""
    keyed = facts.where(F.col("message_id").isNotNull() | F.col(HANDLE_HASH).isNotNull())
    if resolve_handles:
        keyed = _resolve_handles(keyed).withColumn(MESSAGE_HASH, message_hash())
    return keyed.where(F.col("message_id").isNotNull())


def merge_homed(homed: DataFrame) -> DataFrame:
    """:func:`merge_facts` of facts carrying their message's home (:func:`.homes.with_homes`)
    and ``_spans``: the facts of a message found in one partition are already one row per key
    (without receipt handles) and pass through; only the others are aggregated."""
    figures = [
        *SUMMED,
        *EARLIEST,
        *LATEST,
        "max_dequeue_count",
        "last_status_code",
    ]
    single = homed.where(~F.col("_spans")).select(*KEYS, *figures, HOME)
    spanning = homed.where(F.col("_spans")).groupBy(*KEYS, HOME).agg(*_merged_figures())
    return single.unionByName(spanning)


def _merged_figures() -> list[Column]:
    return [
        *[F.sum(name).alias(name) for name in SUMMED],
        *[F.min(name).alias(name) for name in EARLIEST],
        *[F.max(name).alias(name) for name in LATEST],
        F.max("max_dequeue_count").alias("max_dequeue_count"),
        F.max_by("last_status_code", "last_attempt_ms").alias("last_status_code"),
    ]


def _resolve_handles(facts: DataFrame) -> DataFrame:
    id_less = F.col("message_id").isNull()
    issued = (
        facts.where(~id_less & F.col(HANDLE_HASH).isNotNull())
        .select(
            F.col("queue_name").alias("_queue"),
            F.col(HANDLE_HASH).alias("_handle"),
            F.col("message_id").alias("_resolved"),
        )
        .dropDuplicates(["_queue", "_handle"])
    )
    matched = (F.col("queue_name") == F.col("_queue")) & (F.col(HANDLE_HASH) == F.col("_handle"))
    resolved = (
        facts.where(id_less)
        .join(issued, matched, "left")
        .withColumn("message_id", F.col("_resolved"))
        .select(*facts.columns)
    )
    return facts.where(~id_less).unionByName(resolved)


#: Figures whose type is a 32-bit integer (they come from int fields); all others are longs.
INT_FIGURES: Final = ("last_status_code", "max_dequeue_count")
FIGURES: Final = (*SUMMED, *EARLIEST, *LATEST, *INT_FIGURES)


def schema() -> StructType:
    """The fact table's columns, for reading it back with ``log_partition`` as text."""
    keys = [StructField(name, StringType()) for name in (PARTITION, *KEYS)]
    figures = [
        StructField(name, IntegerType() if name in INT_FIGURES else LongType()) for name in FIGURES
    ]
    hashes = [StructField(HANDLE_HASH, LongType()), StructField(CIRCUIT, StringType())]
    return StructType([*keys, *hashes, *figures, StructField(MESSAGE_HASH, LongType())])


def empty(spark: SparkSession) -> DataFrame:
    """A fact table without rows, built in the JVM (no Python workers)."""
    columns = [F.lit(None).cast(field.dataType).alias(field.name) for field in schema().fields]
    return spark.range(0).select(*columns)


def handle_only() -> Column:
    """Rows of operations logged with a receipt handle and no MessageId."""
    return F.col("message_id").isNull() & F.col(HANDLE_HASH).isNotNull()


HANDLE_ONLY_ROWS: Final = "handle_only_rows"


def partition_inputs(facts: DataFrame) -> DataFrame:
    """Per log partition: lines read, malformed and unusable lines skipped, events in the
    window, events without a MessageId, pushes without a PublishTime, the first and last event;
    and ``handle_only_rows``, the facts of operations logged with only a receipt handle."""
    # Every input count is the sum of the fact of the same name, but for the events counted.
    source = {"events_in_window": "events"}
    return facts.groupBy(PARTITION).agg(
        *[
            F.coalesce(F.sum(source.get(figure, figure)), F.lit(0)).alias(figure)
            for figure in INPUT_COUNTS
        ],
        F.min("first_ms").alias(FIRST_TIME),
        F.max("last_ms").alias(LAST_TIME),
        F.count_if(handle_only()).alias(HANDLE_ONLY_ROWS),
    )
