"""The hooks every gateway process runs around its operations, in their one order."""

from __future__ import annotations

from collections.abc import Callable

from gateway.observability.metrics import GatewayMetrics
from gateway.observability.operations import OperationLog
from gateway.observability.tracing import Tracing
from gateway.operations.hooks import Hook
from gateway.operations.metrics import MetricsHook
from gateway.operations.oplog import OperationLogHook
from gateway.operations.outages import OutageHook
from gateway.operations.tracing import TracingHook


def standard_hooks(
    *,
    tracing: Tracing,
    oplog: OperationLog,
    metrics: GatewayMetrics | None,
    account_id: str,
    request_failed: Callable[[], None],
) -> list[Hook]:
    """Tracing first (the span exists before the others' moments), then the operation log (it
    writes the span's trace id), metrics and outage bookkeeping. Tracing is left out when off."""
    hooks: list[Hook] = [TracingHook(tracing)] if tracing.enabled else []
    hooks.append(OperationLogHook(oplog, account_id))
    if metrics is not None:
        hooks.append(MetricsHook(metrics))
    hooks.append(OutageHook(request_failed))
    return hooks
