"""The delivery-report pipeline over operation logs (docs/pipeline.md).

Nothing here imports PySpark at import time: ``gateway.cli`` imports
:mod:`gateway.pipeline.report` to register the ``report`` sub-command, and the gateway must run
without PySpark installed. Spark is imported only when a report actually runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

LOG = logging.getLogger(__name__)
#: How many steps the current one runs inside: a step inside another is indented under it.
_DEPTH: ContextVar[int] = ContextVar("phase_depth", default=0)
#: Said once after the steps, with the whole run's time: the steps' times overlap.
OVERLAP_NOTE = (
    "an indented step ran inside the step after it, so the steps' times add up to more than this"
)


@contextmanager
def phase(description: str) -> Iterator[None]:
    """Log how long a step took: the figures that tell where a slow report spends its time
    (``bench/report.py`` prints them). A step inside another is logged indented, before the
    step it is part of (which it ends first)."""
    depth = _DEPTH.get()
    token = _DEPTH.set(depth + 1)
    started = time.perf_counter()
    try:
        yield
    finally:
        _DEPTH.reset(token)
    LOG.info("%s%s in %.1f s", "  " * depth, description, time.perf_counter() - started)
