"""A Signature V4 (``MNS4-HMAC-SHA256``) signer for tests, written from issue 25's description
and the gateway package's source, not from the gateway's code; checked against the SDK's own
signer in tests/gateway/auth/test_signatures_v4.py, then used to drive the XML API with raw
requests (the official Python SDK ``mns`` signs V2 only)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass
from email.utils import formatdate
from urllib.parse import quote, unquote

from tests.mns_http import RawClient


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def derive_key(secret: str, day: str, region: str) -> bytes:
    key = ("aliyun_v4" + secret).encode()
    for part in (day, region, "mns", "aliyun_v4_request"):
        key = _hmac(key, part)
    return key


def canonical_request(
    method: str, path: str, query: dict[str, str], headers: dict[str, str]
) -> str:
    resource = "&".join(
        f"{k}={v}" if v else k
        for k, v in sorted(
            (quote(name.strip().lower(), safe="~"), quote(str(value).strip(), safe="~"))
            for name, value in query.items()
        )
    )
    lower = {name.lower(): value.strip() for name, value in headers.items()}
    signed = "".join(
        f"{name}:{lower[name]}\n"
        for name in sorted(lower)
        if name in ("content-md5", "content-type") or name.startswith("x-mns-")
    )
    return f"{method}\n{quote(path, safe='/~')}\n{resource}\n{signed}\n"


def authorization(
    method: str,
    path: str,
    query: dict[str, str],
    headers: dict[str, str],
    *,
    key_id: str,
    secret: str,
    region: str,
    when: float,
    scope_day: str | None = None,
    scope_region: str | None = None,
) -> str:
    """The Authorization header; ``scope_day``/``scope_region`` sign for another day or region
    than the request's Date and the gateway's (to test that the gateway refuses them)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(int(when)))
    day = scope_day or stamp[:8]
    sign_region = scope_region or region
    scope = f"{day}/{sign_region}/mns/aliyun_v4_request"
    text = "\n".join(
        ["MNS4-HMAC-SHA256", stamp, scope, canonical_request(method, path, query, headers)]
    )
    signature = hmac.new(
        derive_key(secret, day, sign_region), text.encode(), hashlib.sha256
    ).hexdigest()
    return f"MNS4-HMAC-SHA256 Credential={key_id}/{scope},Signature={signature}"


def signed_headers(
    method: str,
    path: str,
    query: dict[str, str],
    headers: dict[str, str],
    *,
    key_id: str,
    secret: str,
    region: str = "local",
    when: float | None = None,
    **scope: str,
) -> dict[str, str]:
    """``headers`` plus Date and a V4 Authorization, as the gateway package sends them."""
    moment = time.time() if when is None else when
    out = {**headers, "Date": formatdate(int(moment), usegmt=True)}
    out["Authorization"] = authorization(
        method, path, query, out, key_id=key_id, secret=secret, region=region, when=moment,
        **scope,
    )  # fmt: skip
    return out


@dataclass
class V4RawClient(RawClient):
    """:class:`RawClient` signing with MNS4-HMAC-SHA256 for region ``local``."""

    region: str = "local"

    def headers_for(  # type: ignore[override]
        self,
        method: str,
        uri: str,
        body: bytes,
        *,
        date: float | None = None,
        headers: dict[str, str] | None = None,
        **scope: str,
    ) -> dict[str, str]:
        out = {"x-mns-version": "2015-06-06"}
        if body:  # as alibabacloud-gateway-mns sends them: MD5 as base64 of the raw digest
            out["Content-Type"] = "text/xml;charset=UTF-8"
            out["Content-MD5"] = base64.b64encode(hashlib.md5(body).digest()).decode()
        out.update(self.extra_headers)
        out.update(headers or {})
        path, _, query = uri.partition("?")
        params = dict(
            (unquote(k), unquote(v))
            for k, _, v in (p.partition("=") for p in query.split("&") if p)
        )
        return signed_headers(
            method, path, params, out, key_id=self.key_id, secret=self.secret,
            region=self.region, when=date, **scope,
        )  # fmt: skip
