"""The delivery-report pipeline over operation logs (docs/pipeline.md).

Nothing here imports PySpark at import time: ``gateway.cli`` imports
:mod:`gateway.pipeline.report` to register the ``report`` sub-command, and the gateway must run
without PySpark installed. Spark is imported only when a report actually runs.
"""

from __future__ import annotations

from gateway.protocol.errors import GatewayError


class PipelineError(GatewayError):
    """Root of the errors the report pipeline raises on purpose (bad arguments, missing input)."""
