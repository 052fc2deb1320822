"""What the fuzz suites share: their budget, and the tally of what was sent and how answered.

The suites (tests/gateway/serving/http1/test_fuzz.py over a real gateway's raw HTTP surface,
tests/receiver/test_fuzz.py over the receiver blueprint) are hypothesis tests marked ``fuzz``.
Their budget is a number of examples per test, scaled by ``MNS_FUZZ_SCALE``:

* CI runs them at scale 1, a minute or so in all;
* ``MNS_FUZZ_SCALE=50 .venv/bin/pytest -m fuzz`` runs fifty times as many, for a deeper search.

Every request sent and every answer received is counted in :data:`TALLY`; the session prints the
counts at its end (tests/conftest.py) and, with ``MNS_FUZZ_REPORT=path.json``, writes them there.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, settings

SCALE = max(1, int(os.environ.get("MNS_FUZZ_SCALE", "1")))

#: (suite, what happened) -> how many times; "sent" counts requests tried.
TALLY: Counter[tuple[str, str]] = Counter()


def fuzz_settings(examples: int) -> settings:
    """``examples`` hypothesis examples (times :data:`SCALE`), no deadline: a request's time
    depends on a shared machine, not on the code under test."""
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def count(suite: str, outcome: str) -> None:
    TALLY[(suite, outcome)] += 1


def tally_rows() -> list[tuple[str, str, int]]:
    """The tally as plain rows, for an xdist worker to send to the controller."""
    return [(suite, outcome, n) for (suite, outcome), n in TALLY.items()]


def add_rows(rows: list[tuple[str, str, int]]) -> None:
    for suite, outcome, n in rows:
        TALLY[(suite, outcome)] += n


def summary_lines() -> list[str]:
    """The tally as lines: per suite, the requests tried, then each outcome with its count."""
    lines: list[str] = []
    for suite in sorted({suite for suite, _ in TALLY}):
        outcomes = {o: n for (s, o), n in TALLY.items() if s == suite and o != "sent"}
        lines.append(f"{suite}: {TALLY[(suite, 'sent')]} requests tried (scale {SCALE})")
        lines += [f"  {n:>7}  {o}" for o, n in sorted(outcomes.items(), key=lambda i: -i[1])]
    return lines


def write_report() -> None:
    if (path := os.environ.get("MNS_FUZZ_REPORT")) and TALLY:
        report = {f"{suite} | {outcome}": n for (suite, outcome), n in sorted(TALLY.items())}
        Path(path).write_text(json.dumps(report, indent=2, ensure_ascii=False))
