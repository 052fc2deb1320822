"""A refused form comes back as the page it was sent from, with the error above it and every
field as the person typed it.

Before, a refused action (a Priority of 99, an invalid subscription name) flashed the error and
redirected back, and the page came back with empty fields: what was typed was lost. Now the
page's own view renders it again in the refused POST's response, with the error's status; the
page's templates read what was typed through :func:`typed`. The typed values are never put in
the session (a cookie: a message body would not fit) and never outlive the response.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from flask import Response, current_app, flash, g, redirect, request
from werkzeug.exceptions import HTTPException

from gateway.errors.mns import MNSError

#: Fields never written back into a page: the CSRF token (the page writes the session's own),
#: where the form returns to, and anything secret.
NOT_KEPT = frozenset({"csrf_token", "back", "access_key_secret"})
#: The methods of a route that only shows a page.
READS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True, slots=True)
class Typed:
    """The refused form: the path it was posted to, and its fields as typed."""

    action: str
    fields: Mapping[str, str]


def refused_page(target: str, code: str, message: str, status: int) -> Response:
    """The page at ``target`` (a console path the form came from) rendered again with the
    error and the typed fields; a redirect there, as before, when it cannot be rendered."""
    flash(f"{code}: {message}", "error")
    view = _view_of(target.partition("?")[0])
    if view is None:
        return redirect(target)
    g.refused_form = Typed(
        request.path, {k: v for k, v in request.form.items() if k not in NOT_KEPT}
    )
    try:
        page = view()
    except MNSError:  # the page itself is gone now (its queue deleted): back to it, as before
        return redirect(target)
    response = current_app.make_response(page)
    response.status_code = status
    return response


def _view_of(path: str) -> Callable[[], object] | None:
    """The view of the console page at ``path``, when it is one that only shows (a ``GET``
    view of the console's own, not its static files); else ``None``.

    The view runs inside the refused POST, so a view that also takes POSTs would run its POST
    branch: ``back=/console/sign-in`` counted a failed sign-in per refusal and the sixth locked
    the address out (issue 47). Such a page, or any other path, is redirected to instead."""
    adapter = current_app.url_map.bind_to_environ(request.environ)
    try:
        rule, arguments = adapter.match(path, method="GET", return_rule=True)
    except HTTPException:
        return None
    if not is_page(rule.endpoint, rule.methods or frozenset()):
        return None
    function = current_app.view_functions[rule.endpoint]
    return lambda: function(**arguments)


def is_page(endpoint: str, methods: Collection[str]) -> bool:
    """Whether a route is a console page a refused form may be shown on: the console's own,
    not a static file, and answering nothing but reads."""
    return (
        endpoint.startswith("console.")
        and endpoint != "console.static"
        and not set(methods) - READS
    )


def typed(action: str, name: str, default: object = "") -> str:
    """What was typed into field ``name`` of the form posted to ``action``, when this response
    shows that form refused; else ``default`` (the field's usual value)."""
    refused: Typed | None = g.get("refused_form")
    if refused is not None and refused.action == action:
        return refused.fields.get(name, "")
    return "" if default is None else str(default)


def was_refused(action: str) -> bool:
    """Whether this response shows the form posted to ``action`` refused (a checkbox then
    shows as it was ticked, not as stored)."""
    refused: Typed | None = g.get("refused_form")
    return refused is not None and refused.action == action
