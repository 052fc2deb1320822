"""Tag operations: TagResources, UntagResources, ListTagResources (docs/control-plane.md#tags).

Tags belong to queues and topics (``ResourceType`` ``queue`` or ``topic``, as the Terraform
provider sends it), are kept in the store (migration 6) and go with the resource when it is
deleted, through either API.
"""

from __future__ import annotations

from typing import Any, Final

from gateway.api.control import documents, next_token
from gateway.api.control.context import ControlContext, Operation
from gateway.api.control.params import Params
from gateway.errors.control import invalid, missing
from gateway.operations import tags as operations
from gateway.operations.tags import RESOURCE_TYPES

#: ListTagResources: entries in one page, when MaxResults asks for no fewer.
MAX_TAG_RESULTS: Final = 50


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


def tag_resources(params: Params, ctx: ControlContext) -> Any:
    resource_type = _resource_type(params)
    names = _resource_ids(params, required=True)
    tags = params.tags()
    if not tags:
        raise missing("Tag.1.Key")
    operations.tag_resources(ctx.operations, ctx.caller, resource_type, names, tags)
    return documents.DONE


def untag_resources(params: Params, ctx: ControlContext) -> Any:
    resource_type = _resource_type(params)
    names = _resource_ids(params, required=True)
    remove_all = bool(params.boolean("All"))
    keys = params.numbered("TagKey")
    if not keys and not remove_all:
        raise missing("TagKey.1")
    operations.untag_resources(
        ctx.operations, ctx.caller, resource_type, names, None if remove_all else keys
    )
    return documents.DONE


def list_tag_resources(params: Params, ctx: ControlContext) -> Any:
    """Every tag of the named resources (or of all resources of the type) that carry all the
    ``Tag.N`` given, by resource and key, in pages of ``MaxResults``: ``NextToken`` resumes
    after the last entry returned, empty after the last page."""
    resource_type = _resource_type(params)
    names = _resource_ids(params, required=False)
    filters = params.tags(values_required=False)
    if not names and not filters:
        raise missing("ResourceId.1")
    token = params.optional("NextToken")
    after = next_token.decode(token, resource_type) if token else None
    size = _max_results(params)
    found = operations.list_tag_resources(
        ctx.operations, ctx.caller, resource_type, names, filters, after=after, size=size
    )
    page, more = found.rows, found.more
    return {
        "TagResources": [
            {"ResourceType": resource_type, "ResourceId": name, "TagKey": k, "TagValue": v}
            for name, k, v in page
        ],
        "NextToken": next_token.encode(resource_type, *page[-1][:2]) if more else "",
    }


def _max_results(params: Params) -> int:
    """MaxResults from 1; a larger one than a page holds gets a full page, as the service
    treats its page sizes."""
    asked = params.integer("MaxResults", 1, 2**31 - 1)
    return min(asked or MAX_TAG_RESULTS, MAX_TAG_RESULTS)


OPERATIONS: Final[dict[str, Operation]] = {
    "TagResources": tag_resources,
    "UntagResources": untag_resources,
    "ListTagResources": list_tag_resources,
}
