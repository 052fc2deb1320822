"""``MNSReceiver(standard_webhooks_secret=...)``: pushes must also carry a Standard Webhooks
signature, checked with the stdlib (``receiver/standard_webhooks.py``) against what the official
library (PyPI ``standardwebhooks``) signs: one secret or several (a rotation), five minutes of
tolerance, and 403 for anything else."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from flask import Flask
from standardwebhooks.webhooks import Webhook

from receiver import WebhookSignatureError, WebhookTimestampError
from receiver.exceptions import MissingHeaderError
from receiver.standard_webhooks import secret_keys, verify_standard_webhook
from receiver.testing import SignedRequest, SigningIdentity, post_notification, sign_notification
from tests.support.clock import Clock

from .conftest import AppFactory, Recorder

OLD = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
NEW = "whsec_" + "bmV3LXNlY3JldC1vZi10aGUtcm90YXRpb24hIQ=="
STRANGER = "whsec_" + "c29tZWJvZHkgZWxzZSdzIHNlY3JldCEhISEhIQ=="


def official_signature(secret: str, message_id: str, timestamp: float, body: bytes) -> str:
    moment = datetime.fromtimestamp(int(timestamp), UTC)
    return Webhook(secret).sign(message_id, moment, body.decode())


def signed_push(
    identity: SigningIdentity, clock: Clock, *secrets: str, at: float | None = None
) -> SignedRequest:
    """An MNS-signed push with Standard Webhooks headers signed by each of ``secrets``."""
    signed = sign_notification(identity, date=clock.now, message="order #1", format="JSON")
    timestamp = int(clock.now if at is None else at)
    signatures = " ".join(official_signature(s, "msg_1", timestamp, signed.body) for s in secrets)
    headers = {"webhook-id": "msg_1", "webhook-timestamp": str(timestamp)}
    return signed.replace_headers({**headers, "webhook-signature": signatures})


def app_with(make_app: AppFactory, recorder: Recorder, secret: str | list[str]) -> Flask:
    app, receiver = make_app(standard_webhooks_secret=secret)
    receiver.handler()(recorder)
    return app


def test_the_specifications_vector_verifies() -> None:
    headers = {
        "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    }
    body = b'{"test": 2432232314}'
    keys = secret_keys(OLD)
    assert verify_standard_webhook(keys, headers, body, now=1614265330) == headers["webhook-id"]
    with pytest.raises(WebhookSignatureError):
        verify_standard_webhook(keys, headers, body + b" ", now=1614265330)


def test_a_signed_push_reaches_the_handler(
    make_app: AppFactory, recorder: Recorder, identity: SigningIdentity, clock: Clock
) -> None:
    app = app_with(make_app, recorder, OLD)
    response = post_notification(app.test_client(), signed_push(identity, clock, OLD))
    assert response.status_code == 204
    assert [n.message for n in recorder.received] == ["order #1"]


@pytest.mark.parametrize(
    ("secrets", "held"),
    [((NEW, OLD), OLD), ((NEW, OLD), NEW), ((NEW,), [OLD, NEW]), ((OLD,), [OLD, NEW])],
)
def test_a_rotation_verifies_with_either_secret(
    make_app: AppFactory,
    recorder: Recorder,
    identity: SigningIdentity,
    clock: Clock,
    secrets: tuple[str, ...],
    held: str | list[str],
) -> None:
    app = app_with(make_app, recorder, held)
    response = post_notification(app.test_client(), signed_push(identity, clock, *secrets))
    assert response.status_code == 204


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"webhook-signature": None}, "missing-header"),
        ({"webhook-id": None}, "missing-header"),
        ({"webhook-id": "msg_2"}, "webhook-signature"),
        ({"webhook-signature": "v2,abc v1,!!!"}, "webhook-signature"),
        ({"webhook-timestamp": "soon"}, "webhook-timestamp"),
    ],
)
def test_a_push_without_a_good_signature_gets_403(
    make_app: AppFactory,
    recorder: Recorder,
    identity: SigningIdentity,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
    change: dict[str, str | None],
    reason: str,
) -> None:
    app = app_with(make_app, recorder, OLD)
    pushed = signed_push(identity, clock, OLD).replace_headers(change)
    assert post_notification(app.test_client(), pushed).status_code == 403
    assert recorder.received == [] and reason in caplog.text


def test_a_strangers_secret_gets_403(
    make_app: AppFactory, recorder: Recorder, identity: SigningIdentity, clock: Clock
) -> None:
    app = app_with(make_app, recorder, OLD)
    response = post_notification(app.test_client(), signed_push(identity, clock, STRANGER))
    assert response.status_code == 403 and recorder.received == []


def test_five_minutes_of_tolerance_either_way(
    make_app: AppFactory, recorder: Recorder, identity: SigningIdentity, clock: Clock
) -> None:
    app = app_with(make_app, recorder, OLD)
    client = app.test_client()
    for offset, status in ((-300, 204), (300, 204), (-301, 403), (301, 403)):
        pushed = signed_push(identity, clock, OLD, at=clock.now + offset)
        assert post_notification(client, pushed).status_code == status, offset


def test_timestamp_refusals_say_why() -> None:
    keys = secret_keys(OLD)
    headers = {"webhook-id": "m", "webhook-signature": "v1,x", "webhook-timestamp": "1_000"}
    with pytest.raises(WebhookTimestampError, match="not a number"):
        verify_standard_webhook(keys, headers, b"", now=1000)
    with pytest.raises(MissingHeaderError):
        verify_standard_webhook(keys, {}, b"", now=1000)


@pytest.mark.parametrize("secret", ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_!!", []])
def test_a_bad_secret_is_refused_when_the_receiver_is_made(
    make_app: AppFactory, secret: str | list[str]
) -> None:
    with pytest.raises(ValueError, match=r"whsec_|at least one|empty"):
        make_app(standard_webhooks_secret=secret)


def test_without_the_option_the_headers_are_not_needed(
    make_app: AppFactory, recorder: Recorder, identity: SigningIdentity, clock: Clock
) -> None:
    app, receiver = make_app()
    receiver.handler()(recorder)
    plain = sign_notification(identity, date=clock.now)
    assert post_notification(app.test_client(), plain).status_code == 204


def test_receiver_testing_signs_them_for_an_applications_tests(
    make_app: AppFactory, recorder: Recorder, identity: SigningIdentity, clock: Clock
) -> None:
    app = app_with(make_app, recorder, [NEW])
    for secrets in (NEW, [OLD, NEW]):
        push = sign_notification(identity, date=clock.now, standard_webhooks_secret=secrets)
        assert post_notification(app.test_client(), push).status_code == 204
        now = sign_notification(identity, standard_webhooks_secret=secrets)  # the library's clock
        headers = {k.lower(): v for k, v in now.headers.items()}
        Webhook(NEW).verify(now.body, headers, json_parse=False)  # the official library agrees
    stranger = sign_notification(identity, date=clock.now, standard_webhooks_secret=OLD)
    assert post_notification(app.test_client(), stranger).status_code == 403
