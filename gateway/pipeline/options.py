"""What one report run needs to know: the command line, validated (:mod:`gateway.pipeline.report`
reads it; :mod:`gateway.pipeline.spark_job` runs it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReportOptions:
    """The command line, validated: what one report run needs to know."""

    logs: str | None  # a local path or any URI Spark can read (hdfs://, s3a://, ...)
    out: str | None
    since_ms: int | None
    until_ms: int | None
    master: str | None
    timezone: str
    trace: str | None
    spark_conf: Mapping[str, str]
    full: bool = False  # forget what earlier runs into --out read
    traces: bool = False  # also keep every operation (message_traces)
