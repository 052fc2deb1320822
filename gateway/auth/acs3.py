"""Alibaba Cloud's request signature V3, ``ACS3-HMAC-SHA256``: pure, no IO.

The SMS API (Dysmsapi, an RPC-style API) documents V3 as its signature and V2 (``HMAC-SHA1``
with a ``Signature`` query parameter) as discontinued; the official SDKs sign with V3 by
default. The algorithm (docs/delivery.md#the-alibaba-cloud-sms-api):

``CanonicalRequest`` is the method, the path (``/`` for RPC APIs), the canonical query string
(parameters sorted by name, names and values percent-encoded as RFC 3986 says: only
``A-Z a-z 0-9 - _ . ~`` kept, a space is ``%20``), the canonical headers (each signed header's
lowercased name, ``:``, its trimmed value and a newline, sorted by name), the signed header names
joined by ``;``, and the lowercase hex SHA-256 of the body (also sent as
``x-acs-content-sha256``), joined by newlines. The signed headers are ``host``,
``content-type`` when there is a body, and the ``x-acs-*`` ones. The string to sign is
``ACS3-HMAC-SHA256``, a newline, and the hex SHA-256 of the canonical request; the signature
is the lowercase hex HMAC-SHA256 of it keyed with the AccessKey secret, sent as
``Authorization: ACS3-HMAC-SHA256 Credential={id},SignedHeaders={names},Signature={hex}``.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Final
from urllib.parse import quote

ALGORITHM: Final = "ACS3-HMAC-SHA256"


def percent_encode(text: str) -> str:
    """RFC 3986: everything but unreserved characters percent-encoded, UTF-8, uppercase hex."""
    return quote(text, safe="~")


def canonical_query(params: Mapping[str, str]) -> str:
    encoded = sorted((percent_encode(k), percent_encode(v)) for k, v in params.items())
    return "&".join(f"{name}={value}" for name, value in encoded)


def content_sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def acs_date(epoch_seconds: float) -> str:
    """``x-acs-date``: ISO 8601 UTC to the second, ``2023-10-26T09:01:01Z``."""
    return datetime.fromtimestamp(int(epoch_seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def canonical_request(
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    signed: Sequence[str],
    payload_sha256: str,
) -> str:
    """``headers`` keyed by lowercased name; ``signed``, the lowercased names to sign, sorted."""
    lines = "".join(f"{name}:{headers[name].strip()}\n" for name in signed)
    return f"{method.upper()}\n{path}\n{query}\n{lines}\n{';'.join(signed)}\n{payload_sha256}"


def signature(secret: str, canonical: str) -> str:
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    string_to_sign = f"{ALGORITHM}\n{digest}"
    return hmac.new(secret.encode("utf-8"), string_to_sign.encode("utf-8"), "sha256").hexdigest()


def authorization(key_id: str, signed: Sequence[str], signature_hex: str) -> str:
    names = ";".join(signed)
    return f"{ALGORITHM} Credential={key_id},SignedHeaders={names},Signature={signature_hex}"


def sign_rpc(
    *,
    host: str,
    action: str,
    version: str,
    params: Mapping[str, str],
    key_id: str,
    secret: str,
    date: str,
    nonce: str,
    method: str = "POST",
    body: bytes = b"",
    content_type: str | None = None,
) -> tuple[str, dict[str, str]]:
    """An RPC-style call, its parameters in the query string and, for those the API takes as
    form data, ``body`` of ``content_type``: (query string, headers to send). ``host`` is the
    Host header exactly as it will be sent; it is signed but not returned, the HTTP client
    writes it."""
    payload = content_sha256(body)
    headers = {
        **({"content-type": content_type} if content_type else {}),
        "host": host,
        "x-acs-action": action,
        "x-acs-content-sha256": payload,
        "x-acs-date": date,
        "x-acs-signature-nonce": nonce,
        "x-acs-version": version,
    }
    signed = sorted(headers)
    query = canonical_query(params)
    canonical = canonical_request(method, "/", query, headers, signed, payload)
    headers["authorization"] = authorization(key_id, signed, signature(secret, canonical))
    del headers["host"]
    return query, headers
