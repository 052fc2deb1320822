"""A span per push attempt: child of the message's creation context (so publisher, publish,
attempts and handler are one trace) and linked to it, as the messaging conventions link
deliveries to the context a message was created in."""

from __future__ import annotations

from contextvars import ContextVar

from gateway.delivery.records import DeliveryJob, PushOutcome, Settlement
from gateway.observability import messaging_spans as names
from gateway.observability.tracing import TRACEPARENT, Carrier, Span, SpanKind, Tracing
from gateway.protocol.properties import trace_context
from gateway.pushing.hooks import Push, PushHook

#: The creation context's ``traceparent`` of the attempt under way in this context (thread or
#: greenlet), read once when its span starts: the senders put it in the push's headers.
_CREATION: ContextVar[str | None] = ContextVar("push-creation-traceparent", default=None)


def creation_traceparent(job: DeliveryJob) -> str | None:
    """The message's creation ``traceparent`` for ``job``'s push: the one its attempt's span
    read (:class:`TracingHook`); outside an attempt, read from the message."""
    known = _CREATION.get()
    if known is not None:
        return known or None
    return trace_context(job.message.attributes).get(TRACEPARENT)


def attempt_span(tracing: Tracing, job: DeliveryJob, creation: Carrier | None = None) -> Span:
    """The attempt's span; ``creation``, the message's creation context, if already read."""
    if creation is None:
        creation = trace_context(job.message.attributes)
    message = job.message
    return tracing.start(
        names.span_name("push", job.subscription.name),
        SpanKind.CLIENT,
        parent=creation or None,
        links=[creation] if creation else (),
        attributes={
            names.MESSAGING_SYSTEM: names.SYSTEM,
            names.OPERATION_TYPE: "send",
            names.OPERATION_NAME: "push",
            names.DESTINATION: message.topic_name,
            names.SUBSCRIPTION: job.subscription.name,
            names.MESSAGE_ID: message.id,
            names.SMQ_MESSAGE_TAG: message.tag,
            names.PUSH_ATTEMPT: job.attempts + 1,
            names.PUSH_ENDPOINT: job.subscription.endpoint,
        },
        activate=True,
    )


def end_attempt_span(span: Span, settlement: Settlement | None) -> None:
    """Record how the attempt went (outcome, status, error type, when the retry is due) and end
    the span; ``None``: the attempt raised (the lease will lapse and it is tried again)."""
    try:
        if settlement is None:
            span.fail("unsettled", "the attempt failed unexpectedly; its lease will lapse")
            return
        attempt = settlement.attempt
        if attempt is None:
            return
        span.set(
            {
                names.PUSH_OUTCOME: attempt.outcome,
                names.HTTP_STATUS: attempt.status_code,
                names.PUSH_RETRY_AT: settlement.retry_at_ms,
            }
        )
        if attempt.outcome is not PushOutcome.SUCCESS:
            span.fail(attempt.outcome, attempt.error or "")
    finally:
        span.end()


class TracingHook(PushHook):
    """A span per attempt, current on this thread while it runs (the senders read it for the
    headers they send), with the message's creation context read once for it and its headers."""

    def __init__(self, tracing: Tracing) -> None:
        self._tracing = tracing

    def before(self, push: Push) -> None:
        creation = trace_context(push.job.message.attributes)
        push.span = attempt_span(self._tracing, push.job, creation)
        push.trace_id = push.span.trace_id
        token = _CREATION.set(creation.get(TRACEPARENT, ""))
        push.undo = lambda: _CREATION.reset(token)

    def after(self, push: Push, result: Settlement | None, error: BaseException | None) -> None:
        if push.undo is not None:
            push.undo()
        if push.span is not None:
            end_attempt_span(push.span, result)
