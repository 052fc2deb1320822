"""Topic operations of the control plane: CreateTopic, DeleteTopic, GetTopicAttributes,
SetTopicAttributes, ListTopic, over the same store operations as the XML API's
(:mod:`gateway.api.topics`)."""

from __future__ import annotations

from typing import Any, Final

from gateway.api.control import documents
from gateway.api.control.context import ControlContext, Operation
from gateway.api.control.params import Params, page_data
from gateway.errors.control import invalid
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
    ctx.operations.store.topics.create_topic(name, size, logging, tags=params.tags())  # one transaction
    return documents.DONE


def set_topic_attributes(params: Params, ctx: ControlContext) -> Any:
    name = params.name("topic", "TopicName")
    ctx.operations.store.topics.set_topic_attributes(name, _size(params), params.boolean("EnableLogging"))
    return documents.DONE


def get_topic_attributes(params: Params, ctx: ControlContext) -> Any:
    name = params.name("topic", "TopicName")
    topic, count = ctx.operations.store.topics.get_topic(name)
    tags = ctx.operations.store.control.tags(RESOURCE, name)
    return documents.topic(topic, count, tags, ctx.settings.base_url)


def delete_topic(params: Params, ctx: ControlContext) -> Any:
    ctx.operations.store.topics.delete_topic(params.name("topic", "TopicName"))
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
    listing = ctx.operations.store.control.list_topics(query)
    tags = ctx.operations.store.control.tags_by_name(RESOURCE, [t.name for t in listing.items])
    # ListTopic's entries carry no message count (as ListQueue's carry none).
    items = [
        documents.topic(t, 0, tags.get(t.name, []), ctx.settings.base_url) for t in listing.items
    ]
    return page_data(items, listing.total, number, size)


OPERATIONS: Final[dict[str, Operation]] = {
    "CreateTopic": create_topic,
    "DeleteTopic": delete_topic,
    "GetTopicAttributes": get_topic_attributes,
    "SetTopicAttributes": set_topic_attributes,
    "ListTopic": list_topic,
}
