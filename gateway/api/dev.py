"""Development endpoints, registered only with ``MNS_GATEWAY_INBOX=1``: the inbox of SMS and mail
kept instead of sent, and a reset that empties the gateway between tests.

- ``GET /dev/inbox/sms``, ``GET /dev/inbox/mail``: ``{"Messages": [...]}``, oldest first,
  filtered by ``recipient``, ``topic``, ``since`` and ``until`` (epoch ms or ISO 8601), at most
  ``limit`` (default and maximum 1000).
- ``DELETE /dev/inbox/sms``, ``DELETE /dev/inbox/mail``: empty one inbox.
- ``POST /dev/reset``: every topic, queue, message, delivery, dead letter and inbox entry goes.

Signed like ``/admin/`` (any MNS access key, or only ``MNS_GATEWAY_ADMIN_ACCESS_KEYS`` when
set) and answered in JSON. docs/delivery.md#the-inbox
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from gateway.api.admin import admin_only
from gateway.api.context import gateway, query_params
from gateway.errors.mns import MNSError
from gateway.inbox.records import InboxKind, query_from

blueprint = Blueprint("dev", __name__, url_prefix="/dev")
blueprint.before_request(admin_only)


def _kind(name: str) -> InboxKind:
    try:
        return InboxKind(name)
    except ValueError:
        raise MNSError("InvalidRequestURL") from None


@blueprint.get("/inbox/<kind>")
def list_inbox(kind: str) -> Response:
    entries = gateway().store.inbox.entries(_kind(kind), query_from(query_params()))
    return jsonify({"Messages": [dict(entry.document) for entry in entries]})


@blueprint.delete("/inbox/<kind>")
def clear_inbox(kind: str) -> Response:
    return jsonify({"Deleted": gateway().store.inbox.clear(_kind(kind))})


@blueprint.post("/reset")
def reset() -> Response:
    return jsonify({"Emptied": gateway().store.reset()})
