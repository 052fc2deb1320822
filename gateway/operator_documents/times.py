"""How operators' commands and documents show times: ISO-8601 UTC, to the millisecond. (An
endpoint's error is reduced to text by :func:`gateway.delivery.error_text.error_excerpt`, which
the report's page, ``--trace`` and the web console use too.)"""

from __future__ import annotations

from datetime import UTC, datetime


def iso_utc(epoch_ms: int | None) -> str:
    """``2026-11-22T20:21:53.123Z``; ``-`` for a time that has not happened."""
    if epoch_ms is None:
        return "-"
    moment = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
