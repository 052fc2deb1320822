"""Benchmark: the delivery report over N synthetic operation-log records, end to end.

    .venv/bin/python bench/report.py [--records 5000000] [--master local[2]] [--workdir DIR]

Generates the records as JSON lines (not timed; several processes, pre-formatted strings),
then times ``gateway/pipeline/job.py`` in a fresh Python process, so the figure includes
interpreter and JVM start-up, reading, every output table and the HTML. Target (issue 6):
5 million records in at most 25 s on local[2] on the 2-core build machine.

Besides the wall time it prints the CPU the job used, split by kind of JVM thread (tasks, JIT
compilers, driver, GC), which says what a target asks of the machine. ``--parse-floor`` also
times ``bench/parse_floor.py``, a job that only parses the logs: the floor under any report
that reads them with Spark.

The records (``bench/synthetic_oplog.py``) mimic a gateway with 20 topics of 3 HTTP
subscriptions, retries and dead letters, and 20 queues with redeliveries.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from synthetic_oplog import generate

REPO = Path(__file__).resolve().parents[1]
REPORT_JOB = REPO / "gateway/pipeline/job.py"
PARSE_FLOOR = REPO / "bench/parse_floor.py"
TIMEOUT_SECONDS = 900
#: How often the job's threads are sampled: each sample costs about 8 ms of CPU.
SAMPLE_SECONDS = 0.5
#: The throughput collector: fewer, cheaper GC threads than G1 for a 2-core batch job.
JAVA_OPTIONS = "-XX:+UseParallelGC"
#: Records of the untimed run that makes a class-data archive / AOT cache (--class-archive).
TRAINING_RECORDS = 100_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--workdir", type=Path, help="keep data here (default: a temp dir)")
    parser.add_argument("--conf", action="append", default=[], help="extra Spark KEY=VALUE")
    parser.add_argument(
        "--class-archive",
        type=Path,
        help="also time a run with this JVM class-data archive (made first, untimed, if absent)",
    )
    parser.add_argument(
        "--parse-floor",
        action="store_true",
        help="also time bench/parse_floor.py, a job that only parses the logs (the floor)",
    )
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mns-report-bench-"))
    try:
        written = generate_logs(workdir / "logs", args.records)
        runs = {"plain JVM": args.conf}
        if args.class_archive:
            runs["with class-data archive"] = [*args.conf, *class_archive_java_options(args)]
        for label, conf in runs.items():
            print(f"load average before the report: {os.getloadavg()[0]:.2f}")
            timing = time_report(workdir / "logs", workdir / "out", args.master, conf)
            print_timing(timing, written, f"report end to end ({args.master}, {label})")
        if args.parse_floor:
            print(f"load average before the parse floor: {os.getloadavg()[0]:.2f}")
            floor = time_job(PARSE_FLOOR, ["--logs", str(workdir / "logs")], args.master, args.conf)
            print_timing(floor, written, f"parsing alone, the floor ({args.master})")
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


def generate_logs(logs: Path, records: int) -> int:
    """Generate the logs, or reuse the ones an earlier run left in ``--workdir`` for the same
    record count: regenerating 1.4 GB for every measurement of 5 million records is wasted time."""
    marker = logs.parent / "records.txt"  # not in logs/: the report reads every file there
    if marker.exists() and marker.read_text().strip() == str(records):
        size = sum(path.stat().st_size for path in logs.rglob("*.jsonl"))
        print(f"reusing {records:,} records ({size / 2**20:,.0f} MiB) in {logs}")
        return records
    shutil.rmtree(logs, ignore_errors=True)
    started = time.perf_counter()
    written = generate(logs, records, workers=2)
    generation = time.perf_counter() - started
    size = sum(path.stat().st_size for path in logs.rglob("*.jsonl"))
    print(f"generated {written:,} records ({size / 2**20:,.0f} MiB) in {generation:.1f} s")
    marker.write_text(f"{records}\n")
    return written


def class_archive_java_options(args: argparse.Namespace) -> list[str]:
    """A JDK class-data-sharing archive of the classes a report loads cuts JVM start-up and
    first-query time; a scheduled report can keep one. From JDK 25 on it is an AOT cache, which
    also keeps the classes linked and the training run's method profiles, so the JIT compiler
    starts on the hot code sooner. Made by an untimed run on TRAINING_RECORDS records."""
    archive: Path = args.class_archive.resolve()
    make, use = (
        ("-XX:AOTCacheOutput", "-XX:AOTCache")
        if java_feature_version() >= 25
        else ("-XX:ArchiveClassesAtExit", "-XX:SharedArchiveFile")
    )
    if not archive.exists():
        with tempfile.TemporaryDirectory(prefix="mns-report-cds-") as scratch:
            logs = Path(scratch) / "logs"
            generate(logs, TRAINING_RECORDS, workers=1)
            conf = [*args.conf, f"spark.driver.extraJavaOptions={JAVA_OPTIONS} {make}={archive}"]
            time_report(logs, Path(scratch) / "out", args.master, conf)
        print(f"made class-data archive {archive}")
    return [f"spark.driver.extraJavaOptions={JAVA_OPTIONS} {use}={archive}"]


def java_feature_version() -> int:
    """The major version of the java PySpark starts: $JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else "java"
    banner = subprocess.run([java, "-version"], capture_output=True, text=True, check=True).stderr
    match = re.search(r'version "(?:1\.)?(\d+)', banner)
    return int(match.group(1)) if match else 0


@dataclass(frozen=True)
class ReportTiming:
    wall_seconds: float
    cpu_seconds: float  # user + system of the job and everything it started (the JVM)
    cpu_by_group: dict[str, float]  # the same, split by DescendantCpu's thread groups
    stdout: str
    stderr: str


def print_timing(timing: ReportTiming, records: int, label: str) -> None:
    elapsed = timing.wall_seconds
    print(f"{label}: {elapsed:.1f} s, {records / elapsed:,.0f} rows/s")
    phases = re.findall(r"spark_job: (.* in [\d.]+ s)", timing.stderr)
    for phase in phases or re.findall(r"^(.* in [\d.]+ s)$", timing.stdout, re.MULTILINE):
        print(f"  {phase}")
    cores = os.cpu_count() or 1
    print(
        f"CPU used by the job and its JVM: {timing.cpu_seconds:.1f} s "
        f"(= {timing.cpu_seconds / cores:.1f} s of wall time on {cores} otherwise idle cores)"
    )
    for group, seconds in timing.cpu_by_group.items():
        print(f"  {group}: {seconds:.1f} s")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    reported = re.search(r"(\d+) events reported", timing.stdout)
    if reported:
        print(f"events reported by the job: {reported.group(1)}")


def time_report(logs: Path, out: Path, master: str, conf: list[str]) -> ReportTiming:
    return time_job(REPORT_JOB, ["--logs", str(logs), "--out", str(out)], master, conf)


def time_job(script: Path, arguments: list[str], master: str, conf: list[str]) -> ReportTiming:
    """Run a Spark job script in a fresh Python process with the benchmark's settings."""
    settings = [
        "spark.ui.enabled=false",
        "spark.ui.showConsoleProgress=false",
        "spark.driver.memory=4g",
        "spark.sql.files.maxPartitionBytes=256m",
        f"spark.driver.extraJavaOptions={JAVA_OPTIONS}",
        *conf,  # later settings win
    ]
    command = [sys.executable, str(script), *arguments, "--master", master]
    for setting in settings:
        command += ["--conf", setting]
    cpu = DescendantCpu()
    started = time.perf_counter()
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as job:
        reader = ThreadPoolExecutor(max_workers=2)
        stdout, stderr = reader.submit(job.stdout.read), reader.submit(job.stderr.read)
        while True:
            cpu.sample(job.pid)
            try:
                job.wait(timeout=SAMPLE_SECONDS)  # returns as soon as the job ends
                break
            except subprocess.TimeoutExpired:
                if time.perf_counter() - started > TIMEOUT_SECONDS:
                    job.kill()
                    raise SystemExit(f"{script.name} timed out") from None
    elapsed = time.perf_counter() - started
    reader.shutdown()
    if job.returncode != 0:
        sys.stderr.write(stderr.result()[-4000:])
        raise SystemExit(f"{script.name} failed with exit code {job.returncode}")
    return ReportTiming(elapsed, cpu.total(), cpu.by_group(), stdout.result(), stderr.result())


class DescendantCpu:
    """CPU seconds of a process and its descendants (the JVM PySpark starts is not reaped by the
    job, so ``RUSAGE_CHILDREN`` misses it), sampled from /proc, so the last fraction of a second
    before a process exits is not counted. Threads are sampled too and grouped by what they do,
    which is what says where a report's CPU goes: the tasks that do the work, the JIT compilers,
    the garbage collector, and the rest (driver: planning, code generation, py4j). A process's
    own figure includes threads that ended between two samples; the groups cannot."""

    def __init__(self) -> None:
        self._processes: dict[int, float] = {}
        self._threads: dict[tuple[int, int], tuple[str, float]] = {}
        self._tick = os.sysconf("SC_CLK_TCK")

    def sample(self, root: int) -> None:
        for pid, is_java in self._descendants(root):
            try:
                _, used = self._cpu(Path(f"/proc/{pid}/stat"))
            except (OSError, IndexError, ValueError):
                continue
            self._processes[pid] = max(self._processes.get(pid, 0.0), used)
            for task in Path(f"/proc/{pid}/task").glob("[0-9]*"):
                try:
                    name, used = self._cpu(task / "stat")
                except (OSError, IndexError, ValueError):
                    continue
                key = (pid, int(task.name))
                previous = self._threads.get(key, ("", 0.0))[1]
                self._threads[key] = (
                    thread_group(name) if is_java else "Python",
                    max(previous, used),
                )

    def total(self) -> float:
        return sum(self._processes.values())

    def by_group(self) -> dict[str, float]:
        groups: dict[str, float] = {}
        for group, used in self._threads.values():
            groups[group] = groups.get(group, 0.0) + used
        groups["threads that ended between samples"] = max(0.0, self.total() - sum(groups.values()))
        return dict(sorted(groups.items(), key=lambda item: -item[1]))

    def _cpu(self, stat: Path) -> tuple[str, float]:
        """The name and user + system CPU seconds in a /proc stat file."""
        text = stat.read_text()
        fields = text.rsplit(")", 1)[1].split()
        name = text[text.index("(") + 1 : text.rindex(")")]
        return name, (int(fields[11]) + int(fields[12])) / self._tick

    @staticmethod
    def _descendants(root: int) -> list[tuple[int, bool]]:
        parents: dict[int, int] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
        found = []
        for pid in parents:
            ancestor = pid
            while ancestor not in (root, 0, 1) and ancestor in parents:
                ancestor = parents[ancestor]
            if ancestor == root:
                found.append((pid, _is_java(pid)))
        return found


def _is_java(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/exe").resolve().name == "java"
    except OSError:
        return False


#: JVM thread name prefixes (as /proc shows them: at most 15 characters) and their group.
THREAD_GROUPS: tuple[tuple[str, str], ...] = (
    ("Executor task", "tasks"),
    ("C1 CompilerThre", "JIT compiler"),
    ("C2 CompilerThre", "JIT compiler"),
    ("GC Thread", "garbage collector"),
    ("VM Thread", "garbage collector"),
)


def thread_group(name: str) -> str:
    for prefix, group in THREAD_GROUPS:
        if name.startswith(prefix):
            return group
    return "driver and other JVM threads"


if __name__ == "__main__":
    sys.exit(main())
