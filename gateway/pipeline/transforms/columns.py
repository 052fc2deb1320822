"""Column predicates and settings shared by the transform modules, so that parsing, deliveries
and queues test an Action or a missing column the same way."""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column
from pyspark.sql import functions as F

from gateway.oplog import Action

PERCENTILE_ACCURACY: Final = 10_000


def action_is(action: Action) -> Column:
    return F.col("action") == F.lit(action.value)


def present(*columns: str) -> Column:
    condition = F.lit(True)
    for column in columns:
        condition &= F.col(column).isNotNull()
    return condition
