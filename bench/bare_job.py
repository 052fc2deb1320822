"""The baseline of the report benchmark: a bare Spark job over the same logs that only parses
them and computes one grouped aggregate.

    .venv/bin/python bench/bare_job.py --logs DIR [--master local[2]] [--conf KEY=VALUE ...]

It reads the logs with the report's own reader and typing (same schema, same options) and
counts, per Action, the values of every field the report's facts are built from, so Spark
parses exactly the fields the report parses. Nothing is written. ``bench/report.py`` runs it
with the report's Spark settings, in a fresh process like the report, and prints the report's
time as a multiple of this one.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway.pipeline.reader import read_logs
from gateway.pipeline.transforms import facts, parsing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", required=True)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--conf", action="append", default=[], help="Spark KEY=VALUE")
    args = parser.parse_args()
    started = time.perf_counter()
    builder = SparkSession.builder.master(args.master).appName("mns-bare-job")
    for setting in args.conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    session_ready = time.perf_counter()
    parsed = parsing.parse_records(read_logs(spark, args.logs))
    counts = parsed.groupBy("action").agg(
        F.count(F.lit(1)).alias("records"),
        *[F.count(column).alias(column) for column in facts.INPUT_COLUMNS],
    )
    rows = counts.collect()
    finished = time.perf_counter()
    print(f"started Spark in {session_ready - started:.1f} s")
    records = sum(row["records"] for row in rows)
    print(f"parsed {records} records in {finished - session_ready:.1f} s")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
