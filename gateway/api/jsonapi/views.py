"""The JSON message API's views: the operations of :mod:`gateway.operations.messages` and
:mod:`gateway.operations.publishing` read from and written as JSON, nothing else.

Statuses are the XML API's: 201 for a send or a publish, 200 for a receive, a peek and a
visibility change, 204 for a delete; a batch that fails in part is the XML API's 500 (send) or
404 (delete), its JSON error body carrying the per-entry results
(docs/protocol.md#the-json-message-api).
"""

from __future__ import annotations

from flask import Response, request

from gateway.api.context import caller, error_fields, json_response, operations, query_params
from gateway.api.environ import CLIENT_CONNECTED
from gateway.api.messages import always, handed_over
from gateway.errors.mns import MNSError
from gateway.operations import messages, publishing
from gateway.protocol.json_body import JSON_CONTENT_TYPE, JsonObject, parse_object, render
from gateway.protocol.names import validate_name
from gateway.queues import json_wire
from gateway.queues.records import BATCH_SIZE, WAIT_SECONDS
from gateway.queues.wire import visibility_request
from gateway.topics import json_wire as topic_json


def _body() -> JsonObject:
    return parse_object(request.get_data(cache=True))


def _partial_failure(first: MNSError, status: int, key: str, entries: list[JsonObject]) -> Response:
    """A batch that failed in part: the first failure's error, with every entry's result."""
    document: JsonObject = dict(error_fields(first))
    document[key] = entries
    return json_response(document, status=status)


def send_messages(name: str) -> Response:
    """SendMessage, or BatchSendMessage when the body has ``Messages``."""
    validate_name("queue", name)
    document = _body()
    if json_wire.is_batch(document):
        return _batch_send(name, document)
    draft = json_wire.parse_new_message(document)
    result = messages.send(operations(), caller(), name, draft)
    return json_response(json_wire.sent(result, with_handle=True), status=201)


def _batch_send(name: str, document: JsonObject) -> Response:
    drafts = json_wire.parse_batch(document)
    result = messages.send_batch(operations(), caller(), name, drafts)
    entries = [
        json_wire.entry_error(r)
        if isinstance(r, MNSError)
        else json_wire.sent(r, with_handle=False)
        for r in result.results
    ]
    if result.failed:
        return _partial_failure(result.failed[0], 500, "Messages", entries)
    return json_response({"Messages": entries}, status=201)


def receive_messages(name: str) -> Response:
    """BatchReceiveMessage, or BatchPeekMessage with ``peekonly=true``."""
    validate_name("queue", name)
    params = query_params()
    batch = BATCH_SIZE.parse(params.get("numofmessages"), None) or 1
    if params.get("peekonly", "").lower() == "true":
        peeked = messages.peek(operations(), caller(), name, batch)
        if not peeked:
            raise MNSError("MessageNotExist")
        rendered = [json_wire.message(m, with_handle=False) for m in peeked]
        return json_response({"Messages": rendered})
    wait = WAIT_SECONDS.parse(params.get("waitseconds"), None)
    connected = request.environ.get(CLIENT_CONNECTED, always)
    result = messages.receive(operations(), caller(), name, batch, wait, connected)
    if not result.messages:
        raise MNSError("MessageNotExist")
    taken = result.messages
    document = render({"Messages": [json_wire.message(m, with_handle=True) for m in taken]})
    return handed_over(document, name, taken, connected, JSON_CONTENT_TYPE)


def delete_messages(name: str) -> Response:
    """BatchDeleteMessage (``{"ReceiptHandles": [...]}``); 404 naming each handle that failed."""
    validate_name("queue", name)
    handles = json_wire.receipt_handles(_body())
    result = messages.delete_batch(operations(), caller(), name, handles)
    if result.failed:
        errors = [{**json_wire.entry_error(e), "ReceiptHandle": h} for e, h in result.failed]
        return _partial_failure(result.failed[0][0], 404, "Errors", errors)
    return Response(b"", status=204)


def change_visibility(name: str) -> Response:
    validate_name("queue", name)
    handle, seconds = visibility_request(query_params())
    change = messages.change_visibility(operations(), caller(), name, handle, seconds)
    return json_response(json_wire.visibility(change))


def publish_message(topic_name: str) -> Response:
    validate_name("topic", topic_name)
    draft = topic_json.parse_draft(topic_name, _body())
    message = publishing.publish(operations(), caller(), draft)
    return json_response(topic_json.published(message), status=201)
