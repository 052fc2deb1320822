"""Signed JSON requests to a gateway's own endpoints (``/dev/``, ``/admin/``), signed as any MNS
request is, with the gateway's own string to sign so client and server cannot disagree."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Mapping
from email.utils import formatdate
from typing import Any
from urllib.parse import urlencode, urlsplit

from gateway.protocol.auth import IncomingRequest, sign, string_to_sign

MNS_VERSION = "2015-06-06"


class GatewayRequestError(RuntimeError):
    """The gateway answered with something other than a 2xx."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body
        super().__init__(f"HTTP {status}: {body[:300].decode('utf-8', 'replace')}")


class SignedClient:
    def __init__(
        self, url: str, access_key_id: str, access_key_secret: str, timeout: float = 30.0
    ) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.access_key_id = access_key_id
        self.access_key_secret = access_key_secret
        self.timeout = timeout

    def call(self, method: str, path: str, query: Mapping[str, str] | None = None) -> Any:
        """``method path?query``; the decoded JSON answer, or :class:`GatewayRequestError`."""
        uri = path + (f"?{urlencode(query)}" if query else "")
        headers = {"Date": formatdate(time.time(), usegmt=True), "x-mns-version": MNS_VERSION}
        text = string_to_sign(IncomingRequest.from_pairs(method, uri, headers.items(), b""))
        headers["Authorization"] = f"MNS {self.access_key_id}:{sign(self.access_key_secret, text)}"
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            connection.request(method, uri, body=b"", headers=headers)
            response = connection.getresponse()
            status, body = response.status, response.read()
        finally:
            connection.close()
        if not 200 <= status < 300:
            raise GatewayRequestError(status, body)
        return json.loads(body)
