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

LOG = logging.getLogger(__name__)


@contextmanager
def phase(description: str) -> Iterator[None]:
    """Log how long a step took: the figures that tell where a slow report spends its time
    (``bench/report.py`` prints them)."""
    started = time.perf_counter()
    yield
    LOG.info("%s in %.1f s", description, time.perf_counter() - started)
