"""Tag operations: TagResources, UntagResources, ListTagResources (docs/control-plane.md#tags).

Tags belong to queues and topics (``ResourceType`` ``queue`` or ``topic``, as the Terraform
provider sends it), are kept in the store (migration 6) and go with the resource when it is
deleted, through either API.
"""

from __future__ import annotations

from typing import Any, Final

from gateway.api.control import documents
from gateway.api.control.context import ControlContext, Operation
from gateway.api.control.errors import invalid, missing
from gateway.api.control.params import MAX_TAGS, Params

RESOURCE_TYPES: Final = ("queue", "topic")


def _resource_type(params: Params) -> str:
    resource_type = params.required("ResourceType").lower()
    if resource_type not in RESOURCE_TYPES:
        raise invalid("ResourceType", "it should be queue or topic.")
    return resource_type


def _resource_ids(params: Params, *, required: bool) -> list[str]:
    ids = params.numbered("ResourceId")
    if required and not ids:
        raise missing("ResourceId.1")
    return ids


def _require_exists(ctx: ControlContext, resource_type: str, names: list[str]) -> None:
    """QueueNotExist or TopicNotExist for the first resource that is missing."""
    for name in names:
        if resource_type == "queue":
            ctx.store.queues.get_queue(name)
        else:
            ctx.store.topics.get_topic(name)


def tag_resources(params: Params, ctx: ControlContext) -> Any:
    resource_type = _resource_type(params)
    names = _resource_ids(params, required=True)
    tags = params.tags()
    if not tags:
        raise missing("Tag.1.Key")
    _require_exists(ctx, resource_type, names)
    for name in names:
        keys = {key for key, _ in ctx.store.control.tags(resource_type, name)}
        if len(keys | {key for key, _ in tags}) > MAX_TAGS:
            raise invalid("Tag", f"a resource has at most {MAX_TAGS} tags.")
    ctx.store.control.tag(resource_type, names, tags)
    return documents.DONE


def untag_resources(params: Params, ctx: ControlContext) -> Any:
    resource_type = _resource_type(params)
    names = _resource_ids(params, required=True)
    remove_all = bool(params.boolean("All"))
    keys = params.numbered("TagKey")
    if not keys and not remove_all:
        raise missing("TagKey.1")
    # Untagging a resource that no longer exists is not an error: destroy may run after it.
    ctx.store.control.untag(resource_type, names, None if remove_all else keys)
    return documents.DONE


def list_tag_resources(params: Params, ctx: ControlContext) -> Any:
    """Every tag of the named resources (or of all resources of the type) that carry all the
    ``Tag.N`` given, in one page: ``NextToken`` is always empty."""
    resource_type = _resource_type(params)
    names = _resource_ids(params, required=False)
    filters = params.tags(values_required=False)
    if not names and not filters:
        raise missing("ResourceId.1")
    rows = ctx.store.control.tagged(resource_type, names, filters)
    return {
        "TagResources": [
            {"ResourceType": resource_type, "ResourceId": name, "TagKey": k, "TagValue": v}
            for name, k, v in rows
        ],
        "NextToken": "",
    }


OPERATIONS: Final[dict[str, Operation]] = {
    "TagResources": tag_resources,
    "UntagResources": untag_resources,
    "ListTagResources": list_tag_resources,
}
