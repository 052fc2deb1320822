"""The pure verification core, checked against literal expectations rather than against itself."""

from __future__ import annotations

import base64
import hashlib
from email.utils import formatdate

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from receiver.exceptions import (
    CertificateURLError,
    ContentMD5MismatchError,
    DateError,
    InvalidCertificateError,
    MalformedNotificationError,
    MissingHeaderError,
    ReceiverError,
    SignatureMismatchError,
    VerificationError,
)
from receiver.testing import SigningIdentity
from receiver.verify import (
    SignedPush,
    canonicalized_mns_headers,
    check_content_md5,
    check_date,
    check_signature,
    content_md5_matches,
    lowercase_headers,
    public_key_from_pem,
    signing_cert_url,
    string_to_sign,
    verify_push,
)

CERT_URL_B64 = "aHR0cDovL21uc3Rlc3Qub3NzLWNuLWhhbmd6aG91LmFsaXl1bmNzLmNvbS94NTA5LnBlbQ=="
SEED_HEADERS = {
    # Spelled as the real service spells them, in no particular order.
    "x-mns-version": "2015-06-06",
    "Content-md5": "ZDgxNjY5ZjFMDQ5MGM0YWMwMWE5ODImZDVIYmQxYjI=",
    "User-Agent": "Aliyun Notification Service Agent",
    "x-mns-signing-cert-url": CERT_URL_B64,
    "Content-Type": "text/xml;charset=utf-8",
    "Date": "Wed, 25 May 2016 10:46:14 GMT",
    "X-MNS-Request-Id": "57458276F0E3D56D7C00054B",
    "Authorization": "c2lnbmF0dXJl",
}
SEED_STRING_TO_SIGN = (
    "POST\n"
    "ZDgxNjY5ZjFMDQ5MGM0YWMwMWE5ODImZDVIYmQxYjI=\n"
    "text/xml;charset=utf-8\n"
    "Wed, 25 May 2016 10:46:14 GMT\n"
    "x-mns-request-id:57458276F0E3D56D7C00054B\n"
    f"x-mns-signing-cert-url:{CERT_URL_B64}\n"
    "x-mns-version:2015-06-06\n"
    "/notifications?a=%2F&b=c%20d"
)


def seed_push(body: bytes = b"") -> SignedPush:
    headers = lowercase_headers(SEED_HEADERS.items())
    return SignedPush("POST", "/notifications?a=%2F&b=c%20d", headers, body)


class TestStringToSign:
    def test_matches_the_documented_layout_byte_for_byte(self) -> None:
        assert string_to_sign(seed_push()) == SEED_STRING_TO_SIGN

    def test_mns_headers_are_lowercased_sorted_and_unspaced(self) -> None:
        headers = {"X-Mns-B": "2", "x-mns-a": "1", "Date": "ignored"}
        assert canonicalized_mns_headers(headers) == "x-mns-a:1\nx-mns-b:2\n"

    def test_no_mns_headers_contribute_nothing(self) -> None:
        push = SignedPush("POST", "/n", {"date": "D"}, b"")
        assert string_to_sign(push) == "POST\n\n\nD\n/n"

    def test_header_values_are_used_verbatim(self) -> None:
        headers = lowercase_headers({"Content-MD5": "abcDEF==", "Content-Type": "Text/XML"}.items())
        assert string_to_sign(SignedPush("post", "/", headers, b"")).startswith(
            "POST\nabcDEF==\nText/XML\n"
        )


class TestSignature:
    def test_accepts_a_512_bit_sha1_certificate_expired_in_2016(
        self, legacy: SigningIdentity
    ) -> None:
        key = public_key_from_pem(legacy.certificate_pem)
        assert key.key_size == 512
        check_signature(key, SEED_STRING_TO_SIGN, legacy.sign(SEED_STRING_TO_SIGN))

    def test_rejects_a_signature_of_other_text(self, legacy: SigningIdentity) -> None:
        key = public_key_from_pem(legacy.certificate_pem)
        with pytest.raises(SignatureMismatchError):
            check_signature(key, SEED_STRING_TO_SIGN + "x", legacy.sign(SEED_STRING_TO_SIGN))

    def test_rejects_a_signature_by_another_key(
        self, identity: SigningIdentity, impostor: SigningIdentity
    ) -> None:
        key = public_key_from_pem(identity.certificate_pem)
        with pytest.raises(SignatureMismatchError):
            check_signature(key, "text", impostor.sign("text"))

    @pytest.mark.parametrize("authorization", ["not base64!", "MNS c2lnbmF0dXJl", "c2ln\nbmF0"])
    def test_rejects_an_authorization_that_is_not_plain_base64(
        self, identity: SigningIdentity, authorization: str
    ) -> None:
        key = public_key_from_pem(identity.certificate_pem)
        with pytest.raises(SignatureMismatchError):
            check_signature(key, "text", authorization)


class TestCertificateParsing:
    def test_rejects_bytes_that_are_not_a_certificate(self) -> None:
        with pytest.raises(InvalidCertificateError):
            public_key_from_pem(b"-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n")

    def test_rejects_a_certificate_without_an_rsa_key(self, identity: SigningIdentity) -> None:
        ec_key = ec.generate_private_key(ec.SECP256R1())
        certificate = x509.load_pem_x509_certificate(identity.certificate_pem)
        builder = (
            x509.CertificateBuilder()
            .subject_name(certificate.subject)
            .issuer_name(certificate.issuer)
            .public_key(ec_key.public_key())
            .serial_number(2)
            .not_valid_before(certificate.not_valid_before_utc)
            .not_valid_after(certificate.not_valid_after_utc)
        )
        pem = builder.sign(ec_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
        with pytest.raises(InvalidCertificateError):
            public_key_from_pem(pem)


class TestContentMD5:
    BODY = b"<Notification>hello</Notification>"
    DIGEST = hashlib.md5(BODY).digest()

    @pytest.mark.parametrize(
        "encode",
        [
            lambda d: d.hex().upper(),
            lambda d: d.hex(),
            lambda d: base64.b64encode(d.hex().encode()).decode(),
            lambda d: base64.b64encode(d.hex().upper().encode()).decode(),
            lambda d: base64.b64encode(d).decode(),
        ],
        ids=["hex-upper", "hex-lower", "base64-of-hex", "base64-of-upper-hex", "base64-raw"],
    )
    def test_accepts_every_encoding_senders_use(self, encode) -> None:  # type: ignore[no-untyped-def]
        assert content_md5_matches(encode(self.DIGEST), self.BODY)

    @pytest.mark.parametrize(
        "value",
        [
            hashlib.md5(b"other").hexdigest(),
            base64.b64encode(hashlib.md5(b"other").digest()).decode(),
            "not-an-md5-at-all",
            "",
        ],
    )
    def test_rejects_anything_else(self, value: str) -> None:
        assert not content_md5_matches(value, self.BODY)
        with pytest.raises(ContentMD5MismatchError):
            check_content_md5(value, self.BODY)


class TestDate:
    NOW = 1_700_000_000.0

    @pytest.mark.parametrize("offset", [0, 899, -899, 900, -900])
    def test_accepts_dates_within_the_skew(self, offset: int) -> None:
        check_date(formatdate(self.NOW + offset, usegmt=True), self.NOW, 900)

    @pytest.mark.parametrize("offset", [901, -901, 86_400 * 365])
    def test_rejects_stale_and_future_dates(self, offset: int) -> None:
        with pytest.raises(DateError):
            check_date(formatdate(self.NOW + offset, usegmt=True), self.NOW, 900)

    def test_treats_minus_zero_zone_as_utc(self) -> None:
        check_date(formatdate(self.NOW).replace("+0000", "-0000"), self.NOW, 1)

    @pytest.mark.parametrize("value", ["yesterday", "2023-11-14T22:13:20Z", "Tue, 99 Foo"])
    def test_rejects_unparseable_dates(self, value: str) -> None:
        with pytest.raises(DateError):
            check_date(value, self.NOW, 900)


class TestSigningCertURL:
    def test_decodes_base64(self) -> None:
        headers = {"x-mns-signing-cert-url": CERT_URL_B64}
        assert signing_cert_url(headers) == "http://mnstest.oss-cn-hangzhou.aliyuncs.com/x509.pem"

    @pytest.mark.parametrize("value", ["%%%", base64.b64encode("https://é/".encode()).decode()])
    def test_rejects_values_that_are_not_base64_ascii(self, value: str) -> None:
        with pytest.raises(CertificateURLError):
            signing_cert_url({"x-mns-signing-cert-url": value})


class TestVerifyPush:
    """Order matters: nothing is looked up before the cheap header checks pass."""

    def lookup_that_must_not_run(self, url: str):  # type: ignore[no-untyped-def]
        raise AssertionError(f"looked up {url}")

    @pytest.mark.parametrize(
        "header", ["Authorization", "Date", "Content-md5", "x-mns-signing-cert-url"]
    )
    def test_missing_headers_fail_before_any_lookup(self, header: str) -> None:
        headers = lowercase_headers((k, v) for k, v in SEED_HEADERS.items() if k != header)
        with pytest.raises(MissingHeaderError) as raised:
            verify_push(
                SignedPush("POST", "/", headers, b""),
                public_key_for=self.lookup_that_must_not_run,
                now=0,
                max_clock_skew=None,
                require_content_md5=True,
            )
        assert raised.value.header == header.lower()

    def test_content_md5_may_be_absent_when_not_required(self, legacy: SigningIdentity) -> None:
        headers = {k: v for k, v in SEED_HEADERS.items() if k != "Content-md5"}
        push = SignedPush("POST", "/n", lowercase_headers(headers.items()), b"anything")
        signed = lowercase_headers(
            {**headers, "Authorization": legacy.sign(string_to_sign(push))}.items()
        )
        verify_push(
            SignedPush("POST", "/n", signed, b"anything"),
            public_key_for=lambda url: public_key_from_pem(legacy.certificate_pem),
            now=0,
            max_clock_skew=None,
            require_content_md5=False,
        )


def test_the_two_failure_families_share_one_root_but_not_each_other() -> None:
    assert issubclass(VerificationError, ReceiverError)
    assert issubclass(MalformedNotificationError, ReceiverError)
    assert not issubclass(MalformedNotificationError, VerificationError)
    for error in (MissingHeaderError, DateError, ContentMD5MismatchError, SignatureMismatchError):
        assert issubclass(error, VerificationError)
