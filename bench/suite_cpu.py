"""Where the test suite's CPU goes, by kind of process: runs a command (by default the README's
``pytest -n 6``) and reads every process's CPU from /proc once a second while it runs, then
prints the CPU-seconds of each kind (the suite's gateways, Spark's JVMs, the xdist workers,
Chromium, PostgreSQL, CLI commands...), how many processes of each it saw, the wall time and
how busy the machine's cores were. A process that lives less than a second may be missed
(CLI commands mostly), and one that lives on after the command (none should) is counted up to
its end. Only the command's processes count, found by a variable in their environment that
every process it starts inherits (daemons too: PostgreSQL's server outlives its ``pg_ctl``).
Where it may (root, a cgroup file system it can write), it also runs the command in a control
group of its own and prints the kernel's count of every process in it, which misses nothing:
the sampling undercounts a suite of many short processes (PostgreSQL's backends, CLI commands)
by about a quarter. Linux only. Figures and history: docs/testing.md#cpu-by-process.

    .venv/bin/python bench/suite_cpu.py [-- pytest -n 6 -p no:randomly]
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
#: Set in the command's environment; inherited by everything it starts.
MARK = f"MNS_SUITE_CPU={os.getpid()}".encode()
#: The first pattern found in a process's command line names its kind.
KINDS = (
    ("spark JVM", re.compile(r"^\S*java\b")),
    ("pyspark worker", re.compile(r"pyspark\.daemon")),
    ("mns-gateway serve", re.compile(r"gateway\.cli serve|mns-gateway serve")),
    ("mns-gateway worker", re.compile(r"gateway\.cli worker|mns-gateway worker")),
    ("mns-gateway, other commands", re.compile(r"gateway\.cli |mns-gateway ")),
    ("chromium", re.compile(r"^\S*chrom")),
    ("postgresql", re.compile(r"^postgres|^\S*/postgres\b")),
    ("node", re.compile(r"^\S*node\b")),
    ("php", re.compile(r"^\S*php")),
    ("xdist workers", re.compile(r"execnet|-u -c import sys")),
    ("pytest", re.compile(r"pytest")),
    ("other python", re.compile(r"^\S*python")),
)


def kind_of(command: str) -> str:
    return next((name for name, pattern in KINDS if pattern.search(command)), "other")


def snapshot() -> dict[tuple[int, str], tuple[float, str]]:
    """Each of the command's live processes' (pid, start time) with its CPU-seconds so far and
    command line."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            arguments = (entry / "cmdline").read_bytes()
            if MARK not in (entry / "environ").read_bytes().split(b"\0"):
                continue
        except OSError:
            continue
        command = arguments.replace(b"\0", b" ").decode("utf-8", "replace")
        fields = stat[stat.rfind(")") + 2 :].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK
        found[(int(entry.name), fields[19])] = (cpu, command.strip() or stat[: stat.find(")") + 1])
    return found


class CpuGroup:
    """A control group the command runs in, and the CPU-seconds of everything in it, counted
    by the kernel: cgroup v2's ``cpu.stat`` or v1's ``cpuacct.usage``. ``None`` from
    :meth:`create` where no cgroup can be made (not root, no cgroup file system)."""

    def __init__(self, path: Path, usage: Path, per_second: float) -> None:
        self.path, self.usage, self.per_second = path, usage, per_second

    @classmethod
    def create(cls) -> CpuGroup | None:
        name = f"mns-suite-cpu-{os.getpid()}"
        unified = Path("/sys/fs/cgroup")
        if (unified / "cgroup.controllers").exists():
            path, usage, per_second = unified / name, "cpu.stat", 1e6
        else:
            path, usage, per_second = unified / "cpuacct" / name, "cpuacct.usage", 1e9
        try:
            path.mkdir()
        except OSError:
            return None
        return cls(path, path / usage, per_second)

    def join(self) -> None:
        """Move the calling process in (the command's child, before it executes the command)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        text = self.usage.read_text()
        if self.usage.name == "cpu.stat":
            text = text.split("usage_usec", 1)[1].split()[0]
        return int(text) / self.per_second

    def remove(self) -> None:
        """Remove the group; one that still holds a process (which it should not) is left."""
        with contextlib.suppress(OSError):
            self.path.rmdir()


def main(argv: list[str]) -> int:
    command = argv[argv.index("--") + 1 :] if "--" in argv else [".venv/bin/pytest", "-n", "6"]
    seen: dict[tuple[int, str], tuple[float, str]] = {}
    began = time.monotonic()
    name, value = MARK.decode().split("=")
    group = CpuGroup.create()
    child = subprocess.Popen(
        command, env={**os.environ, name: value}, preexec_fn=group.join if group else None
    )
    while child.poll() is None:
        seen.update(snapshot())
        time.sleep(1.0)
    wall = time.monotonic() - began
    counted = group.seconds() if group else None
    if group:
        group.remove()
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for cpu, line in seen.values():
        total = totals[kind_of(line)]
        total[0] += cpu
        total[1] += 1
    used = sum(cpu for cpu, _ in totals.values())
    print(f"\n{command!r}: exit {child.returncode}, {wall:.0f} s wall")
    print(f"{'kind':30} {'CPU s':>8} {'share':>6} {'processes':>10}")
    for name, (cpu, count) in sorted(totals.items(), key=lambda item: -item[1][0]):
        print(f"{name:30} {cpu:8.0f} {cpu / used if used else 0:6.1%} {count:10.0f}")
    cores = os.cpu_count() or 1
    print(f"{'all':30} {used:8.0f}   cores busy {used / (wall * cores):.0%} of {cores}")
    if counted is None:
        print("no control group could be made (run as root for the kernel's count)")
    else:
        print(
            f"{'all, counted by the kernel':30} {counted:8.0f}"
            f"   cores busy {counted / (wall * cores):.0%} of {cores};"
            f" the sampling saw {used / counted if counted else 1:.0%}"
        )
    return child.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
