"""Sign-in, sign-out and the overview."""

from __future__ import annotations

from flask import Response, current_app, redirect, render_template, request, session, url_for

from gateway.api.console.circuit_pages import open_circuits
from gateway.api.console.figures import MINUTES, chart, last_hour
from gateway.api.console.security import (
    console_target,
    key_may_sign_in,
    new_csrf_token,
    secret_fingerprint,
)
from gateway.api.console.web import blueprint, console, error_page, mns


def _next_page() -> str:
    return console_target(request.values.get("next", ""), url_for("console.overview"))


@blueprint.route("/sign-in", methods=["GET", "POST"])
def sign_in() -> Response | str:
    if request.method == "GET":
        return render_template("sign_in.html", next=_next_page(), error=None)
    client = request.remote_addr or "-"
    limiter = console().limiter
    wait = limiter.attempt(client)  # counted now, forgotten if the pair is accepted
    if wait > 0:
        response = error_page(
            429, "TooManyAttempts", f"Too many failed sign-ins; try again in {wait:.0f} s."
        )
        response.headers["Retry-After"] = str(int(wait) + 1)
        return response
    key_id = request.form.get("access_key_id", "").strip()
    secret = request.form.get("access_key_secret", "")
    context = mns()
    if not key_may_sign_in(
        key_id, secret, context.keys.permanent, context.settings.admin_access_keys
    ):
        page = render_template(
            "sign_in.html",
            next=_next_page(),
            error="That access key pair is not accepted here.",
            key_id=key_id,  # kept: the person retypes the secret, not the ID too
        )
        return Response(page, status=401)
    limiter.succeeded(client)
    session.clear()  # a fresh session (and CSRF token) on every sign-in, under a new id
    session.renew_id()  # type: ignore[attr-defined]
    fingerprint = secret_fingerprint(secret, current_app.secret_key)
    session.update(key_id=key_id, key_fingerprint=fingerprint, csrf=new_csrf_token())
    return redirect(_next_page())


@blueprint.post("/sign-out")
def sign_out() -> Response:
    session.clear()  # the session is deleted from the store: a copy of the cookie is worthless
    return redirect(url_for("console.sign_in"))


@blueprint.get("/")
def overview() -> str:
    return render_template("overview.html", **_live())


@blueprint.get("/overview/live")
def overview_live() -> str:
    """The live figures alone (the counts and the last hour), for htmx to refresh in place."""
    return render_template("_live.html", **_live())


def _live() -> dict[str, object]:
    reads = console().reads
    now_minute = reads.now_ms() // 60_000
    hour = last_hour(reads.minute_counts(now_minute - MINUTES + 1), now_minute)
    return {
        "figures": reads.overview(),
        "hour": hour,
        "chart": chart(hour),
        "open_circuits": open_circuits(),
    }
