"""Tags of queues and topics (the control plane's TagResources, UntagResources,
ListTagResources; docs/control-plane.md#tags), and the tags and rate limits that other
operations' answers show beside a resource.

Tags go with their resource when it is deleted, through either API (the store deletes them in the
resource's own transaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from gateway.observability.operations import Field
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations
from gateway.store.control import MAX_TAGS, RateLimitPolicy, Tags

#: What may be tagged, as the control plane's ResourceType names it.
RESOURCE_TYPES: Final = ("queue", "topic")


def _call(action: str, resource_type: str, names: Sequence[str], caller: Caller) -> Call:
    field = Field.TOPIC_NAME if resource_type == "topic" else Field.QUEUE_NAME
    return Call(action, field, names[0] if len(names) == 1 else "", caller)


def tag_resources(
    ops: Operations, caller: Caller, resource_type: str, names: Sequence[str], tags: Tags
) -> None:
    """One transaction: every resource exists and stays within :data:`MAX_TAGS` tags, or
    nothing changes (``QueueNotExist``/``TopicNotExist``, ``TagLimitError``)."""

    def work(call: Call) -> None:
        ops.store.control.tag(resource_type, names, tags, MAX_TAGS)

    ops.hooks.run(_call("TagResources", resource_type, names, caller), work)


def untag_resources(
    ops: Operations,
    caller: Caller,
    resource_type: str,
    names: Sequence[str],
    keys: Sequence[str] | None,
) -> None:
    """Remove ``keys`` (every tag: ``None``). A resource that no longer exists is no error:
    a tool's destroy may untag after deleting."""

    def work(call: Call) -> None:
        ops.store.control.untag(resource_type, names, keys)

    ops.hooks.run(_call("UntagResources", resource_type, names, caller), work)


@dataclass(frozen=True)
class TagPage:
    """(name, key, value) by name and key; ``more`` when a page follows."""

    rows: list[tuple[str, str, str]]
    more: bool


def list_tag_resources(
    ops: Operations,
    caller: Caller,
    resource_type: str,
    names: Sequence[str],
    filters: Tags,
    *,
    after: tuple[str, str] | None,
    size: int,
) -> TagPage:
    """The tags of ``names`` (or of every resource with the ``filters``' tags), after the
    (name, key) position ``after``, at most ``size``."""

    def work(call: Call) -> TagPage:
        rows = ops.store.control.tagged(resource_type, names, filters, after=after, limit=size + 1)
        return TagPage(rows[:size], len(rows) > size)

    return ops.hooks.run(_call("ListTagResources", resource_type, names, caller), work)


@dataclass(frozen=True)
class Extras:
    """What the control plane shows beside resources: their tags and rate limits, by name."""

    tags: dict[str, list[tuple[str, str]]]
    rate_limits: dict[str, RateLimitPolicy]


def extras(ops: Operations, caller: Caller, resource_type: str, names: Sequence[str]) -> Extras:
    """``names``' tags and rate limits (``resource_type`` ``queue``, ``topic`` or
    ``subscription``, whose names are ``topic/name``), in two reads however many."""

    def work(call: Call) -> Extras:
        control = ops.store.control
        tags = control.tags_by_name(resource_type, names) if resource_type in RESOURCE_TYPES else {}
        return Extras(tags, control.rate_limits(resource_type, names))

    return ops.hooks.run(_call("ResourceExtras", resource_type, names, caller), work)
