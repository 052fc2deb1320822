"""Fuzzing the receiver blueprint with pushes a sender could make: genuine ones (correctly signed)
carrying any body in any format, and forged ones (a genuine push with one signed part changed).

A genuine push is answered 204 (the handler ran) or 400 (it could not be parsed), as
docs/receiver.md promises; never 500, which would make the sender retry it for a day. A forged
push is answered 403 and no handler runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from flask import Flask
from hypothesis import given
from hypothesis import strategies as st

from receiver import MNSReceiver, Notification
from receiver.testing import (
    SignedRequest,
    SigningIdentity,
    content_md5,
    post_notification,
    sign_notification,
    sign_request,
)
from tests.fuzz import count, fuzz_settings

pytestmark = pytest.mark.fuzz

CONTENT_TYPES = {
    "XML": "text/xml;charset=utf-8",
    "JSON": "application/json;charset=utf-8",
    "SIMPLIFIED": "text/plain;charset=utf-8",
}


class Handled:
    """An accepting handler that counts what reached it."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, notification: Notification) -> None:
        self.calls += 1


@pytest.fixture(scope="module")
def identity() -> SigningIdentity:
    return SigningIdentity.generate(key_size=1024)  # signing is per example: the small key


@pytest.fixture(scope="module")
def receiver_app(identity: SigningIdentity) -> Iterator[tuple[Flask, Handled]]:
    handled = Handled()
    receiver = MNSReceiver(
        allowed_cert_url_prefixes=[identity.cert_url],
        cert_fetcher=identity.cert_fetcher,
        max_clock_skew=None,
        max_body_bytes=256 * 1024,
    )
    receiver.handler()(handled)
    app = Flask(__name__)
    receiver.init_app(app)
    yield app, handled


# bodies ------------------------------------------------------------------------------------------
ENCODINGS = ["utf-8", "bogus", "rot13", "utf-32", "shift_jis", "idna", "undefined", "latin-1"]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
FIELDS = ["MessageId", "Message", "MessageTag", "PublishTime", "TopicName", "SubscriptionName"]


@st.composite
def xml_body(draw: st.DrawFn) -> bytes:
    children = draw(st.lists(st.tuples(st.sampled_from(FIELDS), st.text(max_size=20)), max_size=6))
    inner = "".join(f"<{name}>{value}</{name}>" for name, value in children)
    root = draw(st.sampled_from(["Notification", "Other", "Notification xmlns='x'"]))
    document = f"<{root}>{inner}</{root.split()[0]}>"
    encoding = draw(st.sampled_from(ENCODINGS))
    declared = draw(st.sampled_from(["", f'<?xml version="1.0" encoding="{encoding}"?>']))
    raw = (declared + document).encode("utf-8", "surrogatepass")
    return draw(st.sampled_from([raw, raw[: len(raw) // 2], b"<" * 3 + raw]))


@st.composite
def json_body(draw: st.DrawFn) -> bytes:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        depth = draw(st.integers(1, 100_000))  # 200 KB at most: under the body limit
        return b"[" * depth + b"]" * depth
    if kind == 1:
        document = draw(st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, max_size=6))
    else:
        document = draw(JSON_VALUES)
    return json.dumps(document).encode("utf-8", "surrogatepass")


BODIES = {
    "XML": xml_body(),
    "JSON": json_body(),
    "SIMPLIFIED": st.binary(max_size=300),
}


def genuine(identity: SigningIdentity, fmt: str, body: bytes, charset: str) -> SignedRequest:
    base = sign_notification(identity, format=fmt)  # type: ignore[arg-type]
    content_type = CONTENT_TYPES[fmt].replace("utf-8", charset)
    headers = {**base.headers, "Content-md5": content_md5(body), "Content-Type": content_type}
    return sign_request(identity, base.path, headers, body)


@st.composite
def genuine_pushes(draw: st.DrawFn) -> tuple[str, bytes, str]:
    fmt = draw(st.sampled_from(sorted(BODIES)))
    charset = draw(st.sampled_from(["utf-8", "utf-8", "bogus", "utf-16", "latin-1"]))
    return fmt, draw(BODIES[fmt]), charset


@fuzz_settings(600)
@given(push=genuine_pushes())
def test_a_genuine_push_is_204_or_400_never_500(
    receiver_app: tuple[Flask, Handled], identity: SigningIdentity, push: tuple[str, bytes, str]
) -> None:
    app, handled = receiver_app
    fmt, body, charset = push
    count("receiver genuine", "sent")
    before = handled.calls
    status = post_notification(app.test_client(), genuine(identity, fmt, body, charset)).status_code
    count("receiver genuine", f"{status}")
    assert status in (204, 400)
    assert handled.calls == before + (status == 204)


# forgeries ---------------------------------------------------------------------------------------
SIGNED_HEADERS = [
    "Date",
    "Content-Type",
    "Content-md5",
    "x-mns-topic-name",
    "x-mns-signing-cert-url",
]


#: A header value as a WSGI server hands it over: bytes read as ISO-8859-1 (PEP 3333), so any
#: character up to U+00FF, and no line break.
HEADER_TEXT = st.text(
    alphabet=st.characters(max_codepoint=0xFF, exclude_characters="\r\n"), max_size=60
)


@st.composite
def forgeries(draw: st.DrawFn) -> tuple[str, str | bytes | None]:
    """(what to change, its new value): each breaks what the signature or the digest covers."""
    what = draw(st.sampled_from(["header", "authorization", "body", "cert-url", "drop"]))
    if what == "header":
        return draw(st.sampled_from(SIGNED_HEADERS)), draw(HEADER_TEXT.filter(bool))
    if what == "authorization":
        return "Authorization", draw(HEADER_TEXT)
    if what == "cert-url":
        urls = ["https://evil.example/c.pem", "http://127.0.0.1:9/", "", "%%%"]
        return "x-mns-signing-cert-url", draw(st.sampled_from(urls))
    if what == "drop":
        dropped = ["Authorization", "Date", "x-mns-signing-cert-url", "Content-md5"]
        return draw(st.sampled_from(dropped)), None
    return "body", draw(st.binary(min_size=1, max_size=50))


def tamper(signed: SignedRequest, name: str, value: str | bytes | None) -> SignedRequest | None:
    """``signed`` with one part changed, not signed again; ``None`` if it would not change."""
    if isinstance(value, bytes):
        return SignedRequest(signed.path, signed.headers, signed.body + value)
    original = {k.lower(): v for k, v in signed.headers.items()}.get(name.lower())
    if value == original:
        return None
    return signed.replace_headers({name: value})


@fuzz_settings(600)
@given(forgery=forgeries(), fmt=st.sampled_from(sorted(BODIES)))
def test_a_forged_push_is_403_and_reaches_no_handler(
    receiver_app: tuple[Flask, Handled],
    identity: SigningIdentity,
    forgery: tuple[str, str | bytes | None],
    fmt: str,
) -> None:
    app, handled = receiver_app
    tampered = tamper(sign_notification(identity, format=fmt), *forgery)  # type: ignore[arg-type]
    if tampered is None:
        return
    count("receiver forged", "sent")
    before = handled.calls
    status = post_notification(app.test_client(), tampered).status_code
    count("receiver forged", f"{status}")
    assert status == 403
    assert handled.calls == before
