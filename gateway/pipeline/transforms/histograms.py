"""Latency percentiles that merge: durations counted in log-linear buckets, percentiles read
from the summed counts.

An incremental report keeps, per log partition, how many messages fell in each bucket
(:mod:`.partials`) and adds the counts of all partitions up; an exact percentile, or Spark's
``percentile_approx`` sketch, cannot be stored per partition and merged like that.

Buckets keep the 7 highest significant bits of a duration in milliseconds, like an HDR
histogram: every value below 128 ms is its own bucket, and above that an octave is split into 64
buckets, so a bucket spans at most 1/64 of its lower bound. A percentile is the middle value of the
bucket holding the value of rank ``ceil(q * n)``: exact below 128 ms, within 0.8 % above
(1,100 ms reads as 1,095, 30,200 as 30,079).
Negative durations (clocks that disagree) keep their exact value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

#: Significant bits a bucket keeps: 2**(BITS - 1) buckets per octave.
SIGNIFICANT_BITS: Final = 7
EXACT_BELOW: Final = 1 << SIGNIFICANT_BITS


def bucket(duration: Column) -> Column:
    """The lower bound of the bucket ``duration`` (a long, ms) falls in."""
    shift = _shift(duration)
    return F.when(duration < EXACT_BELOW, duration).otherwise(
        _shift_left(F.call_function("shiftright", duration, shift), shift)
    )


def representative(lower: Column) -> Column:
    """The value a bucket stands for in a percentile: its middle value (the lower one of two),
    so that a bucket of two values stands for its lower bound."""
    width = _shift_left(F.lit(1).cast("long"), _shift(lower))
    return F.when(lower < EXACT_BELOW, lower).otherwise(
        lower + F.call_function("shiftright", width - 1, F.lit(1))
    )


def _shift_left(value: Column, bits: Column) -> Column:
    # functions.shiftleft takes a Python int only; the SQL function takes a column.
    return F.call_function("shiftleft", value, bits)


def _shift(value: Column) -> Column:
    """How many low bits a bucket of ``value`` drops: its bit length minus the bits kept.
    ``bin`` gives the bit length exactly, where ``log2`` rounds at powers of two."""
    length = F.length(F.bin(F.greatest(value, F.lit(1))))
    return F.greatest(length - SIGNIFICANT_BITS, F.lit(0)).cast("int")


def percentiles(
    counts: DataFrame, keys: Sequence[str], quantiles: Sequence[float], names: Sequence[str]
) -> DataFrame:
    """From rows (``keys``, ``bucket``, ``messages``), per key: the percentile ``quantiles[i]``
    as column ``names[i]`` (a long), the middle value of the bucket holding the value of rank
    ``ceil(q * n)``, as an exact percentile over the bucketed values would be."""
    summed = counts.groupBy(*keys, "bucket").agg(F.sum("messages").alias("messages"))
    running = Window.partitionBy(*keys).orderBy("bucket")
    everything = Window.partitionBy(*keys)
    ranked = summed.withColumn("_seen", F.sum("messages").over(running)).withColumn(
        "_total", F.sum("messages").over(everything)
    )
    value = representative(F.col("bucket"))
    return ranked.groupBy(*keys).agg(
        *[
            F.min(F.when(F.col("_seen") >= F.ceil(F.col("_total") * q), value)).alias(name)
            for q, name in zip(quantiles, names, strict=True)
        ]
    )
