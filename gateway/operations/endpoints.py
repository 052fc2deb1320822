"""The public endpoint's switch and its ACL (the control plane's EnableEndpoint,
DisableEndpoint, GetEndpointAttribute, AuthorizeEndpointAcl, RevokeEndpointAcl;
docs/control-plane.md#endpoint-and-acl). The state is shared through the database and enforced
on every request of the data API and the console (:mod:`gateway.auth.endpoint_acl`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gateway.auth.endpoint_acl import EndpointAcl
from gateway.observability.operations import Field
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations


def _change(
    ops: Operations, caller: Caller, action: str, apply: Callable[[EndpointAcl], EndpointAcl]
) -> EndpointAcl:
    """One transaction: the ACL read, changed and written."""
    return ops.hooks.run(
        Call(action, Field.QUEUE_NAME, "", caller),
        lambda call: ops.store.control.change_endpoint(apply),
    )


def switch_endpoint(ops: Operations, caller: Caller, enabled: bool) -> EndpointAcl:
    """Turn the public endpoint on or off; its ACL is kept either way."""
    action = "EnableEndpoint" if enabled else "DisableEndpoint"
    return _change(ops, caller, action, lambda acl: EndpointAcl(enabled, acl.rules))


def get_endpoint(ops: Operations, caller: Caller) -> EndpointAcl:
    return ops.hooks.run(
        Call("GetEndpointAttribute", Field.QUEUE_NAME, "", caller),
        lambda call: ops.store.control.endpoint(),
    )


def authorize_cidrs(
    ops: Operations, caller: Caller, cidrs: Sequence[str], strategy: str
) -> EndpointAcl:
    """Allow ``cidrs`` (normalized already), each stamped with the store's time."""
    now = int(ops.store.control.clock())
    return _change(
        ops, caller, "AuthorizeEndpointAcl", lambda acl: acl.authorize(cidrs, strategy, now)
    )


def revoke_cidrs(ops: Operations, caller: Caller, cidrs: Sequence[str]) -> EndpointAcl:
    return _change(ops, caller, "RevokeEndpointAcl", lambda acl: acl.revoke(cidrs))
