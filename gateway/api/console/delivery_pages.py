"""Deliveries (one message's pushes per subscription, "deliver again", replaying what was
delivered to a subscription in a window) and, on development gateways (``MNS_GATEWAY_INBOX=1``),
the inbox of SMS and mail kept instead of sent."""

from __future__ import annotations

from flask import Response, abort, render_template, request, url_for

from gateway.api.console.circuit_pages import circuits
from gateway.api.console.web import blueprint, done, mns
from gateway.api.context import caller, operations
from gateway.inbox.records import InboxKind, InboxQuery
from gateway.operations import delivered_replays, redeliveries
from gateway.operator_documents.delivered_replays import describe, document

INBOX_PAGE = 100


@blueprint.get("/deliveries")
def deliveries() -> str:
    """A message's pushes per subscription that has any: delivered, pending, dead-lettered.
    Only those subscriptions are read (a topic may have thousands); "deliver again" to any
    other is a form with its name."""
    # From the form too: a refused "deliver again" shows this page again for its message.
    message_id = request.values.get("message_id", "").strip()
    found = mns().store.deliveries.message_deliveries(message_id) if message_id else None
    return render_template(
        "deliveries.html",
        message_id=message_id,
        found=found,
        rows=found.by_subscription() if found is not None else [],
        # A pending push behind an open circuit waits for the circuit, not for its next attempt.
        circuits=circuits(found.topic_name) if found is not None and found.topic_name else {},
        back=url_for("console.deliveries", message_id=message_id) if message_id else "",
        kept=kept_text(mns().store.deliveries.history_retention),
    )


def kept_text(seconds: int) -> str:
    """``MNS_GATEWAY_HISTORY_RETENTION`` for people: "1 day", "90 minutes", "61 seconds"."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} seconds"


@blueprint.post("/deliveries/again")
def deliver_again() -> Response:
    """Push the message to one subscription once more, logged as a ``Replay`` (the record the
    admin API's dead-letter replay writes)."""
    message_id = request.form.get("message_id", "").strip()
    subscription = request.form.get("subscription", "").strip()
    delivery_id = redeliveries.deliver_again(operations(), caller(), message_id, subscription)
    return done(f"Delivering {message_id} to {subscription} again ({delivery_id}).")


@blueprint.post("/topics/<name>/replay")
def replay_delivered(name: str) -> Response:
    """The topic page's "Replay what was delivered" form: the admin API's replay, its window
    in the form's words; the flash says what was (or, dry, would be) queued and skipped."""
    subscription = request.form.get("subscription", "").strip()
    replayed = delivered_replays.replay_delivered_window(
        operations(),
        caller(),
        name,
        subscription,
        request.form.get("since", ""),
        request.form.get("until") or None,
        dry_run=request.form.get("dry_run") == "on",
        labels=("Since", "Until"),
    )
    return done(describe(document(replayed)).replace("\n", "; ") + ".")


@blueprint.get("/inbox")
def inbox() -> str:
    if not mns().settings.inbox:
        abort(404, "The inbox exists on development gateways only (MNS_GATEWAY_INBOX=1).")
    kind = InboxKind.MAIL if request.args.get("kind") == "mail" else InboxKind.SMS
    entries = mns().store.inbox.entries(kind, InboxQuery(limit=INBOX_PAGE))
    return render_template("inbox.html", kind=kind, entries=entries)
