"""What composing a push costs, versions side by side (issue 49): the body, the headers and the
string to sign, as ``HttpSender`` has :func:`~gateway.delivery.signing.build_signed_push` make
them, with a stub key, so that the RSA signature (the same in every version) is left out.

Ten subscriptions take turns, every other message tagged, as a fan-out's pushes do. For each
revision (``.`` is this checkout as it is; others are exported with ``git archive``) it prints
the CPU per composition (median of five runs, the revisions alternating) and, with
``--instructions``, the instructions per composition counted by callgrind: a run of 1,000 and
one of 5,000 compositions, differenced, so that Python's start and the imports cancel out.
Instructions do not move with the machine's load; the CPU does.

    .venv/bin/python bench/push_composition.py [REV ...] [--format XML] [--instructions]
    .venv/bin/python bench/push_composition.py --tree DIR --count N   # one run, nothing timed
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

FORMATS = ("XML", "JSON", "SIMPLIFIED")


def compose(count: int, fmt_name: str) -> float:
    """Compose ``count`` pushes with the ``gateway`` first on the path; their CPU per push, µs."""
    from gateway.delivery.formats import ContentFormat, PushNotification, message_md5
    from gateway.delivery.signing import build_signed_push

    class StubKey:
        key_id = "0123456789abcdef"

        def sign(self, text: str) -> str:
            return "c2lnbmF0dXJl"

    fmt, body = ContentFormat[fmt_name], "hello world " * 10
    notifications = [
        PushNotification(
            *("1234567890", "orders", "1234567890", f"sub-{index}"),
            f"6CC4D900CA59A2CD-1-15180534A8F-20000000{index}",
            *(body, message_md5(body), "tag" if index % 2 else None, 1449556920975),
        )
        for index in range(10)
    ]
    key = StubKey()
    started = time.process_time()
    for index in range(count):
        build_signed_push(
            notifications[index % 10],
            fmt,
            f"http://127.0.0.1:8000/hook{index % 10}",
            key=key,  # type: ignore[arg-type]  # what a SigningKey does here, without RSA
            public_url="http://127.0.0.1:8080",
            date="Tue, 08 Dec 2015 06:42:00 GMT",
            request_id="56667BB81FD0E7D1200024A0",
        )
    return (time.process_time() - started) / count * 1e6


def run_in(tree: Path, fmt: str, count: int, *prefix: str) -> str:
    """This script in a child process composing with ``tree``'s code; its output."""
    command = [*prefix, sys.executable, __file__, "--tree", str(tree), "--count", str(count)]
    done = subprocess.run(
        [*command, "--format", fmt], capture_output=True, text=True, check=True, cwd=tree
    )
    return done.stdout + done.stderr


def instructions(tree: Path, fmt: str) -> int:
    """Instructions per composition: callgrind's totals at 5,000 and 1,000, differenced."""
    valgrind = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null")
    totals = []
    for count in (1000, 5000):
        found = re.search(r"Collected : (\d+)", run_in(tree, fmt, count, *valgrind))
        if found is None:
            raise SystemExit("push_composition: callgrind printed no total")
        totals.append(int(found.group(1)))
    return (totals[1] - totals[0]) // 4000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("revisions", nargs="*", default=["HEAD", "."])
    parser.add_argument("--format", default="XML,SIMPLIFIED", help=f"of {', '.join(FORMATS)}")
    parser.add_argument("--calls", type=int, default=20000, help="compositions per timed run")
    parser.add_argument("--instructions", action="store_true", help="count them with callgrind")
    parser.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    formats = options.format.split(",")
    if options.tree is not None:  # the child: one run with that tree's code
        sys.path.insert(0, str(options.tree))
        print(f"{compose(options.count, formats[0]):.2f}")
        return
    # Imported here: harness imports this checkout's ``gateway``, which the child must not.
    from compare import exported

    with exported(options.revisions) as trees:
        print(f"{'revision':<12}{'format':<12}{'µs per push':>14}{'instructions':>14}")
        for fmt in formats:
            cpu: dict[str, list[float]] = {revision: [] for revision in trees}
            for round_number in range(5):
                order = list(trees) if round_number % 2 == 0 else list(reversed(trees))
                for revision in order:
                    cpu[revision].append(float(run_in(trees[revision], fmt, options.calls)))
            for revision, tree in trees.items():
                counted = f"{instructions(tree, fmt):,}" if options.instructions else "-"
                median = statistics.median(cpu[revision])
                print(f"{revision:<12}{fmt:<12}{median:>14.2f}{counted:>14}", flush=True)


if __name__ == "__main__":
    main()
