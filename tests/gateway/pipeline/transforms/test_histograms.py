"""Latency histograms: buckets that keep 7 significant bits, and percentiles read from summed
counts, which is what lets partial summaries of different partitions add up."""

from __future__ import annotations

import math

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from gateway.pipeline.transforms import histograms
from tests.gateway.pipeline.frames import assert_frames_equal


def buckets_of(spark: SparkSession, values: list[int]) -> list[tuple[int, int]]:
    frame = spark.createDataFrame([(value,) for value in values], "v long")
    lower = histograms.bucket(F.col("v"))
    rows = frame.select(lower.alias("b"), histograms.representative(lower).alias("r")).collect()
    return [(row.b, row.r) for row in rows]


def test_values_below_128_ms_are_their_own_bucket(spark: SparkSession) -> None:
    values = [-5, 0, 1, 127]
    assert buckets_of(spark, values) == [(value, value) for value in values]


@pytest.mark.parametrize(
    ("value", "lower", "middle"),
    [(128, 128, 128), (129, 128, 128), (1_100, 1_088, 1_095), (30_200, 29_952, 30_079)],
)
def test_larger_values_fall_in_buckets_of_at_most_a_64th(
    spark: SparkSession, value: int, lower: int, middle: int
) -> None:
    [(found_lower, found_middle)] = buckets_of(spark, [value])
    assert (found_lower, found_middle) == (lower, middle)
    assert abs(found_middle - value) / value < 1 / 128


def test_bucket_edges_follow_powers_of_two(spark: SparkSession) -> None:
    values = [2**20 - 1, 2**20, 2**20 + 2**14 - 1, 2**20 + 2**14]
    lowers = [lower for lower, _ in buckets_of(spark, values)]
    assert lowers == [2**20 - 2**13, 2**20, 2**20, 2**20 + 2**14]


def test_percentiles_of_summed_counts_equal_those_of_all_values(spark: SparkSession) -> None:
    """Two partitions' histograms summed give the percentiles of all values together: the
    value of rank ceil(q * n), exact below 128 ms."""
    first = [(value,) for value in range(1, 51)]
    second = [(value,) for value in range(51, 101)]

    def counts(values: list[tuple[int]]) -> object:
        frame = spark.createDataFrame(values, "v long").withColumn("k", F.lit("x"))
        return frame.groupBy("k", histograms.bucket(F.col("v")).alias("bucket")).agg(
            F.count(F.lit(1)).alias("messages")
        )

    both = counts(first).unionByName(counts(second))
    found = histograms.percentiles(
        both, ["k"], (0.5, 0.95, 0.99, 1.0), ("p50", "p95", "p99", "p100")
    )
    expected = {f"p{round(q * 100)}": math.ceil(q * 100) for q in (0.5, 0.95, 0.99, 1.0)}
    assert_frames_equal(found, [Row(k="x", **expected)])
