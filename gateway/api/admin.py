"""Operator endpoints: dead letters (list, inspect, replay); replaying what was delivered to a
subscription; subscription endpoints' health and circuit-breaker overrides
(docs/delivery.md#endpoint-health); their Standard Webhooks signatures
(docs/delivery.md#standard-webhooks-signatures).

They sit behind the same MNS request signature as the API; when ``MNS_GATEWAY_ADMIN_ACCESS_KEYS``
is set, only those access keys may use them. Answers are JSON: these are not MNS operations and
no MNS SDK calls them, while operators' tools read JSON most easily.
"""

from __future__ import annotations

from flask import Blueprint, Response, g, jsonify

from gateway.api.context import caller, gateway, operations, query_params
from gateway.errors.mns import MNSError
from gateway.operations import dead_letters, delivered_replays, endpoint_health, standard_webhooks
from gateway.operator_documents import dead_letters as letter_documents
from gateway.operator_documents import delivered_replays as replay_documents
from gateway.operator_documents import endpoint_health as health_documents
from gateway.operator_documents import standard_webhooks as webhook_documents
from gateway.protocol.integers import integer_in_range

blueprint = Blueprint("admin", __name__, url_prefix="/admin")


@blueprint.before_request
def admin_only() -> None:
    allowed = gateway().settings.admin_access_keys
    if allowed and g.get("access_key_id") not in allowed:
        raise MNSError("AccessDenied")


@blueprint.get("/dead-letters")
def list_dead_letters() -> Response:
    params = query_params()
    low, high = dead_letters.LIMITS
    limit = integer_in_range(params.get("limit", "100"), low, high)
    if limit is None:
        raise MNSError("InvalidArgument", f"The value of limit should between {low} and {high}.")
    page = dead_letters.list_dead_letters(
        operations(), caller(), params.get("marker", ""), limit, params.get("topic") or None
    )
    return jsonify(letter_documents.listing(page))


@blueprint.get("/dead-letters/<letter_id>")
def show_dead_letter(letter_id: str) -> Response:
    letter = dead_letters.get_dead_letter(operations(), caller(), letter_id)
    return jsonify(letter_documents.detail(letter))


@blueprint.post("/dead-letters/<letter_id>/replay")
def replay_dead_letter(letter_id: str) -> Response:
    """``?force=true`` replays a dead letter replayed before (a second delivery chain)."""
    force = query_params().get("force", "false").lower()
    if force not in ("true", "false"):
        raise MNSError("InvalidArgument", "The value of force should be true or false.")
    delivery_id = dead_letters.replay_dead_letter(
        operations(), caller(), letter_id, force=force == "true"
    )
    return jsonify(letter_documents.replayed(letter_id, delivery_id))


@blueprint.get("/subscriptions/health")
def subscriptions_health() -> Response:
    """``?topic=`` keeps one topic's."""
    topic = query_params().get("topic") or None
    found = endpoint_health.endpoint_health(operations(), caller(), topic)
    return jsonify(health_documents.listing(found))


@blueprint.get("/topics/<topic>/subscriptions/<name>/health")
def subscription_health(topic: str, name: str) -> Response:
    health = endpoint_health.subscription_health(operations(), caller(), topic, name)
    return jsonify(health_documents.health_document(health))


@blueprint.post("/topics/<topic>/subscriptions/<name>/circuit")
def override_circuit(topic: str, name: str) -> Response:
    """``?override=closed`` forces the breaker closed, ``open`` holds it open, ``auto`` lets
    it decide again."""
    mode = query_params().get("override", "")
    health = endpoint_health.override_circuit(operations(), caller(), topic, name, mode)
    return jsonify(health_documents.health_document(health))


@blueprint.post("/topics/<topic>/subscriptions/<name>/replay")
def replay_delivered(topic: str, name: str) -> Response:
    """``?since=&until=`` (ISO 8601 UTC; ``until`` defaults to now) pushes again what was
    delivered to the subscription then; ``?dryRun=true`` only counts it
    (docs/delivery.md#replaying-what-was-delivered)."""
    params = query_params()  # names lowercased, as the signature reads them
    dry_run = params.get("dryrun", "false").lower()
    if dry_run not in ("true", "false"):
        raise MNSError("InvalidArgument", "The value of dryRun should be true or false.")
    done = delivered_replays.replay_delivered_window(
        operations(),
        caller(),
        topic,
        name,
        params.get("since", ""),
        params.get("until") or None,
        dry_run=dry_run == "true",
        labels=("since", "until"),
    )
    return jsonify(replay_documents.document(done))


@blueprint.get("/topics/<topic>/subscriptions/<name>/standard-webhooks")
def standard_webhooks_status(topic: str, name: str) -> Response:
    """Whether they are on, and when a rotated-out secret stops signing (never a secret)."""
    status = standard_webhooks.webhook_status(operations(), caller(), topic, name)
    return jsonify(webhook_documents.document(status))


@blueprint.post("/topics/<topic>/subscriptions/<name>/standard-webhooks")
def switch_standard_webhooks(topic: str, name: str) -> Response:
    """``?action=on`` (answers the secret), ``off``, or ``rotate`` (answers the new one)."""
    action = query_params().get("action", "")
    switched = standard_webhooks.switch_webhooks(operations(), caller(), topic, name, action)
    response = jsonify(webhook_documents.document(switched))
    response.headers["Cache-Control"] = "no-store"  # it may hold the secret
    return response
