"""tests/support/oplog.py: complete records only, in file order, and a bounded wait."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.oplog import records, wait_for_records


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_only_lines_ending_in_a_newline_are_records(tmp_path: Path) -> None:
    hour = tmp_path / "dt=2026-12-04" / "hour=22"
    first = json.dumps({"Action": "PublishMessage", "MessageId": "a"})
    second = json.dumps({"Action": "PushMessage", "MessageId": "a"})
    write(hour / "oplog-h-1-ab-000002.jsonl", f"{second}\n\n" + second[:10])  # one in writing
    write(hour / "oplog-h-1-ab-000001.jsonl", f"{first}\n")
    write(hour / "notes.txt", "not a log\n")
    assert [r["Action"] for r in records(tmp_path)] == ["PublishMessage", "PushMessage"]


def test_the_wait_ends_at_the_count_or_the_timeout(tmp_path: Path) -> None:
    lines = "".join(json.dumps({"Action": "Push", "N": n}) + "\n" for n in range(3))
    write(tmp_path / "oplog-h-1-ab-000001.jsonl", lines)
    assert [r["N"] for r in wait_for_records(tmp_path, lambda r: r["N"] > 0, 2)] == [1, 2]
    assert len(wait_for_records(tmp_path, lambda r: True, 4, timeout=0.2)) == 3
