"""Pushes signed by receiver.testing, through Flask: every format, every failure, every answer."""

from __future__ import annotations

import dataclasses
import logging

import pytest
from flask import Flask

from receiver import Notification
from receiver.testing import (
    SignedRequest,
    SigningIdentity,
    content_md5,
    post_notification,
    sign_notification,
    sign_request,
)
from tests.support.clock import Clock

from .conftest import AppFactory, CountingFetcher, Recorder

FORMATS = ["XML", "JSON", "SIMPLIFIED"]
Logs = pytest.LogCaptureFixture


@pytest.fixture
def app(make_app: AppFactory, recorder: Recorder) -> Flask:
    app, receiver = make_app()
    receiver.handler()(recorder)
    return app


def signed_now(identity: SigningIdentity, clock: Clock, **options: object) -> SignedRequest:
    return sign_notification(identity, date=clock.now, **options)  # type: ignore[arg-type]


def with_body(identity: SigningIdentity, signed: SignedRequest, body: bytes) -> SignedRequest:
    """The same push with another body, Content-MD5 recomputed, signed again."""
    headers = {**signed.headers, "Content-md5": content_md5(body)}
    return sign_request(identity, signed.path, headers, body)


class TestGenuinePushes:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_each_format_reaches_the_handler(
        self, app: Flask, recorder: Recorder, identity: SigningIdentity, clock: Clock, fmt: str
    ) -> None:
        signed = signed_now(
            identity, clock, message="order #1 <&>\r\n", format=fmt, message_id="m-1",
            topic_name="orders", subscription_name="billing", message_tag="vip",
            publish_time=1_700_000_000_123,
        )  # fmt: skip
        response = post_notification(app.test_client(), signed)
        assert response.status_code == 204
        assert response.data == b""
        [notification] = recorder.received
        assert notification.format == fmt
        assert notification.message == "order #1 <&>\r\n"
        assert notification.message_id == "m-1"
        assert notification.topic_name == "orders"
        assert notification.subscription_name == "billing"
        assert notification.message_tag == "vip"
        assert notification.publish_time == 1_700_000_000_123
        assert notification.body == signed.body
        assert notification.headers["x-mns-message-id"] == "m-1"

    @pytest.mark.parametrize("style", ["hex", "base64-hex", "base64"])
    def test_every_content_md5_encoding_is_accepted(
        self, app: Flask, identity: SigningIdentity, clock: Clock, style: str
    ) -> None:
        signed = signed_now(identity, clock, content_md5_style=style)
        assert post_notification(app.test_client(), signed).status_code == 204

    def test_the_real_services_kind_of_certificate_is_accepted(
        self, app: Flask, legacy: SigningIdentity, clock: Clock, fetcher: CountingFetcher
    ) -> None:
        signed = signed_now(legacy, clock, format="SIMPLIFIED")
        assert post_notification(app.test_client(), signed).status_code == 204
        assert fetcher.calls == [legacy.cert_url]

    def test_many_pushes_fetch_the_certificate_once(
        self, app: Flask, identity: SigningIdentity, clock: Clock, fetcher: CountingFetcher
    ) -> None:
        client = app.test_client()
        for _ in range(20):
            assert post_notification(client, signed_now(identity, clock)).status_code == 204
        assert fetcher.calls == [identity.cert_url]

    def test_a_failed_fetch_is_retried_on_the_next_push(
        self, app: Flask, identity: SigningIdentity, clock: Clock, fetcher: CountingFetcher
    ) -> None:
        client = app.test_client()
        fetcher.failing.add(identity.cert_url)
        assert post_notification(client, signed_now(identity, clock)).status_code == 403
        fetcher.failing.clear()
        assert post_notification(client, signed_now(identity, clock)).status_code == 204
        assert fetcher.calls == [identity.cert_url, identity.cert_url]


class TestForgedOrUnverifiable:
    """Each answers 403 and never reaches the handler."""

    @pytest.fixture(autouse=True)
    def handler_never_runs(self, recorder: Recorder):  # type: ignore[no-untyped-def]
        yield
        assert recorder.received == []

    def post(self, app: Flask, signed: SignedRequest) -> int:
        return post_notification(app.test_client(), signed).status_code

    @pytest.mark.parametrize(
        ("header", "value"),
        [
            ("x-mns-topic-name", "another-topic"),
            ("x-mns-subscription-name", "another-subscription"),
            ("x-mns-message-id", "another-id"),
            ("Content-Type", "application/json;charset=utf-8"),
            ("x-mns-injected", "anything"),
        ],
    )
    def test_tampered_header(
        self, app: Flask, identity: SigningIdentity, clock: Clock, header: str, value: str
    ) -> None:
        signed = signed_now(identity, clock).replace_headers({header: value})
        assert self.post(app, signed) == 403

    def test_tampered_date_even_if_still_fresh(
        self, app: Flask, identity: SigningIdentity, clock: Clock
    ) -> None:
        signed = signed_now(identity, clock)
        later = signed_now(identity, Clock(clock.now + 1)).headers["Date"]
        assert self.post(app, signed.replace_headers({"Date": later})) == 403

    def test_tampered_query_string(
        self, app: Flask, identity: SigningIdentity, clock: Clock
    ) -> None:
        signed = signed_now(identity, clock)
        assert self.post(app, dataclasses.replace(signed, path="/notifications?x=1")) == 403

    def test_tampered_body_under_the_signed_content_md5(
        self,
        app: Flask,
        identity: SigningIdentity,
        clock: Clock,
        caplog: Logs,
    ) -> None:
        signed = signed_now(identity, clock, message="pay 10")
        forged = dataclasses.replace(signed, body=signed.body.replace(b"pay 10", b"pay 99"))
        assert self.post(app, forged) == 403
        assert "content-md5" in caplog.text

    def test_tampered_body_with_a_matching_new_content_md5(
        self,
        app: Flask,
        identity: SigningIdentity,
        clock: Clock,
        caplog: Logs,
    ) -> None:
        signed = signed_now(identity, clock, message="pay 10")
        body = signed.body.replace(b"pay 10", b"pay 99")
        forged = dataclasses.replace(signed, body=body).replace_headers(
            {"Content-md5": content_md5(body)}
        )
        assert self.post(app, forged) == 403
        assert "signature" in caplog.text

    def test_signed_by_the_wrong_key(
        self, app: Flask, impostor: SigningIdentity, clock: Clock, fetcher: CountingFetcher
    ) -> None:
        assert self.post(app, signed_now(impostor, clock)) == 403
        assert fetcher.calls == [impostor.cert_url]  # fetched the genuine one, which disagrees

    @pytest.mark.parametrize(
        "cert_url",
        [
            "https://attacker.oss-cn-hangzhou.aliyuncs.com/x509_public_certificate.pem",
            "https://mns-cert.oss-cn-hangzhou.aliyuncs.com.evil.example/cert.pem",
            "https://127.0.0.1/cert.pem",
        ],
    )
    def test_certificate_url_off_the_allowlist_is_never_fetched(
        self, app: Flask, impostor: SigningIdentity, clock: Clock,
        fetcher: CountingFetcher, cert_url: str,
    ) -> None:  # fmt: skip
        attacker = dataclasses.replace(impostor, cert_url=cert_url)
        fetcher.pems[cert_url] = attacker.certificate_pem  # it *would* verify, if fetched
        assert self.post(app, signed_now(attacker, clock)) == 403
        assert fetcher.calls == []

    def test_http_certificate_url_when_the_allowlist_says_https(
        self, app: Flask, identity: SigningIdentity, clock: Clock, fetcher: CountingFetcher
    ) -> None:
        http_url = identity.cert_url.replace("https://", "http://")
        downgraded = dataclasses.replace(identity, cert_url=http_url)
        fetcher.pems[http_url] = identity.certificate_pem
        assert self.post(app, signed_now(downgraded, clock)) == 403
        assert fetcher.calls == []

    @pytest.mark.parametrize("offset", [-901, 901], ids=["stale", "future"])
    def test_date_too_far_from_now(
        self, app: Flask, identity: SigningIdentity, clock: Clock, offset: int
    ) -> None:
        signed = sign_notification(identity, date=clock.now + offset)
        assert self.post(app, signed) == 403

    @pytest.mark.parametrize(
        "header", ["Authorization", "Date", "Content-md5", "x-mns-signing-cert-url"]
    )
    def test_missing_header(
        self, app: Flask, identity: SigningIdentity, clock: Clock,
        fetcher: CountingFetcher, header: str,
    ) -> None:  # fmt: skip
        assert self.post(app, signed_now(identity, clock).replace_headers({header: None})) == 403
        assert fetcher.calls == []

    @pytest.mark.parametrize(
        ("header", "value"),
        [
            ("Authorization", "MNS not-base64"),
            ("Content-md5", "garbage"),
            ("x-mns-signing-cert-url", "not base64 at all"),
            ("Date", "not a date"),
            # Not even ASCII (base64 decoding raised ValueError, not binascii.Error: a 500).
            ("Authorization", "\u00e9t\u00e9"),
            ("x-mns-signing-cert-url", "\u00e9t\u00e9"),
            ("Content-md5", "\u00e9t\u00e9"),
        ],
    )
    def test_garbled_header(
        self, app: Flask, identity: SigningIdentity, clock: Clock, header: str, value: str
    ) -> None:
        assert self.post(app, signed_now(identity, clock).replace_headers({header: value})) == 403

    def test_body_over_the_limit_is_refused_unread(
        self, make_app: AppFactory, identity: SigningIdentity, clock: Clock,
        fetcher: CountingFetcher, recorder: Recorder,
    ) -> None:  # fmt: skip
        app, receiver = make_app(max_body_bytes=1000)
        receiver.handler()(recorder)
        at_limit = signed_now(identity, clock, format="SIMPLIFIED", message="x" * 1000)
        assert self.post(app, at_limit) == 204
        recorder.received.clear()
        over = signed_now(identity, clock, format="SIMPLIFIED", message="x" * 1001)
        assert self.post(app, over) == 403
        assert fetcher.calls == [identity.cert_url]  # only for the first, accepted push

    def test_certificate_that_cannot_be_fetched(
        self, app: Flask, identity: SigningIdentity, clock: Clock, fetcher: CountingFetcher
    ) -> None:
        fetcher.failing.add(identity.cert_url)
        assert self.post(app, signed_now(identity, clock)) == 403

    def test_rejections_are_logged_without_body_or_signature(
        self,
        app: Flask,
        identity: SigningIdentity,
        clock: Clock,
        caplog: Logs,
    ) -> None:
        signed = signed_now(identity, clock, message="secret-payload", request_id="REQ-42")
        forged = dataclasses.replace(signed, body=signed.body.replace(b"secret", b"public"))
        with caplog.at_level(logging.DEBUG, logger="receiver"):
            assert self.post(app, forged) == 403
        assert "REQ-42" in caplog.text
        assert "secret-payload" not in caplog.text
        assert "public-payload" not in caplog.text
        assert signed.headers["Authorization"][:20] not in caplog.text


class TestOptions:
    def test_max_clock_skew_none_accepts_old_pushes(
        self, make_app: AppFactory, identity: SigningIdentity, clock: Clock
    ) -> None:
        app, receiver = make_app(max_clock_skew=None)
        receiver.handler()(Recorder())
        signed = sign_notification(identity, date=clock.now - 86_400 * 365)
        assert post_notification(app.test_client(), signed).status_code == 204

    def test_a_narrower_skew_is_enforced(
        self, make_app: AppFactory, identity: SigningIdentity, clock: Clock
    ) -> None:
        app, receiver = make_app(max_clock_skew=60)
        receiver.handler()(Recorder())
        assert post_notification(app.test_client(), signed_now(identity, clock)).status_code == 204
        clock.advance(61)
        signed = sign_notification(identity, date=clock.now - 61)
        assert post_notification(app.test_client(), signed).status_code == 403

    def test_check_content_md5_false_lets_a_swapped_body_through(
        self, make_app: AppFactory, identity: SigningIdentity, clock: Clock
    ) -> None:
        """Why the option is dangerous: the signature alone does not cover the body."""
        app, receiver = make_app(check_content_md5=False)
        recorder = Recorder()
        receiver.handler()(recorder)
        signed = signed_now(identity, clock, message="pay 10")
        swapped = dataclasses.replace(signed, body=signed.body.replace(b"pay 10", b"pay 99"))
        assert post_notification(app.test_client(), swapped).status_code == 204
        assert recorder.received[0].message == "pay 99"

    def test_certificates_expire_from_the_cache_by_the_injected_clock(
        self, make_app: AppFactory, identity: SigningIdentity, clock: Clock,
        fetcher: CountingFetcher,
    ) -> None:  # fmt: skip
        app, receiver = make_app(cert_cache_ttl=600)
        receiver.handler()(Recorder())
        client = app.test_client()
        assert post_notification(client, signed_now(identity, clock)).status_code == 204
        clock.advance(601)
        assert post_notification(client, signed_now(identity, clock)).status_code == 204
        assert fetcher.calls == [identity.cert_url, identity.cert_url]

    def test_prefetch_warms_the_cache_and_checks_the_allowlist(
        self, make_app: AppFactory, identity: SigningIdentity, clock: Clock,
        fetcher: CountingFetcher,
    ) -> None:  # fmt: skip
        app, receiver = make_app()
        receiver.handler()(Recorder())
        receiver.prefetch_certificate(identity.cert_url)
        assert post_notification(app.test_client(), signed_now(identity, clock)).status_code == 204
        assert fetcher.calls == [identity.cert_url]
        with pytest.raises(Exception, match="allowlist"):
            receiver.prefetch_certificate("https://evil.example/cert.pem")

    def test_only_post_is_routed(self, app: Flask) -> None:
        assert app.test_client().get("/notifications").status_code == 405

    def test_dedupe_must_be_a_store(self, make_app: AppFactory) -> None:
        with pytest.raises(TypeError):
            make_app(dedupe="yes")


class TestAnswers:
    def test_unparseable_but_genuine_is_400(
        self, app: Flask, recorder: Recorder, identity: SigningIdentity, clock: Clock
    ) -> None:
        signed = with_body(identity, signed_now(identity, clock), b"<Notification><oops>")
        assert post_notification(app.test_client(), signed).status_code == 400
        assert recorder.received == []

    @pytest.mark.parametrize(
        "fmt,body",
        [
            ("XML", b'<?xml version="1.0" encoding="bogus"?><Notification/>'),
            ("JSON", b"[" * 100_000 + b"]" * 100_000),
        ],
        ids=["unknown-xml-encoding", "json-nested-100000-levels"],
    )
    def test_genuine_but_unparseable_in_every_way_is_400(
        self, app: Flask, recorder: Recorder, identity: SigningIdentity, clock: Clock,
        fmt: str, body: bytes,
    ) -> None:  # fmt: skip
        signed = with_body(identity, signed_now(identity, clock, format=fmt), body)
        assert post_notification(app.test_client(), signed).status_code == 400
        assert recorder.received == []

    def test_a_raising_handler_is_500_and_logged_without_the_body(
        self, make_app: AppFactory, identity: SigningIdentity, clock: Clock,
        caplog: Logs,
    ) -> None:  # fmt: skip
        app, receiver = make_app()

        @receiver.handler()
        def explode(notification: Notification) -> None:
            raise RuntimeError("database unavailable")

        signed = signed_now(identity, clock, message="secret-payload", message_id="m-7")
        assert post_notification(app.test_client(), signed).status_code == 500
        assert "database unavailable" in caplog.text
        assert "m-7" in caplog.text
        assert "secret-payload" not in caplog.text

    def test_no_matching_handler_is_500_so_the_sender_retries(
        self, make_app: AppFactory, identity: SigningIdentity, clock: Clock
    ) -> None:
        app, receiver = make_app()
        receiver.handler(topic="orders")(Recorder())
        signed = signed_now(identity, clock, topic_name="payments")
        assert post_notification(app.test_client(), signed).status_code == 500
