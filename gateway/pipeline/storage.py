"""File-system side of the report: listing the logs, the state file, report.html, and removing
fact partitions, through Hadoop's FileSystem so that ``--logs`` and ``--out`` may be local
paths or any URI Spark reads (``hdfs://``, ``s3a://``, ...).

PySpark has no public API for Hadoop's FileSystem; these functions reach it through the JVM
gateway of the running SparkSession, and are the only place that does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pyspark.sql import SparkSession

from gateway.errors.commands import PipelineError
from gateway.pipeline.increments import FileStamps


@dataclass(frozen=True, slots=True)
class Listing:
    """The log files under ``--logs`` by partition: stamps to compare, paths to read."""

    root_uri: str  # the logs directory, qualified: what the state remembers
    root_path: str  # its URL-encoded path, from which partition labels are taken
    stamps: dict[str, FileStamps]
    paths: dict[str, list[str]]


def under(directory: str, name: str) -> str:
    """``directory/name`` for local paths and URIs alike (``pathlib`` would fold ``s3a://``)."""
    return f"{directory.rstrip('/')}/{name}"


def partition_label(file_path: str, root_path: str) -> str:
    """The file's directory relative to the root (``.`` for the root itself), from URL-encoded
    paths, the same way :func:`gateway.pipeline.transforms.facts.label_partitions` computes
    it in Spark."""
    parent = file_path.rsplit("/", 1)[0]
    root = root_path.rstrip("/")
    if parent.endswith(root):
        return "."
    return parent[parent.index(root + "/") + len(root) + 1 :]


def is_hidden(name: str) -> bool:
    """Names Spark's file readers skip, so the listing counts the files Spark will read."""
    return (name.startswith("_") and "=" not in name) or name.startswith(".")


def list_logs(spark: SparkSession, logs: str) -> Listing:
    """Every visible file under ``logs``, recursively, with size and modification time."""
    jvm, conf = _jvm(spark)
    root = jvm.org.apache.hadoop.fs.Path(logs)
    try:
        fs = root.getFileSystem(conf)
        root = fs.makeQualified(root)
        if not fs.getFileStatus(root).isDirectory():
            raise PipelineError(f"cannot read --logs {logs}: not a directory")
        found = fs.listFiles(root, True)
        root_path = str(root.toUri().getRawPath()).rstrip("/")
        stamps: dict[str, dict[str, tuple[int, int]]] = {}
        paths: dict[str, list[str]] = {}
        while found.hasNext():
            status = found.next()
            path = status.getPath()
            raw_path = str(path.toUri().getRawPath())
            if any(is_hidden(part) for part in raw_path[len(root_path) + 1 :].split("/")):
                continue
            label = partition_label(raw_path, root_path)
            stamps.setdefault(label, {})[path.getName()] = (
                int(status.getLen()),
                int(status.getModificationTime()),
            )
            paths.setdefault(label, []).append(path.toString())
    except Exception as error:  # py4j wraps FileNotFoundException and friends
        if isinstance(error, PipelineError):
            raise
        raise PipelineError(f"cannot read --logs {logs}: {_java_message(error)}") from error
    return Listing(str(root.toString()), root_path, dict(stamps), paths)


def read_text(spark: SparkSession, target: str) -> str | None:
    """A small text file's content, or None if it does not exist."""
    local = _local_path(target)
    if local is not None:
        return local.read_text(encoding="utf-8") if local.exists() else None
    jvm, conf = _jvm(spark)
    path = jvm.org.apache.hadoop.fs.Path(target)
    fs = path.getFileSystem(conf)
    if not fs.exists(path):
        return None
    stream = fs.open(path)
    try:
        return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()


def write_text(spark: SparkSession, target: str, text: str) -> None:
    """Write a file where the tables go: a local file directly, any other URI through Hadoop's
    FileSystem, so a cluster run can write to HDFS or object storage too."""
    local = _local_path(target)
    if local is not None:
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_text(text, encoding="utf-8")
        return
    jvm, conf = _jvm(spark)
    path = jvm.org.apache.hadoop.fs.Path(target)
    stream = path.getFileSystem(conf).create(path, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


def delete(spark: SparkSession, target: str) -> None:
    """Remove a file or a directory tree; nothing if it does not exist."""
    jvm, conf = _jvm(spark)
    path = jvm.org.apache.hadoop.fs.Path(target)
    path.getFileSystem(conf).delete(path, True)


def exists(spark: SparkSession, target: str) -> bool:
    jvm, conf = _jvm(spark)
    path = jvm.org.apache.hadoop.fs.Path(target)
    return bool(path.getFileSystem(conf).exists(path))


def partition_directory(spark: SparkSession, column: str, value: str) -> str:
    """The directory name Spark's ``partitionBy`` gives a value (``/`` and ``=`` escaped)."""
    jvm, _ = _jvm(spark)
    utils = jvm.org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils
    return f"{column}={utils.escapePathName(value)}"


def _local_path(target: str) -> Path | None:
    scheme = urlsplit(target).scheme
    if scheme in ("", "file"):
        return Path(urlsplit(target).path if scheme else target)
    return None


def _jvm(spark: SparkSession) -> tuple[Any, Any]:
    context = spark.sparkContext
    jvm = context._jvm
    assert jvm is not None
    return jvm, context._jsc.hadoopConfiguration()


def _java_message(error: Exception) -> str:
    java = getattr(error, "java_exception", None)
    return str(java.getMessage()) if java is not None else str(error)
