"""Who signed an RPC call, checked as the service checks it: the signature (ACS3 or classic),
the timestamp within :data:`WINDOW_SECONDS` of now, then, in the caller, the nonce not seen
before while that timestamp can be accepted (docs/control-plane.md#authentication).

No IO here: the secret of a key id comes from ``secret_for`` and the nonce is only returned, for
:class:`~gateway.store.control.ControlStore` to remember across replicas.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from gateway.api.control.requests import RpcCall
from gateway.auth import rpc_signatures as signing
from gateway.errors.control import ControlError, missing

#: How far a request's time may be from ours: 15 minutes, Alibaba Cloud's window. A nonce is
#: remembered until its call's timestamp falls out of it (:attr:`Signer.remember_until`).
WINDOW_SECONDS: Final = 900
#: The headers an ACS3 signature must cover, so none of them can be replayed with another value:
#: the operation and version it names among them (the call reads them from these headers).
REQUIRED_SIGNED: Final = (
    "host",
    "x-acs-action",
    "x-acs-version",
    "x-acs-date",
    "x-acs-signature-nonce",
)
#: Signed too when the call has a body: it decides whether the body's form parameters are read,
#: and the body's hash alone does not say how to read it (the SDKs sign every header they send).
BODY_TYPE_HEADER: Final = "content-type"

SecretFor = Callable[[str, str | None], str]


@dataclass(frozen=True, slots=True)
class Signer:
    """The access key that signed a call, the nonce it used, and until when (epoch seconds) the
    nonce must be remembered: as long as the call's timestamp could be accepted, the timestamp
    plus the window. Counting from when the call was seen instead would forget the nonce of a
    call stamped up to 15 minutes ahead while a replay of it still passes the time check."""

    key_id: str
    nonce: str
    remember_until: int


def parse_timestamp(text: str) -> float:
    """``2022-01-19T08:00:00Z`` (what both SDKs send) as epoch seconds."""
    try:
        moment = datetime.strptime(text.strip(), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise ControlError("InvalidTimeStamp.Format") from None
    return moment.timestamp()


def check_time(text: str, now: float) -> int:
    """The epoch second after which a call stamped ``text`` is refused as expired (and so its
    nonce need no longer be remembered)."""
    stamped = parse_timestamp(text)
    if abs(stamped - now) > WINDOW_SECONDS:
        raise ControlError("InvalidTimeStamp.Expired")
    return int(stamped) + WINDOW_SECONDS


def verify(call: RpcCall, secret_for: SecretFor, now: float) -> Signer:
    """The signer of ``call``, or the error it is refused with; ``secret_for(key_id, token)``
    raises ``InvalidAccessKeyId.NotFound`` for an unknown key."""
    authorization = call.headers.get("authorization", "")
    if authorization:
        return _verify_acs3(call, authorization, secret_for, now)
    return _verify_classic(call, secret_for, now)


def _verify_acs3(call: RpcCall, authorization: str, secret_for: SecretFor, now: float) -> Signer:
    parsed = signing.parse_acs3_authorization(authorization)
    required = (*REQUIRED_SIGNED, BODY_TYPE_HEADER) if call.body else REQUIRED_SIGNED
    if parsed is None or not all(name in parsed.signed_headers for name in required):
        raise ControlError("IncompleteSignature")
    headers = call.headers
    if any(name not in headers for name in parsed.signed_headers):
        raise ControlError("IncompleteSignature")
    until = check_time(headers["x-acs-date"], now)
    payload = hashlib.sha256(call.body).hexdigest()
    declared = headers.get("x-acs-content-sha256")
    secret = secret_for(parsed.key_id, headers.get("x-acs-security-token"))
    expected = signing.acs3_signature(
        secret,
        method=call.method,
        params=call.query,
        headers=headers,
        signed=parsed.signed_headers,
        payload_sha256=payload,
    )
    # A declared body hash that is not the body's is a body changed in flight.
    if (declared is not None and declared != payload) or not signing.signatures_equal(
        expected, parsed.signature
    ):
        raise ControlError("SignatureDoesNotMatch")
    return Signer(parsed.key_id, headers["x-acs-signature-nonce"], until)


def _verify_classic(call: RpcCall, secret_for: SecretFor, now: float) -> Signer:
    params = call.params
    for name in ("AccessKeyId", "Signature", "SignatureNonce", "Timestamp"):
        if not params.get(name):
            raise missing(name)
    if params.get("SignatureMethod", signing.CLASSIC_METHOD) != signing.CLASSIC_METHOD or (
        params.get("SignatureVersion", signing.CLASSIC_VERSION) != signing.CLASSIC_VERSION
    ):
        raise ControlError("IncompleteSignature")
    until = check_time(params["Timestamp"], now)
    secret = secret_for(params["AccessKeyId"], params.get("SecurityToken"))
    signed = {k: v for k, v in params.items() if k != "Signature"}
    expected = signing.classic_signature(
        secret, signing.classic_string_to_sign(call.method, signed)
    )
    if not signing.signatures_equal(expected, params["Signature"]):
        raise ControlError("SignatureDoesNotMatch")
    return Signer(params["AccessKeyId"], params["SignatureNonce"], until)
