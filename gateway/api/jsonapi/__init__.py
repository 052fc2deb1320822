"""The JSON message API (``x-mns-version: 2026-04-09``, ``alibabacloud-smqproxy20260409``).

It shares its URLs with the XML API (``/queues/<name>/messages``, ``/topics/<name>/messages``):
only the version header tells them apart, and a GET (a receive) has no body to look at. So the
blueprint adds no routes: the URL map routes a request to the XML view's endpoint as always, and
:func:`dispatch` (a before-request hook that runs after authentication, see
:func:`gateway.api.app.create_app`) answers it with the JSON view of the same endpoint when the
client asked for 2026-04-09. Both views call the same store operations with the same rules
(docs/protocol.md#the-json-message-api).
"""

from __future__ import annotations

from collections.abc import Callable

from flask import Blueprint, Response, request

from gateway.api.context import is_json_request
from gateway.api.jsonapi import views

blueprint = Blueprint("jsonapi", __name__)

#: XML view endpoint -> the JSON view serving the same operations.
VIEWS: dict[str, Callable[..., Response]] = {
    "queues.messages.send_messages": views.send_messages,
    "queues.messages.receive_messages": views.receive_messages,
    "queues.messages.delete_messages": views.delete_messages,
    "queues.messages.change_visibility": views.change_visibility,
    "topics.publish_message": views.publish_message,
}


@blueprint.before_app_request
def dispatch() -> Response | None:
    """The JSON view's response for a 2026-04-09 request to one of its operations, else
    ``None`` (Flask then runs the routed XML view, or raises the routing error)."""
    if not is_json_request():
        return None
    view = VIEWS.get(request.endpoint or "")
    if view is None:
        return None
    return view(**(request.view_args or {}))
