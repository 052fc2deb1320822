"""Queue message views: (Batch)SendMessage, (Batch)ReceiveMessage, (Batch)PeekMessage,
(Batch)DeleteMessage and ChangeMessageVisibility.

One URL, ``/queues/<name>/messages``, carries them all; the method, the body's root element and
the query string tell them apart, as on the service. Query parameters come from the raw query
string (:func:`query_params`): receipt handles arrive unencoded, ``+`` and all.

For queues with ``LoggingEnabled`` every message operation also hands one record per message to
the app's operation log (``gateway().oplog``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from xml.etree.ElementTree import Element

from flask import Blueprint, Response, request

from gateway.api.context import (
    XML_CONTENT_TYPE,
    empty_response,
    gateway,
    log_operations,
    query_params,
    xml_response,
)
from gateway.api.environ import CLIENT_CONNECTED
from gateway.api.tracing import traced_receive, traced_sends, traced_sent, traced_settle
from gateway.errors.mns import MNSError
from gateway.observability.oplog import Action, Field, RequestFacts
from gateway.protocol.names import validate_name
from gateway.protocol.xml import XmlNode, children, parse_document, render_document
from gateway.queues import oplog_records as oplog
from gateway.queues.dlq_policy import Moved
from gateway.queues.records import (
    BATCH_SIZE,
    WAIT_SECONDS,
    Queue,
    QueueMessage,
    SentMessage,
)
from gateway.queues.wire import (
    MAX_BATCH,
    error_nodes,
    message_nodes,
    parse_batch,
    parse_new_message,
    root_name,
    sent_nodes,
    visibility_request,
)
from gateway.store.queue_receiving import Received
from gateway.store.queues import QueueStore

blueprint = Blueprint("messages", __name__)

Records = Callable[[RequestFacts], list[dict]]


def _queues() -> QueueStore:
    return gateway().store.queues


def log_queue(queue: Queue, records: Records) -> None:
    log_operations(queue.attributes.logging_enabled, Field.QUEUE_NAME, queue.name, records)


@blueprint.post("/queues/<name>/messages")
def send_messages(name: str) -> Response:
    validate_name("queue", name)
    body = request.get_data(cache=True)
    if root_name(body) == "Messages":
        return _batch_send(name, parse_document(body, "Messages"))
    result = send_message(name, parse_document(body, "Message"))
    return xml_response(
        "Message", sent_nodes(result, with_handle=True, with_group=True), status=201
    )


def send_message(name: str, element: Element) -> SentMessage:
    """SendMessage of one ``<Message>`` element: validated, stored and logged; the web console
    sends through here too, so both refuse and log alike."""
    message = parse_new_message(element)
    queue, (result,) = _queues().send(name, traced_sends("SendMessage", name, [message]))
    traced_sent([result])
    if isinstance(result, MNSError):
        raise result
    log_queue(queue, lambda facts: oplog.sent_records(facts, Action.SEND_MESSAGE, [result]))
    return result


def _batch_send(name: str, root: Element) -> Response:
    """201 when every message was stored; else 500 with an ErrorCode/ErrorMessage entry in place
    of each failed one (the SDK accepts exactly these two entry shapes then)."""
    parsed = parse_batch(root)
    valid = [m for m in parsed if not isinstance(m, MNSError)]
    queue, stored = _queues().send(name, traced_sends("BatchSendMessage", name, valid))
    outcomes = iter(stored)
    results = [item if isinstance(item, MNSError) else next(outcomes) for item in parsed]
    sent = [r for r in results if not isinstance(r, MNSError)]
    failed = len(sent) < len(results)
    log_queue(queue, lambda facts: oplog.sent_records(facts, Action.BATCH_SEND_MESSAGE, sent))
    nodes: list[XmlNode] = [
        (
            "Message",
            error_nodes(r)
            if isinstance(r, MNSError)
            else sent_nodes(r, with_handle=False, with_group=not failed),
        )
        for r in results
    ]
    return xml_response("Messages", nodes, status=500 if failed else 201)


@blueprint.get("/queues/<name>/messages")
def receive_messages(name: str) -> Response:
    """Receive, or peek with ``?peekonly=true``; ``numOfMessages`` makes either a batch."""
    validate_name("queue", name)
    params = query_params()
    batch = BATCH_SIZE.parse(params.get("numofmessages"), None)
    if params.get("peekonly", "").lower() == "true":
        _, messages = _queues().peek(name, batch or 1)
        return xml_response(*_messages_document(messages, batch, received=False))
    wait = WAIT_SECONDS.parse(params.get("waitseconds"), None)
    connected = request.environ.get(CLIENT_CONNECTED, always)
    result = limited_receive(name, batch or 1, wait, connected)
    queue, messages = result.queue, result.messages
    action = Action.RECEIVE_MESSAGE if batch is None else Action.BATCH_RECEIVE_MESSAGE
    traced_receive(action.value, name, messages)
    log_queue(queue, lambda facts: oplog.received_records(facts, action, messages))
    if result.moved:  # moved whether or not the response reaches the client
        dead_lettered(queue, result.moved)
    root, nodes = _messages_document(messages, batch, received=True)
    return handed_over(render_document(root, nodes), name, messages, connected)


def limited_receive(
    name: str, wanted: int, wait: int | None, connected: Callable[[], bool]
) -> Received:
    """The receive, within the queue's TenantRateLimitPolicy: a receive past this second's
    MaxReceivesPerSecond is 429 ``TooManyRequests``, one near it gets fewer messages
    (docs/control-plane.md#tenantratelimitpolicy)."""
    limits = gateway().receive_limits
    grant = limits.take(name, wanted)
    if grant is not None and grant.count == 0:
        raise MNSError("TooManyRequests")
    received = 0
    try:
        result = _queues().receive(
            name, wanted if grant is None else grant.count, wait, client_connected=connected
        )
        received = len(result.messages)
    finally:
        limits.settle(grant, received)
    return result


def _messages_document(
    messages: list[QueueMessage], batch: int | None, *, received: bool
) -> tuple[str, list[XmlNode]]:
    if not messages:
        raise MNSError("MessageNotExist")
    if batch is None:
        return "Message", message_nodes(messages[0], received=received)
    return "Messages", [("Message", message_nodes(m, received=received)) for m in messages]


def always() -> bool:
    return True


def handed_over(
    document: bytes,
    name: str,
    messages: list[QueueMessage],
    connected: Callable[[], bool],
    content_type: str = XML_CONTENT_TYPE,
) -> Response:
    """The response carrying received ``messages`` (in XML, or the JSON API's JSON)."""
    queues = _queues()  # the application context is gone by the time the body is written
    body = HandOver(document, lambda: queues.release(name, messages), connected)
    response = Response(body, content_type=content_type)
    response.headers["Content-Length"] = str(len(document))
    return response


class HandOver:
    """The body of a response carrying received messages, whose receive is undone unless the
    response was written (docs/queues.md#clients-that-go-away).

    Written means the server asked for more after taking the document: WSGI servers iterate a
    body to its end, and one whose write failed closes it instead. The client being gone when
    the response is ready counts as not written too (a write to a closed connection succeeds
    without reaching anyone).
    """

    def __init__(
        self, document: bytes, release: Callable[[], object], connected: Callable[[], bool]
    ) -> None:
        self._document = document
        self._release = release
        self._connected = connected
        self._state = "ready"  # -> "sent" -> "written", or -> "dropped"

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        if self._state == "ready":
            if self._connected():
                self._state = "sent"
                return self._document
            self._state = "dropped"
        elif self._state == "sent":  # asked for more: the document was written
            self._state = "written"
        raise StopIteration

    def close(self) -> None:
        if self._state not in ("written", "released"):
            self._state = "released"
            self._release()


def dead_lettered(queue: Queue, moved: list[Moved]) -> None:
    """Count and log the messages a receive moved to the dead-letter queue."""
    metrics = gateway().metrics
    if metrics is not None:
        for m in moved:
            metrics.dead_letter_queue_messages.labels("queue", m.dead_letter_queue).inc()
    log_queue(queue, lambda facts: oplog.dead_lettered_records(facts, moved))


@blueprint.delete("/queues/<name>/messages")
def delete_messages(name: str) -> Response:
    """DeleteMessage with ``?ReceiptHandle=``, else BatchDeleteMessage with a body."""
    validate_name("queue", name)
    handle = query_params().get("receipthandle")
    body = request.get_data(cache=True)
    if handle is None and body.strip():
        return _batch_delete(name, body)
    delete_message(name, handle)
    return empty_response(204)


def delete_message(name: str, handle: str | None) -> None:
    """DeleteMessage by receipt handle, logged (the web console deletes through here too)."""
    if not handle:
        raise MNSError("MissingReceiptHandle")
    traced_settle("DeleteMessage", name, [handle])
    queue, message_id = _queues().delete_message(name, handle)
    log_queue(
        queue,
        lambda facts: oplog.deleted_records(facts, Action.DELETE_MESSAGE, [(message_id, handle)]),
    )


def _batch_delete(name: str, body: bytes) -> Response:
    """204 when every handle deleted its message; else 404 with an ``Errors`` list naming each
    failed handle (docs/protocol.md#batches)."""
    handles = [
        node.text or ""
        for node in children(parse_document(body, "ReceiptHandles"), "ReceiptHandle")
    ]
    if not 1 <= len(handles) <= MAX_BATCH:
        raise MNSError(
            "InvalidArgument", f"The count of receipt handles should between 1 and {MAX_BATCH}."
        )
    traced_settle("BatchDeleteMessage", name, handles)
    queue, results = _queues().delete_messages(name, handles)
    deleted = [(r, h) for r, h in zip(results, handles, strict=True) if isinstance(r, str)]
    log_queue(
        queue, lambda facts: oplog.deleted_records(facts, Action.BATCH_DELETE_MESSAGE, deleted)
    )
    errors: list[XmlNode] = [
        ("Error", [*error_nodes(r), ("ReceiptHandle", h)])
        for r, h in zip(results, handles, strict=True)
        if isinstance(r, MNSError)
    ]
    return xml_response("Errors", errors, status=404) if errors else empty_response(204)


@blueprint.put("/queues/<name>/messages")
def change_visibility(name: str) -> Response:
    """ChangeMessageVisibility: a new handle and NextVisibleTime; the old handle is spent."""
    validate_name("queue", name)
    handle, seconds = visibility_request(query_params())
    queue, change = _queues().change_visibility(name, handle, seconds)
    traced_settle(
        "ChangeMessageVisibility", name, [handle], [change.message_id], change.next_visible_time
    )
    log_queue(queue, lambda facts: [oplog.visibility_record(facts, handle, change)])
    nodes: list[XmlNode] = [
        ("ReceiptHandle", change.receipt_handle),
        ("NextVisibleTime", str(change.next_visible_time)),
    ]
    return xml_response("ChangeVisibility", nodes)
