"""Tracing as a hook: one span per messaging operation, named and attributed per the messaging
conventions (:mod:`gateway.observability.messaging_spans`), and the creation context each new
message carries.

The span is started when the operation knows what it needs: a send's with its drafts (a single
message's own ``traceparent`` is the span's parent when the request carries none, so an SDK
that sets the SystemProperty but sends no header still gets one trace), a settle's when it
starts, a receive's when it has the messages it links to. It is back-dated to the request's
arrival and left on the :class:`~gateway.operations.calls.Caller`, whose front end ends it with
the status it answered. Only installed when tracing is on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gateway.observability import messaging_spans as names
from gateway.observability.tracing import Carrier, Span, SpanKind, Tracing
from gateway.operations.calls import Call
from gateway.operations.hooks import Hook
from gateway.operations.messages import Deleted, Received, Sent, VisibilityChanged
from gateway.operations.publishing import PublishedMessage
from gateway.protocol.properties import trace_context, with_trace_context
from gateway.queues.records import NewMessage
from gateway.topics.records import PublishDraft


class TracingHook(Hook):
    def __init__(self, tracing: Tracing) -> None:
        self._tracing = tracing

    def before(self, call: Call) -> None:
        if call.kind == "settle":
            self._span(call)

    def drafted(self, call: Call, drafts: list[Any]) -> list[Any]:
        if not drafts:
            return drafts
        if isinstance(drafts[0], PublishDraft):
            return [self._published(call, draft) for draft in drafts]
        if len(drafts) == 1:
            span = self._span(call, trace_context(drafts[0].properties))
            return [_stamped(drafts[0], span.carrier())]
        span = self._span(call)
        span.set({names.BATCH_COUNT: len(drafts)})
        return [self._created(span, call.name, draft) for draft in drafts]

    def after(self, call: Call, result: object, error: BaseException | None) -> None:
        if isinstance(result, Sent) and len(result.results) == 1 and result.sent:
            self._span(call).set({names.MESSAGE_ID: result.sent[0].message_id})
        elif isinstance(result, PublishedMessage):
            self._span(call).set({names.MESSAGE_ID: result.message.id})
        elif isinstance(result, Received):
            self._received(call, result)
        elif isinstance(result, Deleted):
            self._settled(call, result.handles, [r for r in result.results if isinstance(r, str)])
        elif isinstance(result, VisibilityChanged):
            change = result.change
            self._settled(call, [result.handle], [change.message_id], change.next_visible_time)

    def _span(
        self, call: Call, creation: Carrier | None = None, links: Sequence[Carrier] = ()
    ) -> Span:
        """The call's span, started the first time it is asked for."""
        caller = call.caller
        if caller.span is None:
            caller.span = self._tracing.start(
                names.span_name(call.kind, call.name),
                SpanKind.SERVER,
                parent=dict(caller.trace_parent) or creation or None,
                links=links,
                attributes=names.operation_attributes(
                    call.kind, str(call.action), call.name, caller.request_id
                ),
                start_ns=caller.arrived_ns,
            )
        return caller.span

    def _published(self, call: Call, draft: PublishDraft) -> PublishDraft:
        span = self._span(call, trace_context(draft.attributes))
        span.set({names.SMQ_MESSAGE_TAG: draft.tag})
        return replace(draft, attributes=with_trace_context(draft.attributes, span.carrier()))

    def _created(self, send: Span, queue: str, message: NewMessage) -> NewMessage:
        """A batch's message carries its own ``create`` span's context, a child of the
        ``send`` span, unless its publisher set one."""
        if trace_context(message.properties):
            return message
        create = self._tracing.start(
            names.span_name("create", queue),
            SpanKind.PRODUCER,
            parent=send,
            attributes={
                names.MESSAGING_SYSTEM: names.SYSTEM,
                names.OPERATION_TYPE: "create",
                names.OPERATION_NAME: "create",
                names.DESTINATION: queue,
            },
        )
        try:
            return _stamped(message, create.carrier())
        finally:
            create.end()

    def _received(self, call: Call, result: Received) -> None:
        messages = result.messages
        creations = [trace_context(m.properties) for m in messages]
        one = messages[0] if len(messages) == 1 else None
        self._span(call, links=[c for c in creations if c]).set(
            {
                names.BATCH_COUNT: len(messages),
                names.MESSAGE_ID: one.message_id if one else None,
                names.SMQ_RECEIPT_HANDLES: [m.receipt_handle or "" for m in messages],
                names.SMQ_NEXT_VISIBLE_TIME: one.next_visible_time if one else None,
            }
        )

    def _settled(
        self,
        call: Call,
        handles: Sequence[str],
        message_ids: Sequence[str],
        next_visible_time: int | None = None,
    ) -> None:
        self._span(call).set(
            {
                names.SMQ_RECEIPT_HANDLES: list(handles),
                names.BATCH_COUNT: len(handles) if len(handles) > 1 else None,
                names.MESSAGE_ID: message_ids[0] if len(message_ids) == 1 else None,
                names.SMQ_NEXT_VISIBLE_TIME: next_visible_time,
            }
        )


def _stamped(message: NewMessage, carrier: dict[str, str]) -> NewMessage:
    return replace(message, properties=with_trace_context(message.properties, carrier))
