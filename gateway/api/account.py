"""Account operations: GetAccountAttributes, SetAccountAttributes and OpenService
(docs/protocol.md#account-operations)."""

from __future__ import annotations

from flask import Blueprint, Response

from gateway.account.attributes import account_nodes, apply_changes
from gateway.api.context import current_request, empty_response, gateway, query_params, xml_response
from gateway.errors.mns import MNSError
from gateway.protocol.xml import parse_document

blueprint = Blueprint("account", __name__)


def _require_account_meta() -> None:
    """The account's attributes live at ``/?accountmeta=true``; the root without it is no
    operation."""
    if query_params().get("accountmeta", "").lower() != "true":
        raise MNSError("InvalidRequestURL")


@blueprint.get("/")
def get_account_attributes() -> Response:
    _require_account_meta()
    return xml_response("Account", account_nodes(gateway().store.account.attributes()))


@blueprint.put("/")
def set_account_attributes() -> Response:
    """Only the attributes sent change; an empty body changes nothing."""
    _require_account_meta()
    body = current_request().get_data(cache=True)
    if body.strip():
        root = parse_document(body, "Account")
        gateway().store.account.change(lambda current: apply_changes(current, root))
    return empty_response(204)


@blueprint.post("/commonbuy/openservice")
def open_service() -> Response:
    """The gateway's account has the service from the start, and the service answers such an
    account's OpenService with this error (the official SDKs' samples recognise it by
    ``INSTANCE_ID_IS_NOT_UNIQUE`` in its message)."""
    raise MNSError("INSTANCE_ID_IS_NOT_UNIQUE")
