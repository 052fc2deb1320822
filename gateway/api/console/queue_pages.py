"""Queues: the list (prefix filter, paging by marker past any number of queues) and a queue's
page (attributes and their edit, send, peek, delete by receipt handle, redrive).

Actions call the operations every front end calls (:mod:`gateway.operations.queues`,
:mod:`gateway.operations.messages`) with the form's values parsed by the API's own field
parsers (:mod:`gateway.api.console.forms`), so they are validated, refused and logged exactly as
the API's.
"""

from __future__ import annotations

from flask import Response, render_template, request, url_for

from gateway.api.console import forms
from gateway.api.console.display import LIST_PAGE_SIZE
from gateway.api.console.web import blueprint, console, done, form_int, mns
from gateway.api.context import caller, operations
from gateway.operations import messages, queues, redrive
from gateway.protocol.listing import PageQuery
from gateway.protocol.names import validate_name
from gateway.queues.records import BATCH_SIZE

#: The control plane's resource type of a queue's tags.
TAGGED = "queue"


@blueprint.get("/queues")
def queue_list() -> str:
    prefix = request.args.get("prefix", "")
    marker = request.args.get("marker", "")
    size = form_int("size", LIST_PAGE_SIZE, 1, 1000)
    page = queues.list_queues(operations(), caller(), PageQuery(prefix, marker, size))
    names = [q.name for q in page.items]
    return render_template(
        "queues.html",
        page=page,
        counts=console().reads.queue_counts(names),
        tags=mns().store.control.tags_by_name(TAGGED, names),
        prefix=prefix,
        marker=marker,
        size=size,
    )


def _queue_page(name: str, *, peek_only: bool) -> str:
    validate_name("queue", name)
    ops, who = operations(), caller()
    count = form_int("peek", 0, 0, BATCH_SIZE.high)
    decode = request.args.get("decode") == "base64"
    peeked = messages.peek(ops, who, name, count) if count else []
    bodies = {m.message_id: forms.decoded_body(m.body) if decode else None for m in peeked}
    queue, counts = queues.get_queue(ops, who, name)
    if peek_only:
        return render_template(
            "_peek.html", peeked=peeked, peek=count, decode=decode, decoded=bodies
        )
    control = mns().store.control
    return render_template(
        "queue.html",
        queue=queue,
        counts=counts,
        rate_limit=control.rate_limit("queue", name),
        tags=control.tags(TAGGED, name),
        dead_letter_sources=console().reads.dead_letter_sources(name),
        peeked=peeked,
        peek=count,
        decode=decode,
        decoded=bodies,
        back=url_for("console.queue_page", name=name),
    )


@blueprint.get("/queues/<name>")
def queue_page(name: str) -> str:
    return _queue_page(name, peek_only=False)


@blueprint.get("/queues/<name>/peek")
def queue_peek(name: str) -> str:
    """The peeked messages alone, for htmx to put into the queue's page."""
    return _queue_page(name, peek_only=True)


@blueprint.post("/queues/<name>/attributes")
def queue_attributes(name: str) -> Response:
    validate_name("queue", name)
    queues.set_queue_attributes(operations(), caller(), name, forms.queue_attributes(request.form))
    return done("Attributes saved.")


@blueprint.post("/queues/<name>/send")
def queue_send(name: str) -> Response:
    validate_name("queue", name)
    sent = messages.send(operations(), caller(), name, forms.queue_message(request.form))
    return done(f"Sent message {sent.message_id}.")


@blueprint.post("/queues/<name>/delete-message")
def queue_delete_message(name: str) -> Response:
    validate_name("queue", name)
    handle = request.form.get("receipt_handle", "").strip()
    messages.delete(operations(), caller(), name, handle)
    return done("Message deleted.")


@blueprint.post("/queues/<name>/redrive")
def queue_redrive(name: str) -> Response:
    """Move this dead-letter queue's messages back to their source queues."""
    validate_name("queue", name)
    result = redrive.redrive(operations(), caller(), name, form_int("limit", 100, 1, 1000))
    moved = ", ".join(f"{count} to {queue}" for queue, count in sorted(result.moved.items()))
    message = f"Redrove {moved}." if moved else "Nothing to redrive."
    if result.skipped:
        message += f" Left {len(result.skipped)} in place (not from a queue that still exists)."
    return done(message)
