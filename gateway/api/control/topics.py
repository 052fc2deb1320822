"""Topic operations of the control plane: CreateTopic, DeleteTopic, GetTopicAttributes,
SetTopicAttributes, ListTopic: its parameters parsed, then the operations of every front end
(:mod:`gateway.operations.topics`), and its documents rendered."""

from __future__ import annotations

from typing import Any, Final

from gateway.api.control import documents
from gateway.api.control.context import ControlContext, Operation
from gateway.api.control.params import Params, page_data
from gateway.errors.control import invalid
from gateway.operations import tags
from gateway.operations import topics as operations
from gateway.store import ListQuery
from gateway.topics.records import MAX_MESSAGE_SIZE, MIN_MESSAGE_SIZE

RESOURCE: Final = "topic"
TOPIC_TYPES: Final = ("normal",)


def _size(params: Params) -> int | None:
    return params.integer("MaxMessageSize", MIN_MESSAGE_SIZE, MAX_MESSAGE_SIZE)


def _check_type(params: Params) -> None:
    """Only standard topics exist here (docs/control-plane.md#operations)."""
    topic_type = params.optional("TopicType")
    if topic_type is not None and topic_type.lower() not in TOPIC_TYPES:
        raise invalid("TopicType", "only normal topics are supported.")


def create_topic(params: Params, ctx: ControlContext) -> Any:
    name = params.name("topic", "TopicName")
    _check_type(params)
    size = _size(params) or MAX_MESSAGE_SIZE
    logging = bool(params.boolean("EnableLogging"))
    operations.create_topic(ctx.operations, ctx.caller, name, size, logging, tags=params.tags())
    return documents.DONE


def set_topic_attributes(params: Params, ctx: ControlContext) -> Any:
    name = params.name("topic", "TopicName")
    operations.set_topic_attributes(
        ctx.operations, ctx.caller, name, _size(params), params.boolean("EnableLogging")
    )
    return documents.DONE


def get_topic_attributes(params: Params, ctx: ControlContext) -> Any:
    name = params.name("topic", "TopicName")
    topic, count = operations.get_topic(ctx.operations, ctx.caller, name)
    found = tags.extras(ctx.operations, ctx.caller, RESOURCE, [name]).tags.get(name, [])
    return documents.topic(topic, count, found, ctx.settings.base_url)


def delete_topic(params: Params, ctx: ControlContext) -> Any:
    operations.delete_topic(ctx.operations, ctx.caller, params.name("topic", "TopicName"))
    return documents.DONE


def list_topic(params: Params, ctx: ControlContext) -> Any:
    number, size = params.page()
    _check_type(params)
    query = ListQuery(
        params.optional("TopicName") or "",
        params.tags(values_required=False),
        (number - 1) * size,
        size,
    )
    listing = operations.list_topics(ctx.operations, ctx.caller, query)
    names = [t.name for t in listing.items]
    found = tags.extras(ctx.operations, ctx.caller, RESOURCE, names).tags
    # ListTopic's entries carry no message count (as ListQueue's carry none).
    items = [
        documents.topic(t, 0, found.get(t.name, []), ctx.settings.base_url) for t in listing.items
    ]
    return page_data(items, listing.total, number, size)


OPERATIONS: Final[dict[str, Operation]] = {
    "CreateTopic": create_topic,
    "DeleteTopic": delete_topic,
    "GetTopicAttributes": get_topic_attributes,
    "SetTopicAttributes": set_topic_attributes,
    "ListTopic": list_topic,
}
