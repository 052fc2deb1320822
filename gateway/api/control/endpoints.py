"""The public endpoint and its ACL: EnableEndpoint, DisableEndpoint, GetEndpointAttribute,
AuthorizeEndpointAcl, RevokeEndpointAcl. The state is shared through the database and enforced by
the data API (:mod:`gateway.auth.endpoint_acl`; docs/control-plane.md#endpoint-and-acl)."""

from __future__ import annotations

from typing import Any, Final

from gateway.api.control.context import ControlContext, Operation
from gateway.api.control.params import MAX_ITEMS, Params
from gateway.auth.endpoint_acl import ACL_STRATEGIES, ENDPOINT_TYPES, normalized_cidr
from gateway.errors.control import invalid, missing
from gateway.operations import endpoints as operations


def _endpoint_type(params: Params) -> str:
    endpoint_type = params.required("EndpointType")
    if endpoint_type not in ENDPOINT_TYPES:
        raise invalid("EndpointType", "only public is supported.")
    return endpoint_type


def _acl_change(params: Params) -> tuple[str, list[str]]:
    """AclStrategy and CidrList: the Darabonba SDK joins the list with commas, a classic call
    may number it (``CidrList.1``)."""
    _endpoint_type(params)
    strategy = params.required("AclStrategy")
    if strategy not in ACL_STRATEGIES:
        raise invalid("AclStrategy", "only allow is supported.")
    joined = params.optional("CidrList")
    items = joined.split(",") if joined else params.numbered("CidrList")
    if not items:
        raise missing("CidrList")
    if len(items) > MAX_ITEMS:
        raise invalid("CidrList", f"at most {MAX_ITEMS} CIDRs.")
    try:
        return strategy, [normalized_cidr(item) for item in items]
    except ValueError:
        raise invalid("CidrList", "each item should be an IPv4 or IPv6 CIDR.") from None


def enable_endpoint(params: Params, ctx: ControlContext) -> Any:
    _endpoint_type(params)
    operations.switch_endpoint(ctx.operations, ctx.caller, True)
    return None


def disable_endpoint(params: Params, ctx: ControlContext) -> Any:
    _endpoint_type(params)
    operations.switch_endpoint(ctx.operations, ctx.caller, False)
    return None


def get_endpoint_attribute(params: Params, ctx: ControlContext) -> Any:
    _endpoint_type(params)
    acl = operations.get_endpoint(ctx.operations, ctx.caller)
    return {
        "EndpointEnabled": acl.enabled,
        "CidrList": [
            {"Cidr": r.cidr, "AclStrategy": r.strategy, "CreateTime": r.create_time}
            for r in acl.rules
        ],
    }


def authorize_endpoint_acl(params: Params, ctx: ControlContext) -> Any:
    strategy, cidrs = _acl_change(params)
    operations.authorize_cidrs(ctx.operations, ctx.caller, cidrs, strategy)
    return None


def revoke_endpoint_acl(params: Params, ctx: ControlContext) -> Any:
    _, cidrs = _acl_change(params)
    operations.revoke_cidrs(ctx.operations, ctx.caller, cidrs)
    return None


OPERATIONS: Final[dict[str, Operation]] = {
    "EnableEndpoint": enable_endpoint,
    "DisableEndpoint": disable_endpoint,
    "GetEndpointAttribute": get_endpoint_attribute,
    "AuthorizeEndpointAcl": authorize_endpoint_acl,
    "RevokeEndpointAcl": revoke_endpoint_acl,
}
