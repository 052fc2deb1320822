"""Standard Webhooks signatures on the topic's page (docs/console.md,
docs/delivery.md#standard-webhooks-signatures): whether each subscription has them on and when a
rotated-out secret stops signing, and a form to turn them on, off or rotate the secret. The
switch is the admin API's and the CLI's (:mod:`gateway.operations.standard_webhooks`).

The secret is shown once, on the page that answers ``on`` or ``rotate`` (never stored in the
session as a flash would be, never cached), and nowhere else.
"""

from __future__ import annotations

from flask import Response, render_template, request, url_for

from gateway.api.console.web import blueprint, done, mns
from gateway.api.context import caller, operations
from gateway.operations import standard_webhooks
from gateway.operator_documents.standard_webhooks import document
from gateway.protocol.names import validate_name
from gateway.store import WebhookState


@blueprint.app_template_global()
def standard_webhook_states(topic: str) -> dict[str, WebhookState]:
    """The topic's subscriptions with them on, by name (for ``_standard_webhooks.html``)."""
    return mns().store.standard_webhooks.states(topic)


@blueprint.post("/topics/<name>/standard-webhooks")
def topic_standard_webhooks(name: str) -> Response:
    validate_name("topic", name)
    subscription = request.form.get("subscription", "")
    validate_name("subscription", subscription)
    action = request.form.get("action", "")
    switched = standard_webhooks.switch_webhooks(operations(), caller(), name, subscription, action)
    entry = document(switched)
    if "Secret" not in entry:
        return done(f"Standard Webhooks signatures of {subscription} are off.")
    page = render_template(
        "standard_webhook_secret.html",
        entry=entry,
        rotated=action == "rotate",
        back=url_for("console.topic_page", name=name),
    )
    response = Response(page)
    response.headers["Cache-Control"] = "no-store"
    return response
