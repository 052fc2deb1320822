"""Column predicates and settings shared by the transform modules, so that parsing, deliveries
and queues test an Action or a missing column the same way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from gateway.observability.operations import Action

#: The column naming the log partition (the directory of the file) a line or fact came from.
PARTITION: Final = "log_partition"


def action_is(action: Action) -> Column:
    return F.col("action") == F.lit(action.value)


def present(*columns: str) -> Column:
    condition = F.lit(True)
    for column in columns:
        condition &= F.col(column).isNotNull()
    return condition


def join_null_safe(
    left: DataFrame, right: DataFrame, keys: Sequence[str], how: str = "left"
) -> DataFrame:
    """Join on ``keys`` where null matches null (a subscription without an Endpoint); the
    result has ``left``'s key columns once."""
    renamed = right.select(
        *[F.col(key).alias(f"_key_{key}") for key in keys],
        *[column for column in right.columns if column not in keys],
    )
    condition = F.lit(True)
    for key in keys:
        condition &= F.col(key).eqNullSafe(F.col(f"_key_{key}"))
    return left.join(renamed, condition, how).drop(*[f"_key_{key}" for key in keys])
