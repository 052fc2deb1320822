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

from gateway.admin import dead_letters, delivered_replays, endpoint_health, standard_webhooks
from gateway.api.context import gateway, query_params
from gateway.errors.mns import MNSError
from gateway.protocol.integers import integer_in_range
from gateway.protocol.text import storable, storable_or_none

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
    # Filters are text like any other: what no store can compare is refused, on every backend.
    marker = storable(params.get("marker", ""), "marker")
    topic = storable_or_none(params.get("topic") or None, "topic")
    return jsonify(dead_letters.listing(gateway().store.deliveries, marker, limit, topic))


@blueprint.get("/dead-letters/<letter_id>")
def show_dead_letter(letter_id: str) -> Response:
    return jsonify(dead_letters.detail(gateway().store.deliveries.get_dead_letter(letter_id)))


@blueprint.post("/dead-letters/<letter_id>/replay")
def replay_dead_letter(letter_id: str) -> Response:
    """``?force=true`` replays a dead letter replayed before (a second delivery chain)."""
    force = query_params().get("force", "false").lower()
    if force not in ("true", "false"):
        raise MNSError("InvalidArgument", "The value of force should be true or false.")
    return jsonify(
        dead_letters.replay(
            gateway().store.deliveries,
            letter_id,
            request_id=g.get("request_id", ""),
            force=force == "true",
        )
    )


@blueprint.get("/subscriptions/health")
def subscriptions_health() -> Response:
    """``?topic=`` keeps one topic's."""
    topic = query_params().get("topic") or None
    return jsonify(endpoint_health.health(gateway().store.deliveries, topic))


@blueprint.get("/topics/<topic>/subscriptions/<name>/health")
def subscription_health(topic: str, name: str) -> Response:
    store = gateway().store
    return jsonify(endpoint_health.subscription_health(store.topics, store.deliveries, topic, name))


@blueprint.post("/topics/<topic>/subscriptions/<name>/circuit")
def override_circuit(topic: str, name: str) -> Response:
    """``?override=closed`` forces the breaker closed, ``open`` holds it open, ``auto`` lets
    it decide again."""
    store = gateway().store
    mode = query_params().get("override", "")
    return jsonify(endpoint_health.override(store.topics, store.deliveries, topic, name, mode))


@blueprint.post("/topics/<topic>/subscriptions/<name>/replay")
def replay_delivered(topic: str, name: str) -> Response:
    """``?since=&until=`` (ISO 8601 UTC; ``until`` defaults to now) pushes again what was
    delivered to the subscription then; ``?dryRun=true`` only counts it
    (docs/delivery.md#replaying-what-was-delivered)."""
    params = query_params()  # names lowercased, as the signature reads them
    dry_run = params.get("dryrun", "false").lower()
    if dry_run not in ("true", "false"):
        raise MNSError("InvalidArgument", "The value of dryRun should be true or false.")
    context = gateway()
    return jsonify(
        delivered_replays.replay(
            context.store.deliveries,
            topic,
            name,
            params.get("since", ""),
            params.get("until") or None,
            request_id=g.get("request_id", ""),
            kept=delivered_replays.kept_seconds(context.settings),
            dry_run=dry_run == "true",
            labels=("since", "until"),
        )
    )


@blueprint.get("/topics/<topic>/subscriptions/<name>/standard-webhooks")
def standard_webhooks_status(topic: str, name: str) -> Response:
    """Whether they are on, and when a rotated-out secret stops signing (never a secret)."""
    return jsonify(standard_webhooks.status(gateway().store.standard_webhooks, topic, name))


@blueprint.post("/topics/<topic>/subscriptions/<name>/standard-webhooks")
def switch_standard_webhooks(topic: str, name: str) -> Response:
    """``?action=on`` (answers the secret), ``off``, or ``rotate`` (answers the new one)."""
    action = query_params().get("action", "")
    store = gateway().store
    response = jsonify(standard_webhooks.switch(store.standard_webhooks, topic, name, action))
    response.headers["Cache-Control"] = "no-store"  # it may hold the secret
    return response
