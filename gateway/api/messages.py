"""Queue message views: (Batch)SendMessage, (Batch)ReceiveMessage, (Batch)PeekMessage,
(Batch)DeleteMessage and ChangeMessageVisibility, in XML.

One URL, ``/queues/<name>/messages``, carries them all; the method, the body's root element and
the query string tell them apart, as on the service. Query parameters come from the raw query
string (:func:`query_params`): receipt handles arrive unencoded, ``+`` and all. Each view parses,
calls its operation (:mod:`gateway.operations.messages`) and renders.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from xml.etree.ElementTree import Element

from flask import Blueprint, Response

from gateway.api.context import (
    XML_CONTENT_TYPE,
    caller,
    current_request,
    empty_response,
    operations,
    query_params,
    xml_response,
)
from gateway.api.environ import CLIENT_CONNECTED
from gateway.errors.mns import MNSError
from gateway.operations import messages
from gateway.protocol.names import validate_name
from gateway.protocol.xml import XmlNode, children, parse_document, render_document
from gateway.queues.records import BATCH_SIZE, WAIT_SECONDS, QueueMessage
from gateway.queues.wire import (
    error_nodes,
    message_nodes,
    parse_batch,
    parse_new_message,
    root_name,
    sent_nodes,
    visibility_request,
)

blueprint = Blueprint("messages", __name__)


@blueprint.post("/queues/<name>/messages")
def send_messages(name: str) -> Response:
    validate_name("queue", name)
    body = current_request().get_data(cache=True)
    if root_name(body) == "Messages":
        return _batch_send(name, parse_document(body, "Messages"))
    draft = parse_new_message(parse_document(body, "Message"))
    result = messages.send(operations(), caller(), name, draft)
    return xml_response(
        "Message", sent_nodes(result, with_handle=True, with_group=True), status=201
    )


def _batch_send(name: str, root: Element) -> Response:
    """201 when every message was stored; else 500 with an ErrorCode/ErrorMessage entry in place
    of each failed one (the SDK accepts exactly these two entry shapes then)."""
    result = messages.send_batch(operations(), caller(), name, parse_batch(root))
    failed = bool(result.failed)
    nodes: list[XmlNode] = [
        (
            "Message",
            error_nodes(r)
            if isinstance(r, MNSError)
            else sent_nodes(r, with_handle=False, with_group=not failed),
        )
        for r in result.results
    ]
    return xml_response("Messages", nodes, status=500 if failed else 201)


@blueprint.get("/queues/<name>/messages")
def receive_messages(name: str) -> Response:
    """Receive, or peek with ``?peekonly=true``; ``numOfMessages`` makes either a batch."""
    validate_name("queue", name)
    params = query_params()
    batch = BATCH_SIZE.parse(params.get("numofmessages"), None)
    if params.get("peekonly", "").lower() == "true":
        peeked = messages.peek(operations(), caller(), name, batch)
        return xml_response(*_messages_document(peeked, batch, received=False))
    wait = WAIT_SECONDS.parse(params.get("waitseconds"), None)
    connected = current_request().environ.get(CLIENT_CONNECTED, always)
    result = messages.receive(operations(), caller(), name, batch, wait, connected)
    root, nodes = _messages_document(result.messages, batch, received=True)
    return handed_over(render_document(root, nodes), name, result.messages, connected)


def _messages_document(
    taken: list[QueueMessage], batch: int | None, *, received: bool
) -> tuple[str, list[XmlNode]]:
    if not taken:
        raise MNSError("MessageNotExist")
    if batch is None:
        return "Message", message_nodes(taken[0], received=received)
    return "Messages", [("Message", message_nodes(m, received=received)) for m in taken]


def always() -> bool:
    return True


def handed_over(
    document: bytes,
    name: str,
    taken: list[QueueMessage],
    connected: Callable[[], bool],
    content_type: str = XML_CONTENT_TYPE,
) -> Response:
    """The response carrying received ``messages`` (in XML, or the JSON API's JSON)."""
    ops = operations()  # the application context is gone by the time the body is written
    body = HandOver(document, lambda: messages.release(ops, name, taken), connected)
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


@blueprint.delete("/queues/<name>/messages")
def delete_messages(name: str) -> Response:
    """DeleteMessage with ``?ReceiptHandle=``, else BatchDeleteMessage with a body."""
    validate_name("queue", name)
    handle = query_params().get("receipthandle")
    body = current_request().get_data(cache=True)
    if handle is None and body.strip():
        return _batch_delete(name, body)
    messages.delete(operations(), caller(), name, handle)
    return empty_response(204)


def _batch_delete(name: str, body: bytes) -> Response:
    """204 when every handle deleted its message; else 404 with an ``Errors`` list naming each
    failed handle (docs/protocol.md#batches)."""
    handles = [
        node.text or ""
        for node in children(parse_document(body, "ReceiptHandles"), "ReceiptHandle")
    ]
    result = messages.delete_batch(operations(), caller(), name, handles)
    errors: list[XmlNode] = [
        ("Error", [*error_nodes(error), ("ReceiptHandle", handle)])
        for error, handle in result.failed
    ]
    return xml_response("Errors", errors, status=404) if errors else empty_response(204)


@blueprint.put("/queues/<name>/messages")
def change_visibility(name: str) -> Response:
    """ChangeMessageVisibility: a new handle and NextVisibleTime; the old handle is spent."""
    validate_name("queue", name)
    handle, seconds = visibility_request(query_params())
    change = messages.change_visibility(operations(), caller(), name, handle, seconds)
    nodes: list[XmlNode] = [
        ("ReceiptHandle", change.receipt_handle),
        ("NextVisibleTime", str(change.next_visible_time)),
    ]
    return xml_response("ChangeVisibility", nodes)
