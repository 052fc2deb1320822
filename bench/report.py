"""Benchmark: the delivery report over N synthetic operation-log records, end to end.

    .venv/bin/python bench/report.py [--records 5000000] [--master local[2]] [--workdir DIR] \
        [--repeat 3] [--class-archive FILE] [--late-share 0.01]

Generates a day of records as JSON lines in hourly partitions (not timed; several processes,
pre-formatted strings), then, ``--repeat`` times and interleaved so that a busy machine weighs
on all of them alike, times three jobs, each in a fresh Python process with the same Spark
settings, JVM start-up included:

- the bare job (``bench/bare_job.py``): the report's reader parses the logs and one grouped
  aggregate is computed, nothing else: the floor of any report over these logs;
- the same bare job over the newest hour alone: the floor of any incremental run that reads
  that hour, which tells whether both targets below can hold at once on this machine;
- the full report (``gateway/pipeline/job.py``) into an empty ``--out``;
- an incremental report: into an ``--out`` that a report already brought up to date with every
  hour but the newest (made once, untimed), so it reads the one new hour;
- ``mns-gateway report --out OUT --trace ID`` for one message of the day, answered from the
  facts the full report kept (no Spark, no logs): target under 3 s.

It prints each run's wall time and CPU (split by kind of JVM thread: tasks, JIT compilers,
driver, GC), the full report as a multiple of the bare job of the same repetition, the
incremental run as a share of the full one, and the ranges over all repetitions. Targets
(docs/pipeline.md#performance): full report within 1.5x the bare job; incremental at most 25 %
of the full report.

The records (``bench/synthetic_oplog.py``) mimic a gateway with 20 topics of 3 HTTP
subscriptions, retries and dead letters, and 20 queues with redeliveries; each record is in
the hour partition of its own time, so messages near the end of an hour span two partitions, and
``--late-share`` makes that share of queue messages be received and deleted hours later.
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
BARE_JOB = REPO / "bench/bare_job.py"
TIMEOUT_SECONDS = 900
#: How often the job's threads are sampled: each sample costs about 8 ms of CPU.
SAMPLE_SECONDS = 0.5
#: The throughput collector: fewer, cheaper GC threads than G1 for a 2-core batch job.
JAVA_OPTIONS = "-XX:+UseParallelGC"
#: Records of the untimed run that makes a class-data archive / AOT cache (--class-archive).
TRAINING_RECORDS = 100_000
#: The targets (docs/pipeline.md#performance): full report ÷ bare job, incremental ÷ full report.
FULL_TARGET, INCREMENTAL_TARGET = 1.5, 0.25


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--workdir", type=Path, help="keep data here (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--conf", action="append", default=[], help="extra Spark KEY=VALUE")
    parser.add_argument(
        "--late-share",
        type=float,
        default=0.0,
        help="share of queue messages received and deleted 1-3 hours after the send (default 0)",
    )
    parser.add_argument(
        "--class-archive",
        type=Path,
        help="run every job with this JVM class-data archive (made first, untimed, if absent)",
    )
    parser.add_argument(
        "--trace-only",
        action="store_true",
        help="only time --trace of one message (after one untimed full report), --repeat times",
    )
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mns-report-bench-"))
    try:
        written = generate_logs(workdir / "logs", args.records, args.late_share)
        conf = list(args.conf)
        if args.trace_only:
            return trace_only(workdir, args.master, conf, args.repeat)
        if args.class_archive:
            conf += class_archive_java_options(args)
        prepared = prepare_incremental(workdir, args.master, conf)
        results = [
            run_once(workdir, prepared, args.master, conf, written, index)
            for index in range(1, args.repeat + 1)
        ]
        print_ranges(results)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


@dataclass(frozen=True)
class Repetition:
    bare: ReportTiming
    bare_new_hour: ReportTiming
    full: ReportTiming
    incremental: ReportTiming

    @property
    def joint_floor(self) -> float:
        """The smallest incremental ÷ full share possible if the full report met its target:
        an incremental run parses the new hour at least, so it takes at least the bare job over
        that hour, and a full report on target takes at most FULL_TARGET x the bare job."""
        return self.bare_new_hour.wall_seconds / (FULL_TARGET * self.bare.wall_seconds)


@dataclass(frozen=True)
class PreparedIncremental:
    baseline: Path  # an --out up to date with every hour but new_hour
    new_hour: Path  # the partition an incremental run into a copy of baseline reads


def prepare_incremental(workdir: Path, master: str, conf: list[str]) -> PreparedIncremental:
    """An --out brought up to date with every hour but the newest, which is held back meanwhile
    (moved, so its files keep their modification times)."""
    logs, baseline = workdir / "logs", workdir / "out-all-but-newest-hour"
    newest = newest_full_hour(logs)
    held = workdir / "held" / newest.relative_to(logs)
    held.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(baseline, ignore_errors=True)
    newest.rename(held)
    try:
        time_report(logs, baseline, master, conf)
    finally:
        held.rename(newest)
    print(f"prepared {baseline.name}: every hour but {newest.relative_to(logs)}")
    return PreparedIncremental(baseline, newest)


def newest_full_hour(logs: Path) -> Path:
    """The newest hour partition holding at least half as much as the median one: the last
    messages' retries may spill a few records into one more hour, which is no "new hour"."""
    sizes = {
        hour: sum(file.stat().st_size for file in hour.iterdir())
        for hour in logs.glob("dt=*/hour=*")
    }
    median = sorted(sizes.values())[len(sizes) // 2]
    return max(hour for hour, size in sizes.items() if size >= median / 2)


def run_once(
    workdir: Path,
    prepared: PreparedIncremental,
    master: str,
    conf: list[str],
    records: int,
    index: int,
) -> Repetition:
    logs = workdir / "logs"
    print(f"--- repetition {index}, load average {os.getloadavg()[0]:.2f}")
    bare = time_job(BARE_JOB, ["--logs", str(logs)], master, conf)
    print_timing(bare, records, "bare job (parse + one grouped aggregate)")
    bare_new_hour = time_job(BARE_JOB, ["--logs", str(prepared.new_hour)], master, conf)
    print_timing(bare_new_hour, parsed_records(bare_new_hour), "bare job over the new hour alone")
    shutil.rmtree(workdir / "out-full", ignore_errors=True)
    full = time_report(logs, workdir / "out-full", master, conf)
    print_timing(full, records, "full report")
    incremental_out = workdir / "out-incremental"
    shutil.rmtree(incremental_out, ignore_errors=True)
    shutil.copytree(prepared.baseline, incremental_out)
    incremental = time_report(logs, incremental_out, master, conf)
    print_timing(incremental, records, "incremental report (one new hour)")
    time_trace(workdir / "out-full", some_message_id(logs))
    print(
        f"full report / bare job: {full.wall_seconds / bare.wall_seconds:.2f}x wall, "
        f"{full.cpu_seconds / bare.cpu_seconds:.2f}x CPU; incremental / full: "
        f"{incremental.wall_seconds / full.wall_seconds:.0%} wall, "
        f"{incremental.cpu_seconds / full.cpu_seconds:.0%} CPU"
    )
    repetition = Repetition(bare, bare_new_hour, full, incremental)
    print(
        f"joint floor: bare job over the new hour ÷ ({FULL_TARGET} x bare job) = "
        f"{repetition.joint_floor:.0%} (both targets can hold only if at most "
        f"{INCREMENTAL_TARGET:.0%})"
    )
    return repetition


def print_ranges(results: list[Repetition]) -> None:
    def span(values: list[float], unit: str) -> str:
        return f"{min(values):.2f}–{max(values):.2f}{unit}"

    print(f"=== {len(results)} repetitions")
    for name in ("bare", "bare_new_hour", "full", "incremental"):
        runs = [getattr(result, name) for result in results]
        walls = [run.wall_seconds for run in runs]
        cpus = [run.cpu_seconds for run in runs]
        print(f"{name}: wall {span(walls, ' s')}, CPU {span(cpus, ' s')}")
    ratios = [r.full.wall_seconds / r.bare.wall_seconds for r in results]
    shares = [r.incremental.wall_seconds / r.full.wall_seconds for r in results]
    floors = [r.joint_floor for r in results]
    print(f"full / bare (same repetition): {span(ratios, 'x')} (target at most {FULL_TARGET}x)")
    print(
        f"incremental / full (same repetition): {span(shares, '')} "
        f"(target at most {INCREMENTAL_TARGET})"
    )
    print(
        f"joint floor, bare new hour / ({FULL_TARGET} x bare): {span(floors, '')} "
        f"(both targets can hold only if at most {INCREMENTAL_TARGET})"
    )


def trace_only(workdir: Path, master: str, conf: list[str], repeat: int) -> int:
    out = workdir / "out-full"
    if not (out / "message_facts").is_dir():
        shutil.rmtree(out, ignore_errors=True)
        time_report(workdir / "logs", out, master, conf)
    message_id = some_message_id(workdir / "logs")
    times = [time_trace(out, message_id) for _ in range(repeat)]
    print(f"--trace: {min(times):.2f} to {max(times):.2f} s wall over {repeat} runs")
    return 0


def some_message_id(logs: Path) -> str:
    """A message of the day's logs: the one of the first record with a MessageId."""
    for path in sorted(p for p in logs.rglob("*") if p.is_file()):
        for line in path.open():
            found = re.search(r'"MessageId": ?"([^"]+)"', line)
            if found:
                return found.group(1)
    raise SystemExit(f"no MessageId in {logs}")


def time_trace(out: Path, message_id: str) -> float:
    """``--trace`` of one message from the kept facts, as a person runs it; its wall time."""
    command = [sys.executable, "-m", "gateway.cli", "report", "--out", str(out)]
    before = os.times()
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--trace", message_id], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    elapsed = time.perf_counter() - started
    after = os.times()
    cpu = (
        after.children_user + after.children_system - before.children_user - before.children_system
    )
    lines = len(done.stdout.splitlines())
    print(
        f"--trace {message_id} from the kept facts: {elapsed:.2f} s wall, {cpu:.2f} s CPU, "
        f"{lines} lines, exit {done.returncode} (target under 3 s)"
    )
    return elapsed


def generate_logs(logs: Path, records: int, late_share: float) -> int:
    """Generate the logs, or reuse the ones an earlier run left in ``--workdir`` for the same
    record count: regenerating 1.4 GB for every measurement of 5 million records is wasted time."""
    marker = logs.parent / "records.txt"  # not in logs/: the report reads every file there
    layout = f"{records} hourly v3, late share {late_share}"
    if marker.exists() and marker.read_text().strip() == layout:
        size = sum(path.stat().st_size for path in logs.rglob("*.jsonl"))
        print(f"reusing {records:,} records ({size / 2**20:,.0f} MiB) in {logs}")
        return records
    shutil.rmtree(logs, ignore_errors=True)
    started = time.perf_counter()
    written = generate(logs, records, workers=2, late_share=late_share)
    generation = time.perf_counter() - started
    size = sum(path.stat().st_size for path in logs.rglob("*.jsonl"))
    print(f"generated {written:,} records ({size / 2**20:,.0f} MiB) in {generation:.1f} s")
    marker.write_text(f"{layout}\n")
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


def parsed_records(timing: ReportTiming) -> int:
    """The records the bare job says it parsed."""
    parsed = re.search(r"parsed (\d+) records", timing.stdout)
    return int(parsed.group(1)) if parsed else 0


def print_timing(timing: ReportTiming, records: int, label: str) -> None:
    elapsed = timing.wall_seconds
    print(f"{label}: {elapsed:.1f} s, {records / elapsed:,.0f} rows/s")
    phases = re.findall(
        r"gateway\.pipeline(?:\.spark_job)?: ((?:full|incremental) run: .*|.* in [\d.]+ s)",
        timing.stderr,
    )
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
