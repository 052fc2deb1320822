"""Reading a gateway's operation log (``MNS_GATEWAY_LOG_DIR``) from a test, while it writes.

The gateway writes JSON lines into ``dt=…/hour=…/oplog-<host>-<pid>-<token>-<n>.jsonl``
(gateway/observability/oplog.py) from a thread of its own, so a test that reads while a gateway
runs may meet a line being written: only lines that end in a newline are records.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Record = dict[str, Any]


def records(directory: Path) -> list[Record]:
    """Every complete record under ``directory``: file by file in name order, each file's in
    the order they were written."""
    found = []
    for path in sorted(directory.rglob("oplog-*.jsonl")):
        text = path.read_text()
        complete = text[: text.rfind("\n") + 1]  # up to the last newline: not a line in writing
        found.extend(json.loads(line) for line in complete.splitlines() if line.strip())
    return found


def wait_for_records(
    directory: Path, wanted: Callable[[Record], bool], count: int, timeout: float = 15.0
) -> list[Record]:
    """The records ``wanted`` picks, once there are at least ``count`` of them; what there is
    after ``timeout`` seconds otherwise (the caller's assertion says what was missing)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [record for record in records(directory) if wanted(record)]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.1)
