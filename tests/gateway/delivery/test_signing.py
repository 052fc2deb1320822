"""Push signatures and the key ring: generation, loading, rotation, concurrent first start."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import multiprocessing
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from hypothesis import given
from hypothesis import strategies as st

from gateway.delivery.formats import ContentFormat, PushNotification, string_to_sign
from gateway.delivery.signing import (
    SigningKey,
    build_signed_push,
    cert_url,
    key_id_of,
    self_signed_certificate,
    sign_headers,
)
from gateway.errors.delivery import KeyRingError, UnrenderableMessageError
from gateway.pushing.keyring import KeyRing
from tests.gateway.pushing.conftest import WAIT_SECONDS
from tests.support.notifications import billing_notification

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
TEST_BITS = 1024  # generation speed; the 2048-bit default is covered once below


def fixed_clock() -> datetime:
    return NOW


def open_ring(directory: Path, **options: Any) -> KeyRing:
    return KeyRing(directory, bits=TEST_BITS, clock=fixed_clock, **options)


def verify(certificate_pem: bytes, signature_b64: str, text: str) -> bool:
    public_key = x509.load_pem_x509_certificate(certificate_pem).public_key()
    assert isinstance(public_key, rsa.RSAPublicKey)
    try:
        public_key.verify(
            base64.b64decode(signature_b64), text.encode(), padding.PKCS1v15(), hashes.SHA1()
        )
    except InvalidSignature:
        return False
    return True


def write_key(path: Path, key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def new_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=TEST_BITS)


def test_first_start_generates_a_key_and_a_self_signed_certificate(tmp_path: Path) -> None:
    ring = open_ring(tmp_path / "keys")
    key = ring.current

    der = key.private_key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert key.key_id == hashlib.sha256(der).hexdigest()[:16]
    key_file = tmp_path / "keys" / f"{key.key_id}.key.pem"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert (tmp_path / "keys" / "current").read_text() == key.key_id
    certificate = x509.load_pem_x509_certificate(key.certificate_pem)
    assert certificate.public_key() == key.private_key.public_key()
    assert certificate.issuer == certificate.subject
    assert certificate.not_valid_before_utc == NOW - timedelta(minutes=5)
    assert certificate.not_valid_after_utc == NOW + timedelta(days=3650)
    assert ring.certificate_pem(key.key_id) == key.certificate_pem


def test_default_key_size_is_2048_bits(tmp_path: Path) -> None:
    assert KeyRing(tmp_path).current.private_key.key_size == 2048


def test_validity_period_is_configurable(tmp_path: Path) -> None:
    ring = open_ring(tmp_path, validity_days=30)
    certificate = x509.load_pem_x509_certificate(ring.current.certificate_pem)

    assert certificate.not_valid_after_utc == NOW + timedelta(days=30)


def test_a_restart_loads_the_same_key(tmp_path: Path) -> None:
    first = open_ring(tmp_path).current
    second = open_ring(tmp_path).current

    assert second.key_id == first.key_id
    assert second.certificate_pem == first.certificate_pem
    assert len(list(tmp_path.glob("*.key.pem"))) == 1


def test_signature_is_bare_base64_rsa_sha1_and_placed_after_date(tmp_path: Path) -> None:
    key = open_ring(tmp_path).current
    headers = [
        ("Content-md5", "abc"),
        ("Content-Type", "text/plain;charset=utf-8"),
        ("Date", "Thu, 01 Jan 1970 00:00:00 GMT"),
        ("x-mns-version", "2015-06-06"),
    ]

    signed = sign_headers(key, headers, "/notifications")

    assert [name for name, _ in signed] == [
        "Content-md5",
        "Content-Type",
        "Date",
        "Authorization",
        "x-mns-version",
    ]
    authorization = dict(signed)["Authorization"]
    assert not authorization.startswith("MNS")
    assert len(base64.b64decode(authorization, validate=True)) == TEST_BITS // 8
    text = string_to_sign("POST", headers, "/notifications")
    assert verify(key.certificate_pem, authorization, text)
    assert not verify(key.certificate_pem, authorization, text.replace("/notifications", "/x"))


def test_rotation_keeps_earlier_certificates_served(tmp_path: Path) -> None:
    ring = open_ring(tmp_path)
    old = ring.current

    new = ring.rotate()

    assert new.key_id != old.key_id
    assert ring.current == new
    assert ring.certificate_pem(old.key_id) == old.certificate_pem
    assert ring.certificate_pem(new.key_id) == new.certificate_pem
    assert open_ring(tmp_path).current.key_id == new.key_id


def test_refresh_follows_a_rotation_made_by_another_process(tmp_path: Path) -> None:
    worker = open_ring(tmp_path)
    operator = open_ring(tmp_path)
    old_id = worker.current.key_id

    rotated = operator.rotate()

    assert worker.current.key_id == old_id
    assert worker.certificate_pem(rotated.key_id) == rotated.certificate_pem
    assert worker.refresh().key_id == rotated.key_id
    assert worker.refresh().key_id == rotated.key_id


@pytest.mark.parametrize(
    "key_id", ["0123456789abcdef", "../../etc/passwd", "0123456789ABCDEF", "0123456789abcdef0", ""]
)
def test_unknown_and_malformed_ids_have_no_certificate(tmp_path: Path, key_id: str) -> None:
    assert open_ring(tmp_path).certificate_pem(key_id) is None


def test_a_configured_private_key_gets_a_persistent_certificate(tmp_path: Path) -> None:
    private_key = new_rsa_key()
    key_file = write_key(tmp_path / "signing.key", private_key)

    ring = open_ring(tmp_path / "keys", private_key_file=key_file)
    again = open_ring(tmp_path / "keys", private_key_file=key_file)

    assert ring.current.key_id == key_id_of(private_key.public_key())
    assert again.current.certificate_pem == ring.current.certificate_pem
    assert not list((tmp_path / "keys").glob("*.key.pem"))  # the operator's key is not copied
    with pytest.raises(KeyRingError):
        ring.rotate()


def test_a_configured_certificate_is_served_as_given(tmp_path: Path) -> None:
    private_key = new_rsa_key()
    key_file = write_key(tmp_path / "signing.key", private_key)
    generated = open_ring(tmp_path / "elsewhere", private_key_file=key_file).current
    cert_file = tmp_path / "signing.crt"
    cert_file.write_bytes(generated.certificate_pem)

    ring = open_ring(tmp_path / "keys", private_key_file=key_file, certificate_file=cert_file)

    assert ring.certificate_pem(generated.key_id) == generated.certificate_pem


def test_replacing_the_configured_key_keeps_the_old_certificate_served(tmp_path: Path) -> None:
    old = open_ring(tmp_path / "keys", private_key_file=write_key(tmp_path / "a", new_rsa_key()))
    new = open_ring(tmp_path / "keys", private_key_file=write_key(tmp_path / "b", new_rsa_key()))

    assert new.current.key_id != old.current.key_id
    assert new.certificate_pem(old.current.key_id) == old.current.certificate_pem


def test_a_certificate_of_another_key_is_refused(tmp_path: Path) -> None:
    other = open_ring(tmp_path / "other").current
    cert_file = tmp_path / "other.crt"
    cert_file.write_bytes(other.certificate_pem)
    key_file = write_key(tmp_path / "signing.key", new_rsa_key())

    with pytest.raises(KeyRingError, match="does not belong"):
        open_ring(tmp_path / "keys", private_key_file=key_file, certificate_file=cert_file)


@pytest.mark.parametrize("content", [b"not a pem", None])
def test_unusable_key_files_are_key_ring_errors(tmp_path: Path, content: bytes | None) -> None:
    key_file = tmp_path / "signing.key"
    if content is None:
        write_key(key_file, ec.generate_private_key(ec.SECP256R1()))
    else:
        key_file.write_bytes(content)

    with pytest.raises(KeyRingError):
        open_ring(tmp_path / "keys", private_key_file=key_file)


def test_missing_key_file_and_bad_options_are_key_ring_errors(tmp_path: Path) -> None:
    with pytest.raises(KeyRingError):
        open_ring(tmp_path / "keys", private_key_file=tmp_path / "missing.key")
    with pytest.raises(KeyRingError):
        open_ring(tmp_path / "keys", certificate_file=tmp_path / "cert.pem")
    with pytest.raises(KeyRingError):
        KeyRing(tmp_path / "keys", bits=512)


def test_a_corrupt_current_pointer_is_a_key_ring_error(tmp_path: Path) -> None:
    (tmp_path / "current").write_text("../../../etc/passwd")

    with pytest.raises(KeyRingError):
        open_ring(tmp_path)


def _start_ring(directory: str, barrier: Any, results: Any) -> None:
    barrier.wait(WAIT_SECONDS)
    results.put(KeyRing(Path(directory), bits=TEST_BITS).current.key_id)


def test_processes_starting_together_agree_on_one_key(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(4)
    results = context.Queue()
    processes = [
        context.Process(target=_start_ring, args=(str(tmp_path), barrier, results))
        for _ in range(4)
    ]
    for process in processes:
        process.start()
    key_ids = [results.get(timeout=WAIT_SECONDS) for _ in processes]
    for process in processes:
        process.join(WAIT_SECONDS)

    assert [process.exitcode for process in processes] == [0, 0, 0, 0]
    assert len(set(key_ids)) == 1
    assert [path.name for path in tmp_path.glob("*.key.pem")] == [f"{key_ids[0]}.key.pem"]


def test_cert_url_joins_the_public_url_and_the_key_id() -> None:
    assert cert_url("https://mns.example.com/", "0123456789abcdef") == (
        "https://mns.example.com/certs/0123456789abcdef.pem"
    )
    assert cert_url("http://127.0.0.1:8080", "0123456789abcdef") == (
        "http://127.0.0.1:8080/certs/0123456789abcdef.pem"
    )


def test_build_signed_push_signs_the_path_it_returns(tmp_path: Path) -> None:
    key = open_ring(tmp_path).current
    notification = billing_notification("hello")

    push = build_signed_push(
        notification,
        ContentFormat.SIMPLIFIED,
        "http://127.0.0.1:9/hook?x=1",
        key=key,
        public_url="http://gateway.local/",
        date="Thu, 01 Jan 1970 00:00:00 GMT",
        request_id="REQ",
    )

    headers = dict(push.headers)
    assert push.path == "/hook?x=1"
    assert push.body == b"hello"
    assert base64.b64decode(headers["x-mns-signing-cert-url"]).decode() == (
        f"http://gateway.local/certs/{key.key_id}.pem"
    )
    unsigned = [(name, value) for name, value in push.headers if name != "Authorization"]
    assert verify(
        key.certificate_pem, headers["Authorization"], string_to_sign("POST", unsigned, "/hook?x=1")
    )


def _signing_key() -> SigningKey:
    private_key = rsa.generate_private_key(public_exponent=65537, key_size=TEST_BITS)
    key_id = key_id_of(private_key.public_key())
    return SigningKey(key_id, private_key, self_signed_certificate(private_key, key_id, NOW, 1))


#: One key for every example: a key per example would be most of the property's time.
KEY = _signing_key()
#: Header text a push may carry and XML can: no line break or NUL (refused, tests above) nor
#: other control characters but tab; with braces, backslashes and percent signs, which a
#: template's pattern must keep as they are.
HEADER_TEXT = st.text(
    st.characters(blacklist_categories=["Cs", "Cc"]), max_size=12
) | st.sampled_from(["{0}", "{}", "}{", "{6}", "%s", "\\", "a\tb"])


@given(
    names=st.tuples(HEADER_TEXT, HEADER_TEXT, HEADER_TEXT, HEADER_TEXT),
    own=st.tuples(HEADER_TEXT, HEADER_TEXT, st.integers(0, 2**53), st.none() | HEADER_TEXT),
    fmt=st.sampled_from(ContentFormat),
    path=st.sampled_from(["", "/hook?x={1}", "/a%7B0%7D/b?q=}", "/notifications"]),
)
def test_what_is_sent_is_signed_by_the_string_to_sign_rule(
    names: tuple[str, str, str, str],
    own: tuple[str, str, int, str | None],
    fmt: ContentFormat,
    path: str,
) -> None:
    """Whatever the subscription's names and the push's own values, the Authorization sent
    verifies over :func:`string_to_sign` of the headers sent: the subscription's template (made
    once, then filled in per push) says what the general rule says."""
    owner, topic, subscriber, subscription = names
    message_id, request_id, publish_time_ms, tag = own
    notification = PushNotification(
        owner, topic, subscriber, subscription, message_id, "m", "MD5", tag, publish_time_ms
    )
    push = build_signed_push(
        notification,
        fmt,
        f"http://127.0.0.1:9{path}",
        key=KEY,
        public_url="http://gateway.local",
        date="Thu, 01 Jan 1970 00:00:00 GMT",
        request_id=request_id,
        unsigned=[("traceparent", request_id)],
    )

    headers = dict(push.headers)
    assert (headers["x-mns-message-id"], headers["x-mns-subscription-name"]) == (
        message_id,
        subscription,
    )
    assert headers.get("x-mns-message-tag") == tag
    sent = [(name, value) for name, value in push.headers if name != "Authorization"]
    text = string_to_sign("POST", sent, push.path)
    assert verify(KEY.certificate_pem, headers["Authorization"], text)


@pytest.mark.parametrize("field", ["topic_name", "subscription_name", "subscriber"])
def test_a_subscription_header_with_a_line_break_is_refused(field: str) -> None:
    notification = dataclasses.replace(billing_notification("hello"), **{field: "a\nb"})
    with pytest.raises(UnrenderableMessageError, match="line break"):
        build_signed_push(
            notification,
            ContentFormat.SIMPLIFIED,
            "http://127.0.0.1:9/",
            key=KEY,
            public_url="http://gateway.local",
            date="Thu, 01 Jan 1970 00:00:00 GMT",
            request_id="REQ",
        )
