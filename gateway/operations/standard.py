"""The operation layer as every front end gets it: the hooks in their one order around the
store, composed once (:func:`standard_operations`) for the API, the control plane, the console
and the command line alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway.observability.metrics import GatewayMetrics
from gateway.observability.operations import NullOperationLog, OperationLog
from gateway.observability.tracing import NO_TRACING, Tracing
from gateway.operations.hooks import Hook
from gateway.operations.metrics import MetricsHook
from gateway.operations.oplog import OperationLogHook
from gateway.operations.outages import OutageHook
from gateway.operations.tracing import TracingHook
from gateway.operations.wiring import Operations

if TYPE_CHECKING:
    from gateway.config.settings import Settings
    from gateway.store.base import Store


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


def standard_operations(
    settings: Settings,
    store: Store,
    *,
    oplog: OperationLog | None = None,
    metrics: GatewayMetrics | None = None,
    tracing: Tracing = NO_TRACING,
) -> Operations:
    """The operations over ``store`` with the standard hooks; what is not given (a command has no
    operation log, metrics or tracing of its own) is left out or a no-op."""
    hooks = standard_hooks(
        tracing=tracing,
        oplog=oplog or NullOperationLog(),
        metrics=metrics,
        account_id=settings.account_id,
        request_failed=store.request_failed,
    )
    return Operations.over(settings, store, hooks)
