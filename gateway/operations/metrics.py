"""Metrics as a hook: what the operations' results count, for every front end."""

from __future__ import annotations

from gateway.observability.metrics import GatewayMetrics
from gateway.operations.calls import Call
from gateway.operations.hooks import Hook
from gateway.operations.messages import Received


class MetricsHook(Hook):
    def __init__(self, metrics: GatewayMetrics) -> None:
        self._metrics = metrics

    def after(self, call: Call, result: object, error: BaseException | None) -> None:
        if isinstance(result, Received):
            counter = self._metrics.dead_letter_queue_messages
            for moved in result.moved:
                counter.labels("queue", moved.dead_letter_queue).inc()
