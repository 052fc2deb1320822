"""One local SparkSession for all pipeline tests, kept small so the suite stays fast."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from gateway.pipeline.schema import event_schema, raw_log_schema
from gateway.pipeline.transforms import facts, homes, partials
from tests.gateway.pipeline import jvm
from tests.support.scheduling import WITHOUT_SESSION

Records = list[Mapping[str, object]]
#: Names this worker's Spark JVM among the machine's processes.
APP_NAME = f"mns-pipeline-tests-{os.getpid()}"
#: The nice value of the shared session's worker and JVM; 0 is everyone else's. At -5 (three
#: times a nice-0 thread's share) the Spark scope was still the suite's tail: its JVM used 8 min
#: of CPU in a 56-min run on a crowded machine, waiting the rest (2026-12-02). -10 is nine times.
AHEAD = -10


def pids_running(marker: str) -> list[int]:
    """The processes whose command line contains ``marker`` (Linux's /proc; none elsewhere)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if marker.encode() + b"\0" in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
    return found


def run_ahead(pids: list[int]) -> None:
    """Give these processes' threads the CPU first. The shared session's worker runs a third of
    the suite's work in one line, and was its critical path: the other workers, whose scopes run
    side by side, take what it leaves (the 2-core machine is busy all through `pytest -n 6`).
    Linux keeps a nice value per thread, so each thread is set; threads started later inherit.
    Only root may raise a priority: elsewhere this does nothing."""
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").glob("[0-9]*"):
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, int(task.name), AHEAD)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A module the scheduler sends anywhere (``WITHOUT_SESSION``) must not use the session:
    on another worker it would start a second Spark beside the first."""
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if module in WITHOUT_SESSION and "spark" in getattr(item, "fixturenames", ()):
            raise pytest.UsageError(
                f"{item.nodeid} uses the spark fixture: take its module out of WITHOUT_SESSION "
                "in tests/support/scheduling.py"
            )


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = (
        SparkSession.builder.master("local[2]")
        .appName(APP_NAME)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        # The tests' data is a few rows: compiling generated code for each new plan, and
        # re-planning each stage adaptively, cost more than they save. Without either, a
        # report run took half the JVM's CPU and wall time (11-13 s against 21-25 s, the same
        # session and logs, alternating, 2026-11-27). The report's own sessions, run by
        # ``mns-gateway report`` in the tests that start it, keep Spark's defaults.
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
        .config("spark.sql.adaptive.enabled", "false")
        # The JVM's options and class path for short runs (tests/gateway/pipeline/jvm.py).
        .config("spark.driver.extraJavaOptions", jvm.OPTIONS)
        .config("spark.driver.extraClassPath", jvm.jars_first())
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    run_ahead([os.getpid(), *pids_running(APP_NAME)])
    yield session
    session.stop()


@pytest.fixture(scope="session")
def make_events(spark: SparkSession) -> Callable[[Records], DataFrame]:
    """Normalised events from dicts naming only the columns a test cares about."""
    schema = event_schema()

    def build(records: Records) -> DataFrame:
        rows = [tuple(record.get(name) for name in schema.names) for record in records]
        return spark.createDataFrame(rows, schema=schema)

    return build


@pytest.fixture(scope="session")
def make_raw(spark: SparkSession) -> Callable[[Records], DataFrame]:
    """Raw input rows (every field text, as the JSON reader delivers them)."""
    schema = raw_log_schema()

    def build(records: Records) -> DataFrame:
        rows = [
            tuple(None if record.get(name) is None else str(record[name]) for name in schema.names)
            for record in records
        ]
        return spark.createDataFrame(rows, schema=schema)

    return build


def merged_facts(events: DataFrame, partition: str = "p") -> DataFrame:
    """Normalised events of one log partition through the facts, merged, as a report does."""
    parsed = events.withColumn("is_malformed", F.lit(False)).withColumn(
        facts.PARTITION, F.lit(partition)
    )
    partial = facts.partition_facts(parsed, None, None, with_handles=False)
    return facts.merge_facts(partial, resolve_handles=False)


def homed_facts(events: DataFrame, partition: str = "p") -> DataFrame:
    """:func:`merged_facts` homed in their one partition, and cut from the plan that made them,
    as a report reads its facts back from Parquet: the partial summaries read the facts in
    several branches, and each would otherwise run the chain from the events again (3.3-3.9
    against 5.9-7.6 CPU-seconds for a module's partial summaries, warm, 2026-12-04)."""
    homed = merged_facts(events, partition).withColumn(homes.HOME, F.lit(partition))
    return homed.localCheckpoint()


#: A timeline bucket wide enough for tests that check only per-endpoint or per-topic figures.
DAY_MS = 86_400_000


def partials_of(events: DataFrame, bucket_ms: int = DAY_MS, partition: str = "p") -> DataFrame:
    """The partial summaries of one log partition's events: what the tables are summed from.

    Computed here and cut from the plan that made them (``localCheckpoint``), as a report reads
    them back from Parquet: a table built on top then plans in a fraction of a second instead of
    re-analysing the whole chain from the events (0.5 s against 5-6 s for the endpoint health
    table on a quiet machine, 2026-11-28), which was most of what these tests cost."""
    summed = partials.partial_summaries(
        homed_facts(events, partition), join_publications=True, bucket_ms=bucket_ms
    )
    return summed.localCheckpoint()


def message_rows(
    events: DataFrame, kind: partials.Kind, *, join_publications: bool = True
) -> DataFrame:
    """What the partials are computed from, for the messages of one kind (deliveries to
    subscription endpoints, queue messages...) among one log partition's events."""
    rows = partials.message_rows(homed_facts(events), join_publications=join_publications)
    return partials.of_kind(rows, kind)
