"""A tiny raw MNS client for tests: signs requests the way the official SDK does, but lets a
test send anything (bad signatures, stale dates, hostile bodies) and read the raw answer."""

from __future__ import annotations

import base64
import hashlib
import http.client
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate

from defusedxml.ElementTree import fromstring

from gateway.auth.signatures import IncomingRequest, sign, string_to_sign
from gateway.protocol.xml import local_name


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes
    #: The status line's reason phrase, as sent.
    reason: str = ""

    def error_code(self) -> str | None:
        if not self.body:
            return None
        root = fromstring(self.body)
        return next((c.text for c in root if local_name(c) == "Code"), None)


def sdk_content_md5(body: bytes) -> str:
    """What the official SDK sends: base64 of the lowercase hex digest."""
    return base64.b64encode(hashlib.md5(body).hexdigest().encode()).decode()


#: How a request reaches a gateway: (method, uri, body, headers, chunked) to its response.
Transport = Callable[[str, str, bytes, dict[str, str], bool], RawResponse]


@dataclass
class RawClient:
    host: str
    port: int
    key_id: str
    secret: str
    extra_headers: dict[str, str] = field(default_factory=dict)
    #: None: a fresh HTTP connection to host:port; else the app in this process
    #: (tests/support/app.py).
    transport: Transport | None = None

    def headers_for(
        self,
        method: str,
        uri: str,
        body: bytes,
        *,
        date: float | None = None,
        content_md5: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, str]:
        out = {"x-mns-version": "2015-06-06", "Date": formatdate(date or time.time(), usegmt=True)}
        if body:
            out["Content-Type"] = "text/xml;charset=UTF-8"
            out["Content-MD5"] = content_md5 if content_md5 is not None else sdk_content_md5(body)
        out.update(self.extra_headers)
        out.update(headers or {})
        request = IncomingRequest.from_pairs(method, uri, out.items(), body)
        out["Authorization"] = f"MNS {self.key_id}:{sign(self.secret, string_to_sign(request))}"
        return out

    def send(
        self,
        method: str,
        uri: str,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        *,
        sign_request: bool = True,
        chunked: bool = False,
        **options: object,
    ) -> RawResponse:
        """One request on a fresh connection; ``chunked`` sends the body in 7-byte chunks."""
        final = (
            self.headers_for(method, uri, body, headers=headers, **options)  # type: ignore[arg-type]
            if sign_request
            else dict(headers or {})
        )
        if self.transport is not None:
            return self.transport(method, uri, body, final, chunked)
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            if chunked:
                chunks = (body[i : i + 7] for i in range(0, len(body), 7))
                connection.request(method, uri, chunks, final, encode_chunked=True)
            else:
                connection.request(method, uri, body=body, headers=final)
            response = connection.getresponse()
            headers_ = dict(response.getheaders())
            return RawResponse(response.status, headers_, response.read(), response.reason)
        finally:
            connection.close()
