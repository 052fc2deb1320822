"""What a command costs before it does anything: the CPU of ``mns-gateway`` commands and of a
``serve`` started and stopped, for one or more versions of the gateway in one run.

Each version (a git revision, or ``.`` for this checkout) is exported as in bench/compare.py and
run from there (``PYTHONPATH``), its bytecode compiled by a first, uncounted round. Then each
round runs, for each version in turn (the order alternating from round to round, so that what
else the machine does hits each alike): a few CLI commands against a data dir of the version's
own, and ``mns-gateway serve`` on a fresh data dir (migrations and a generated signing key, as
the pytest plugin's gateway and the test suite's start it) until ``/readyz`` answers, then
stopped with SIGTERM. The CPU is that of the finished child processes (gunicorn's arbiter and
its worker included), from ``getrusage``. It prints each version's median and range per
command, and each version's medians against the first's.

    .venv/bin/python bench/startup_cost.py [REVISION ...] [--rounds 5]   # default: HEAD .
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from compare import exported
from harness import ROOT
from plugin_startup import children_cpu

from gateway.testing.process import GatewayProcess

#: The CLI commands timed: the parser alone, and three that read the store.
COMMANDS: dict[str, tuple[str, ...]] = {
    "--version": ("--version",),
    "queues list": ("queues", "list"),
    "topics list": ("topics", "list"),
    "keys show": ("keys", "show"),
}
KEYS = {"MNS_GATEWAY_ACCESS_KEY_ID": "bench", "MNS_GATEWAY_ACCESS_KEY_SECRET": "bench-secret"}


def cpu_of(action: Callable[[], object]) -> float:
    before = children_cpu()
    action()
    return children_cpu() - before


def environment(tree: Path, data_dir: Path) -> dict[str, str]:
    env = {**os.environ, **KEYS, "MNS_GATEWAY_DATA_DIR": str(data_dir)}
    env["PYTHONPATH"] = str(tree)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # keep the bytecode, as .ci/run does
    return env


def run_command(tree: Path, data_dir: Path, args: tuple[str, ...]) -> None:
    subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args],
        env=environment(tree, data_dir),
        cwd=data_dir.parent,
        stdout=subprocess.DEVNULL,
        check=True,
    )


def serve_once(tree: Path, scratch: Path) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="serve-", dir=scratch))
    gateway = GatewayProcess.start(data_dir, environment(tree, data_dir))
    gateway.stop()


def one_round(tree: Path, data_dir: Path) -> dict[str, float]:
    costs = {
        name: cpu_of(partial(run_command, tree, data_dir, args)) for name, args in COMMANDS.items()
    }
    costs["serve: start, stop"] = cpu_of(partial(serve_once, tree, data_dir.parent))
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("revisions", nargs="*", default=["HEAD", "."])
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    with (
        exported(options.revisions) as trees,
        tempfile.TemporaryDirectory() as scratch,
        # ``python -m`` puts the working directory first on the path: not a checkout's.
        contextlib.chdir(scratch),
    ):
        dirs = {revision: Path(scratch) / f"v{i}" / "data" for i, revision in enumerate(trees)}
        for revision, tree in trees.items():
            dirs[revision].parent.mkdir()
            run_command(tree, dirs[revision], ("migrate",))  # the store the commands read
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "gateway")])
            one_round(tree, dirs[revision])  # a warm-up, not counted
        figures: dict[str, dict[str, list[float]]] = {r: {} for r in trees}
        for round_number in range(options.rounds):
            order = list(trees) if round_number % 2 == 0 else list(reversed(trees))
            for revision in order:
                for name, cost in one_round(trees[revision], dirs[revision]).items():
                    figures[revision].setdefault(name, []).append(cost)
    report(figures, options.rounds)


def report(figures: dict[str, dict[str, list[float]]], rounds: int) -> None:
    first = next(iter(figures))
    print(f"CPU seconds per command, {rounds} rounds: median (min-max)")
    for revision, costs in figures.items():
        print(f"{f'this checkout ({ROOT})' if revision == '.' else revision}:")
        for name, values in costs.items():
            median = statistics.median(values)
            against = median / statistics.median(figures[first][name])
            ratio = "" if revision == first else f"  {against:.2f} of {first}'s"
            print(f"  {name:>20}: {median:.3f} ({min(values):.3f}-{max(values):.3f}){ratio}")


if __name__ == "__main__":
    main()
