"""A local server speaking the Alibaba Cloud SMS API (Dysmsapi 2017-05-25) on 127.0.0.1.

It verifies every request's ACS3-HMAC-SHA256 signature the way the service documents it, written
here independently of the gateway's signer (the official Python SDK's requests are the oracle
that this verifier is right: tests/gateway/auth/test_acs3.py), records the calls it accepted,
and answers with scripted codes, ``OK`` by default.
"""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import quote, unquote_plus

from tests.local_server import local_server

ACCESS_KEY_ID = "sms-key-id"
ACCESS_KEY_SECRET = "sms-key-secret"
WAIT_SECONDS = 10


@dataclass(frozen=True)
class SmsCall:
    action: str
    params: dict[str, str]
    headers: dict[str, str]


@dataclass
class SmsApi:
    """What the server has accepted, and what it answers next."""

    url: str = ""
    calls: list[SmsCall] = field(default_factory=list)
    #: Refused requests, by reason (e.g. "SignatureDoesNotMatch").
    refused: list[str] = field(default_factory=list)
    #: (HTTP status, Code) answers to give, one per accepted call, before answering OK.
    answers: list[tuple[int, str]] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, count: int) -> list[SmsCall]:
        with self.changed:
            self.changed.wait_for(lambda: len(self.calls) >= count, WAIT_SECONDS)
            calls = list(self.calls)
        assert len(calls) >= count, f"{len(calls)} of {count} SMS API calls arrived"
        return calls


def _encode(text: str) -> str:
    return quote(text, safe="-_.~")


def query_params(query: str) -> list[tuple[str, str]]:
    """The query as the service reads it: form-decoded (the official SDK sends a space as
    ``+``; a client following RFC 3986 sends ``%20``)."""
    return [
        (unquote_plus(k), unquote_plus(v))
        for k, _, v in (p.partition("=") for p in query.split("&") if p)
    ]


def _string_to_sign(
    method: str, path: str, query: str, headers: dict[str, str], body: bytes
) -> tuple[str, str]:
    """(the signed header names from Authorization, the hex SHA-256 of the canonical request)."""
    authorization = headers["authorization"]
    fields = dict(part.split("=", 1) for part in authorization.split(" ", 1)[1].split(","))
    names = fields["SignedHeaders"].split(";")
    pairs = sorted((_encode(k), _encode(v)) for k, v in query_params(query))
    canonical = "\n".join(
        [
            method,
            path or "/",
            "&".join(f"{k}={v}" for k, v in pairs),
            "".join(f"{name}:{headers[name].strip()}\n" for name in names),
            ";".join(names),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    return fields["Signature"], hashlib.sha256(canonical.encode()).hexdigest()


def verify(method: str, target: str, headers: dict[str, str], body: bytes) -> str | None:
    """None for a genuine request, else the error code the service would answer."""
    authorization = headers.get("authorization", "")
    if not authorization.startswith("ACS3-HMAC-SHA256 "):
        return "MissingAuthorization"
    if f"Credential={ACCESS_KEY_ID}," not in authorization:
        return "InvalidAccessKeyId.NotFound"
    if headers.get("x-acs-content-sha256") != hashlib.sha256(body).hexdigest():
        return "ContentSHA256Mismatch"
    signed = authorization.split("SignedHeaders=", 1)[1].split(",", 1)[0].split(";")
    if not {"host", "x-acs-action", "x-acs-date", "x-acs-signature-nonce"} <= set(signed):
        return "IncompleteSignature"
    path, _, query = target.partition("?")
    given, digest = _string_to_sign(method, path, query, headers, body)
    expected = hmac.new(
        ACCESS_KEY_SECRET.encode(), f"ACS3-HMAC-SHA256\n{digest}".encode(), "sha256"
    ).hexdigest()
    return None if hmac.compare_digest(given, expected) else "SignatureDoesNotMatch"


def _handler(api: SmsApi) -> type[http.server.BaseHTTPRequestHandler]:
    class DysmsHandler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {name.lower(): value for name, value in self.headers.items()}
            refusal = verify("POST", self.path, headers, body)
            if refusal is not None:
                with api.changed:
                    api.refused.append(refusal)
                self._answer(400 if refusal != "InvalidAccessKeyId.NotFound" else 404, refusal)
                return
            query = self.path.partition("?")[2]
            params = dict(query_params(query))
            if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
                params.update(query_params(body.decode("ascii")))
            with api.changed:
                api.calls.append(SmsCall(headers["x-acs-action"], params, headers))
                status, code = api.answers.pop(0) if api.answers else (200, "OK")
                api.changed.notify_all()
            self._answer(status, code)

        def _answer(self, status: int, code: str) -> None:
            payload = {
                "Code": code,
                "Message": "OK" if code == "OK" else f"refused: {code}",
                "RequestId": "F655A8D5-B967-440B-8683-DAD6FF8DE990",
            }
            if code == "OK":
                payload["BizId"] = "900619746936498440^0"
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json;charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            """Keep test output clean."""

    return DysmsHandler


@contextmanager
def sms_api() -> Iterator[SmsApi]:
    api = SmsApi()
    with local_server(_handler(api)) as api.url:
        yield api
