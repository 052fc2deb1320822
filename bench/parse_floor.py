"""The floor under any report: a Spark job that only parses every field of the logs.

    .venv/bin/python bench/parse_floor.py --logs DIR [--master local[2]] [--conf KEY=VALUE ...]

Reads the logs with the report's own reader (same schema, same options), counts the non-null
values of every field, and does nothing else: no typing, no tables, no aggregates. Whatever this
takes, end to end in a fresh process, no report built on Spark's JSON reader can beat, so it
tells whether a target is within reach of the design at all. ``bench/report.py --parse-floor``
times it beside the report.
"""

from __future__ import annotations

import argparse
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from gateway.pipeline.spark_job import read_logs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", required=True)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--conf", action="append", default=[], help="Spark KEY=VALUE")
    args = parser.parse_args()
    started = time.perf_counter()
    builder = SparkSession.builder.master(args.master).appName("mns-parse-floor")
    for setting in args.conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    session_ready = time.perf_counter()
    logs = read_logs(spark, args.logs)  # the report's own reader
    counts = logs.agg(*[F.count(column).alias(column) for column in logs.columns]).first()
    finished = time.perf_counter()
    assert counts is not None
    print(f"started Spark in {session_ready - started:.1f} s")
    print(f"parsed {counts['Action']} records in {finished - session_ready:.1f} s")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
