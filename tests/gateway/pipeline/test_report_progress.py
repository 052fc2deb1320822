"""``mns-gateway report`` as a person runs it: one line per step with its time, Spark's own
output in a log file (named first) unless ``--verbose``, and a wrong ``--logs`` refused before
Spark starts.

Both tests failed on the code before this change: the terminal got Spark's warnings and stage
bars, and ``--logs ./nope`` was found missing only after Spark's start-up (here, with no Java
to start, the old code said "needs Java 17" instead of naming the directory).
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.pipeline import phase
from tests.gateway.pipeline import jvm

REPO = Path(__file__).resolve().parents[3]
T0 = 1_704_067_200_000


def report(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", "report", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=570,
        check=False,
        env=env,
    )


def test_a_missing_logs_directory_is_refused_before_spark_starts(tmp_path: Path) -> None:
    no_java = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java")}
    done = report("--logs", str(tmp_path / "nope"), "--out", str(tmp_path / "o"), env=no_java)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"mns-gateway report: cannot read --logs {tmp_path / 'nope'}: no such directory"
    ]
    assert not (tmp_path / "o").exists()


#: The JVM's options and class path only, not Spark's settings (the report keeps its defaults,
#: code generation included): C1 alone and the serial collector cut this test's CPU from 67 to
#: 42 s on a quiet machine (2026-11-28), on a suite that is bound by its two cores' CPU.
LIGHT_JVM = {**os.environ, "JAVA_TOOL_OPTIONS": jvm.OPTIONS}
CLASS_PATH = ("--conf", f"spark.driver.extraClassPath={jvm.jars_first()}")


# A hang guard, not a measure: Spark's start-up and this report took 60 s alone, but over 300 s
# beside the whole suite's six workers on two cores (2026-12-02, twice).
@pytest.mark.timeout(600)
def test_steps_on_the_terminal_and_sparks_output_in_a_file(tmp_path: Path) -> None:
    hour = tmp_path / "logs" / "dt=2024-01-01" / "hour=00"
    hour.mkdir(parents=True)
    records = [
        {"Time": T0, "Action": "SendMessage", "QueueName": "q", "MessageId": "m"},
        {"Time": T0 + 5, "Action": "ReceiveMessage", "QueueName": "q", "MessageId": "m"},
    ]
    (hour / "oplog.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    logs, out = str(tmp_path / "logs"), str(tmp_path / "out")
    done = report("--logs", logs, "--out", out, *CLASS_PATH, env=LIGHT_JVM)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    named = re.fullmatch(r"Spark's output: (\S+) \(--verbose shows it here\)", lines[0])
    assert named, lines
    spark_log = Path(named[1])
    assert spark_log.stat().st_size > 0  # Spark did say something, there
    steps = [line for line in lines[1:-2] if re.fullmatch(r".+ in \d+\.\d s", line)]
    assert steps and steps[0].startswith("started Spark in")
    # Issue 47: steps inside steps are indented, and the total says the times overlap.
    assert any(step.startswith("  ") for step in steps), steps
    assert re.fullmatch(r"took \d+\.\d s in all \(an indented step ran inside .+\)", lines[-2])
    assert lines[-1].startswith("read 2 lines: 2 events reported")
    assert "WARN" not in done.stderr and "[Stage" not in done.stderr, done.stderr
    assert done.stderr == ""


def test_a_step_inside_another_is_indented_before_it(caplog: pytest.LogCaptureFixture) -> None:
    """Issue 47: the step times added to more than the run's without saying they overlap."""
    with caplog.at_level(logging.INFO, logger="gateway.pipeline"):
        with phase("outer"), phase("inner"):
            pass
        with phase("after"):
            pass
    lines = [record.getMessage() for record in caplog.records]
    assert [re.sub(r" in [\d.]+ s$", "", line) for line in lines] == ["  inner", "outer", "after"]
