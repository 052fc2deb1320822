"""How the report writes values for people: times in the chosen zone, durations, and the text
of an endpoint's error. Pure functions, shared by the page and ``--trace``.

Endpoints answer failures with whatever their server sends, often a whole HTML error page. The
gateway keeps the start of it in the ``Error`` field; shown as is, it is markup nobody reads,
and on a page it must never become markup. :func:`error_excerpt` reduces it to its text on one
line and cuts it short; the page escapes the result like every other value.
"""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo

#: The error's text as the page, ``--trace`` and ``dead-letters show`` show it (one home, in
#: the admin layer below both the report and the command line).
from gateway.admin.text import ERROR_EXCERPT_CHARS as ERROR_EXCERPT_CHARS
from gateway.admin.text import error_excerpt as error_excerpt


def format_offset(moment: datetime) -> str:
    """``Z`` for UTC, else ``+08:00``."""
    offset = moment.utcoffset() or timedelta(0)
    if not offset:
        return "Z"
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def format_time(epoch_ms: object, zone: tzinfo, *, with_date: bool = True) -> str:
    """``2024-06-01 14:03:07`` in ``zone`` (the page says which zone once), ``—`` for none."""
    if not isinstance(epoch_ms, int) or isinstance(epoch_ms, bool):
        return "—"
    moment = datetime.fromtimestamp(epoch_ms / 1000, tz=zone)
    return f"{moment:%Y-%m-%d %H:%M:%S}" if with_date else f"{moment:%H:%M:%S}"


def zone_name(zone: tzinfo, at_ms: int | None = None) -> str:
    """``UTC`` or ``Asia/Shanghai (UTC+08:00)``."""
    key = getattr(zone, "key", None) or str(zone)
    if key in ("UTC", "Etc/UTC"):
        return "UTC"
    moment = datetime.fromtimestamp((at_ms or 0) / 1000, tz=zone)
    return f"{key} (UTC{format_offset(moment)})"


def format_duration(milliseconds: object) -> str:
    """``850 ms``, ``12.3 s``, ``4 min 05 s``, ``3 h 20 min``, ``2 d 4 h``; ``—`` for none."""
    if not isinstance(milliseconds, int | float) or isinstance(milliseconds, bool):
        return "—"
    if milliseconds < 1000:
        return f"{milliseconds:.0f} ms"
    seconds = milliseconds / 1000
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    if whole < 86_400:
        return f"{whole // 3600} h {whole % 3600 // 60:02d} min"
    return f"{whole // 86_400} d {whole % 86_400 // 3600} h"
