"""The JSON message API's views: the XML views' operations (:mod:`gateway.api.messages`,
:func:`gateway.api.topics.publish_message`) read from and written as JSON.

Statuses are the XML API's: 201 for a send or a publish, 200 for a receive, a peek and a
visibility change, 204 for a delete; a batch that fails in part is the XML API's 500 (send) or
404 (delete), its JSON error body carrying the per-entry results
(docs/protocol.md#the-json-message-api).
"""

from __future__ import annotations

from flask import Response, request

from gateway.api.context import (
    error_fields,
    gateway,
    json_response,
    query_params,
)
from gateway.api.environ import CLIENT_CONNECTED
from gateway.api.messages import always, dead_lettered, handed_over, limited_receive, log_queue
from gateway.api.topics import publish_parsed
from gateway.api.tracing import traced_receive, traced_sends, traced_sent, traced_settle
from gateway.errors.mns import MNSError
from gateway.observability.oplog import Action
from gateway.protocol.json_body import JSON_CONTENT_TYPE, JsonObject, parse_object, render
from gateway.protocol.names import validate_name
from gateway.queues import json_wire
from gateway.queues import oplog_records as oplog
from gateway.queues.records import BATCH_SIZE, WAIT_SECONDS
from gateway.queues.wire import visibility_request
from gateway.store.queues import QueueStore
from gateway.topics import json_wire as topic_json


def _queues() -> QueueStore:
    return gateway().store.queues


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
    sending = traced_sends("SendMessage", name, [json_wire.parse_new_message(document)])
    queue, (result,) = _queues().send(name, sending)
    traced_sent([result])
    if isinstance(result, MNSError):
        raise result
    log_queue(queue, lambda facts: oplog.sent_records(facts, Action.SEND_MESSAGE, [result]))
    return json_response(json_wire.sent(result, with_handle=True), status=201)


def _batch_send(name: str, document: JsonObject) -> Response:
    parsed = json_wire.parse_batch(document)
    valid = [m for m in parsed if not isinstance(m, MNSError)]
    queue, stored = _queues().send(name, traced_sends("BatchSendMessage", name, valid))
    outcomes = iter(stored)
    results = [item if isinstance(item, MNSError) else next(outcomes) for item in parsed]
    sent = [r for r in results if not isinstance(r, MNSError)]
    log_queue(queue, lambda facts: oplog.sent_records(facts, Action.BATCH_SEND_MESSAGE, sent))
    entries = [
        json_wire.entry_error(r)
        if isinstance(r, MNSError)
        else json_wire.sent(r, with_handle=False)
        for r in results
    ]
    failures = [r for r in results if isinstance(r, MNSError)]
    if failures:
        return _partial_failure(failures[0], 500, "Messages", entries)
    return json_response({"Messages": entries}, status=201)


def receive_messages(name: str) -> Response:
    """BatchReceiveMessage, or BatchPeekMessage with ``peekonly=true``."""
    validate_name("queue", name)
    params = query_params()
    batch = BATCH_SIZE.parse(params.get("numofmessages"), None) or 1
    if params.get("peekonly", "").lower() == "true":
        _, peeked = _queues().peek(name, batch)
        if not peeked:
            raise MNSError("MessageNotExist")
        rendered = [json_wire.message(m, with_handle=False) for m in peeked]
        return json_response({"Messages": rendered})
    wait = WAIT_SECONDS.parse(params.get("waitseconds"), None)
    connected = request.environ.get(CLIENT_CONNECTED, always)
    result = limited_receive(name, batch, wait, connected)
    queue, messages = result.queue, result.messages
    action = Action.BATCH_RECEIVE_MESSAGE
    traced_receive(action.value, name, messages)
    log_queue(queue, lambda facts: oplog.received_records(facts, action, messages))
    if result.moved:
        dead_lettered(queue, result.moved)
    if not messages:
        raise MNSError("MessageNotExist")
    document = render({"Messages": [json_wire.message(m, with_handle=True) for m in messages]})
    return handed_over(document, name, messages, connected, JSON_CONTENT_TYPE)


def delete_messages(name: str) -> Response:
    """BatchDeleteMessage (``{"ReceiptHandles": [...]}``); 404 naming each handle that failed."""
    validate_name("queue", name)
    handles = json_wire.receipt_handles(_body())
    traced_settle("BatchDeleteMessage", name, handles)
    queue, results = _queues().delete_messages(name, handles)
    pairs = list(zip(results, handles, strict=True))
    deleted = [(r, h) for r, h in pairs if isinstance(r, str)]
    log_queue(
        queue, lambda facts: oplog.deleted_records(facts, Action.BATCH_DELETE_MESSAGE, deleted)
    )
    errors = [
        {**json_wire.entry_error(r), "ReceiptHandle": h}
        for r, h in pairs
        if isinstance(r, MNSError)
    ]
    if errors:
        first = next(r for r, _ in pairs if isinstance(r, MNSError))
        return _partial_failure(first, 404, "Errors", errors)
    return Response(b"", status=204)


def change_visibility(name: str) -> Response:
    validate_name("queue", name)
    handle, seconds = visibility_request(query_params())
    queue, change = _queues().change_visibility(name, handle, seconds)
    traced_settle(
        "ChangeMessageVisibility", name, [handle], [change.message_id], change.next_visible_time
    )
    log_queue(queue, lambda facts: [oplog.visibility_record(facts, handle, change)])
    return json_response(json_wire.visibility(change))


def publish_message(topic_name: str) -> Response:
    validate_name("topic", topic_name)
    message = publish_parsed(
        lambda message_id, now_ms: topic_json.parse_message(
            topic_name, _body(), message_id=message_id, now_ms=now_ms
        )
    )
    return json_response(topic_json.published(message), status=201)
