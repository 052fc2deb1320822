"""The routing rule: the matching handler naming the most filters runs, and only it;
between equally many, subscription beats topic beats tag."""

from __future__ import annotations

import pytest
from flask import Flask

from receiver import MNSReceiver, Notification
from receiver.testing import SigningIdentity, post_notification, sign_notification
from tests.support.clock import Clock

from .conftest import AppFactory


@pytest.fixture
def routed(make_app: AppFactory) -> tuple[Flask, MNSReceiver, list[str]]:
    """An app whose handlers record their own names, covering every filter combination."""
    app, receiver = make_app()
    ran: list[str] = []
    filter_sets = {
        "any": {},
        "tag": {"tag": "vip"},
        "topic": {"topic": "orders"},
        "topic+tag": {"topic": "orders", "tag": "vip"},
        "subscription": {"subscription": "billing"},
        "subscription+tag": {"subscription": "billing", "tag": "vip"},
        "subscription+topic": {"subscription": "billing", "topic": "orders"},
    }
    for name, filters in filter_sets.items():
        receiver.handler(**filters)(lambda n, name=name: ran.append(name))
    return app, receiver, ran


@pytest.mark.parametrize(
    ("topic", "subscription", "tag", "expected"),
    [
        ("payments", "audit", None, "any"),
        ("payments", "audit", "vip", "tag"),
        ("orders", "audit", None, "topic"),
        ("orders", "audit", "vip", "topic+tag"),
        ("payments", "billing", None, "subscription"),
        ("payments", "billing", "vip", "subscription+tag"),
        ("orders", "billing", None, "subscription+topic"),
        # two filters each: subscription+topic beats subscription+tag beats topic+tag
        ("orders", "billing", "vip", "subscription+topic"),
    ],
)
def test_the_most_specific_matching_handler_runs_alone(
    routed: tuple[Flask, MNSReceiver, list[str]],
    identity: SigningIdentity,
    clock: Clock,
    topic: str,
    subscription: str,
    tag: str | None,
    expected: str,
) -> None:
    app, _, ran = routed
    signed = sign_notification(
        identity, topic_name=topic, subscription_name=subscription, message_tag=tag, date=clock.now
    )
    assert post_notification(app.test_client(), signed).status_code == 204
    assert ran == [expected]


def test_more_filters_beat_a_heavier_single_filter(
    make_app: AppFactory, identity: SigningIdentity, clock: Clock
) -> None:
    app, receiver = make_app()
    ran: list[str] = []
    receiver.handler(subscription="billing")(lambda n: ran.append("subscription"))
    receiver.handler(topic="orders", tag="vip")(lambda n: ran.append("topic+tag"))
    signed = sign_notification(
        identity, topic_name="orders", subscription_name="billing", message_tag="vip",
        date=clock.now,
    )  # fmt: skip
    post_notification(app.test_client(), signed)
    assert ran == ["topic+tag"]


def test_an_untagged_message_never_matches_a_tag_filter(
    make_app: AppFactory, identity: SigningIdentity, clock: Clock
) -> None:
    app, receiver = make_app()
    receiver.handler(tag="vip")(lambda n: None)
    signed = sign_notification(identity, message_tag=None, date=clock.now)
    assert post_notification(app.test_client(), signed).status_code == 500


def test_the_same_filters_twice_is_refused_at_registration(make_app: AppFactory) -> None:
    _, receiver = make_app()

    @receiver.handler(topic="orders")
    def first(notification: Notification) -> None: ...

    with pytest.raises(ValueError, match="same filters"):

        @receiver.handler(topic="orders")
        def second(notification: Notification) -> None: ...


def test_the_decorator_returns_the_function_unchanged(make_app: AppFactory) -> None:
    _, receiver = make_app()

    def on_order(notification: Notification) -> None: ...

    assert receiver.handler(topic="orders")(on_order) is on_order


def test_filters_are_keyword_only(make_app: AppFactory) -> None:
    _, receiver = make_app()
    with pytest.raises(TypeError):
        receiver.handler(lambda n: None)  # type: ignore[misc]


def test_each_receiver_routes_independently(
    make_app: AppFactory, identity: SigningIdentity, clock: Clock
) -> None:
    """Two receivers in one app, each with its own blueprint name, prefix and handlers."""
    app, orders = make_app(name="orders_receiver", url_prefix="/orders")
    ran: list[str] = []
    orders.handler()(lambda n: ran.append("orders"))
    audit = MNSReceiver(name="audit_receiver", cert_fetcher=identity.cert_fetcher, clock=clock)
    audit.handler()(lambda n: ran.append("audit"))
    audit.init_app(app, url_prefix="/audit")
    client = app.test_client()
    for prefix in ("/audit", "/orders"):
        signed = sign_notification(identity, path=f"{prefix}/notifications", date=clock.now)
        assert post_notification(client, signed).status_code == 204
    assert ran == ["audit", "orders"]
