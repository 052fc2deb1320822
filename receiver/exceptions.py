"""The receiver's exceptions, rooted in :class:`ReceiverError`.

The hierarchy follows the answer the sender gets, because that is the one decision every caller
has to make:

* :class:`VerificationError` (answered ``403``): the push is forged, or we could not prove it
  genuine. Nothing in the request may be trusted, so no handler runs. Its subclasses say which
  check failed, so logs and metrics can tell an attack from a misconfiguration.
* :class:`MalformedNotificationError` (answered ``400``): the signature and the Content-MD5 checked
  out, so the sender is genuine, but the body is not a notification we understand. Retrying will
  not help; the message is the sender's problem.

Messages never contain the request body or the signature; they may contain header values that
are not secret (the certificate URL, the Date), quoted with ``repr`` so a hostile value cannot
forge log lines.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "BodyTooLargeError",
    "CertificateFetchError",
    "CertificateURLError",
    "ContentMD5MismatchError",
    "DateError",
    "InvalidCertificateError",
    "MalformedNotificationError",
    "MissingHeaderError",
    "ReceiverError",
    "SignatureMismatchError",
    "VerificationError",
    "WebhookSignatureError",
    "WebhookTimestampError",
]


class ReceiverError(Exception):
    """Base of every exception the receiver raises on purpose."""


class VerificationError(ReceiverError):
    """The push is forged or unverifiable; it is answered 403 and no handler runs.

    ``reason`` is a short, stable label (``"signature"``, ``"cert-url"``...) meant for log
    fields and metric labels, where the free-form message would explode cardinality.
    """

    reason: ClassVar[str] = "unverified"


class BodyTooLargeError(VerificationError):
    """The body is larger than ``max_body_bytes``; it was not read past the limit."""

    reason = "body-too-large"


class MissingHeaderError(VerificationError):
    """A header that verification needs is absent or empty."""

    reason = "missing-header"

    def __init__(self, header: str) -> None:
        super().__init__(f"required header {header!r} is missing or empty")
        self.header = header


class CertificateURLError(VerificationError):
    """The signing certificate URL is undecodable or not on the allowlist.

    Raised before any network I/O: an attacker must not be able to make us fetch a URL of
    their choosing, nor learn anything from how long the rejection took.
    """

    reason = "cert-url"


class CertificateFetchError(VerificationError):
    """The certificate could not be downloaded (network error, non-200 answer, too large)."""

    reason = "cert-fetch"


class InvalidCertificateError(VerificationError):
    """The downloaded bytes are not a PEM X.509 certificate with an RSA public key."""

    reason = "cert-invalid"


class SignatureMismatchError(VerificationError):
    """The Authorization header is not a valid signature of the string to sign."""

    reason = "signature"


class ContentMD5MismatchError(VerificationError):
    """The body does not match the signed Content-MD5 header, so it was swapped in transit."""

    reason = "content-md5"


class DateError(VerificationError):
    """The Date header is unparseable, or further from our clock than ``max_clock_skew``."""

    reason = "date"


class WebhookSignatureError(VerificationError):
    """No ``v1`` signature in ``webhook-signature`` is the Standard Webhooks HMAC of the push
    under any of the configured secrets (docs/receiver.md#standard-webhooks)."""

    reason = "webhook-signature"


class WebhookTimestampError(VerificationError):
    """``webhook-timestamp`` is not a number of seconds, or further from our clock than the
    tolerance (5 minutes, as the Standard Webhooks libraries allow)."""

    reason = "webhook-timestamp"


class MalformedNotificationError(ReceiverError):
    """A verified push whose body cannot be parsed as a notification; answered 400."""
