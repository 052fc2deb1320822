"""Home partitions: which log partition's partial summaries a message's figures are kept in.

A message's home is the newest log partition holding any of its facts (partition labels sort in
time order with the gateway's ``dt=YYYY-MM-DD/hour=HH`` layout; with any other layout the
choice is still one partition per message, which is all correctness needs). All facts of a
message, whatever its keys (the publication, each subscription's deliveries), share its home, so
the figures that join them are computed within one home.

Messages are told apart by ``message_hash``, the xxhash64 of their MessageId, stored with the
facts: scanning a long column of every fact is cheap where the id strings are not. Two ids with
the same hash only share a home, which is harmless: a home's figures are still computed per
message key.

When new logs arrive only some homes change: the partitions read, and the partitions that were
the home of a message found in them (:func:`message_spans` within the partitions read; for
facts being replaced, :func:`partitions_sharing`). Recomputing a home needs the facts of every
message homed there, from whichever partitions hold them (:func:`with_homes`); only the
messages found in more than one partition are merged (:func:`spanning`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from gateway.pipeline.transforms.columns import PARTITION

HOME: Final = "home_partition"
MESSAGE_HASH: Final = "message_hash"
FIRST: Final = "_first_order"
LAST: Final = "_home_order"
PREVIOUS: Final = "_previous_home_order"


def message_hash() -> Column:
    """The hash that stands for a message (null for rows without a MessageId)."""
    return F.when(F.col("message_id").isNotNull(), F.xxhash64("message_id"))


def partition_order(labels: Sequence[str]) -> Column:
    """The position of the row's ``log_partition`` among ``labels`` (sorted): an int to take
    the maximum of, where a string maximum would make Spark sort instead of hash."""
    ordered = sorted(labels)
    if not ordered:  # an empty map literal has no key type
        return F.lit(None).cast("int")
    pairs = [F.lit(value) for index, label in enumerate(ordered) for value in (label, index)]
    return F.create_map(*pairs)[F.col(PARTITION)]


def partition_label(labels: Sequence[str], order: Column) -> Column:
    """The label at position ``order`` of the sorted ``labels``."""
    if not labels:
        return F.lit(None).cast("string")
    return F.array(*[F.lit(label) for label in sorted(labels)])[order]


def message_keys(all_facts: DataFrame) -> DataFrame:
    """(log_partition, message_hash) of every fact about a message."""
    return all_facts.where(F.col(MESSAGE_HASH).isNotNull()).select(PARTITION, MESSAGE_HASH)


def partitions_sharing(keys: DataFrame, partitions: Sequence[str]) -> DataFrame:
    """The distinct partitions holding a message that is also in one of ``partitions``."""
    inside = F.col(PARTITION).isin(list(partitions))
    wanted = keys.where(inside).select(MESSAGE_HASH).distinct()
    return keys.join(wanted, MESSAGE_HASH, "left_semi").select(PARTITION).distinct()


def message_spans(
    keys: DataFrame, labels: Sequence[str], *, within: Sequence[str] | None = None
) -> DataFrame:
    """(message_hash, positions of the first and the home partition) of every message, or of
    the messages with facts in one of the partitions ``within`` (``labels``: all partitions).
    With ``within``, also the position of the newest partition outside ``within`` holding the
    message (``_previous_home_order``): its home before ``within`` was read."""
    order = partition_order(labels)
    if within is None:
        return keys.groupBy(MESSAGE_HASH).agg(F.min(order).alias(FIRST), F.max(order).alias(LAST))
    inside = F.col(PARTITION).isin(list(within))
    messages = keys.where(inside).select(MESSAGE_HASH).distinct()
    return (
        keys.join(messages, MESSAGE_HASH, "left_semi")
        .groupBy(MESSAGE_HASH)
        .agg(
            F.min(order).alias(FIRST),
            F.max(order).alias(LAST),
            F.max(F.when(~inside, order)).alias(PREVIOUS),
        )
    )


def spanning(spans: DataFrame) -> DataFrame:
    """The messages whose facts lie in more than one partition: the only ones to merge."""
    return spans.where(F.col(FIRST) != F.col(LAST))


def first_partition_of_homes(homes: Sequence[str], labels: Sequence[str]) -> Column:
    """An aggregate: the earliest partition position holding a fact of a message homed in
    ``homes``; recomputing those homes reads the facts from there on."""
    positions = [sorted(labels).index(label) for label in homes]
    return F.min(F.when(F.col(LAST).isin(positions), F.col(FIRST)))


def with_homes(
    all_facts: DataFrame, merging: DataFrame, labels: Sequence[str], *, homes: Sequence[str] | None
) -> DataFrame:
    """The facts about messages, each with its ``home_partition`` and ``_spans`` (its facts are
    to be merged); limited to the messages homed in ``homes`` when given. ``merging``: spans of
    the messages to merge (:func:`spanning`); any other message lies in one partition, which is
    its home, and its facts are one row per key already."""
    order = partition_order(labels)
    joined = all_facts.where(F.col(MESSAGE_HASH).isNotNull()).join(
        F.broadcast(merging.select(MESSAGE_HASH, LAST)), MESSAGE_HASH, "left"
    )
    home_order = F.coalesce(F.col(LAST), order)
    result = joined.withColumn(HOME, partition_label(labels, home_order)).withColumn(
        "_spans", F.col(LAST).isNotNull()
    )
    if homes is not None:
        result = result.where(F.col(HOME).isin(list(homes)))
    return result.drop(LAST)
