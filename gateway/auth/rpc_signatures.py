"""The two request signatures of the control-plane API (Mns-open 2022-01-19): pure, no IO.

- **ACS3-HMAC-SHA256** (signature V3), what ``alibabacloud-mns-open20220119`` (through
  ``alibabacloud-tea-openapi``) sends: an ``Authorization`` header over a canonical request.
  The canonical request and the string to sign are :mod:`gateway.auth.acs3`'s, the same
  code that signs the gateway's own SMS calls; here they are recomputed from what arrived.
- **The classic RPC signature** (HMAC-SHA1, ``SignatureVersion=1.0``), what
  ``aliyun-python-sdk-core`` and the Terraform provider send: ``Signature`` in the query,
  computed over every other query parameter *and* every form-body parameter, sorted by name:
  ``METHOD&%2F&percent(name=value&...)``, keyed with ``secret + "&"``, base64.

Percent-encoding is RFC 3986 in both (``acs3.percent_encode``: a space is ``%20``, ``*`` is
``%2A``, ``~`` stays).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from gateway.auth import acs3

CLASSIC_METHOD: Final = "HMAC-SHA1"
CLASSIC_VERSION: Final = "1.0"


# classic RPC ----------------------------------------------------------------------------------
def classic_string_to_sign(method: str, params: Mapping[str, str]) -> str:
    """``params``: every query and form parameter but ``Signature``."""
    query = acs3.canonical_query(params)
    return f"{method.upper()}&{acs3.percent_encode('/')}&{acs3.percent_encode(query)}"


def classic_signature(secret: str, string_to_sign: str) -> str:
    key = f"{secret}&".encode()
    digest = hmac.new(key, string_to_sign.encode("utf-8"), hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


# ACS3 -----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Acs3Authorization:
    key_id: str
    signed_headers: tuple[str, ...]
    signature: str


def parse_acs3_authorization(value: str) -> Acs3Authorization | None:
    """``ACS3-HMAC-SHA256 Credential=id,SignedHeaders=a;b,Signature=hex``; ``None`` if it is
    not that shape."""
    algorithm, _, rest = value.strip().partition(" ")
    if algorithm != acs3.ALGORITHM:
        return None
    fields: dict[str, str] = {}
    for item in rest.split(","):
        name, sep, field_value = item.strip().partition("=")
        if not sep:
            return None
        fields[name] = field_value
    key_id, names, signature = (fields.get(k) for k in ("Credential", "SignedHeaders", "Signature"))
    if not key_id or not names or not signature:
        return None
    return Acs3Authorization(key_id, tuple(names.split(";")), signature)


def acs3_signature(
    secret: str,
    *,
    method: str,
    params: Mapping[str, str],
    headers: Mapping[str, str],
    signed: Sequence[str],
    payload_sha256: str,
) -> str:
    """The signature the sender must have computed, over the query ``params`` (decoded), the
    lowercased ``headers`` named in ``signed`` and the body's hash."""
    canonical = acs3.canonical_request(
        method, "/", acs3.canonical_query(params), headers, signed, payload_sha256
    )
    return acs3.signature(secret, canonical)


def signatures_equal(expected: str, given: str) -> bool:
    return hmac.compare_digest(expected.encode("ascii"), given.encode("utf-8", "replace"))
