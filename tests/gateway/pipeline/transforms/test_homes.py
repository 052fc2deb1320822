"""Home partitions: a message's figures are kept with the newest partition holding its facts,
and only the messages found in several partitions are merged."""

from __future__ import annotations

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from gateway.pipeline.transforms import facts, homes
from tests.gateway.pipeline.frames import assert_frames_equal

LABELS = ("dt=2024-06-01/hour=00", "dt=2024-06-01/hour=01", "dt=2024-06-01/hour=02")
H0, H1, H2 = LABELS


def keyed(spark: SparkSession, rows: list[tuple[str, str, int]]) -> DataFrame:
    """Facts of (partition, message id, attempts)."""
    frame = spark.createDataFrame(rows, "log_partition string, message_id string, attempts long")
    return frame.withColumn(homes.MESSAGE_HASH, homes.message_hash())


def test_a_message_is_homed_in_the_newest_partition_holding_it(spark: SparkSession) -> None:
    found = keyed(spark, [(H0, "a", 1), (H1, "a", 1), (H1, "b", 1), (H2, "c", 1), (H0, "c", 2)])
    spans = homes.spanning(homes.message_spans(homes.message_keys(found), LABELS))
    homed = homes.with_homes(found, spans, LABELS, homes=None)
    assert_frames_equal(
        homed.select(facts.PARTITION, "message_id", homes.HOME, "_spans"),
        [
            Row(log_partition=H0, message_id="a", home_partition=H1, _spans=True),
            Row(log_partition=H1, message_id="a", home_partition=H1, _spans=True),
            Row(log_partition=H1, message_id="b", home_partition=H1, _spans=False),
            Row(log_partition=H2, message_id="c", home_partition=H2, _spans=True),
            Row(log_partition=H0, message_id="c", home_partition=H2, _spans=True),
        ],
    )


def test_only_the_homes_asked_for_are_kept(spark: SparkSession) -> None:
    found = keyed(spark, [(H0, "a", 1), (H1, "a", 1), (H0, "b", 1), (H2, "c", 1)])
    spans = homes.message_spans(homes.message_keys(found), LABELS, within=(H0,))
    homed = homes.with_homes(found, homes.spanning(spans), LABELS, homes=(H0,))
    assert [row.message_id for row in homed.collect()] == ["b"]


def test_partitions_sharing_a_message(spark: SparkSession) -> None:
    found = keyed(spark, [(H0, "a", 1), (H1, "a", 1), (H1, "b", 1), (H2, "c", 1)])
    sharing = homes.partitions_sharing(homes.message_keys(found), [H1])
    assert sorted(row[0] for row in sharing.collect()) == [H0, H1]


def test_the_earliest_partition_of_some_homes(spark: SparkSession) -> None:
    found = keyed(spark, [(H0, "a", 1), (H2, "a", 1), (H1, "b", 1), (H2, "b", 1)])
    spans = homes.message_spans(homes.message_keys(found), LABELS)
    earliest = spans.agg(homes.first_partition_of_homes([H2], LABELS)).first()
    assert earliest is not None and earliest[0] == 0
    assert spans.agg(homes.first_partition_of_homes([H1], LABELS)).first()[0] is None


def test_no_partitions_at_all(spark: SparkSession) -> None:
    empty = keyed(spark, []).withColumn("x", F.lit(1))
    assert homes.message_spans(homes.message_keys(empty), ()).count() == 0
