"""Many ``mns-gateway`` commands that should fail at once, run one after another in a single
child process instead of one process each.

Each refusal through the script costs a Python start and the CLI's imports, 0.3-0.6 s of CPU,
for a check that takes microseconds; one module's tables ran 77 of them on a suite that is
bound by its two cores' CPU (docs/testing.md#the-whole-suite-in-parallel). The child runs
:func:`gateway.cli.commands.main` for each case with the case's environment alone (nothing
left from the one before), its stdout and stderr captured apart, and logging set up afresh,
so that each case sees what the script would. A few cases of each table still go through the
script itself.

The child is a process of its own, not the test's: a command that wrongly went on (a ``serve``
accepting what it should refuse) would start gunicorn there, and the child is stopped with its
process group after ``timeout``, the cases it answered kept and the rest reported as hung.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Reads the cases as JSON lines on stdin, answers each as a JSON line on stdout.
CHILD = """
import contextlib, io, json, logging, os, sys
from gateway.cli.commands import main

answers, started_with = sys.stdout, dict(os.environ)
for line in sys.stdin:
    case = json.loads(line)
    os.environ.clear()  # what the case before it set is gone
    os.environ.update(started_with, **case["env"])
    logging.root.handlers.clear()  # main's basicConfig binds to this case's stderr
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(case["argv"])
        except SystemExit as exit:
            status = exit.code
    print(json.dumps([status, out.getvalue(), err.getvalue()]), file=answers, flush=True)
"""


@dataclass(frozen=True)
class Done:
    """What one command did: as :class:`subprocess.CompletedProcess` has it."""

    returncode: int | None
    stdout: str
    stderr: str


def run_each(
    cases: Sequence[tuple[Sequence[str], Mapping[str, str]]],
    env: Mapping[str, str],
    timeout: float = 120,
) -> list[Done]:
    """Run each ``(argv, variables)`` of ``cases`` as ``mns-gateway *argv`` in ``env`` with
    the case's ``variables`` on top, and say what each did; a case the child did not answer in
    time raises."""
    lines = "".join(json.dumps({"argv": list(argv), "env": dict(s)}) + "\n" for argv, s in cases)
    with subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(env),
        start_new_session=True,  # its own process group: a gateway it started is stopped whole
    ) as child:
        try:
            out, err = child.communicate(lines, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            out, err = child.communicate()
    answered = [Done(*json.loads(line)) for line in out.splitlines()]
    if len(answered) < len(cases):
        hung = cases[len(answered)]
        raise AssertionError(f"no answer to {hung} (child's stderr: {err[-2000:]})")
    return answered
