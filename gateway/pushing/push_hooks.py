"""The hooks every delivery worker runs around its push attempts, in their one order: tracing
(:mod:`gateway.pushing.attempt_spans`, only when on), the operation log, metrics, and the
warnings of the gateway's own log."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from prometheus_client import Counter

from gateway.breaker.events import circuit_record
from gateway.breaker.state import Transition
from gateway.delivery.push_records import PushFacts, push_record
from gateway.delivery.records import Attempt, DeliveryJob, Filed, PushOutcome, Settlement
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.oplog import Action, OperationLog
from gateway.observability.tracing import Tracing
from gateway.pushing.attempt_spans import TracingHook
from gateway.pushing.hooks import Push, PushHook

log = logging.getLogger(__name__)

_PUSH = PushFacts()


class OperationLogHook(PushHook):
    """A ``PushMessage`` record per attempt (a retry's with when it is due again), a ``Replay``
    record before a replayed dead letter's first attempt, a ``DeadLetter`` record per delivery
    filed; only for subscriptions whose topic logs (``job.logging_enabled``)."""

    def __init__(self, oplog: OperationLog, account_id: str, now_ms: Callable[[], int]) -> None:
        self._oplog = oplog
        self._account_id = account_id
        self._now_ms = now_ms

    def before(self, push: Push) -> None:
        job = push.job
        if job.replay_request_id is not None and job.attempts == 0:
            # The replay's record comes from the gateway that pushes it, not from the shell or
            # replica that asked for it (which may have no operation log at all).
            facts = PushFacts(Action.REPLAY, request_id=job.replay_request_id)
            self._write(job, None, facts, push.trace_id)

    def after(self, push: Push, result: Settlement | None, error: BaseException | None) -> None:
        if result is None or result.attempt is None:
            return
        # A retry's due time: the report tells a retry waiting behind an open circuit from one
        # waiting for its own schedule (docs/pipeline.md#endpoint-circuits).
        retry_at = result.retry_at_ms
        facts = _PUSH if retry_at is None else PushFacts(next_attempt_ms=retry_at)
        self._write(push.job, result.attempt, facts, push.trace_id)

    def settled(self, batch: Sequence[Settlement], letters: Sequence[Filed | None]) -> None:
        for settlement, letter in zip(batch, letters, strict=True):
            if letter is not None:
                reason = settlement.dead_reason or "unknown"
                facts = PushFacts(Action.DEAD_LETTER, error=reason, filed=letter)
                self._write(settlement.job, None, facts, "")

    def transitions(self, transitions: Sequence[Transition]) -> None:
        for transition in transitions:  # an ``EndpointCircuit`` record, whatever the topic logs
            self._oplog.write(circuit_record(transition, self._account_id))

    def _write(
        self, job: DeliveryJob, attempt: Attempt | None, facts: PushFacts, trace_id: str
    ) -> None:
        if not job.logging_enabled:
            return
        if trace_id:
            facts = replace(facts, trace_id=trace_id)
        record = push_record(
            job, attempt, facts, now_ms=self._now_ms(), account_id=self._account_id
        )
        self._oplog.write(record)


class MetricsHook(PushHook):
    """Attempts by result and outcome and their latency (a push never sent, ``rejected``, is
    not an attempt the endpoint saw), and dead letters by reason and dead-letter queue."""

    def __init__(self, metrics: GatewayMetrics) -> None:
        self._metrics = metrics
        #: Each outcome's counter, looked up at its first attempt and kept (``labels`` takes a
        #: lock and builds a key on every call).
        self._attempts: dict[PushOutcome, Counter] = {}

    def after(self, push: Push, result: Settlement | None, error: BaseException | None) -> None:
        attempt = result.attempt if result is not None else None
        if attempt is None or attempt.outcome is PushOutcome.REJECTED:
            return
        counter = self._attempts.get(attempt.outcome)
        if counter is None:
            ok = attempt.outcome is PushOutcome.SUCCESS
            counter = self._metrics.attempts.labels(
                "succeeded" if ok else "failed", attempt.outcome.value
            )
            self._attempts[attempt.outcome] = counter
        counter.inc()
        self._metrics.push_latency.observe((attempt.latency_ms or 0.0) / 1000)

    def settled(self, batch: Sequence[Settlement], letters: Sequence[Filed | None]) -> None:
        for settlement, letter in zip(batch, letters, strict=True):
            if letter is not None:
                reason = settlement.dead_reason or "unknown"
                self._dead_lettered(reason.split(":")[0], letter)

    def expired(self, letters: Sequence[Filed]) -> None:
        for letter in letters:
            self._dead_lettered("expired", letter)

    def transitions(self, transitions: Sequence[Transition]) -> None:
        for transition in transitions:
            self._metrics.circuit_transitions.labels(transition.after.value).inc()

    def _dead_lettered(self, reason: str, filed: Filed) -> None:
        """A delivery filed in the dead letters, and in its subscription's dead-letter queue when
        it went there too."""
        self._metrics.dead_letters.labels(reason).inc()
        if filed.dead_letter_queue and filed.dead_letter_queue_message_id:
            counter = self._metrics.dead_letter_queue_messages
            counter.labels("subscription", filed.dead_letter_queue).inc()


class WarningsHook(PushHook):
    """A warning in the gateway's own log per circuit transition
    (docs/delivery.md#endpoint-health)."""

    def transitions(self, transitions: Sequence[Transition]) -> None:
        for transition in transitions:
            log.warning(
                "endpoint circuit of %s: %s -> %s",
                transition.resource,
                transition.before.value,
                transition.after.value,
            )


def standard_push_hooks(
    *,
    tracing: Tracing,
    oplog: OperationLog,
    metrics: GatewayMetrics,
    account_id: str,
    now_ms: Callable[[], int],
) -> list[PushHook]:
    """Tracing first (the span and its trace id exist before the others' moments), then the
    operation log (it writes that trace id), metrics and warnings. Tracing is left out when
    off."""
    hooks: list[PushHook] = [TracingHook(tracing)] if tracing.enabled else []
    hooks.append(OperationLogHook(oplog, account_id, now_ms))
    hooks.append(MetricsHook(metrics))
    hooks.append(WarningsHook())
    return hooks
