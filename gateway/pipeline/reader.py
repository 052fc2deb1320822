"""Reading the operation logs with Spark: every line of some files, or only the lines that
mention some strings, parsed into typed columns with the log partition each came from.

The JSON reader gets the explicit all-string schema (:func:`.schema.raw_log_schema`): no
inference pass, and a wrongly typed value is a null in one column instead of a corrupt record.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from gateway.errors.commands import PipelineError
from gateway.pipeline.schema import CORRUPT_RECORD, raw_log_schema
from gateway.pipeline.storage import Listing
from gateway.pipeline.transforms import facts, parsing

#: Text a lookup may search the raw lines for: nothing JSON could escape into another spelling.
PLAIN_TEXT: Final = re.compile(r"[A-Za-z0-9_.:-]+")


def read_logs(spark: SparkSession, logs: str | Sequence[str]) -> DataFrame:
    """Log files (a directory is read recursively; compressed files too) as JSON lines with the
    explicit schema; lines that are not JSON objects land in the corrupt-record column."""
    reader = (
        spark.read.schema(raw_log_schema())
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_RECORD)
        .option("recursiveFileLookup", "true")
    )
    try:
        return reader.json(logs if isinstance(logs, str) else list(logs))
    except AnalysisException as error:
        raise PipelineError(f"cannot read --logs {logs}: {error.getMessage()}") from error


def read_partitions(
    spark: SparkSession,
    listing: Listing,
    labels: Sequence[str],
    *,
    mentioning: Sequence[str] = (),
) -> DataFrame:
    """The parsed lines of some log partitions, each with its ``log_partition``. With
    ``mentioning``, only lines whose text contains one of those strings may be returned: the
    page's traces need a few lines of an hour, and finding them in the text costs a fraction of
    parsing every line. Strings JSON could spell another way (escapes) read every line."""
    files = [path for label in labels for path in listing.paths[label]]
    if mentioning and all(PLAIN_TEXT.fullmatch(text) for text in mentioning):
        raw = _lines_mentioning(spark, files, listing.root_path, mentioning)
    else:
        raw = facts.label_partitions(read_logs(spark, files), listing.root_path)
    return parsing.parse_records(raw)


def _lines_mentioning(
    spark: SparkSession, files: Sequence[str], root_path: str, mentioning: Sequence[str]
) -> DataFrame:
    """The lines of ``files`` containing one of ``mentioning``, parsed as :func:`read_logs`
    parses every line (a line that is no JSON object has it in the corrupt-record column)."""
    lines = facts.label_partitions(spark.read.text(list(files)), root_path)
    wanted = F.lit(False)
    for text in mentioning:
        wanted |= F.col("value").contains(text)
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_RECORD}
    parsed = F.from_json("value", raw_log_schema(), options).alias("_json")
    return lines.where(wanted).select(parsed, facts.PARTITION).select("_json.*", facts.PARTITION)
