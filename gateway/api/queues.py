"""Queue management views: CreateQueue, SetQueueAttributes, GetQueueAttributes, DeleteQueue,
ListQueue: parse the request, call the operation (:mod:`gateway.operations.queues`), render the
answer. Message views live in :mod:`gateway.api.messages`, nested in this blueprint so the app
registers one blueprint for the whole queue model."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from flask import Blueprint, Response

from gateway.api import messages
from gateway.api.context import (
    caller,
    current_request,
    empty_response,
    gateway,
    is_meta_override,
    list_paging,
    operations,
    with_meta,
    xml_response,
)
from gateway.operations import queues
from gateway.protocol.listing import PageQuery
from gateway.protocol.names import validate_name
from gateway.protocol.xml import XmlNode, parse_document
from gateway.queues.wire import changed_queue_attributes, new_queue_attributes, queue_nodes

blueprint = Blueprint("queues", __name__)
blueprint.register_blueprint(messages.blueprint)


def _queue_url(name: str) -> str:
    return f"{gateway().settings.base_url}/queues/{name}"


def _queue_body() -> Element | None:
    """The ``<Queue>`` body; an empty body means "no attributes" (all defaults on create)."""
    body = current_request().get_data(cache=True)
    return parse_document(body, "Queue") if body.strip() else None


@blueprint.put("/queues/<name>")
def put_queue(name: str) -> Response:
    """CreateQueue (201 new, 204 identical, 409 different), or SetQueueAttributes with
    ``?metaoverride=true`` (only the attributes sent change). Both take QueueType and
    DlqPolicy besides the 2015-06-06 attributes (docs/queues.md#the-dlqpolicy-element)."""
    validate_name("queue", name)
    if is_meta_override():
        changes = changed_queue_attributes(_queue_body())
        queues.set_queue_attributes(operations(), caller(), name, changes)
        return empty_response(204)
    attributes = new_queue_attributes(_queue_body())
    created = queues.create_queue(operations(), caller(), name, attributes)
    return empty_response(201 if created else 204, location=_queue_url(name))


@blueprint.get("/queues/<name>")
def get_queue(name: str) -> Response:
    queue, counts = queues.get_queue(operations(), caller(), name)
    return xml_response("Queue", queue_nodes(queue, counts))


@blueprint.delete("/queues/<name>")
def delete_queue(name: str) -> Response:
    """Deletes the queue with all its messages; a missing queue is not an error."""
    queues.delete_queue(operations(), caller(), name)
    return empty_response(204)


@blueprint.get("/queues")
def list_queues() -> Response:
    page = queues.list_queues(operations(), caller(), PageQuery(*list_paging()))
    nodes: list[XmlNode] = []
    for queue in page.items:
        # The name beside the URL: the service's entries carry it, and clients look entries
        # up by it (docs/protocol.md#listing); with meta it is among the attributes.
        entry: list[XmlNode] = [("QueueURL", _queue_url(queue.name))]
        entry += queue_nodes(queue, None) if with_meta() else [("QueueName", queue.name)]
        nodes.append(("Queue", entry))
    if page.next_marker:
        nodes.append(("NextMarker", page.next_marker))
    return xml_response("Queues", nodes)
