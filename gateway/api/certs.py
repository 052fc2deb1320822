"""``GET /certs/<key_id>.pem``: the certificates receivers fetch to verify push signatures.

Unauthenticated on purpose: a receiver knows nothing but the URL in ``x-mns-signing-cert-url``.
Trust comes from the receiver's allowlist of certificate URL prefixes, not from this endpoint.
Certificates of earlier keys stay available so pushes signed just before a rotation verify.
"""

from __future__ import annotations

from typing import Protocol

from flask import Blueprint, Response, abort

from gateway.delivery.signing import KEY_ID_PATTERN

#: A certificate never changes for a given key id, so receivers and proxies may cache it.
_CACHE_CONTROL = "public, max-age=86400, immutable"


class CertificateSource(Protocol):
    def certificate_pem(self, key_id: str) -> bytes | None: ...


def create_certs_blueprint(keyring: CertificateSource) -> Blueprint:
    """A blueprint serving every certificate ``keyring`` knows, mounted at the site root."""
    blueprint = Blueprint("certs", __name__)

    @blueprint.get("/certs/<key_id>.pem")
    def certificate(key_id: str) -> Response:
        # The strict pattern keeps path tricks and odd ids away from the filesystem lookup.
        pem = keyring.certificate_pem(key_id) if KEY_ID_PATTERN.fullmatch(key_id) else None
        if pem is None:
            abort(404)
        response = Response(pem, mimetype="application/x-pem-file")
        response.headers["Cache-Control"] = _CACHE_CONTROL
        return response

    return blueprint
