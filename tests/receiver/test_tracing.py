"""The receiver's ``process`` span per push (issue 37), asserted with
:func:`receiver.testing.span_recorder`."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from receiver import MNSReceiver, Notification
from receiver.testing import SigningIdentity, post_notification, sign_notification, span_recorder
from tests.receiver.conftest import CountingFetcher

ATTEMPT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
CREATION = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"
TRACE = "0af7651916cd43dd8448eb211c80319c"


def traced_app(fetcher: CountingFetcher, **options: Any) -> tuple[Flask, Any, list[str]]:
    recorder = span_recorder()
    receiver = MNSReceiver(
        cert_fetcher=fetcher, tracing=True, tracer_provider=recorder.provider, **options
    )
    handled: list[str] = []

    @receiver.handler()
    def handle(notification: Notification) -> None:
        if notification.message == "fail":
            raise RuntimeError("the handler fails")
        handled.append(notification.message_id)

    app = Flask(__name__)
    receiver.init_app(app)
    return app, recorder, handled


def push(identity: SigningIdentity, message: str = "hi", **headers: str | None) -> Any:
    """A signed push with the gateway's trace headers, added after signing as it adds them."""
    signed = sign_notification(identity, message, topic_name="orders", message_tag="paid")
    return signed.replace_headers(
        {"traceparent": ATTEMPT, "mns-creation-traceparent": CREATION, **headers}
    )


def test_a_verified_push_is_a_process_span_under_its_attempt(
    identity: SigningIdentity, fetcher: CountingFetcher
) -> None:
    app, recorder, handled = traced_app(fetcher)
    assert post_notification(app.test_client(), push(identity)).status_code == 204
    (span,) = recorder.attributes()
    assert span["name"] == "process orders" and span["status"] == "UNSET"
    assert span["trace_id"] == TRACE
    assert span["parent_span_id"] == "b7ad6b7169203331"  # the attempt (no HTTP server span)
    assert span["links"] == ["00f067aa0ba902b7"]  # the creation context
    assert span["messaging.operation.type"] == "process"
    assert span["messaging.system"] == "smq"
    assert span["messaging.destination.name"] == "orders"
    assert span["messaging.message.id"] == handled[0]
    assert span["messaging.smq.message.tag"] == "paid"
    assert span["messaging.smq.handler.outcome"] == "handled"


def test_the_creation_context_as_parent_when_asked(
    identity: SigningIdentity, fetcher: CountingFetcher
) -> None:
    app, recorder, _ = traced_app(fetcher, trace_parent="creation")
    assert post_notification(app.test_client(), push(identity)).status_code == 204
    (span,) = recorder.attributes()
    assert span["parent_span_id"] == "00f067aa0ba902b7"
    assert span["links"] == ["b7ad6b7169203331"]


def test_a_failed_handler_and_a_refused_push_say_why(
    identity: SigningIdentity, fetcher: CountingFetcher
) -> None:
    app, recorder, _ = traced_app(fetcher)
    client = app.test_client()
    assert post_notification(client, push(identity, "fail")).status_code == 500
    tampered = push(identity).replace_headers({"x-mns-message-id": "forged"})
    assert post_notification(client, tampered).status_code == 403
    failed, refused = recorder.attributes()
    assert failed["status"] == "ERROR" and failed["error.type"] == "handler_failed"
    assert failed["http.response.status_code"] == 500
    assert refused["status"] == "ERROR" and refused["error.type"] == "signature"
    assert refused["name"] == "process"  # nothing of it was trusted enough to name it by


def test_a_push_without_trace_headers_starts_a_trace(
    identity: SigningIdentity, fetcher: CountingFetcher
) -> None:
    app, recorder, _ = traced_app(fetcher)
    signed = sign_notification(identity, "hi", topic_name="orders")
    assert post_notification(app.test_client(), signed).status_code == 204
    (span,) = recorder.attributes()
    assert span["parent_span_id"] is None and span["links"] == []


def test_no_spans_unless_asked(identity: SigningIdentity, fetcher: CountingFetcher) -> None:
    recorder = span_recorder()
    receiver = MNSReceiver(cert_fetcher=fetcher, tracer_provider=recorder.provider)
    receiver.handler()(lambda notification: None)
    app = Flask(__name__)
    receiver.init_app(app)
    assert post_notification(app.test_client(), push(identity)).status_code == 204
    assert recorder.spans() == []


def test_an_unknown_parent_mode_is_refused(fetcher: CountingFetcher) -> None:
    with pytest.raises(ValueError, match="trace_parent must be 'http' or 'creation'"):
        MNSReceiver(cert_fetcher=fetcher, tracing=True, trace_parent="sideways")
