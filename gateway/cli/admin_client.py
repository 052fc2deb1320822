"""A client for a gateway's ``/admin/`` API that signs its requests as any MNS client does.

``mns-gateway admin`` uses it, so an operator can list, inspect and replay the dead letters of a
gateway on another machine with nothing but its URL and an access key. The string to sign is
the gateway's own (:func:`gateway.auth.signatures.string_to_sign`): client and server cannot
disagree about it.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable, Mapping
from email.utils import formatdate
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from gateway.auth.signatures import IncomingRequest, sign, string_to_sign
from gateway.errors.commands import AdminError
from gateway.errors.mns import MNSError
from gateway.protocol import MNS_VERSION
from gateway.protocol.xml import child_text, parse_document


class AdminClient:
    """Signed JSON requests to ``{url}/admin/...``; ``url`` may carry a path prefix."""

    def __init__(
        self,
        url: str,
        access_key_id: str,
        access_key_secret: str,
        *,
        timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise AdminError("InvalidURL", f"{url!r} is not an http:// or https:// URL")
        self._parts = parts
        self._prefix = parts.path.rstrip("/")
        self._key_id = access_key_id
        self._secret = access_key_secret
        self._timeout = timeout
        self._clock = clock

    def call(self, method: str, path: str, query: Mapping[str, str] | None = None) -> Any:
        """The decoded JSON answer to ``method path?query``, or :class:`AdminError`."""
        uri = self._prefix + path + (f"?{urlencode(query)}" if query else "")
        headers = {"Date": formatdate(self._clock(), usegmt=True), "x-mns-version": MNS_VERSION}
        text = string_to_sign(IncomingRequest.from_pairs(method, uri, headers.items(), b""))
        headers["Authorization"] = f"MNS {self._key_id}:{sign(self._secret, text)}"
        status, body = self._send(method, uri, headers)
        if 200 <= status < 300:
            return json.loads(body)
        raise _error_from(status, body)

    def _send(self, method: str, uri: str, headers: dict[str, str]) -> tuple[int, bytes]:
        kind = (
            http.client.HTTPSConnection
            if self._parts.scheme == "https"
            else http.client.HTTPConnection
        )
        connection = kind(self._parts.hostname, self._parts.port, timeout=self._timeout)
        try:
            connection.request(method, uri, body=b"" if method == "POST" else None, headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        except OSError as error:
            raise AdminError("ConnectionFailed", f"{self._parts.netloc}: {error}") from error
        finally:
            connection.close()


def _error_from(status: int, body: bytes) -> AdminError:
    """An MNS ``<Error>`` body's Code and Message; the bare status for anything else."""
    try:
        root = parse_document(body, "Error")
    except MNSError:
        return AdminError(f"HTTP{status}", body[:200].decode("utf-8", "replace").strip())
    return AdminError(
        child_text(root, "Code") or f"HTTP{status}", child_text(root, "Message") or ""
    )


class RemoteDeadLetters:
    """The dead-letter operations of :mod:`gateway.operations.dead_letters`, on a remote gateway."""

    def __init__(self, client: AdminClient) -> None:
        self._client = client

    def listing(self, marker: str, limit: int, topic: str | None) -> dict[str, Any]:
        query = {"marker": marker, "limit": str(limit), **({"topic": topic} if topic else {})}
        return self._client.call("GET", "/admin/dead-letters", query)

    def detail(self, letter_id: str) -> dict[str, Any]:
        return self._client.call("GET", f"/admin/dead-letters/{quote(letter_id, safe='')}")

    def replay(self, letter_id: str, force: bool = False) -> dict[str, Any]:
        path = f"/admin/dead-letters/{quote(letter_id, safe='')}/replay"
        return self._client.call("POST", path, {"force": "true"} if force else None)


class RemoteDeliveries:
    """The replay of :mod:`gateway.operations.delivered_replays`, on a remote gateway (whose own
    delivered history decides what may be replayed)."""

    def __init__(self, client: AdminClient) -> None:
        self._client = client

    def replay(
        self, topic: str, subscription: str, since: str, until: str | None, dry_run: bool
    ) -> dict[str, Any]:
        path = f"/admin/topics/{quote(topic, safe='')}/subscriptions/{quote(subscription, safe='')}"
        query = {"since": since, **({"until": until} if until else {})}
        query["dryRun"] = "true" if dry_run else "false"
        return self._client.call("POST", f"{path}/replay", query)


class RemoteStandardWebhooks:
    """A subscription's Standard Webhooks switch (:mod:`gateway.operations.standard_webhooks`), on a
    remote gateway: ``action`` on, off or rotate, or ``None`` for whether they are on."""

    def __init__(self, client: AdminClient) -> None:
        self._client = client

    def switch(self, topic: str, name: str, action: str | None) -> dict[str, Any]:
        path = (
            f"/admin/topics/{quote(topic, safe='')}/subscriptions/{quote(name, safe='')}"
            "/standard-webhooks"
        )
        if action is None:
            return self._client.call("GET", path)
        return self._client.call("POST", path, {"action": action})
