"""Dead letters: the list (filters: topic, subscription, dead since), a page per letter with its
attempts, and replay of one or a selection through
:func:`gateway.operations.dead_letters.replay_dead_letter`,
the same replay (and operation-log record) as the admin API's and the CLI's.

The guard against replaying twice by mistake: a letter already replayed is only replayed again
when the person ticks "replay again", and every replay carries the replay time the page showed,
so a double click or a second person on the same page replays it once
(:func:`gateway.store.sql.dead_letter_sql.replay`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Response, abort, flash, redirect, render_template, request

from gateway.api.console.display import LIST_PAGE_SIZE
from gateway.api.console.forms import decoded_body
from gateway.api.console.web import back_to, blueprint, form_int, mns
from gateway.api.context import caller, operations
from gateway.errors.mns import MNSError
from gateway.operations import dead_letters
from gateway.topics.records import subscription_resource

MAX_SELECTION = 100


def since_ms(text: str) -> int | None:
    """A ``datetime-local`` value (or any ISO-8601 time) read as UTC, in epoch ms."""
    if not text.strip():
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        abort(400, "since must be a date and time such as 2026-01-31T12:00.")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


@blueprint.get("/dead-letters")
def dead_letter_list() -> str:
    topic = request.args.get("topic", "").strip()
    subscription = request.args.get("subscription", "").strip()
    since = request.args.get("since", "")
    marker = request.args.get("marker", "")
    size = form_int("size", LIST_PAGE_SIZE, 1, 1000)
    page = dead_letters.list_dead_letters(
        operations(),
        caller(),
        marker,
        size,
        topic or None,
        subscription=subscription or None,
        since_ms=since_ms(since),
    )
    return render_template(
        "dead_letters.html",
        page=page,
        topic=topic,
        subscription=subscription,
        since=since,
        marker=marker,
        size=size,
        back=request.full_path.rstrip("?"),
    )


@blueprint.get("/dead-letters/<letter_id>")
def dead_letter_page(letter_id: str) -> str:
    letter = dead_letters.get_dead_letter(operations(), caller(), letter_id)
    decode = request.args.get("decode") == "base64"
    subscription = subscription_resource(letter.subscription.topic_name, letter.subscription.name)
    return render_template(
        "dead_letter.html",
        letter=letter,
        rate_limit=mns().store.control.rate_limit("subscription", subscription),
        decode=decode,
        decoded=decoded_body(letter.message.body) if decode else None,
        back=request.path,
    )


@blueprint.post("/dead-letters/replay")
def dead_letter_replay() -> Response:
    ids = list(dict.fromkeys(request.form.getlist("id")))[:MAX_SELECTION]
    if not ids:
        flash("Select at least one dead letter to replay.", "error")
        return redirect(back_to())
    again = request.form.get("again") == "yes"
    replayed, refused = [], []
    for letter_id in ids:
        # Without "again" only a letter never replayed; with it, only if its last replay is
        # still the one the page showed.
        seen = form_int(f"seen-{letter_id}", 0, 0, 2**62) if again else 0
        try:
            _replay(letter_id, seen)
            replayed.append(letter_id)
        except MNSError as error:
            refused.append(f"{letter_id}: {error.code}: {error.message}")
    if replayed:
        flash(f"Replayed {len(replayed)}: {', '.join(replayed)}.", "ok")
    for line in refused:
        flash(line, "error")
    return redirect(back_to())


def _replay(letter_id: str, seen_replayed_at: int) -> None:
    dead_letters.replay_dead_letter(
        operations(), caller(), letter_id, seen_replayed_at=seen_replayed_at
    )
