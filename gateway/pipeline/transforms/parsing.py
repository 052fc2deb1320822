"""The input side of the report: typing raw log fields, dropping what cannot be used, the time
window and single-message traces (following receipt handles). Kept apart from the aggregates so
the questions of what a record means and what the report counts stay separate."""

from __future__ import annotations

import string

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from gateway.observability.operations import Field
from gateway.pipeline.schema import (
    ACTION_ORDER,
    COLUMN_FOR_FIELD,
    CORRUPT_RECORD,
    HANDLE_ISSUING_ACTIONS,
    INT_FIELDS,
    LONG_FIELDS,
    TIME_FIELDS,
)
from gateway.pipeline.transforms.columns import PARTITION

#: Columns of the raw input kept as they are: the log partition a line was read from.
PASSED_THROUGH = (PARTITION,)


def parse_records(raw: DataFrame) -> DataFrame:
    """Typed columns for every input line, plus ``is_malformed`` for lines that were not JSON
    objects. Nothing is dropped here, so the input summary can count what gets dropped later."""
    typed = [_typed_column(field).alias(column) for field, column in COLUMN_FOR_FIELD.items()]
    kept = [name for name in PASSED_THROUGH if name in raw.columns]
    return raw.select(*typed, F.col(CORRUPT_RECORD).isNotNull().alias("is_malformed"), *kept)


def usable_events(parsed: DataFrame) -> DataFrame:
    """The events every report is built from: well-formed lines with a readable Time and Action."""
    return parsed.where(usable()).drop("is_malformed")


def within_time_window(events: DataFrame, since_ms: int | None, until_ms: int | None) -> DataFrame:
    """Events with ``since_ms <= time_ms < until_ms``; a missing bound is open."""
    return events.where(in_window(since_ms, until_ms))


def message_trace(events: DataFrame, message_id: str) -> DataFrame:
    """Every operation of one message in the order they happened, including deletes and
    visibility changes logged with only a receipt handle that one of its operations returned."""
    own = events.where(F.col("message_id") == F.lit(message_id))
    handles = own.where(
        F.col("action").isin(*HANDLE_ISSUING_ACTIONS)
        & F.col("receipt_handle_in_response").isNotNull()
    ).select(F.col("receipt_handle_in_response").alias("receipt_handle_in_request"))
    by_handle = (
        events.where(F.col("message_id").isNull())
        .join(handles, "receipt_handle_in_request", "left_semi")
        .withColumn("message_id", F.lit(message_id))
        .select(*events.columns)
    )
    ranks = F.create_map(*[F.lit(value) for pair in ACTION_ORDER.items() for value in pair])
    return (
        own.unionByName(by_handle)
        .withColumn("action_rank", F.coalesce(ranks[F.col("action")], F.lit(99)))
        .orderBy("time_ms", "action_rank", "attempt")
        .drop("action_rank")
    )


def _typed_column(field: Field) -> Column:
    name = field.value
    text = F.nullif(F.col(name), F.lit(""))
    if field in TIME_FIELDS:
        return F.coalesce(_lenient_integer(name, "BIGINT"), F.unix_millis(F.try_to_timestamp(text)))
    if field in LONG_FIELDS:
        return _lenient_integer(name, "BIGINT")
    if field in INT_FIELDS:
        return _lenient_integer(name, "INT")
    if field is Field.OUTCOME:
        return _ascii_lower(text)
    return text


def _ascii_lower(text: Column) -> Column:
    """Outcomes are ASCII words. ``lower`` applies Spark 4's ICU case mapping to every row and
    loads and compiles ICU on the way, about a CPU-second per report for nothing."""
    return F.translate(text, string.ascii_uppercase, string.ascii_lowercase)


def _lenient_integer(name: str, sql_type: str) -> Column:
    """``"12"``, ``12``, ``"12.0"`` and ``"1.2e1"`` all read as 12; anything else as null.
    SQL ``try_cast`` because ANSI mode (Spark 4's default) makes a plain cast raise."""
    return F.expr(
        f"coalesce(try_cast(`{name}` AS {sql_type}),"
        f" try_cast(try_cast(`{name}` AS DOUBLE) AS {sql_type}))"
    )


def usable() -> Column:
    """Well-formed lines with a readable Time and Action: what counts as an event."""
    return ~F.col("is_malformed") & F.col("time_ms").isNotNull() & F.col("action").isNotNull()


def in_window(since_ms: int | None, until_ms: int | None) -> Column:
    """``since_ms <= time_ms < until_ms``; a missing bound is open."""
    condition = F.lit(True)
    if since_ms is not None:
        condition &= F.col("time_ms") >= F.lit(since_ms)
    if until_ms is not None:
        condition &= F.col("time_ms") < F.lit(until_ms)
    return condition
