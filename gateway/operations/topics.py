"""Topic operations: CreateTopic, SetTopicAttributes, GetTopicAttributes, DeleteTopic and
ListTopic, for every front end (the XML API, the control plane, the console, the command line).
PublishMessage is :mod:`gateway.operations.publishing`'s; subscriptions are
:mod:`gateway.operations.subscriptions`'.
"""

from __future__ import annotations

from typing import overload

from gateway.errors.mns import invalid_argument
from gateway.observability.operations import Field
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations
from gateway.protocol.listing import Page, PageQuery
from gateway.protocol.names import validate_name
from gateway.store import Listing, ListQuery
from gateway.store.control import Tags
from gateway.topics.records import MAX_MESSAGE_SIZE, MIN_MESSAGE_SIZE, Topic


def _call(action: str, name: str, caller: Caller) -> Call:
    validate_name("topic", name)
    return Call(action, Field.TOPIC_NAME, name, caller)


def check_size(maximum_message_size: int | None) -> None:
    """MaximumMessageSize within 1024-65536 bytes, whoever parsed it."""
    size = maximum_message_size
    if size is not None and not MIN_MESSAGE_SIZE <= size <= MAX_MESSAGE_SIZE:
        raise invalid_argument("MaximumMessageSize", MIN_MESSAGE_SIZE, MAX_MESSAGE_SIZE)


def create_topic(
    ops: Operations,
    caller: Caller,
    name: str,
    maximum_message_size: int,
    logging_enabled: bool,
    *,
    tags: Tags = (),
) -> bool:
    """CreateTopic: whether the topic is new (``False``: an identical one exists; a different
    one is 409 ``TopicAlreadyExist``). Its tags (the control plane's) are stored in the same
    transaction."""

    def work(call: Call) -> bool:
        check_size(maximum_message_size)
        return ops.store.topics.create_topic(name, maximum_message_size, logging_enabled, tags=tags)

    return ops.hooks.run(_call("CreateTopic", name, caller), work)


def set_topic_attributes(
    ops: Operations,
    caller: Caller,
    name: str,
    maximum_message_size: int | None,
    logging_enabled: bool | None,
) -> None:
    """SetTopicAttributes: the attributes given change (``None``: unchanged)."""

    def work(call: Call) -> None:
        check_size(maximum_message_size)
        ops.store.topics.set_topic_attributes(name, maximum_message_size, logging_enabled)

    ops.hooks.run(_call("SetTopicAttributes", name, caller), work)


def get_topic(ops: Operations, caller: Caller, name: str) -> tuple[Topic, int]:
    """GetTopicAttributes: the topic and its message count (404 ``TopicNotExist``)."""
    return ops.hooks.run(
        _call("GetTopicAttributes", name, caller), lambda call: ops.store.topics.get_topic(name)
    )


def delete_topic(ops: Operations, caller: Caller, name: str) -> None:
    """DeleteTopic, with its subscriptions and messages; a missing topic is not an error."""
    ops.hooks.run(
        _call("DeleteTopic", name, caller), lambda call: ops.store.topics.delete_topic(name)
    )


@overload
def list_topics(ops: Operations, caller: Caller, query: PageQuery) -> Page[Topic]: ...


@overload
def list_topics(ops: Operations, caller: Caller, query: ListQuery) -> Listing[Topic]: ...


def list_topics(
    ops: Operations, caller: Caller, query: PageQuery | ListQuery
) -> Page[Topic] | Listing[Topic]:
    """ListTopic: a page by marker (:class:`PageQuery`: the XML API, the console), or a
    numbered page filtered by tags (:class:`ListQuery`: the control plane)."""

    def work(call: Call) -> Page[Topic] | Listing[Topic]:
        if isinstance(query, PageQuery):
            return ops.store.topics.list_topics(query.prefix, query.marker, query.limit)
        return ops.store.control.list_topics(query)

    return ops.hooks.run(Call("ListTopic", Field.TOPIC_NAME, query.prefix, caller), work)
